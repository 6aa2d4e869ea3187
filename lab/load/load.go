package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"
)

// Config says what a Load sends.
type Config struct {
	// URL is requested with GET; it must be http:// on a loopback
	// address (the front door, a pod, a test server).
	URL string
	// Host is sent as the Host header (the front door routes by it);
	// empty sends the URL's.
	Host string
	// Workers send concurrently, each on its own kept-alive connection;
	// default 4.
	Workers int
	// Rate bounds the requests per second of all workers together;
	// default 100. A worker whose request is held sends no other: held
	// time is not made up with a burst afterwards.
	Rate float64
	// Timeout bounds one request, body included; default 10 minutes, far
	// beyond any activator timeout, so the server decides how a held
	// request ends.
	Timeout time.Duration
	// BodyBytes of each response body are kept; default 64.
	BodyBytes int
}

func (c Config) withDefaults() Config {
	if c.Workers <= 0 {
		c.Workers = 4
	}
	if c.Rate <= 0 {
		c.Rate = 100
	}
	if c.Timeout <= 0 {
		c.Timeout = 10 * time.Minute
	}
	if c.BodyBytes <= 0 {
		c.BodyBytes = 64
	}
	return c
}

// Load is a running load: Workers goroutines sending GET requests until
// Stop, recording every one.
type Load struct {
	cfg    Config
	tr     *http.Transport
	client *http.Client

	reqCtx    context.Context // cancelled only when Stop gives up waiting
	cancelReq context.CancelFunc
	stopping  chan struct{}
	stopOnce  sync.Once
	workers   sync.WaitGroup

	mu       sync.Mutex
	done     []Request
	inFlight map[int]Request
	changed  chan struct{} // closed and replaced on every start and completion
}

// Start starts a Load's workers; they send until Stop. The URL must be
// http:// on a loopback IP address.
func Start(cfg Config) (*Load, error) {
	cfg = cfg.withDefaults()
	if err := checkLoopbackURL(cfg.URL); err != nil {
		return nil, err
	}
	// Keep-alive connections, one per worker, like a load tool; no proxy
	// from the environment, no compression to undo.
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost: cfg.Workers,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Load{
		cfg:       cfg,
		tr:        tr,
		client:    &http.Client{Transport: tr, Timeout: cfg.Timeout},
		reqCtx:    ctx,
		cancelReq: cancel,
		stopping:  make(chan struct{}),
		inFlight:  map[int]Request{},
		changed:   make(chan struct{}),
	}
	interval := time.Duration(float64(time.Second) * float64(cfg.Workers) / cfg.Rate)
	now := time.Now()
	for w := range cfg.Workers {
		l.workers.Add(1)
		// Staggered, so the workers do not send in lockstep.
		first := now.Add(interval * time.Duration(w) / time.Duration(cfg.Workers))
		go l.work(w, first, interval)
	}
	return l, nil
}

func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("load: URL %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("load: URL %q: want http://", raw)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("load: URL %q: the host must be a loopback IP address", raw)
	}
	return nil
}

func (l *Load) work(w int, next time.Time, interval time.Duration) {
	defer l.workers.Done()
	timer := time.NewTimer(time.Until(next))
	defer timer.Stop()
	for {
		select {
		case <-l.stopping:
			return
		case <-timer.C:
		}
		select {
		case <-l.stopping: // both ready: stopping wins
			return
		default:
		}
		l.send(w)
		// Fixed rate; after a long request start afresh from now.
		next = next.Add(interval)
		if now := time.Now(); next.Before(now) {
			next = now
		}
		timer.Reset(time.Until(next))
	}
}

func (l *Load) send(w int) {
	q := Request{Worker: w, Start: time.Now()}
	l.record(func() { l.inFlight[w] = q })
	req, err := http.NewRequestWithContext(l.reqCtx, http.MethodGet, l.cfg.URL, nil)
	if err == nil {
		if l.cfg.Host != "" {
			req.Host = l.cfg.Host
		}
		var resp *http.Response
		if resp, err = l.client.Do(req); err == nil {
			q.Status = resp.StatusCode
			body := make([]byte, l.cfg.BodyBytes)
			n, rerr := io.ReadFull(resp.Body, body)
			q.Body = string(body[:n])
			if errors.Is(rerr, io.ErrUnexpectedEOF) || errors.Is(rerr, io.EOF) {
				rerr = nil
			}
			if rerr == nil {
				// The whole body is read so the connection is reused.
				_, rerr = io.Copy(io.Discard, resp.Body)
			}
			resp.Body.Close()
			err = rerr
		}
	}
	q.Duration = time.Since(q.Start)
	if err != nil {
		q.Err = err.Error()
	}
	l.record(func() {
		delete(l.inFlight, w)
		l.done = append(l.done, q)
	})
}

func (l *Load) record(change func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	change()
	close(l.changed)
	l.changed = make(chan struct{})
}

// Snapshot is the recording so far, requests in flight included.
func (l *Load) Snapshot() *Recording {
	r, _ := l.snapshot()
	return r
}

func (l *Load) snapshot() (*Recording, <-chan struct{}) {
	l.mu.Lock()
	r := &Recording{Requests: slices.Clone(l.done)}
	for _, q := range l.inFlight {
		r.InFlight = append(r.InFlight, q)
	}
	changed := l.changed
	l.mu.Unlock()
	byStart := func(a, b Request) int { return a.Start.Compare(b.Start) }
	slices.SortStableFunc(r.Requests, byStart)
	slices.SortFunc(r.InFlight, byStart)
	return r, changed
}

// waitCoalesce is how long Wait lets changes pile up before it looks.
const waitCoalesce = 5 * time.Millisecond

// Wait returns the first recording for which cond holds, checked whenever
// a request starts or completes; it fails when ctx ends first, naming
// what it waited for.
func (l *Load) Wait(ctx context.Context, what string, cond func(*Recording) bool) (*Recording, error) {
	for {
		r, changed := l.snapshot()
		if cond(r) {
			return r, nil
		}
		select {
		case <-changed:
			// Coalesce: under load requests start and end hundreds of
			// times a second, and each check copies the recording.
			select {
			case <-time.After(waitCoalesce):
			case <-ctx.Done():
			}
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			r = l.Snapshot()
			if cond(r) {
				return r, nil
			}
			return r, fmt.Errorf("load: waiting for the load to see %s: %w\n%s", what, ctx.Err(), r.Summary(time.Time{}))
		}
	}
}

// Stop stops sending and waits for the requests in flight to complete.
// If ctx ends first they are cancelled, and recorded with that error (so
// they count as failures). The final recording has nothing in flight.
func (l *Load) Stop(ctx context.Context) *Recording {
	l.stopOnce.Do(func() { close(l.stopping) })
	finished := make(chan struct{})
	go func() {
		l.workers.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		l.cancelReq()
		<-finished
	}
	l.cancelReq()
	l.tr.CloseIdleConnections()
	return l.Snapshot()
}

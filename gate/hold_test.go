package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/readiness"
	"github.com/podgate/podgate/test/testapp"
)

// podFeed is a PodWatcher the test feeds by hand: the pod's containers and
// its Ready condition, as the Kubernetes status source reports them.
type podFeed struct {
	mu   sync.Mutex
	last PodStatus
	ch   chan struct{} // rung on every change
}

func newPodFeed(ps PodStatus) *podFeed { return &podFeed{last: ps, ch: make(chan struct{}, 1)} }

func (f *podFeed) set(change func(*PodStatus)) {
	f.mu.Lock()
	change(&f.last)
	f.mu.Unlock()
	select {
	case f.ch <- struct{}{}:
	default:
	}
}

func (f *podFeed) current() PodStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := f.last
	ps.Containers = append([]readiness.ContainerStatus(nil), ps.Containers...)
	return ps
}

func (f *podFeed) Watch(ctx context.Context, update func([]readiness.ContainerStatus)) error {
	return f.WatchPod(ctx, func(ps PodStatus) { update(ps.Containers) })
}

func (f *podFeed) WatchPod(ctx context.Context, update func(PodStatus)) error {
	update(f.current())
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.ch:
			update(f.current())
		}
	}
}

// setContainer sets the ready status of one container in the feed.
func (f *podFeed) setContainer(name string, ready bool) {
	f.set(func(ps *PodStatus) {
		for i := range ps.Containers {
			if ps.Containers[i].Name == name {
				ps.Containers[i].Ready = ready
				return
			}
		}
		ps.Containers = append(ps.Containers, readiness.ContainerStatus{Name: name, Ready: ready, Running: true, ContainerID: "id-" + name})
	})
}

func (f *podFeed) setPodReady(ready bool) { f.set(func(ps *PodStatus) { ps.Ready = ready }) }

// handedRequest is what the activator stand-in got.
type handedRequest struct {
	method, uri, host, body string
	header                  http.Header
	at                      time.Time // on the test's clock, if any
}

// activatorStandIn is a loopback HTTP server in Knative's activator's
// place: it records every request and answers it with answer.
type activatorStandIn struct {
	url    string
	mu     sync.Mutex
	got    []handedRequest
	answer http.Handler
	clock  interface{ Now() time.Time }
}

func startActivator(t *testing.T, clock interface{ Now() time.Time }, answer http.Handler) *activatorStandIn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &activatorStandIn{url: "http://" + ln.Addr().String(), answer: answer, clock: clock}
	srv := &http.Server{Handler: a, ReadHeaderTimeout: time.Minute}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		<-done
	})
	return a
}

func (a *activatorStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The body is read by the answer when it proxies; recorded here only
	// when the answer is the stand-in's own.
	hr := handedRequest{method: r.Method, uri: r.RequestURI, host: r.Host, header: r.Header.Clone()}
	if a.clock != nil {
		hr.at = a.clock.Now()
	}
	if a.answer == nil {
		b, _ := io.ReadAll(r.Body)
		hr.body = string(b)
	}
	a.mu.Lock()
	a.got = append(a.got, hr)
	a.mu.Unlock()
	if a.answer != nil {
		a.answer.ServeHTTP(w, r)
		return
	}
	w.Header().Set("X-Answered-By", "activator")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, "from the activator\n")
}

func (a *activatorStandIn) requests() []handedRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]handedRequest(nil), a.got...)
}

// metricValue reads one unlabelled series from the gate's /metrics.
func metricValue(t *testing.T, tg *testGate, name string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(tg.metricsText(t))
	if m == nil {
		t.Fatalf("no %s on /metrics", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// reply is a client's outcome.
type reply struct {
	code   int
	body   string
	header http.Header
	err    error
}

// send sends a request in the background; its reply comes on the channel.
func (tg *testGate) send(t *testing.T, req *http.Request) <-chan reply {
	t.Helper()
	out := make(chan reply, 1)
	go func() {
		resp, err := tg.client.Do(req)
		if err != nil {
			out <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		out <- reply{code: resp.StatusCode, body: string(b), header: resp.Header, err: err}
	}()
	return out
}

func await(t *testing.T, what string, ch <-chan reply) reply {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r
	case <-time.After(testWait):
		t.Fatalf("%s: no reply", what)
	}
	return reply{}
}

// notYet asserts that ch has no reply now.
func notYet(t *testing.T, what string, ch <-chan reply) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s answered while it should be held: %+v", what, r)
	default:
	}
}

// sidecarGate is a gate over a serving test app and a sidecar test app
// whose readiness the test toggles (HTTP probe every second, one failure
// is enough).
func sidecarGate(t *testing.T, opts Options, tweak func(*contract.Config)) (*testGate, *testapp.Server, *testapp.Server) {
	t.Helper()
	app := startApp(t, testapp.Config{Name: "app"})
	sidecar := startApp(t, testapp.Config{Name: "sidecar"})
	cfg := gateConfig(t, app.Addr())
	sideProbe := httpProbe(portOf(t, sidecar.Addr()), "/readyz", 1)
	sideProbe.FailureThreshold = 1
	cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, app.Addr()), 1), sideProbe}
	cfg.ReadinessContainers = []string{"app", "sidecar"}
	if tweak != nil {
		tweak(&cfg)
	}
	tg := startGate(t, cfg, opts)
	tg.waitReady(t, true)
	return tg, app, sidecar
}

func TestARequestWhileASidecarIsUnreadyWaitsAndIsServedWhenItIsReadyAgain(t *testing.T) {
	tg, app, sidecar := sidecarGate(t, Options{}, nil)
	sidecar.SetReady(false)
	tg.waitReady(t, false)
	before := app.Traffic()

	req, _ := http.NewRequest(http.MethodGet, tg.url("/held?x=1"), nil)
	res := tg.send(t, req)
	eventually(t, "the request is held", func() bool { return tg.RequestsHeld() == 1 })
	notYet(t, "the held request", res)
	if app.Traffic() != before {
		t.Errorf("the serving container got %d request(s) while the sidecar was unready", app.Traffic()-before)
	}
	t.Run("a held request is in flight for the drain and the autoscaler", func(t *testing.T) {
		if n := tg.drainer.InFlight(); n != 1 {
			t.Errorf("in flight = %d, want 1", n)
		}
		eventually(t, "the autoscaler's statistics count the held request", func() bool {
			return tg.AutoscalerStats().GetAverageConcurrentRequests() > 0
		})
		contains(t, "verbose readyz", tg.verbose(t), "1 request(s) held until every container is ready")
		if v := metricValue(t, tg, "podgate_readiness_held"); v != 1 {
			t.Errorf("podgate_readiness_held = %v, want 1", v)
		}
	})

	sidecar.SetReady(true)
	r := await(t, "the held request", res)
	if r.code != http.StatusOK || r.body != "app\n" {
		t.Errorf("held request answered %d %q, want 200 from the app", r.code, r.body)
	}
	if tg.RequestsHeld() != 0 {
		t.Errorf("%d request(s) still held", tg.RequestsHeld())
	}
	if v := metricValue(t, tg, "podgate_readiness_holds_total"); v != 1 {
		t.Errorf("podgate_readiness_holds_total = %v, want 1", v)
	}
	contains(t, "logs", tg.logs.String(), "holding requests: not every container is ready")
	contains(t, "logs", tg.logs.String(), "no request held any more")
}

// TestTheServingContainerReceivesNoRequestWhileTheAggregateIsNotReady:
// under steady load, from the moment the gate knows a sidecar is unready
// until it is ready again the serving container gets nothing, and every
// request is answered 200 in the end.
func TestTheServingContainerReceivesNoRequestWhileTheAggregateIsNotReady(t *testing.T) {
	tg, app, sidecar := sidecarGate(t, Options{}, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent, ok atomic.Int64
	var bad sync.Map
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				sent.Add(1)
				resp, err := tg.client.Get(tg.url(fmt.Sprintf("/load/%d", i)))
				if err != nil {
					bad.Store(err.Error(), true)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					ok.Add(1)
				} else {
					bad.Store(resp.Status, true)
				}
			}
		}()
	}
	eventually(t, "load flows", func() bool { return app.Traffic() > 20 })
	sidecar.SetReady(false)
	tg.waitReady(t, false)
	eventually(t, "every load client is held", func() bool { return tg.RequestsHeld() == 4 })
	// Requests past the door before it closed have been answered; from
	// now on nothing reaches the app while the sidecar's probe keeps
	// failing (two more of its attempts, a second apart).
	atUnready := app.Traffic()
	attempts := tg.agg.Report()[1].Attempts
	eventually(t, "the sidecar failed two more probes", func() bool { return tg.agg.Report()[1].Attempts >= attempts+2 })
	if n := app.Traffic(); n != atUnready || tg.RequestsHeld() != 4 {
		t.Errorf("the serving container got %d request(s) while the gate knew the sidecar was unready (%d held)", n-atUnready, tg.RequestsHeld())
	}
	sidecar.SetReady(true)
	eventually(t, "load flows again", func() bool { return app.Traffic() > atUnready+20 })
	close(stop)
	wg.Wait()
	bad.Range(func(k, _ any) bool { t.Errorf("a load request failed: %v", k); return true })
	if ok.Load() != sent.Load() {
		t.Errorf("%d of %d requests answered 200", ok.Load(), sent.Load())
	}
}

// delegatedGate is a gate on a fake clock whose sidecar's readiness the
// status source decides (an exec probe), so the pod's readiness changes
// only when the test says so; handoff is the activator stand-in's URL or "".
func delegatedGate(t *testing.T, clk *testingclock.FakeClock, handoff string, tweak func(*contract.Config)) (*testGate, *testapp.Server, *podFeed) {
	t.Helper()
	app := startApp(t, testapp.Config{Name: "app"})
	cfg := gateConfig(t, app.Addr())
	cfg.Namespace, cfg.Revision, cfg.Pod = "ns", "hello-00001", "hello-00001-deployment-abc"
	cfg.DelegatedReadiness = []string{"checker"}
	cfg.Containers = []string{"app", "checker"}
	cfg.StatusSource = contract.StatusSourceKubernetes
	cfg.HandoffURL = handoff
	if tweak != nil {
		tweak(&cfg)
	}
	feed := newPodFeed(PodStatus{Ready: true, Containers: []readiness.ContainerStatus{
		{Name: "app", Ready: true, Running: true, ContainerID: "id-app"},
		{Name: "checker", Ready: true, Running: true, ContainerID: "id-checker"},
	}})
	tg := startGate(t, cfg, Options{Clock: clk, Status: feed})
	tg.waitReady(t, true)
	return tg, app, feed
}

func TestAHeldRequestIsHandedToTheActivatorOnceThePodIsNotReadyWithKnativesRoutingHeaders(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	act := startActivator(t, nil, nil)
	tg, app, feed := delegatedGate(t, clk, act.url, nil)

	feed.setContainer("checker", false)
	eventually(t, "the gate knows the checker is unready", func() bool { return !tg.agg.Ready() })
	req, _ := http.NewRequest(http.MethodPost, tg.url("/orders/7?a=1&b=%2F;c"), strings.NewReader("the body"))
	req.Host = "hello.ns.example.com"
	req.Header.Set("X-Custom", "kept")
	req.Header.Set("K-Original-Host", "hello.ns.svc.cluster.local")
	req.Header.Set("X-Forwarded-For", "10.1.2.3")
	res := tg.send(t, req)
	eventually(t, "the request is held", func() bool { return tg.RequestsHeld() == 1 })
	// The pod is still Ready: its endpoint is still in, the activator
	// would send it right back.
	if n := len(act.requests()); n != 0 {
		t.Fatalf("handed off %d request(s) while the pod was still Ready", n)
	}

	feed.setPodReady(false)
	r := await(t, "the handed-off request", res)
	if r.code != http.StatusCreated || r.body != "from the activator\n" || r.header.Get("X-Answered-By") != "activator" {
		t.Errorf("client got %d %q %v, want the activator's answer unchanged", r.code, r.body, r.header)
	}
	got := act.requests()
	if len(got) != 1 {
		t.Fatalf("the activator got %d requests, want 1", len(got))
	}
	h := got[0]
	for what, pair := range map[string][2]string{
		"method":                    {h.method, http.MethodPost},
		"path and query":            {h.uri, "/orders/7?a=1&b=%2F;c"},
		"Host":                      {h.host, "hello.ns.example.com"},
		"body":                      {h.body, "the body"},
		"a header":                  {h.header.Get("X-Custom"), "kept"},
		"K-Original-Host":           {h.header.Get("K-Original-Host"), "hello.ns.svc.cluster.local"},
		"X-Forwarded-For":           {h.header.Get("X-Forwarded-For"), "10.1.2.3"},
		"Knative-Serving-Namespace": {h.header.Get("Knative-Serving-Namespace"), "ns"},
		"Knative-Serving-Revision":  {h.header.Get("Knative-Serving-Revision"), "hello-00001"},
		"marker":                    {h.header.Get(contract.HandoffHeader), "hello-00001-deployment-abc;n=1"},
	} {
		if pair[0] != pair[1] {
			t.Errorf("handed-off %s = %q, want %q", what, pair[0], pair[1])
		}
	}
	if app.Traffic() != 0 {
		t.Errorf("the serving container got %d request(s)", app.Traffic())
	}
	if v := metricValue(t, tg, "podgate_handoffs_total"); v != 1 {
		t.Errorf("podgate_handoffs_total = %v, want 1", v)
	}

	t.Run("a request arriving while the pod is out is handed off at once", func(t *testing.T) {
		code, body, _ := tg.do(t, http.MethodGet, tg.url("/late"), nil, nil)
		if code != http.StatusCreated || body != "from the activator\n" {
			t.Errorf("got %d %q, want the activator's answer", code, body)
		}
	})
	t.Run("once the pod is ready again requests are proxied", func(t *testing.T) {
		feed.set(func(ps *PodStatus) { ps.Ready = true; ps.Containers[1].Ready = true })
		tg.waitReady(t, true)
		code, body, _ := tg.do(t, http.MethodGet, tg.url("/back"), nil, nil)
		if code != http.StatusOK || body != "app\n" {
			t.Errorf("got %d %q, want the app's answer", code, body)
		}
	})
}

// TestARequestHandedBackToAnUnreadyPodIsHeldAndHandedAgainAfterTheBackoff:
// the activator stand-in sends every request straight back to the gate,
// as Knative's activator does until it sees the endpoint go. The gate
// hands the request on at once the first time, then only after 100, 200,
// 400 and 800 ms, and after contract.MaxHandoffs hand-offs it holds it
// until the pod is ready.
func TestARequestHandedBackToAnUnreadyPodIsHeldAndHandedAgainAfterTheBackoff(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	var gateURL atomic.Pointer[url.URL]
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	back := &httputil.ReverseProxy{Transport: tr, Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(gateURL.Load())
		pr.Out.Host = pr.In.Host
	}}
	act := startActivator(t, clk, back)
	tg, app, feed := delegatedGate(t, clk, act.url, nil)
	u, _ := url.Parse("http://" + tg.serving)
	gateURL.Store(u)
	feed.set(func(ps *PodStatus) { ps.Ready = false; ps.Containers[1].Ready = false })
	eventually(t, "the gate knows the pod is out", func() bool { return !tg.agg.Ready() && tg.podOut.Load() })

	start := clk.Now()
	res := tg.send(t, mustRequest(t, http.MethodGet, tg.url("/loop")))
	holds := func() float64 { return metricValue(t, tg, "podgate_readiness_holds_total") }
	for n := 1; n <= contract.MaxHandoffs; n++ {
		eventually(t, fmt.Sprintf("hand-off %d reached the activator", n), func() bool { return len(act.requests()) == n })
		got := act.requests()[n-1]
		if m := got.header.Get(contract.HandoffHeader); m != contract.FormatHandoff("hello-00001-deployment-abc", n) {
			t.Errorf("hand-off %d carries marker %q", n, m)
		}
		wantAt := start.Add(time.Duration(1<<(n-1)-1) * 100 * time.Millisecond) // 0, 100, 300, 700, 1500 ms
		if n == 1 {
			wantAt = start
		}
		if !got.at.Equal(wantAt) {
			t.Errorf("hand-off %d at +%v, want +%v", n, got.at.Sub(start), wantAt.Sub(start))
		}
		// Back at the gate: held, marked n.
		eventually(t, fmt.Sprintf("the request handed back %d time(s) is held", n), func() bool {
			return holds() == float64(n) && tg.RequestsHeld() == 1
		})
		if n == contract.MaxHandoffs {
			break
		}
		backoff := 100 * time.Millisecond << (n - 1)
		clk.Step(backoff - time.Millisecond)
		if len(act.requests()) != n {
			t.Fatalf("handed again before its %v backoff", backoff)
		}
		clk.Step(time.Millisecond)
	}
	t.Run("after the last hand-off the request is held until the pod is ready", func(t *testing.T) {
		clk.Step(100 * time.Second) // well below the revision timeout (300 s)
		if n := len(act.requests()); n != contract.MaxHandoffs {
			t.Fatalf("handed off %d times, want at most %d", n, contract.MaxHandoffs)
		}
		notYet(t, "the request", res)
		feed.set(func(ps *PodStatus) { ps.Ready = true; ps.Containers[1].Ready = true })
		r := await(t, "the request", res)
		if r.code != http.StatusOK || r.body != "app\n" {
			t.Errorf("got %d %q, want the app's answer", r.code, r.body)
		}
		if app.Traffic() != 1 {
			t.Errorf("the app got %d requests, want 1", app.Traffic())
		}
	})
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func TestHeldRequestsEndWithTheRevisionTimeoutsAnswer(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	tg, app, feed := delegatedGate(t, clk, "", func(c *contract.Config) { c.RevisionTimeout = 10 * time.Second })
	feed.setContainer("checker", false)
	eventually(t, "the gate knows the checker is unready", func() bool { return !tg.agg.Ready() })

	res := tg.send(t, mustRequest(t, http.MethodGet, tg.url("/timeout")))
	eventually(t, "the request is held", func() bool { return tg.RequestsHeld() == 1 })
	clk.Step(10*time.Second - time.Millisecond)
	notYet(t, "the request", res)
	clk.Step(time.Millisecond)
	r := await(t, "the request", res)
	if r.code != http.StatusGatewayTimeout || r.body != "request timeout" {
		t.Errorf("got %d %q, want the revision timeout's 504 request timeout", r.code, r.body)
	}
	eventually(t, "nothing is held", func() bool { return tg.RequestsHeld() == 0 })

	t.Run("a client that goes away ends its hold", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		req := mustRequest(t, http.MethodGet, tg.url("/gone")).WithContext(ctx)
		res := tg.send(t, req)
		eventually(t, "the request is held", func() bool { return tg.RequestsHeld() == 1 })
		cancel()
		select {
		case r := <-res:
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("client got %+v", r)
			}
		case <-time.After(testWait):
			t.Fatal("the client's cancel did not end its request")
		}
		eventually(t, "nothing is held", func() bool { return tg.RequestsHeld() == 0 && tg.drainer.InFlight() == 0 })
	})
	if app.Traffic() != 0 {
		t.Errorf("the serving container got %d request(s)", app.Traffic())
	}
}

func TestDrainingReleasesHeldRequests(t *testing.T) {
	t.Run("without a hand-off they are proxied", func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Now())
		tg, app, feed := delegatedGate(t, clk, "", nil)
		feed.setContainer("checker", false)
		eventually(t, "the gate knows the checker is unready", func() bool { return !tg.agg.Ready() })
		res := tg.send(t, mustRequest(t, http.MethodGet, tg.url("/drained")))
		eventually(t, "the request is held", func() bool { return tg.RequestsHeld() == 1 })
		tg.Gate.terminate("the test")
		r := await(t, "the request", res)
		if r.code != http.StatusOK || r.body != "app\n" || app.Traffic() != 1 {
			t.Errorf("got %d %q (app got %d), want the app's answer", r.code, r.body, app.Traffic())
		}
	})
	t.Run("without a hand-off they are proxied within the concurrency limit too", func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Now())
		tg, app, feed := delegatedGate(t, clk, "", func(c *contract.Config) { c.ContainerConcurrency = 1 })
		feed.setContainer("checker", false)
		eventually(t, "the gate knows the checker is unready", func() bool { return !tg.agg.Ready() })
		a := tg.send(t, mustRequest(t, http.MethodGet, tg.url("/a")))
		b := tg.send(t, mustRequest(t, http.MethodGet, tg.url("/b")))
		eventually(t, "both requests are held", func() bool { return tg.RequestsHeld() == 2 })
		tg.Gate.terminate("the test")
		for what, res := range map[string]<-chan reply{"a": a, "b": b} {
			if r := await(t, what, res); r.code != http.StatusOK || r.body != "app\n" {
				t.Errorf("%s: %d %q, want the app's answer", what, r.code, r.body)
			}
		}
		if app.Traffic() != 2 {
			t.Errorf("the app got %d requests, want 2", app.Traffic())
		}
	})
	t.Run("with a hand-off they are handed off, the pod Ready or not", func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Now())
		act := startActivator(t, nil, nil)
		tg, app, feed := delegatedGate(t, clk, act.url, nil)
		feed.setContainer("checker", false)
		eventually(t, "the gate knows the checker is unready", func() bool { return !tg.agg.Ready() })
		res := tg.send(t, mustRequest(t, http.MethodGet, tg.url("/drained")))
		eventually(t, "the request is held", func() bool { return tg.RequestsHeld() == 1 })
		tg.Gate.terminate("the test")
		r := await(t, "the request", res)
		if r.code != http.StatusCreated || len(act.requests()) != 1 || app.Traffic() != 0 {
			t.Errorf("got %d (activator got %d, app %d), want the activator's answer", r.code, len(act.requests()), app.Traffic())
		}
	})
}

// TestHeldRequestsAreProxiedWithinTheConcurrencyLimit: with
// CONTAINER_CONCURRENCY 1, requests held at the door hold no slot, and
// once the pod is ready they go through the limit one after another.
func TestHeldRequestsAreProxiedWithinTheConcurrencyLimit(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	tg, app, feed := delegatedGate(t, clk, "", func(c *contract.Config) { c.ContainerConcurrency = 1 })
	feed.setContainer("checker", false)
	eventually(t, "the gate knows the checker is unready", func() bool { return !tg.agg.Ready() })
	var replies []<-chan reply
	for i := range 3 {
		replies = append(replies, tg.send(t, mustRequest(t, http.MethodGet, tg.url(fmt.Sprintf("/cc/%d", i)))))
	}
	eventually(t, "every request is held", func() bool { return tg.RequestsHeld() == 3 })
	feed.setContainer("checker", true)
	for i, res := range replies {
		r := await(t, fmt.Sprintf("request %d", i), res)
		if r.code != http.StatusOK {
			t.Errorf("request %d: %d %q", i, r.code, r.body)
		}
	}
	if app.Traffic() != 3 {
		t.Errorf("the app got %d requests, want 3", app.Traffic())
	}
}

// TestARefusedConnectionHoldsNewRequestsAtTheDoorAndTheOneInFlightRidesThrough:
// the serving container refuses the proxy's connection (it is
// restarting): the request that found out is held by the ride-through,
// the pod is unready at once, and the requests after it wait at the
// door; all are answered by the restarted container.
func TestARefusedConnectionHoldsNewRequestsAtTheDoorAndTheOneInFlightRidesThrough(t *testing.T) {
	first := startNamedUpstream(t, "127.0.0.1:0", "first")
	addr := first.addr
	tg := startGate(t, gateConfig(t, addr), Options{})
	tg.waitReady(t, true)
	first.stop(t)

	inFlight := tg.send(t, mustRequest(t, http.MethodGet, tg.url("/first")))
	eventually(t, "the ride-through holds the first request", func() bool {
		return strings.Contains(tg.metricsText(t), "podgate_ridethrough_held 1")
	})
	tg.waitReady(t, false)
	next := tg.send(t, mustRequest(t, http.MethodGet, tg.url("/next")))
	eventually(t, "the next request waits at the door", func() bool { return tg.RequestsHeld() == 1 })
	contains(t, "metrics", tg.metricsText(t), "podgate_ridethrough_held 1")

	startNamedUpstream(t, addr, "second")
	for what, ch := range map[string]<-chan reply{"the ridden-through request": inFlight, "the request held at the door": next} {
		if r := await(t, what, ch); r.code != http.StatusOK || r.body != "second HTTP/1.1" {
			t.Errorf("%s: %d %q, want 200 from the restarted container", what, r.code, r.body)
		}
	}
}

// TestAHandOffTheActivatorDroppedWithoutAnAnswer: Knative's activator
// (v0.50) closes the connection without an answer when its handler
// panics — it does when a request races the removal of the revision's
// last ready pod, the moment a gate hands requests off. An idempotent
// request goes back to the door and is handed off again after its
// backoff; one that may not be sent twice gets the 502 (the activator
// may have passed it on).
func TestAHandOffTheActivatorDroppedWithoutAnAnswer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		method     string
		body       string
		wantCode   int
		wantHanded int
	}{
		{name: "an idempotent request is handed off again after its backoff", method: http.MethodGet, wantCode: http.StatusCreated, wantHanded: 2},
		{name: "a request with a body is answered 502", method: http.MethodPost, body: "once only", wantCode: http.StatusBadGateway, wantHanded: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			var calls atomic.Int32
			answer := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if calls.Add(1) == 1 {
					// What the server does after a handler's panic: the
					// connection closes, nothing is answered.
					panic(http.ErrAbortHandler)
				}
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, "from the activator\n")
			})
			act := startActivator(t, clk, answer)
			tg, app, feed := delegatedGate(t, clk, act.url, nil)
			feed.set(func(ps *PodStatus) { ps.Ready = false; ps.Containers[1].Ready = false })
			eventually(t, "the gate knows the pod is out", func() bool { return !tg.agg.Ready() && tg.podOut.Load() })

			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, err := http.NewRequest(tc.method, tg.url("/once"), body)
			if err != nil {
				t.Fatal(err)
			}
			res := tg.send(t, req)
			eventually(t, "the first hand-off reached the activator", func() bool { return len(act.requests()) == 1 })
			if tc.wantHanded > 1 {
				eventually(t, "the request waits at the door again", func() bool { return tg.RequestsHeld() == 1 })
				notYet(t, "the request", res)
				clk.Step(100 * time.Millisecond) // the second hand-off's backoff
			}
			r := await(t, "the request", res)
			if r.code != tc.wantCode {
				t.Errorf("client got %d %q, want %d", r.code, r.body, tc.wantCode)
			}
			got := act.requests()
			if len(got) != tc.wantHanded {
				t.Fatalf("the activator got %d hand-offs, want %d", len(got), tc.wantHanded)
			}
			for i, h := range got {
				if m := h.header.Get(contract.HandoffHeader); m != contract.FormatHandoff("hello-00001-deployment-abc", i+1) {
					t.Errorf("hand-off %d carries marker %q", i+1, m)
				}
			}
			if app.Traffic() != 0 {
				t.Errorf("the serving container got %d request(s)", app.Traffic())
			}
		})
	}
}

// Package live serves the timeline of a running podgate as it happens:
// the page of package timeline whose picture and panel of pods,
// containers and probe states the server replaces through Server-Sent
// Events, from the facts of a record.Log. No external asset: the page
// is whole as served.
package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/podgate/podgate/internal/loopback"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/timeline"
	"github.com/podgate/podgate/record/timeline/render"
)

// Timing of the updates a watcher gets.
const (
	// minGap bounds how often a picture is sent while facts pour in:
	// rendering is linear in the facts kept.
	minGap = 200 * time.Millisecond
	// refresh is how often a picture is sent without new facts, so the
	// open spans grow with the clock.
	refresh = time.Second
)

// Handler serves the live view: GET / the page, GET /events the stream of
// pictures. Close ends the streams.
type Handler struct {
	log    *record.Log
	header record.Header
	now    func() time.Time

	mu      sync.Mutex
	streams sync.WaitGroup
	stop    chan struct{}
	closed  bool
}

// NewHandler serves the facts of log; header names the run (its Started
// is where the axis begins, now when unset).
func NewHandler(log *record.Log, header record.Header) *Handler {
	if header.Started.IsZero() {
		header.Started = time.Now()
	}
	return &Handler{log: log, header: header, now: time.Now, stop: make(chan struct{})}
}

// ServeHTTP serves the page and its event stream.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		title := "podgate timeline (live)"
		if h.header.Source != "" {
			title += " — " + h.header.Source
		}
		_ = render.LivePage(w, title, "events")
	case "/events":
		h.serveEvents(w, r)
	case "/favicon.ico":
		// Browsers ask; the page has no icon, and a 404 is a console error.
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// serveEvents sends a picture now, then after every change (at most one
// per minGap) and at least once a second, until the client goes or the
// handler closes.
func (h *Handler) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	h.streams.Add(1)
	h.mu.Unlock()
	defer h.streams.Done()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	tick := time.NewTicker(refresh)
	defer tick.Stop()
	for {
		facts, _, changed := h.log.Since(0)
		if err := h.send(w, facts); err != nil {
			return
		}
		flusher.Flush()
		// A short pause first: a burst of facts becomes one picture.
		pause := time.NewTimer(minGap)
		select {
		case <-r.Context().Done():
			pause.Stop()
			return
		case <-h.stop:
			pause.Stop()
			return
		case <-pause.C:
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.stop:
			return
		case <-changed:
		case <-tick.C:
		}
	}
}

// frame is one Server-Sent Event's data: what the page replaces.
type frame struct {
	SVG   string `json:"svg"`
	Panel string `json:"panel"`
	Meta  string `json:"meta"`
	Facts int    `json:"facts"`
}

func (h *Handler) send(w http.ResponseWriter, facts []record.Fact) error {
	o := timeline.Options{Now: h.now()}
	m, err := timeline.Build(h.header, facts, o)
	if err != nil {
		return err
	}
	var svg, panel strings.Builder
	if err := render.SVG(&svg, m, o); err != nil {
		return err
	}
	if err := render.Panel(&panel, m); err != nil {
		return err
	}
	data, err := json.Marshal(frame{SVG: svg.String(), Panel: panel.String(), Meta: render.Meta(m, o), Facts: len(facts)})
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "event: render\ndata: %s\n\n", data)
	return err
}

// Close ends every event stream and waits for them.
func (h *Handler) Close() {
	h.end()
	h.streams.Wait()
}

// end tells the streams to end and refuses new ones.
func (h *Handler) end() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.stop)
	}
}

// Server is the live view on its own listener.
type Server struct {
	ln      net.Listener
	handler *Handler
	srv     *http.Server
	done    chan error
}

// Listen takes addr, which must be on loopback (the view has no
// authentication), for the live view of log.
func Listen(addr string, log *record.Log, header record.Header) (*Server, error) {
	checked, err := loopback.Check(addr)
	if err != nil {
		return nil, fmt.Errorf("--ui %q: %w (e.g. 127.0.0.1:9800; port 0 picks a free one)", addr, err)
	}
	ln, err := net.Listen("tcp", checked)
	if err != nil {
		return nil, fmt.Errorf("timeline view: %w", err)
	}
	h := NewHandler(log, header)
	s := &Server{ln: ln, handler: h, done: make(chan error, 1),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is where the view listens.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// URL is the view's address for a browser.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Close ends the streams, closes the listener and every connection, and
// waits for the server.
func (s *Server) Close() error {
	s.handler.end()
	err := s.srv.Close()
	s.handler.Close()
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

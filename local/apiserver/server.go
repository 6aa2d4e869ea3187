package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/loopback"
	"github.com/podgate/podgate/local/apiserver/resources"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/local/printers"
	"github.com/podgate/podgate/local/servingv1"
)

// DefaultAddr is where `podgate run` serves the control API.
const DefaultAddr = contract.APIAddr

// Config wires a Server to the state it serves.
type Config struct {
	// Store is read for every GET and watch. Required.
	Store *objstore.Store
	// Pods, when set, is told of every pod DELETE (see PodDeleter); nil
	// leaves deletion to the store alone (a kubelet watching its pods
	// terminates the ones that get a deletionTimestamp).
	Pods PodDeleter
	// Logs serves pod logs; nil answers .../log with 405.
	Logs LogSource
	// Logger reports server-side failures; nil discards them.
	Logger *slog.Logger
	// BookmarkInterval is how often a watch with allowWatchBookmarks=true
	// gets a BOOKMARK (default DefaultBookmarkInterval).
	BookmarkInterval time.Duration
	// Clock is what the AGE cells of Tables count from; nil: the real
	// clock.
	Clock clock.PassiveClock
}

// DefaultBookmarkInterval is how often watches get bookmarks: the API
// server sends them about once a minute.
const DefaultBookmarkInterval = time.Minute

// Server is the control API as an http.Handler.
type Server struct {
	cfg Config
	mux *http.ServeMux
	// handling counts requests inside a handler, for Serve's shutdown.
	handling atomic.Int64
}

// NewServer returns a Server for cfg.
func NewServer(cfg Config) *Server {
	if cfg.Store == nil {
		panic("api.NewServer: Config.Store is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.BookmarkInterval == 0 {
		cfg.BookmarkInterval = DefaultBookmarkInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	s := &Server{cfg: cfg, mux: http.NewServeMux()}
	st, log, every, now := cfg.Store, cfg.Logger, cfg.BookmarkInterval, cfg.Clock.Now
	mount(s.mux, &collection[*corev1.Pod]{res: resources.Pods, store: st.Pods, selectable: podFields, fieldSet: podFieldSet, log: log, bookmarkEvery: every,
		table: printers.PodTable, now: now,
		writes: writes[*corev1.Pod]{create: true, update: podSpecUpdate, status: podStatusUpdate, patchSchema: corev1.Pod{}}},
		map[string]http.HandlerFunc{http.MethodDelete: s.deletePod})
	mount(s.mux, &collection[*corev1.Event]{res: resources.Events, store: st.Events, selectable: eventFields, fieldSet: eventFieldSet, log: log, bookmarkEvery: every,
		table: printers.EventTable, now: now,
		writes: writes[*corev1.Event]{create: true, update: replaceAll[*corev1.Event], patchSchema: corev1.Event{}}}, nil)
	mount(s.mux, &collection[*discoveryv1.EndpointSlice]{res: resources.EndpointSlices, store: st.EndpointSlices, selectable: metadataFields, fieldSet: endpointSliceFieldSet, log: log, bookmarkEvery: every,
		table: printers.EndpointSliceTable, now: now}, nil)
	mount(s.mux, &collection[*servingv1.Service]{res: resources.Services, store: st.Services, selectable: metadataFields, fieldSet: serviceFieldSet, itemsTyped: true, log: log, bookmarkEvery: every,
		table: printers.ServiceTable, now: now}, nil)
	s.mux.HandleFunc(resources.Pods.Path("{ns}", "{name}")+"/log", s.methods(schema.GroupResource{Resource: "pods/log"},
		map[string]http.HandlerFunc{http.MethodGet: s.podLogs}))
	s.mountDiscovery()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, log, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
			Message: fmt.Sprintf("the server could not find the requested resource (%s %s)", r.Method, r.URL.Path),
		}})
	})
	return s
}

// mount routes the collection's list, namespaced list and object paths,
// and its status subresource; objectExtra adds methods on the object path
// (DELETE for pods).
func mount[T objstore.Object](mux *http.ServeMux, c *collection[T], objectExtra map[string]http.HandlerFunc) {
	gr := c.res.GroupResource()
	list := map[string]http.HandlerFunc{http.MethodGet: c.list}
	mux.HandleFunc(c.res.Path("", ""), methods(c.log, gr, list))
	nsList := map[string]http.HandlerFunc{http.MethodGet: c.list}
	if c.writes.create {
		nsList[http.MethodPost] = c.createObject
	}
	mux.HandleFunc(c.res.Path("{ns}", ""), methods(c.log, gr, nsList))
	object := map[string]http.HandlerFunc{http.MethodGet: c.get}
	if c.writes.update != nil {
		object[http.MethodPut] = c.updateObject
		object[http.MethodPatch] = c.patchObject
	}
	for m, h := range objectExtra {
		object[m] = h
	}
	mux.HandleFunc(c.res.Path("{ns}", "{name}"), methods(c.log, gr, object))
	if c.writes.status != nil {
		status := schema.GroupResource{Group: gr.Group, Resource: gr.Resource + "/status"}
		mux.HandleFunc(c.res.Path("{ns}", "{name}")+"/status", methods(c.log, status, map[string]http.HandlerFunc{
			http.MethodGet: c.get, http.MethodPut: c.updateStatus, http.MethodPatch: c.patchStatus}))
	}
}

// podSpecUpdate is a PUT or PATCH of a pod: everything but the status,
// which only the status subresource changes.
func podSpecUpdate(cur, in *corev1.Pod) *corev1.Pod {
	in.Status = cur.Status
	return in
}

// podStatusUpdate is a PUT or PATCH of pods/{name}/status: the status (and
// nothing else) of the client's version.
func podStatusUpdate(cur, in *corev1.Pod) *corev1.Pod {
	out := cur.DeepCopy()
	out.Status = in.Status
	return out
}

func replaceAll[T objstore.Object](_, in T) T { return in }

// methods dispatches on the method and answers others with the API
// server's 405 Status (ServeMux's own 405 would be plain text).
func methods(log *slog.Logger, gr schema.GroupResource, byMethod map[string]http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m := r.Method
		if m == http.MethodHead {
			m = http.MethodGet
		}
		h, ok := byMethod[m]
		if !ok {
			writeError(w, log, apierrors.NewMethodNotSupported(gr, strings.ToLower(r.Method)))
			return
		}
		h(w, r)
	}
}

func (s *Server) methods(gr schema.GroupResource, byMethod map[string]http.HandlerFunc) http.HandlerFunc {
	return methods(s.cfg.Logger, gr, byMethod)
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.handling.Add(1)
	defer s.handling.Add(-1)
	if !acceptsJSON(r) {
		writeError(w, s.cfg.Logger, apierrors.NewGenericServerResponse(http.StatusNotAcceptable, r.Method, schema.GroupResource{}, "",
			fmt.Sprintf("only application/json is served, not %q", r.Header.Get("Accept")), 0, false))
		return
	}
	s.mux.ServeHTTP(w, r)
}

// acceptsJSON reports whether the client takes a JSON answer: podgate
// speaks no protobuf or CBOR. A client that lists only those gets 406.
// Logs are plain text whatever the Accept says, as the API server's are.
func acceptsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if accept == "" || strings.HasSuffix(r.URL.Path, "/log") {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json", "*/*", "application/*", "application/json-seq":
			return true
		}
	}
	return false
}

// Serve answers requests on ln until ctx is done, then ends open watches
// and log streams and shuts down (waiting up to 5 s for handlers to
// return). It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base, stopStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer stopStreams()
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("control API on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	// Watches and followed logs never go idle: end them first, or Shutdown
	// would wait for them.
	stopStreams()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(shutdownCtx) }()
	err := s.awaitShutdown(shut, hs)
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// awaitShutdown waits for hs.Shutdown (whose result comes on shut) and
// cuts it short once no handler runs: net/http counts a connection that
// has not sent a request yet as busy for its first 5 s, and client-go
// dials such spare connections (discovery asks several group versions at
// once), so Shutdown alone would hold `podgate run`'s exit for seconds
// with nothing left to answer.
func (s *Server) awaitShutdown(shut <-chan error, hs *http.Server) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-shut:
			if err != nil {
				return errors.Join(fmt.Errorf("control API shutdown: %w", err), hs.Close())
			}
			return nil
		case <-tick.C:
			if s.handling.Load() == 0 {
				err := hs.Close()
				<-shut
				return err
			}
		}
	}
}

// Listen opens addr for the control API. It refuses any address that is not
// loopback: the API has no authentication and can delete pods.
func Listen(addr string) (net.Listener, error) {
	checked, err := loopback.Check(addr)
	if err != nil {
		return nil, fmt.Errorf("control API address %q: %w (the control API has no authentication; e.g. %s)", addr, err, DefaultAddr)
	}
	ln, err := net.Listen("tcp", checked)
	if err != nil {
		return nil, fmt.Errorf("control API: %w", err)
	}
	return ln, nil
}

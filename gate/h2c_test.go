package gate

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/testapp"
)

// protoServer is a real HTTP server that records the protocol of every
// request it answers: "ok" on /healthz, the protocol and body elsewhere.
type protoServer struct {
	addr string
	srv  *http.Server
	done chan struct{}

	mu     sync.Mutex
	protos map[string][]string // path → protocols seen
}

// startProtoServer serves HTTP/1.1, h2c (HTTP/2 with prior knowledge), or
// both. A server without HTTP/1.1 closes an HTTP/1.1 connection
// unanswered.
func startProtoServer(t testing.TB, http1, h2c bool) *protoServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &protoServer{addr: ln.Addr().String(), done: make(chan struct{}), protos: map[string][]string{}}
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(h2c)
	protos.SetHTTP1(http1)
	s.srv = &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.protos[r.URL.Path] = append(s.protos[r.URL.Path], r.Proto)
		s.mu.Unlock()
		if r.URL.Path == "/healthz" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Proto+" "+string(b))
	})}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		_ = s.srv.Shutdown(context.Background())
		<-s.done
	})
	return s
}

func (s *protoServer) seen(path string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.protos[path]...)
}

// TestHTTP2AutoDetection: with ENABLE_HTTP2_AUTO_DETECTION=true, a
// container that speaks only h2c passes its HTTP readiness probe (tried
// as h2c first, as queue-proxy does) and gets HTTP/1.1 clients' traffic
// over h2c; without it, such a container is never ready, as with
// queue-proxy. An HTTP/1.1 container is unaffected either way.
func TestHTTP2AutoDetection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		detect    bool
		container string // h2c-only, http1-only, both
		sidecar   bool   // the probed container is a sidecar, not the serving one
		wantReady bool
		wantProto string // of an HTTP/1.1 client's request at the serving container
	}{
		{"an h2c-only serving container is ready and gets HTTP/1.1 traffic as h2c", true, "h2c-only", false, true, "HTTP/2.0"},
		{"without auto-detection an h2c-only serving container is never ready", false, "h2c-only", false, false, ""},
		{"an HTTP/1.1 serving container stays HTTP/1.1 with auto-detection", true, "http1-only", false, true, "HTTP/1.1"},
		{"an HTTP/1.1 serving container without auto-detection", false, "http1-only", false, true, "HTTP/1.1"},
		{"a serving container that speaks both still gets HTTP/1.1", true, "both", false, true, "HTTP/1.1"},
		{"an h2c-only sidecar is ready with auto-detection", true, "h2c-only", true, true, ""},
		{"an h2c-only sidecar is never ready without it", false, "h2c-only", true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := startProtoServer(t, tc.container != "h2c-only", tc.container != "http1-only")
			probed, serving := ps.addr, ps.addr
			if tc.sidecar {
				serving = startApp(t, testapp.Config{Name: "app"}).Addr()
			}
			cfg := gateConfig(t, serving)
			cfg.HTTP2AutoDetection = tc.detect
			cfg.ReadinessProbes = []*corev1.Probe{httpProbe(portOf(t, probed), "/healthz", 0)}
			if tc.sidecar {
				cfg.MultiContainerProbes = true
				cfg.ReadinessContainers = []string{"app", "side"}
				cfg.ReadinessProbes = []*corev1.Probe{tcpProbe(portOf(t, serving), 0), cfg.ReadinessProbes[0]}
			}
			tg := startGate(t, cfg, Options{})
			probedName := tg.agg.Report()[len(cfg.ReadinessProbes)-1].Name
			if !tc.wantReady {
				// The probe has failed a few times and the pod is not ready.
				eventually(t, "three probe attempts", func() bool {
					for _, r := range tg.agg.Report() {
						if r.Name == probedName {
							return r.Attempts >= 3
						}
					}
					return false
				})
				if tg.Ready() {
					t.Fatal("ready, want not ready")
				}
				for _, r := range tg.agg.Report() {
					if r.Name == probedName && r.LastResult != probe.Failure.String() {
						t.Errorf("last probe of %s: %s %q, want a failure", r.Name, r.LastResult, r.LastMessage)
					}
				}
				return
			}
			tg.waitReady(t, true)
			wantProbe := "HTTP/1.1"
			if tc.container == "h2c-only" {
				wantProbe = "HTTP/2.0"
			}
			if seen := ps.seen("/healthz"); len(seen) == 0 || seen[len(seen)-1] != wantProbe {
				t.Errorf("probes came as %v, the last want %s", seen, wantProbe)
			}
			if tc.wantProto == "" {
				return
			}
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				code, body, _ := tg.do(t, method, tg.url("/hello"), strings.NewReader("payload"), nil)
				if want := tc.wantProto + " payload"; code != http.StatusOK || body != want {
					t.Errorf("%s through the gate: %d %q, want 200 %q", method, code, body, want)
				}
			}
		})
	}
}

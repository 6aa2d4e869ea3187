package readiness

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/test/testapp"
)

// protoServer is a real HTTP server that answers "ok" and records the
// protocol of every request.
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
		_, _ = io.WriteString(w, "ok")
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
// container that speaks only h2c passes its HTTP readiness probe (over
// h2c, as queue-proxy tries it), and a serving container found so is
// said to speak h2c only, so the gate sends it traffic over h2c; without
// it, such a container is never ready, as with queue-proxy. An HTTP/1.1
// container is probed over HTTP/1.1 either way, and one that speaks both
// too.
func TestHTTP2AutoDetection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		detect    bool
		container string // h2c-only, http1-only, both
		sidecar   bool   // the probed container is a sidecar, not the serving one
		wantReady bool
		wantH2C   bool // ServingSpeaksH2C
	}{
		{"an h2c-only serving container is ready and speaks h2c only", true, "h2c-only", false, true, true},
		{"without auto-detection an h2c-only serving container is never ready", false, "h2c-only", false, false, false},
		{"an HTTP/1.1 serving container stays HTTP/1.1 with auto-detection", true, "http1-only", false, true, false},
		{"an HTTP/1.1 serving container without auto-detection", false, "http1-only", false, true, false},
		{"a serving container that speaks both still speaks HTTP/1.1", true, "both", false, true, false},
		{"an h2c-only sidecar is ready with auto-detection", true, "h2c-only", true, true, false},
		{"an h2c-only sidecar is never ready without it", false, "h2c-only", true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := startProtoServer(t, tc.container != "h2c-only", tc.container != "http1-only")
			probed := httpProbe(portOf(t, ps.addr), "/healthz", 0)
			containers := []Container{{Name: "app", Probe: probed, Serving: true}}
			userPort := portOf(t, ps.addr)
			if tc.sidecar {
				app := startApp(t, testapp.Config{Name: "app"})
				userPort = portOf(t, app.Addr())
				containers = []Container{{Name: "app", Probe: tcpProbe(userPort, 0), Serving: true}, {Name: "side", Probe: probed}}
			}
			a := start(t, containers, Options{UserPort: userPort, HTTP2AutoDetection: tc.detect})
			probedName := containers[len(containers)-1].Name
			if !tc.wantReady {
				// The probe has failed a few times and the pod is not ready.
				eventually(t, "three probe attempts", func() bool { return a.report(t, probedName).Attempts >= 3 })
				if a.Ready() {
					t.Fatal("ready, want not ready")
				}
				if r := a.report(t, probedName); r.LastResult != probe.Failure.String() {
					t.Errorf("last probe of %s: %s %q, want a failure", r.Name, r.LastResult, r.LastMessage)
				}
				return
			}
			a.waitReady(t, true)
			wantProbe := "HTTP/1.1"
			if tc.container == "h2c-only" {
				wantProbe = "HTTP/2.0"
			}
			if seen := ps.seen("/healthz"); len(seen) == 0 || seen[len(seen)-1] != wantProbe {
				t.Errorf("probes came as %v, the last want %s", seen, wantProbe)
			}
			if got := a.ServingSpeaksH2C(); got != tc.wantH2C {
				t.Errorf("ServingSpeaksH2C() = %v, want %v", got, tc.wantH2C)
			}
		})
	}
}

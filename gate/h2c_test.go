package gate

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// startProtoServer runs a real HTTP server until the test ends that
// speaks HTTP/1.1, h2c (HTTP/2 with prior knowledge), or both, and answers
// "ok" on /healthz, the request's protocol and body elsewhere. A server
// without HTTP/1.1 closes an HTTP/1.1 connection unanswered. It returns
// the server's address.
func startProtoServer(t testing.TB, http1, h2c bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(h2c)
	protos.SetHTTP1(http1)
	srv := &http.Server{Protocols: &protos, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, r.Proto+" "+string(b))
	})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		<-done
	})
	return ln.Addr().String()
}

// TestHTTP2AutoDetection: with ENABLE_HTTP2_AUTO_DETECTION=true, a
// serving container that speaks only h2c gets HTTP/1.1 clients' traffic
// over h2c once its readiness probe passed over h2c (package readiness
// pins the probing); a container that speaks HTTP/1.1 gets HTTP/1.1
// whether or not it speaks h2c too, with auto-detection or without.
func TestHTTP2AutoDetection(t *testing.T) {
	for _, tc := range []struct {
		name      string
		detect    bool
		container string // h2c-only, http1-only, both
		wantProto string // of an HTTP/1.1 client's request at the serving container
	}{
		{"an h2c-only serving container is ready and gets HTTP/1.1 traffic as h2c", true, "h2c-only", "HTTP/2.0"},
		{"an HTTP/1.1 serving container stays HTTP/1.1 with auto-detection", true, "http1-only", "HTTP/1.1"},
		{"an HTTP/1.1 serving container without auto-detection", false, "http1-only", "HTTP/1.1"},
		{"a serving container that speaks both still gets HTTP/1.1", true, "both", "HTTP/1.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := startProtoServer(t, tc.container != "h2c-only", tc.container != "http1-only")
			cfg := gateConfig(t, addr)
			cfg.HTTP2AutoDetection = tc.detect
			cfg.ReadinessProbes = []*corev1.Probe{httpProbe(portOf(t, addr), "/healthz", 0)}
			tg := startGate(t, cfg, Options{})
			tg.waitReady(t, true)
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				code, body, _ := tg.do(t, method, tg.url("/hello"), strings.NewReader("payload"), nil)
				if want := tc.wantProto + " payload"; code != http.StatusOK || body != want {
					t.Errorf("%s through the gate: %d %q, want 200 %q", method, code, body, want)
				}
			}
		})
	}
}

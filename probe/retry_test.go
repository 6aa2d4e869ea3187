package probe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// breakBody answers with a Content-Length it does not honour, then closes
// the connection: the client gets the headers and an unexpected EOF.
func breakBody(t *testing.T, w http.ResponseWriter) {
	conn, buf, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort")
	_ = buf.Flush()
	_ = conn.Close()
}

func TestHTTPHeaderTimeoutIsAFailure(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // never answers; the probe gives up
	}))
	defer s.Close()
	_, port := hostPort(t, s.URL)

	o := run(t, withTimeout(httpGetProbe(intstr.FromInt32(int32(port)), "/slow"), 1), Target{PodIP: "127.0.0.1"})
	want := fmt.Sprintf(`Get "http://127.0.0.1:%d/slow": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, port)
	if o.Result != Failure || o.Message != want || o.Attempts != 1 {
		t.Errorf("got %v %q after %d attempts, want failure %q after 1", o.Result, o.Message, o.Attempts, want)
	}
}

func TestHTTPBodyErrorIsAProbeError(t *testing.T) {
	t.Parallel()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/eof":
			breakBody(t, w)
		case "/stall":
			w.Header().Set("Content-Length", "100")
			_, _ = w.Write([]byte("partial"))
			http.NewResponseController(w).Flush()
			<-r.Context().Done()
		}
	}))
	t.Cleanup(s.Close) // the subtests run after this function returns
	_, port := hostPort(t, s.URL)

	tests := []struct{ name, path, wantErr string }{
		{"a body that breaks off is an error, retried", "/eof", "unexpected EOF"},
		{"a body still arriving at the timeout is an error, retried", "/stall", "Client.Timeout or context cancellation while reading body"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := run(t, withTimeout(httpGetProbe(intstr.FromInt32(int32(port)), tc.path), 1), Target{PodIP: "127.0.0.1"})
			if o.Result != Error || o.Attempts != MaxAttempts || o.Err == nil || !strings.Contains(o.Err.Error(), tc.wantErr) {
				t.Errorf("got %v (err %v) after %d attempts, want error containing %q after %d", o.Result, o.Err, o.Attempts, tc.wantErr, MaxAttempts)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	var hits atomic.Int32
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := hits.Add(1)
		switch r.URL.Path {
		case "/third-time-lucky":
			if n <= 2 {
				breakBody(t, w)
				return
			}
			_, _ = w.Write([]byte("ok"))
		case "/always-broken":
			breakBody(t, w)
		case "/fail":
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer s.Close()
	_, port := hostPort(t, s.URL)

	tests := []struct {
		name     string
		path     string
		want     Result
		attempts int
	}{
		{"errored attempts are retried at once within the tick", "/third-time-lucky", Success, 3},
		{"three errors in a row drop the result", "/always-broken", Error, 3},
		{"failures are not retried", "/fail", Failure, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits.Store(0)
			o := run(t, httpGetProbe(intstr.FromInt32(int32(port)), tc.path), Target{PodIP: "127.0.0.1"})
			if o.Result != tc.want || o.Attempts != tc.attempts || int(hits.Load()) != tc.attempts {
				t.Errorf("got %v after %d attempts (%d requests), want %v after %d", o.Result, o.Attempts, hits.Load(), tc.want, tc.attempts)
			}
		})
	}
}

func TestRunEndsWithAnErrorWhenTheWorkerStops(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // the worker stops while the request is in flight
		<-r.Context().Done()
	}))
	defer s.Close()
	_, port := hostPort(t, s.URL)
	p := httpGetProbe(intstr.FromInt32(int32(port)), "/")
	p.TimeoutSeconds = 60

	o := runner.Run(ctx, p, Target{PodIP: "127.0.0.1"})
	if o.Result != Error || !errors.Is(o.Err, context.Canceled) || o.Attempts != 1 {
		t.Errorf("got %v (err %v) after %d attempts, want a discarded error after 1", o.Result, o.Err, o.Attempts)
	}
}

func TestAProbeWithoutHandlerIsAnError(t *testing.T) {
	for _, p := range []*corev1.Probe{nil, {}} {
		o := run(t, p, Target{PodIP: "127.0.0.1"})
		if o.Result != Error || o.Message != "missing probe handler" || o.Attempts != MaxAttempts {
			t.Errorf("got %v %q after %d attempts", o.Result, o.Message, o.Attempts)
		}
	}
}

func TestKubeletVersionNamesTheUserAgent(t *testing.T) {
	if got, want := NewRunner().UserAgent(), "kube-probe/1.37"; got != want {
		t.Errorf("default User-Agent = %q, want %q", got, want)
	}
	r := NewRunner(WithKubeletVersion("1.36"))
	s := newRawServer(t)
	o := r.Run(context.Background(), httpGetProbe(intstr.FromInt32(int32(s.port())), "/"), Target{PodIP: "127.0.0.1"})
	if o.Result != Success {
		t.Fatalf("result = %v (%s)", o.Result, o.Message)
	}
	if got := headerValues(<-s.heads, "User-Agent"); len(got) != 1 || got[0] != "kube-probe/1.36" {
		t.Errorf("User-Agent sent = %q, want kube-probe/1.36", got)
	}
}

func TestAttemptDoesNotRetry(t *testing.T) {
	o := runner.Attempt(context.Background(), httpGetProbe(intstr.FromString("nope"), "/"), Target{PodIP: "127.0.0.1"}, 100*time.Millisecond)
	if o.Result != Error || o.Attempts != 1 {
		t.Errorf("got %v after %d attempts, want error after 1", o.Result, o.Attempts)
	}
}

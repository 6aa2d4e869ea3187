package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/test/queueenv"
)

// startKnativeGate starts bin with rev's environment plus extra
// (PODGATE_* moves of fixed ports) in front of an app that answers
// "hello", and waits until a request through the gate reaches it.
func startKnativeGate(t *testing.T, bin string, rev queueenv.Revision, extra ...string) *queueGate {
	t.Helper()
	app, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello") })}
	go func() { _ = srv.Serve(app) }()
	t.Cleanup(func() { _ = srv.Close() })
	rev.UserPort = app.Addr().(*net.TCPAddr).Port
	g := startQueueGate(t, bin, rev, extra...)
	g.poll(t, "a request through the gate reaches the app", func() (bool, string) {
		code, body, err := g.send("/", nil)
		return err == nil && code == http.StatusOK && body == "hello", fmt.Sprintf("%d %q %v", code, body, err)
	})
	return g
}

// send GETs path through the gate with the headers h.
func (g *queueGate) send(path string, h http.Header) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, g.url+path, nil)
	if err != nil {
		return 0, "", err
	}
	for k, v := range h {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// rev is a revision's identity as the tests' pods have it.
func rev() queueenv.Revision {
	return queueenv.Revision{Namespace: "default", Service: "hello", Configuration: "hello", Revision: "hello-00001", Pod: "hello-00001-deployment-7d9c-x2x4q", HostIP: "127.0.0.1"}
}

func TestTheGateReadsKnativesObservabilityConfig(t *testing.T) {
	bin := gateBinary(t)

	t.Run("a custom request log template is run as Knative runs it; probes are not logged unless asked", func(t *testing.T) {
		r := rev()
		r.ObservabilityConfig = `{"enableRequestLog":true,"requestLogTemplate":"{{.Request.Method}} {{.Request.RequestURI}} {{.Response.Code}} {{.Revision.Name}} {{.Revision.Namespace}} {{.Revision.PodName}} trace={{.TraceID}}"}`
		g := startKnativeGate(t, bin, r)
		if code, _, err := g.send("/hello?x=1", http.Header{"Traceparent": {"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}}); err != nil || code != 200 {
			t.Fatalf("GET: %d %v", code, err)
		}
		if code, _, err := g.send("/", http.Header{"K-Network-Probe": {"queue"}, "User-Agent": {"Knative-Activator-Probe"}}); err != nil || code != 200 {
			t.Fatalf("health check: %d %v", code, err)
		}
		if code, _, err := g.send("/b3", http.Header{"X-B3-Traceid": {"80f198ee56343ba864fe8b2a57d3eff7"}}); err != nil || code != 200 {
			t.Fatalf("GET: %d %v", code, err)
		}
		want := "GET /hello?x=1 200 hello-00001 default hello-00001-deployment-7d9c-x2x4q trace=4bf92f3577b34da6a3ce929d0e0e4736\n" +
			"GET /b3 200 hello-00001 default hello-00001-deployment-7d9c-x2x4q trace=80f198ee56343ba864fe8b2a57d3eff7\n"
		// startKnativeGate's requests come first; the health check is absent.
		deadline := time.Now().Add(10 * time.Second)
		for !strings.HasSuffix(g.stdout.String(), want) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if out := g.stdout.String(); !strings.HasSuffix(out, want) || strings.Contains(out, "Knative-Activator-Probe") {
			t.Errorf("request log:\n%s\nwant it to end with:\n%s", out, want)
		}
	})

	t.Run("probe requests are logged with enableProbeRequestLog", func(t *testing.T) {
		r := rev()
		r.ObservabilityConfig = `{"enableRequestLog":true,"enableProbeRequestLog":true,"requestLogTemplate":"{{.Request.UserAgent}} {{.Response.Code}}"}`
		g := startKnativeGate(t, bin, r)
		if code, _, err := g.send("/", http.Header{"K-Network-Probe": {"queue"}, "User-Agent": {"Knative-Activator-Probe"}}); err != nil || code != 200 {
			t.Fatalf("health check: %d %v", code, err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(g.stdout.String(), "Knative-Activator-Probe 200\n") && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if out := g.stdout.String(); !strings.Contains(out, "Knative-Activator-Probe 200\n") {
			t.Errorf("request log %q: want the health check's line", out)
		}
	})

	t.Run("Knative's default configuration logs no request and serves no profiles", func(t *testing.T) {
		port := freePort(t)
		g := startKnativeGate(t, bin, rev(), "PODGATE_PROFILING_PORT="+strconv.Itoa(port))
		if out := g.stdout.String(); out != "" {
			t.Errorf("request log %q, want none", out)
		}
		if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			c.Close()
			t.Errorf("something listens on the profiling port")
		}
	})

	t.Run("profiling enabled serves Go's profiles on the profiling port", func(t *testing.T) {
		port := freePort(t)
		r := rev()
		r.ObservabilityConfig = `{"runtime":{"profiling":"enabled"}}`
		startKnativeGate(t, bin, r, "PODGATE_PROFILING_PORT="+strconv.Itoa(port))
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/goroutine?debug=1", port))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "goroutine profile:") {
			t.Errorf("profile: %s %.200q", resp.Status, b)
		}
	})

	for _, tc := range []struct{ name, config, want string }{
		{"a config that is not JSON stops the gate naming the variable", `{"tracing":`, "OBSERVABILITY_CONFIG: unexpected end of JSON input"},
		{"an unknown exporter stops the gate as it stops queue-proxy", `{"metrics":{"protocol":"carrier-pigeon"}}`, `OBSERVABILITY_CONFIG: metrics.protocol: unsupported value "carrier-pigeon"`},
		{"a template that does not parse stops the gate", `{"requestLogTemplate":"{{.Request"}`, "OBSERVABILITY_CONFIG: requestLogTemplate: template: requestLog:1: unclosed action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rev()
			r.ObservabilityConfig = tc.config
			r.PodIP, r.ServingPort, r.UserPort = "127.0.0.1", freePort(t), freePort(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin)
			cmd.Env = append(r.Env(), "PODGATE_ADMIN_PORT=0", "PODGATE_METRICS_PORT=0", "PODGATE_AUTOSCALER_PORT=0")
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %v, output %q; want exit 1 and %q", err, out, tc.want)
			}
		})
	}
}

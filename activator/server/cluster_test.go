package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
)

const host = service + "." + testNS + ".example.com"

// client is a test's HTTP client to an activator.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 2 * time.Minute}
}

// answers sends n requests for host and counts the bodies (the pod names)
// of the 200s; any other answer fails the test.
func answers(t *testing.T, c *http.Client, s *Server, host string, n int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for range n {
		code, body, err := get(c, s, host)
		if err != nil || code != http.StatusOK {
			t.Fatalf("GET Host %s: %d %q %v, want 200", host, code, body, err)
		}
		out[body]++
	}
	return out
}

// backend is pod's state in s's target for Service web.
func backend(s *Server, pod string) (activator.BackendStatus, bool) {
	st, ok := s.Status(testNS, service)
	if !ok {
		return activator.BackendStatus{}, false
	}
	for _, b := range st.Backends {
		if b.Name == pod {
			return b, true
		}
	}
	return activator.BackendStatus{}, false
}

// waitBackend waits until cond holds of pod in s's target.
func waitBackend(t *testing.T, s *Server, pod, what string, cond func(activator.BackendStatus) bool) time.Duration {
	t.Helper()
	begin := time.Now()
	var last activator.BackendStatus
	err := poll(time.Minute, func() (bool, error) {
		b, ok := backend(s, pod)
		last = b
		return ok && cond(b), nil
	})
	if err != nil {
		t.Fatalf("%s: %s: %v; last %+v", pod, what, err, last)
	}
	return time.Since(begin)
}

func usable(b activator.BackendStatus) bool { return b.Usable }

// toggle turns the test app of pod ready or not (its /readyz).
func toggle(t *testing.T, e *env, pod string, ready bool) {
	t.Helper()
	p, err := e.cs.CoreV1().Pods(testNS).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(fmt.Sprintf("http://%s:8080/toggleReady?set=%v", p.Status.PodIP, ready))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("toggle %s: %s", pod, resp.Status)
	}
}

// bothReady brings web-a and web-b back: apps ready, nothing pinned,
// both usable in s if it has a target open for web.
func bothReady(t *testing.T, e *env, s *Server) {
	t.Helper()
	for _, p := range []string{"web-a", "web-b"} {
		toggle(t, e, p, true)
		e.mirror.unpin(p)
	}
	if err := e.waitEndpoints(map[string]bool{"web-a": true, "web-b": true}); err != nil {
		t.Fatal(err)
	}
	if _, open := s.Status(testNS, service); !open {
		return // the next request makes the target, which checks the gates at once
	}
	for _, p := range []string{"web-a", "web-b"} {
		waitBackend(t, s, p, "usable", usable)
	}
}

func TestTheActivatorRoutesToPodsReadyInBothViews(t *testing.T) {
	e := sharedEnv(t)
	s := e.act
	c := client(t)
	t.Cleanup(func() { bothReady(t, e, s) })

	t.Run("/healthz and /readyz answer ok once the informers listed", func(t *testing.T) {
		for _, path := range []string{PathHealthz, PathReadyz} {
			resp, err := http.Get("http://" + s.MetricsAddr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || string(b) != "ok" {
				t.Errorf("%s: %d %q, want 200 ok", path, resp.StatusCode, b)
			}
		}
	})

	t.Run("the gates write their pod condition as the service account the RoleBinding example grants", func(t *testing.T) {
		for _, name := range []string{"web-a", "web-b"} {
			p, err := e.cs.CoreV1().Pods(testNS).Get(t.Context(), name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			gated := false
			for _, g := range p.Spec.ReadinessGates {
				gated = gated || g.ConditionType == contract.ContainersReadyCondition
			}
			var cond *corev1.PodCondition
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == contract.ContainersReadyCondition {
					cond = &p.Status.Conditions[i]
				}
			}
			if !gated || cond == nil || cond.Status != corev1.ConditionTrue {
				t.Errorf("%s: readiness gate %v, condition %+v; want the gate's condition True", name, gated, cond)
			}
		}
	})

	t.Run("Host web.shop.example.com reaches both ready pods", func(t *testing.T) {
		got := answers(t, c, s, host, 20)
		if got["web-a"] == 0 || got["web-b"] == 0 || got["web-a"]+got["web-b"] != 20 {
			t.Errorf("answers %v, want both pods and nothing else", got)
		}
		// As Knative's router: case, a port and a trailing dot do not matter.
		for _, h := range []string{"WEB.Shop.Example.COM", host + ":80", host + "."} {
			if code, body, err := get(c, s, h); err != nil || code != http.StatusOK {
				t.Errorf("Host %q: %d %q %v, want 200", h, code, body, err)
			}
		}
	})

	t.Run("an endpoint that is not ready gets no traffic though its gate says ready", func(t *testing.T) {
		defer bothReady(t, e, s)
		e.mirror.pin("web-a", false)
		waitBackend(t, s, "web-a", "endpoint not ready, gate ready", func(b activator.BackendStatus) bool {
			return !b.EndpointReady && b.GateReady && !b.Usable
		})
		if got := answers(t, c, s, host, 20); got["web-b"] != 20 {
			t.Errorf("answers %v, want all 20 from web-b", got)
		}
	})

	t.Run("a gate that says not ready gets no traffic though its endpoint is ready", func(t *testing.T) {
		defer bothReady(t, e, s)
		e.mirror.pin("web-a", true)
		toggle(t, e, "web-a", false)
		took := waitBackend(t, s, "web-a", "gate not ready, endpoint ready", func(b activator.BackendStatus) bool {
			return b.EndpointReady && !b.GateReady && !b.Usable
		})
		t.Logf("web-a out of traffic %s after its app turned unready (the gate's probe of the app, then the activator's of the gate)", took.Round(time.Millisecond))
		if got := answers(t, c, s, host, 20); got["web-b"] != 20 {
			t.Errorf("answers %v, want all 20 from web-b", got)
		}
	})

	t.Run("a pod whose app turns unready gets no traffic, and gets it again once ready", func(t *testing.T) {
		defer bothReady(t, e, s)
		toggle(t, e, "web-a", false)
		took := waitBackend(t, s, "web-a", "not usable", func(b activator.BackendStatus) bool { return !b.Usable })
		t.Logf("web-a out of traffic %s after the toggle", took.Round(time.Millisecond))
		if got := answers(t, c, s, host, 20); got["web-b"] != 20 {
			t.Errorf("answers %v, want all 20 from web-b", got)
		}
		// Kubernetes follows: the node marks the pod NotReady, the slice
		// says so.
		if err := e.waitEndpoints(map[string]bool{"web-a": false, "web-b": true}); err != nil {
			t.Fatal(err)
		}
		toggle(t, e, "web-a", true)
		waitBackend(t, s, "web-a", "usable again", usable)
		if got := answers(t, c, s, host, 20); got["web-a"] == 0 {
			t.Errorf("answers %v, want web-a back", got)
		}
	})

	t.Run("with no ready pod requests are held, then released to the first pod that turns ready", func(t *testing.T) {
		defer bothReady(t, e, s)
		short, stopShort, err := e.startActivator(Config{RequestTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer stopShort()
		stopping, stopStopping, err := e.startActivator(Config{ShutdownTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer stopStopping()
		toggle(t, e, "web-a", false)
		toggle(t, e, "web-b", false)
		if err := e.waitEndpoints(map[string]bool{"web-a": false, "web-b": false}); err != nil {
			t.Fatal(err)
		}
		waitBackend(t, s, "web-a", "not usable", func(b activator.BackendStatus) bool { return !b.Usable })
		waitBackend(t, s, "web-b", "not usable", func(b activator.BackendStatus) bool { return !b.Usable })

		type answer struct {
			code int
			body string
			err  error
			at   time.Time
		}
		held := make(chan answer, 3)
		for range 3 {
			go func() {
				code, body, err := get(c, s, host)
				held <- answer{code, body, err, time.Now()}
			}()
		}
		if err := poll(30*time.Second, func() (bool, error) {
			st, _ := s.Status(testNS, service)
			return st.Queued == 3, nil
		}); err != nil {
			t.Fatalf("3 requests held: %v", err)
		}

		// Meanwhile an activator with a 1 s timeout answers 504.
		begin := time.Now()
		code, body, err := get(c, short, host)
		if err != nil || code != http.StatusGatewayTimeout || body != "activator request timeout" {
			t.Errorf("with a 1 s timeout: %d %q %v, want 504 activator request timeout", code, body, err)
		}
		if took := time.Since(begin); took < time.Second || took > 10*time.Second {
			t.Errorf("504 after %s, want the 1 s timeout", took)
		}
		// And an activator that stops answers what it holds with 503
		// once its shutdown timeout has passed.
		gone := make(chan answer, 1)
		go func() {
			code, body, err := get(c, stopping, host)
			gone <- answer{code, body, err, time.Now()}
		}()
		if err := poll(30*time.Second, func() (bool, error) {
			st, _ := stopping.Status(testNS, service)
			return st.Queued == 1, nil
		}); err != nil {
			t.Fatalf("request held by the stopping activator: %v", err)
		}
		begin = time.Now()
		stopStopping()
		a := <-gone
		if a.err != nil || a.code != http.StatusServiceUnavailable || a.body != "activator shutting down" {
			t.Errorf("held while stopping: %d %q %v, want 503 activator shutting down", a.code, a.body, a.err)
		}
		if took := a.at.Sub(begin); took < 500*time.Millisecond {
			t.Errorf("503 %s after the stop began, before the 500 ms shutdown timeout", took)
		}

		select {
		case a := <-held:
			t.Fatalf("a held request returned while no pod is ready: %+v", a)
		default:
		}

		toggle(t, e, "web-b", true)
		ready := time.Now()
		for range 3 {
			select {
			case a := <-held:
				if a.err != nil || a.code != http.StatusOK || a.body != "web-b" {
					t.Errorf("released: %d %q %v, want 200 from web-b", a.code, a.body, a.err)
				}
				t.Logf("released %s after web-b's app turned ready", a.at.Sub(ready).Round(time.Millisecond))
			case <-time.After(time.Minute):
				t.Fatal("held request not released within a minute of web-b turning ready")
			}
		}
	})

	t.Run("an unknown Service gets 404 at once and is not held", func(t *testing.T) {
		for _, tc := range []struct{ name, host, want string }{
			{"no such Service", "nope.shop.example.com", `no Service "nope" with endpoints in namespace "shop"`},
			{"the Service in another namespace", "web.default.example.com", `no Service "web" with endpoints in namespace "default"`},
			{"another domain", "web.shop.example.org", `host "web.shop.example.org" is not NAME.NAMESPACE.example.com`},
			{"no namespace", "web.example.com", `is not NAME.NAMESPACE.example.com`},
			{"a name that is no DNS label", "we_b.shop.example.com", `is not NAME.NAMESPACE.example.com`},
		} {
			t.Run(tc.name, func(t *testing.T) {
				begin := time.Now()
				code, body, err := get(c, s, tc.host)
				if err != nil || code != http.StatusNotFound || !strings.Contains(body, tc.want) {
					t.Errorf("%d %q %v, want 404 with %q", code, body, err, tc.want)
				}
				if took := time.Since(begin); took > 5*time.Second {
					t.Errorf("answered after %s: held?", took)
				}
			})
		}
		if _, open := s.Status(testNS, "nope"); open {
			t.Error("a target was made for an unknown Service")
		}
	})

	t.Run("a route check is answered for a routed Service without opening a target", func(t *testing.T) {
		fresh, stop, err := e.startActivator(Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		check := func(host, hash string) (int, string, string) {
			t.Helper()
			req, err := http.NewRequest(http.MethodGet, "http://"+fresh.Addr().String()+"/", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Host = host
			req.Header.Set("K-Network-Probe", "probe")
			if hash != "" {
				req.Header.Set("K-Network-Hash", hash)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header.Get("K-Network-Hash"), string(body)
		}
		for _, tc := range []struct {
			name, host, hash string
			code             int
			echo, body       string
		}{
			{"a routed Service echoes the hash", host, "h1", http.StatusOK, "h1", ""},
			{"an unknown Service is not routed", "nope.shop.example.com", "h2", http.StatusNotFound, "", `no Service "nope"`},
			{"a check without a hash is refused", host, "", http.StatusBadRequest, "", "K-Network-Hash"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				code, echo, body := check(tc.host, tc.hash)
				if code != tc.code || echo != tc.echo || !strings.Contains(body, tc.body) {
					t.Errorf("%d hash %q %q, want %d hash %q and %q", code, echo, body, tc.code, tc.echo, tc.body)
				}
			})
		}
		if n := fresh.Targets(); n != 0 {
			t.Errorf("%d targets open after route checks alone, want 0: a check must not start health checks", n)
		}
		if m := scrape(t, fresh); m[`podgate_activator_requests_total{code="200",target="shop/web"}`] != 0 {
			t.Error("a route check was counted as a request")
		}
	})

	t.Run("a target closes when idle and opens again with the next request", func(t *testing.T) {
		idle, stop, err := e.startActivator(Config{IdleTimeout: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer stop()
		if got := answers(t, c, idle, host, 4); len(got) == 0 {
			t.Fatal("no answer")
		}
		if idle.Targets() != 1 {
			t.Fatalf("%d targets open after a request, want 1", idle.Targets())
		}
		begin := time.Now()
		if err := poll(30*time.Second, func() (bool, error) { return idle.Targets() == 0, nil }); err != nil {
			t.Fatalf("target still open: %v", err)
		}
		t.Logf("closed %s after its last request (idle timeout 1 s)", time.Since(begin).Round(time.Millisecond))
		m := scrape(t, idle)
		if v := m[`podgate_activator_targets`]; v != 0 {
			t.Errorf("podgate_activator_targets %v after the close, want 0", v)
		}
		if _, ok := m[`podgate_activator_backends{target="shop/web"}`]; ok {
			t.Error("the closed target's gauges are still exported")
		}
		if m[`podgate_activator_requests_total{code="200",target="shop/web"}`] != 4 {
			t.Errorf("request count after the close: %v, want the 4 kept", m[`podgate_activator_requests_total{code="200",target="shop/web"}`])
		}
		if got := answers(t, c, idle, host, 2); len(got) == 0 || idle.Targets() != 1 {
			t.Errorf("after the close: answers %v, %d targets", got, idle.Targets())
		}
	})

	t.Run("metrics are scraped and parsed", func(t *testing.T) {
		m := scrape(t, s)
		for series, want := range map[string]func(float64) bool{
			`podgate_activator_requests_total{code="200",target="shop/web"}`: func(v float64) bool { return v >= 50 },
			`podgate_activator_backends{target="shop/web"}`:                  func(v float64) bool { return v == 2 },
			`podgate_activator_backends_ready{target="shop/web"}`:            func(v float64) bool { return v == 2 },
			`podgate_activator_queue_depth{target="shop/web"}`:               func(v float64) bool { return v == 0 },
			`podgate_activator_targets`:                                      func(v float64) bool { return v == 1 },
			`podgate_activator_unknown_requests_total{reason="service"}`:     func(v float64) bool { return v >= 2 },
			`podgate_activator_unknown_requests_total{reason="host"}`:        func(v float64) bool { return v >= 3 },
			`go_goroutines`: func(v float64) bool { return v > 0 },
		} {
			if v, ok := m[series]; !ok || !want(v) {
				t.Errorf("%s = %v (present %v)", series, v, ok)
			}
		}
	})
}

// scrape reads s's /metrics with Prometheus' text parser, flattened to
// name{labels} → value.
func scrape(t *testing.T, s *Server) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + s.MetricsAddr().String() + PathMetrics)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	out := map[string]float64{}
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(labels)
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			out[key] = m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
		}
	}
	return out
}

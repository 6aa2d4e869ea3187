package activator

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/podgate/podgate/record"
)

// brief is a routing or request fact as the tests compare it: the
// decision or status, the pod, and what was held.
func brief(f record.Fact) string {
	switch {
	case f.Route != nil:
		s := fmt.Sprintf("route %s pod=%q", f.Route.Decision, f.Pod)
		if f.Route.Held > 0 {
			s += " held=" + f.Route.Held.String()
		}
		return s
	case f.Request != nil:
		s := fmt.Sprintf("request %s %s %d pod=%q", f.Request.Method, f.Request.Path, f.Request.Status, f.Pod)
		if f.Request.Error != "" {
			s += " error=" + f.Request.Error
		}
		return s
	}
	return string(f.Kind)
}

// TestTheRecorderHearsEveryDecisionAndRequest: with Config.Recorder, one
// request's decisions (routed; held then released; held then timed out)
// and its end, all naming the request's ID, the target and its
// namespace, with the fake clock's times; and when the pod came into
// routing and left it (pod-in, pod-out: no request's).
func TestTheRecorderHearsEveryDecisionAndRequest(t *testing.T) {
	const timeout = 30 * time.Second
	for _, tc := range []struct {
		name string
		// run sends one request while the target has gate a, and
		// returns once it is answered.
		run  func(h *harness, a *testGate) result
		code int
		want []string
	}{
		{
			name: "a ready pod: routed",
			run: func(h *harness, a *testGate) result {
				h.target.Update([]Pod{a.pod(true, false)})
				h.probed(1, a)
				return h.get()
			},
			code: http.StatusOK,
			want: []string{`route pod-in pod="a"`, `route routed pod="a"`, `request GET /x 200 pod="a"`},
		},
		{
			name: "a pod whose endpoint turns unready: out before the next request, which is held",
			run: func(h *harness, a *testGate) result {
				h.target.Update([]Pod{a.pod(true, false)})
				h.probed(1, a)
				h.target.Update([]Pod{a.pod(false, false)})
				held := h.goGet()
				h.queued(1)
				h.target.Update([]Pod{a.pod(true, false)})
				return await(h.t, held)
			},
			code: http.StatusOK,
			want: []string{`route pod-in pod="a"`, `route pod-out pod="a"`, `route held pod=""`, `route pod-in pod="a"`, `route released pod="a"`, `request GET /x 200 pod="a"`},
		},
		{
			name: "no ready pod, then one: held and released after the wait",
			run: func(h *harness, a *testGate) result {
				h.target.Update([]Pod{a.pod(false, false)})
				h.probed(1, a)
				held := h.goGet()
				h.queued(1)
				h.clock.Step(2 * time.Second)
				h.target.Update([]Pod{a.pod(true, false)})
				return await(h.t, held)
			},
			code: http.StatusOK,
			want: []string{`route held pod=""`, `route pod-in pod="a"`, `route released pod="a" held=2s`, `request GET /x 200 pod="a"`},
		},
		{
			name: "no ready pod until the request timeout: held and timed out",
			run: func(h *harness, a *testGate) result {
				h.target.Update([]Pod{a.pod(false, false)})
				h.probed(1, a)
				held := h.goGet()
				h.queued(1)
				h.clock.Step(timeout)
				return await(h.t, held)
			},
			code: http.StatusGatewayTimeout,
			want: []string{`route held pod=""`, `route timed-out pod="" held=30s`, `request GET /x 504 pod="" error=activator request timeout`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := record.NewLog(100)
			h := newHarness(t, Config{RequestTimeout: timeout, Recorder: log})
			a := newGate(t, "a", true, nil)
			start := h.clock.Now()
			if r := tc.run(h, a); r.err != nil || r.code != tc.code {
				t.Fatalf("response %+v, want %d", r, tc.code)
			}
			var facts []record.Fact
			waitFor(t, "the request's fact", func() bool {
				facts, _, _ = log.Since(0)
				return len(facts) > 0 && facts[len(facts)-1].Kind == record.KindRequest
			})
			var got []string
			for _, f := range facts {
				got = append(got, brief(f))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("facts:\n got  %q\n want %q", got, tc.want)
			}
			req := facts[len(facts)-1]
			for _, f := range facts {
				if f.Namespace != "ns" || f.Time.Before(start) {
					t.Errorf("%s: namespace %q at %v, want ns at or after %v", brief(f), f.Namespace, f.Time, start)
				}
				if f.Route != nil && (f.Route.Decision == record.DecisionPodIn || f.Route.Decision == record.DecisionPodOut) {
					if f.Route.Request != 0 || f.Route.Target != "ns/svc" {
						t.Errorf("%s: request %d of %q, want 0 of ns/svc", brief(f), f.Route.Request, f.Route.Target)
					}
					continue
				}
				if f.Route != nil && (f.Route.Request != req.Request.ID || f.Route.Target != "ns/svc") {
					t.Errorf("%s: request %d of %q, want %d of ns/svc", brief(f), f.Route.Request, f.Route.Target, req.Request.ID)
				}
			}
			if r := req.Request; r.Target != "ns/svc" || !r.Start.Equal(start) || r.Latency != req.Time.Sub(start) {
				t.Errorf("request %+v ending at %v, want target ns/svc from %v", r, req.Time, start)
			}
		})
	}
}

// TestRequestIDsAreUniqueAcrossTargets: a recording holds several
// targets' requests, told apart by ID.
func TestRequestIDsAreUniqueAcrossTargets(t *testing.T) {
	log := record.NewLog(100)
	a := newGate(t, "a", true, nil)
	for _, name := range []string{"ns/one", "ns/two"} {
		tg, err := NewTarget(name, Config{Recorder: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tg.Close)
		tg.Update([]Pod{a.pod(true, false)})
		waitFor(t, name+" ready", func() bool { return tg.Status().Ready == 1 })
		for range 2 {
			w := httptest.NewRecorder()
			tg.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "http://svc/", nil))
			if w.Code != http.StatusOK {
				t.Fatalf("%s: %d", name, w.Code)
			}
		}
	}
	seen := map[uint64]string{}
	waitFor(t, "four requests", func() bool {
		facts, _, _ := log.Since(0)
		n := 0
		for _, f := range facts {
			if f.Request != nil {
				n++
			}
		}
		return n == 4
	})
	facts, _, _ := log.Since(0)
	for _, f := range facts {
		if f.Request == nil {
			continue
		}
		if other, dup := seen[f.Request.ID]; dup {
			t.Errorf("request ID %d of %s used by %s too", f.Request.ID, f.Request.Target, other)
		}
		seen[f.Request.ID] = f.Request.Target
	}
}

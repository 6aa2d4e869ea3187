package gatestatus

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// apiServerPodWatches sums the API server's open WATCH requests of pods
// (apiserver_longrunning_requests), every client's.
func apiServerPodWatches(t *testing.T, h *harness) int {
	t.Helper()
	raw, err := h.admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	sc := bufio.NewScanner(strings.NewReader(string(raw)))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "apiserver_longrunning_requests{") || !strings.Contains(line, `resource="pods"`) ||
			!strings.Contains(line, `verb="WATCH"`) || !strings.Contains(line, `subresource=""`) {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		total += int(v)
	}
	return total
}

// TestTheNodeServiceHoldsOneWatchOnTheAPIServerHoweverManyGatesWatch
// runs eight gates (the gate's real status source) on one node: the
// service has eight watches open, and the API server one more pod watch
// than before the service started — its own, on the node's pods.
func TestTheNodeServiceHoldsOneWatchOnTheAPIServerHoweverManyGatesWatch(t *testing.T) {
	probe := startService(t, nil) // for the admin client; its watch is counted below
	probe.stop()
	eventually(t, "the stopped service's watch is gone", func() bool { return testutil.ToFloat64(probe.svc.metrics.apiWatchesOpen) == 0 })
	var before int
	stable := 0
	eventually(t, "the API server's pod watches are steady", func() bool {
		n := apiServerPodWatches(t, probe)
		if n == before {
			stable++
		} else {
			before, stable = n, 0
		}
		time.Sleep(100 * time.Millisecond)
		return stable >= 5
	})

	h := startService(t, nil)
	const gates = 8
	ips := make([]netip.Addr, gates)
	for i := range gates {
		ips[i] = podIP()
		name := fmt.Sprintf("gate-%d", i)
		h.createPod(name, ips[i], podOpts{gateStarted: time.Now()})
		r := watchAsGate(t, h, name, ips[i])
		eventually(t, name+" sees its pod", func() bool { _, ok := r.last(); return ok })
	}
	eventually(t, "every gate's watch is open", func() bool { return testutil.ToFloat64(h.svc.metrics.watchesOpen) == gates })
	if n := h.watches.Load(); n != 1 {
		t.Errorf("the service sent %d watch requests to the API server, want 1", n)
	}
	if v := testutil.ToFloat64(h.svc.metrics.apiWatchesOpen); v != 1 {
		t.Errorf("the service's API watches metric is %v, want 1", v)
	}
	eventually(t, fmt.Sprintf("the API server has %d+1 pod watches", before), func() bool { return apiServerPodWatches(t, h) == before+1 })
}

// TestStopsCleanly: at the end of Run's context the gates' watches end,
// Run returns, and nothing it started is left (goleak, in TestMain, for
// the whole package).
func TestStopsCleanly(t *testing.T) {
	h := startService(t, nil)
	ip := podIP()
	h.createPod("stopper", ip, podOpts{gateStarted: time.Now()})
	events, _ := openWatch(t, from(ip), h.url+"/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dstopper&watch=true")
	if ev, _ := next(t, events, "the initial event"); ev.Object.Name != "stopper" {
		t.Fatalf("first event %+v", ev)
	}
	begin := time.Now()
	h.stop()
	if _, open := next(t, events, "the end of the watch"); open {
		t.Error("the watch went on after the service stopped")
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("stopping took %s", d)
	}
	if _, err := http.Get(h.url + "/healthz"); err == nil {
		t.Error("the service still answers after Run returned")
	}
}

// TestHealthReadinessAndMetricsAreServed: /healthz, /readyz once the
// informer synced, and /metrics with the service's series, on the same
// listener as the gates' API.
func TestHealthReadinessAndMetricsAreServed(t *testing.T) {
	h := startService(t, nil)
	ip := podIP()
	h.createPod("measured", ip, podOpts{gateStarted: time.Now()})
	do(t, from(ip), http.MethodGet, h.url+"/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dmeasured", "", "")
	do(t, from(ip), http.MethodGet, h.url+"/api/v1/namespaces/default/pods?fieldSelector=metadata.name%3Dother", "", "")
	c := http.DefaultClient
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := do(t, c, http.MethodGet, h.url+path, "", ""); code != http.StatusOK || string(body) != "ok" {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	code, body := do(t, c, http.MethodGet, h.url+"/metrics", "", "")
	for _, want := range []string{
		`podgate_node_status_requests_total{outcome="ok",verb="list"} 1`,
		`podgate_node_status_requests_total{outcome="refused",verb="list"} 1`,
		"podgate_node_status_watches_open 0",
		"podgate_node_status_api_watches_open 1",
		"go_goroutines ",
	} {
		if code != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}

package prommetrics

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/podgate/podgate/activator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Requests through a real target show up in the exported series.
func TestExportsTargetMeasurements(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(reg); err == nil {
		t.Error("registering twice succeeded")
	}
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "queue")
	}))
	defer gate.Close()
	tg, err := activator.NewTarget("default/web", activator.Config{Metrics: m, QueueDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	tg.Update([]activator.Pod{{Name: "a", Addr: strings.TrimPrefix(gate.URL, "http://"), Ready: true}})
	front := httptest.NewServer(tg)
	defer front.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	waitFor(t, "gate ready", func() bool { return tg.Status().Ready == 1 })
	for i := 0; i < 3; i++ {
		resp, err := client.Get(front.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// The count lands just after the response.
	waitFor(t, "3 requests counted", func() bool {
		return gathered(t, reg)[`podgate_activator_requests_total{code="200",target="default/web"}`] == 3
	})
	want := map[string]float64{
		`podgate_activator_requests_total{code="200",target="default/web"}`: 3,
		`podgate_activator_queue_depth{target="default/web"}`:               0,
		`podgate_activator_backends_ready{target="default/web"}`:            1,
		`podgate_activator_backends{target="default/web"}`:                  1,
	}
	if got := gathered(t, reg); !reflect.DeepEqual(got, want) {
		t.Fatalf("gathered %v\nwant %v", got, want)
	}
	m.Closed("default/web")
	if got, want := gathered(t, reg), map[string]float64{`podgate_activator_requests_total{code="200",target="default/web"}`: 3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after Closed: %v\nwant only the request counts %v", got, want)
	}
	m.Forget("default/web")
	if got := gathered(t, reg); len(got) != 0 {
		t.Fatalf("after Forget: %v, want no series", got)
	}
}

// gathered flattens the registry into name{labels} → value.
func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			out[mf.GetName()+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

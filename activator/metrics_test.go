package activator

import (
	"net/http"
	"sync"
	"testing"
)

type recordedMetrics struct {
	mu sync.Mutex
	metricValues
}

type metricValues struct {
	codes    map[int]int
	maxQueue int
	queue    int
	ready    int
	total    int
}

func (m *recordedMetrics) Request(_ string, code int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.codes[code]++
}

func (m *recordedMetrics) QueueDepth(_ string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.queue = n
	m.maxQueue = max(m.maxQueue, n)
}

func (m *recordedMetrics) Backends(_ string, ready, total int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ready, m.total = ready, total
}

func (m *recordedMetrics) snapshot() metricValues {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := map[int]int{}
	for k, v := range m.codes {
		c[k] = v
	}
	return metricValues{codes: c, maxQueue: m.maxQueue, queue: m.queue, ready: m.ready, total: m.total}
}

func TestMetricsFollowTraffic(t *testing.T) {
	m := &recordedMetrics{metricValues: metricValues{codes: map[int]int{}}}
	h := newHarness(t, Config{Metrics: m, QueueDepth: 1})
	held := h.goGet()
	h.queued(1)
	if r := h.get(); r.code != http.StatusServiceUnavailable {
		t.Fatalf("second request %+v, want 503", r)
	}
	a := newGate(t, "a", true, nil)
	b := newGate(t, "b", false, nil)
	h.target.Update([]Pod{a.pod(true, false), b.pod(true, false)})
	await(t, held)
	h.probed(1, b)
	if r := h.get(); r.code != http.StatusOK {
		t.Fatalf("%+v", r)
	}
	waitFor(t, "requests counted", func() bool { return m.snapshot().codes[200] == 2 })
	s := m.snapshot()
	if s.codes[503] != 1 || s.maxQueue != 1 || s.queue != 0 || s.ready != 1 || s.total != 2 {
		t.Fatalf("metrics %+v, want 200×2, 503×1, queue peaked at 1 and back to 0, 1 of 2 backends ready", s)
	}
}

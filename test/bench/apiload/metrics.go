package main

import (
	"bytes"
	"context"
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// apiMetrics are the API server's own figures at one moment.
type apiMetrics struct {
	// podWatches is how many watches of pods are open.
	podWatches float64
	// requests counts every request served since the start.
	requests float64
	// cpuSeconds is the process's CPU time, rssBytes its resident memory.
	cpuSeconds, rssBytes float64
}

// scrape reads the API server's /metrics with the admin's client.
func scrape(ctx context.Context, k *kubernetes.Clientset) (apiMetrics, error) {
	var m apiMetrics
	raw, err := k.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return m, fmt.Errorf("the API server's metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return m, fmt.Errorf("the API server's metrics: %w", err)
	}
	for _, s := range samples(families["apiserver_longrunning_requests"]) {
		if s.labels["verb"] == "WATCH" && s.labels["resource"] == "pods" && s.labels["subresource"] == "" {
			m.podWatches += s.value
		}
	}
	for _, s := range samples(families["apiserver_request_total"]) {
		m.requests += s.value
	}
	for _, s := range samples(families["process_cpu_seconds_total"]) {
		m.cpuSeconds += s.value
	}
	for _, s := range samples(families["process_resident_memory_bytes"]) {
		m.rssBytes += s.value
	}
	return m, nil
}

type sample struct {
	labels map[string]string
	value  float64
}

// samples flattens a gauge or counter family (nil: none).
func samples(f *dto.MetricFamily) []sample {
	if f == nil {
		return nil
	}
	var out []sample
	for _, m := range f.Metric {
		s := sample{labels: map[string]string{}}
		for _, l := range m.Label {
			s.labels[l.GetName()] = l.GetValue()
		}
		switch {
		case m.Gauge != nil:
			s.value = m.Gauge.GetValue()
		case m.Counter != nil:
			s.value = m.Counter.GetValue()
		case m.Untyped != nil:
			s.value = m.Untyped.GetValue()
		}
		out = append(out, s)
	}
	return out
}

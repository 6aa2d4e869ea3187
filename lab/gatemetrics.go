package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/podgate/podgate/gate/contract"
)

// GateRequests is how many requests the pod's gate proxied to its
// serving container (podgate_requests_total summed over codes; health
// checks are not counted), read from http://podIP:9091/metrics. Zero
// proves no traffic reached the pod's containers. podIP is a loopback
// address.
func GateRequests(ctx context.Context, podIP string) (float64, error) {
	return Loopback.GateRequests(ctx, podIP)
}

// GateRequests is how many requests the gate of the pod at podIP proxied.
func (h *PodHTTP) GateRequests(ctx context.Context, podIP string) (float64, error) {
	resp, err := h.get(ctx, "gate metrics", podIP, contract.GateMetricsPort, "/metrics")
	if err != nil {
		return 0, err
	}
	u := resp.Request.URL.String()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("lab: gate metrics %s: %s", u, resp.Status)
	}
	n, err := sumCounter(resp.Body, "podgate_requests_total")
	if err != nil {
		return 0, fmt.Errorf("lab: gate metrics %s: %w", u, err)
	}
	return n, nil
}

// sumCounter adds up every series of a counter in Prometheus text format.
// A metric with no series (no request yet) sums to 0.
func sumCounter(r io.Reader, name string) (float64, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return 0, err
	}
	var sum float64
	for _, m := range families[name].GetMetric() {
		// Untyped: an exposition without its TYPE line.
		sum += m.GetCounter().GetValue() + m.GetUntyped().GetValue()
	}
	return sum, nil
}

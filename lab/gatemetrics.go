package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/podgate/podgate/gateenv"
)

// GateRequests is how many requests the pod's gate proxied to its
// serving container (podgate_requests_total summed over codes; health
// checks are not counted), read from http://podIP:9091/metrics. Zero
// proves no traffic reached the pod's containers.
func GateRequests(ctx context.Context, podIP string) (float64, error) {
	if ip := net.ParseIP(podIP); ip == nil || !ip.IsLoopback() {
		return 0, fmt.Errorf("lab: gate metrics: pod IP %q is not a loopback address", podIP)
	}
	u := "http://" + net.JoinHostPort(podIP, strconv.Itoa(gateenv.DefaultMetricsPort)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, fmt.Errorf("lab: gate metrics: %w", err)
	}
	resp, err := toggleClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("lab: gate metrics %s: %w", u, err)
	}
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

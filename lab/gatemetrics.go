package lab

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

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

// sumCounter adds up every series of a metric in Prometheus text format.
// A metric with no series (no request yet) sums to 0.
func sumCounter(r io.Reader, name string) (float64, error) {
	var sum float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue // a comment, another metric, or name_suffix
		}
		if i := strings.LastIndexByte(rest, '}'); i >= 0 {
			rest = rest[i+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, fmt.Errorf("malformed line %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("malformed line %q: %w", line, err)
		}
		sum += v
	}
	return sum, sc.Err()
}

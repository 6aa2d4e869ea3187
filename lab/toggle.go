package lab

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// The test app's toggles (docs/testapp.md).
const (
	ToggleReady = "toggleReady" // /readyz
	ToggleLive  = "toggleLive"  // /livez and /healthz
	ToggleExec  = "toggleExec"  // the exec file an exec probe cats
)

// PodHTTP sends requests to pods at their addresses: the test app's
// toggles, the gate's readiness and metrics. Loopback reaches the pods of
// `podgate run`; a cluster's pods are reached from inside its network
// namespace (Cluster.PodHTTP). It sends no request twice and keeps no
// connection: a toggle is one deliberate act on a pod that may be about
// to restart.
type PodHTTP struct {
	client *http.Client
	// allow refuses an address the lab must not send to.
	allow func(net.IP) error
}

// NewPodHTTP reaches pods through dial, at the addresses allow lets
// through (an error names why not).
func NewPodHTTP(dial func(ctx context.Context, network, addr string) (net.Conn, error), allow func(net.IP) error) *PodHTTP {
	return &PodHTTP{
		client: &http.Client{
			Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true, DialContext: dial},
			Timeout:   10 * time.Second,
		},
		allow: allow,
	}
}

// Loopback reaches pods on loopback addresses, and nothing else.
var Loopback = &PodHTTP{
	client: &http.Client{
		Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
		Timeout:   10 * time.Second,
	},
	allow: func(ip net.IP) error {
		if !ip.IsLoopback() {
			return fmt.Errorf("pod IP %s is not a loopback address", ip)
		}
		return nil
	},
}

// Toggle sets a test app toggle: GET http://podIP:port/TOGGLE?set=on, the
// idempotent form (a bare GET flips). podIP must be a loopback address.
func Toggle(ctx context.Context, podIP string, port int, toggle string, on bool) error {
	return Loopback.Toggle(ctx, podIP, port, toggle, on)
}

// Toggle sets a test app toggle of the pod at podIP.
func (h *PodHTTP) Toggle(ctx context.Context, podIP string, port int, toggle string, on bool) error {
	resp, err := h.get(ctx, "toggle "+toggle, podIP, port, fmt.Sprintf("/%s?set=%t", toggle, on))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("lab: toggle %s: %s: %s", resp.Request.URL, resp.Status, body)
	}
	return nil
}

// get sends one GET to a pod's address; what names the request in
// errors. The caller closes the body.
func (h *PodHTTP) get(ctx context.Context, what, podIP string, port int, path string) (*http.Response, error) {
	ip := net.ParseIP(podIP)
	if ip == nil {
		return nil, fmt.Errorf("lab: %s: pod IP %q is not an IP address", what, podIP)
	}
	if err := h.allow(ip); err != nil {
		return nil, fmt.Errorf("lab: %s: %w", what, err)
	}
	u := "http://" + net.JoinHostPort(podIP, strconv.Itoa(port)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", what, err)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lab: %s %s: %w", what, u, err)
	}
	return resp, nil
}

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

// toggleClient sends no request twice and keeps no connection: a toggle
// is one deliberate act on a pod that may be about to restart.
var toggleClient = &http.Client{
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
	Timeout:   10 * time.Second,
}

// Toggle sets a test app toggle: GET http://podIP:port/TOGGLE?set=on, the
// idempotent form (a bare GET flips). podIP must be a loopback address.
func Toggle(ctx context.Context, podIP string, port int, toggle string, on bool) error {
	resp, err := podGet(ctx, "toggle "+toggle, podIP, port, fmt.Sprintf("/%s?set=%t", toggle, on))
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

// podGet sends one GET to a pod's address on loopback; what names the
// request in errors. The caller closes the body.
func podGet(ctx context.Context, what, podIP string, port int, path string) (*http.Response, error) {
	if ip := net.ParseIP(podIP); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("lab: %s: pod IP %q is not a loopback address", what, podIP)
	}
	u := "http://" + net.JoinHostPort(podIP, strconv.Itoa(port)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("lab: %s: %w", what, err)
	}
	resp, err := toggleClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("lab: %s %s: %w", what, u, err)
	}
	return resp, nil
}

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
	if ip := net.ParseIP(podIP); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("lab: toggle %s: pod IP %q is not a loopback address", toggle, podIP)
	}
	u := fmt.Sprintf("http://%s/%s?set=%t", net.JoinHostPort(podIP, strconv.Itoa(port)), toggle, on)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("lab: toggle: %w", err)
	}
	resp, err := toggleClient.Do(req)
	if err != nil {
		return fmt.Errorf("lab: toggle %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("lab: toggle %s: %s: %s", u, resp.Status, body)
	}
	return nil
}

package activator

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/podgate/podgate/gate/contract"
)

// The health check of Knative's activator (docs/facts.md §4–5), which
// the gate and queue-proxy both answer.
const (
	HealthPath        = "/healthz"
	ProbeHeader       = contract.NetworkProbeHeader
	ProbeHeaderValue  = contract.NetworkProbeQueue
	ProbeUserAgent    = contract.ActivatorProbeUserAgent
	healthyBody       = contract.NetworkProbeQueue
	maxHealthBodySize = 1 << 10
)

// checkGate sends one health check to the gate at addr and says whether
// it answered ready (200 with body "queue"); the error tells why not.
func checkGate(ctx context.Context, rt http.RoundTripper, addr string, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+HealthPath, nil)
	if err != nil {
		return false, fmt.Errorf("health check %s: %w", addr, err)
	}
	req.Header.Set(ProbeHeader, ProbeHeaderValue)
	req.Header.Set("User-Agent", ProbeUserAgent)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return false, fmt.Errorf("health check %s: %w", addr, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthBodySize))
	// Read what is left so the connection can be reused for the next check.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return false, fmt.Errorf("health check %s: reading body: %w", addr, err)
	}
	if resp.StatusCode != http.StatusOK || string(body) != healthyBody {
		return false, fmt.Errorf("health check %s: status %d, body %q", addr, resp.StatusCode, truncate(string(body), 64))
	}
	return true, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// newProbeTransport keeps one connection per gate: a check every 200 ms
// per pod should not cost a handshake each time.
func newProbeTransport(timeout time.Duration, dial func(context.Context, string, string) (net.Conn, error)) *http.Transport {
	if dial == nil {
		dial = (&net.Dialer{Timeout: timeout}).DialContext
	}
	return &http.Transport{
		Proxy:               nil,  // never through $HTTP_PROXY: pods are direct
		DialContext:         dial, // bounded by the health check's own timeout
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
}

// runProber checks b's gate at once, then every interval and whenever
// kicked, until b is removed or the target closes. It checks ready
// backends too: a gate that turns unready (a sidecar failing) loses its
// traffic within one interval instead of waiting for the kubelet's probe
// period and the endpoint update.
func (t *Target) runProber(ctx context.Context, b *backend) {
	defer t.probers.Done()
	ticker := t.cfg.Clock.NewTicker(t.cfg.ProbeInterval)
	defer ticker.Stop()
	for {
		gen := t.generation(b)
		var (
			ok  bool
			err error
		)
		if b.direct {
			ok, err = t.checkConnect(ctx, b.addr)
		} else {
			ok, err = checkGate(ctx, t.cfg.ProbeTransport, b.addr, t.cfg.ProbeTimeout)
		}
		if ctx.Err() != nil {
			return
		}
		t.gateAnswered(b, gen, ok, err)
		tick := ticker.C()
		if b.direct && ok {
			// A pod without a gate is Kubernetes' to judge: it is checked
			// again only after a refused connection (connectFailed kicks).
			tick = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-b.kick:
		}
	}
}

// checkConnect is a Direct pod's check: its serving port takes a TCP
// connection (closed at once). It has no gate to ask; this only tells a
// port that refuses from one that listens.
func (t *Target) checkConnect(ctx context.Context, addr string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, t.cfg.ProbeTimeout)
	defer cancel()
	dial := t.cfg.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	c, err := dial(ctx, "tcp", addr)
	if err != nil {
		return false, fmt.Errorf("connect %s: %w", addr, err)
	}
	_ = c.Close()
	return true, nil
}

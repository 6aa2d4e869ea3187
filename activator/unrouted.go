package activator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/podgate/podgate/gate/contract"
)

// A gate drains for a quiet period because it cannot know who else may
// still send it traffic. When this activator is the pod's only way in
// (the gate says so with PODGATE_ONLY_ROUTER, as `podgate run` injects it),
// it tells the gate as soon as it sends the pod nothing any more and has
// nothing in flight there, and the gate's drain ends without the wait.
// That moment comes when the pod turns terminating, or when the target
// closes (the front door stopping), and the last request to the pod ends.
// A gate that was not told it has a single router ignores the message.

// unroutedTimeout bounds the message to one gate.
const unroutedTimeout = time.Second

// leavingLocked says whether b's gate should be told now: b gets no new
// request (terminating, or the target closed), none is in flight, and it
// was not told before. It marks b told.
func (t *Target) leavingLocked(b *backend) bool {
	if b.unrouted || b.pod.AdminAddr == "" || b.inflight > 0 || (!b.pod.Terminating && !t.closed) {
		return false
	}
	b.unrouted = true
	return true
}

// tellUnroutedAsync tells each pod's gate on a goroutine of its own; Close
// waits for them.
func (t *Target) tellUnroutedAsync(pods []Pod) {
	for _, p := range pods {
		t.telling.Add(1)
		go func() {
			defer t.telling.Done()
			t.tellUnrouted(p)
		}()
	}
}

// tellUnrouted sends one pod's gate the message and logs the answer.
func (t *Target) tellUnrouted(p Pod) {
	ctx, cancel := context.WithTimeout(context.Background(), unroutedTimeout)
	defer cancel()
	answer, err := TellGateUnrouted(ctx, t.cfg.ProbeTransport, p, t.cfg.UnroutedIfDraining && !p.Terminating)
	if err != nil {
		t.cfg.Logger.Warn("could not tell the gate it gets no more traffic: it drains for its full quiet period",
			"target", t.name, "pod", p.Name, "err", err)
		return
	}
	t.cfg.Logger.Info("told the gate it gets no more traffic", "target", t.name, "pod", p.Name, "answer", answer)
}

// TellGateUnrouted POSTs the gate's /unrouted?pod=NAME (with ifDraining,
// &if=draining: it counts only if the gate drains already) and returns
// its answer. The connection is not kept: the pod is going away.
func TellGateUnrouted(ctx context.Context, rt http.RoundTripper, p Pod, ifDraining bool) (string, error) {
	u := "http://" + p.AdminAddr + contract.UnroutedPath + "?pod=" + url.QueryEscape(p.Name)
	if ifDraining {
		u += "&" + contract.UnroutedIf + "=" + contract.UnroutedIfDraining
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, nil)
	if err != nil {
		return "", err
	}
	req.Close = true
	if p.AdminToken != "" {
		req.Header.Set(contract.AdminTokenHeader, p.AdminToken)
	}
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxHealthBodySize))
	if err != nil {
		return "", fmt.Errorf("%s: reading the answer: %w", u, err)
	}
	return fmt.Sprintf("%d %s", resp.StatusCode, truncate(string(body), 200)), nil
}

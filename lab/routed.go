package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/podgate/podgate/gate/contract"
)

// WaitRouted waits until the front door at frontDoorURL routes host: a
// route check (K-Network-Probe: probe, as Knative's networking layer
// sends before it routes traffic to a host) answered 200 with its hash.
// A front door that has not yet seen a new Service answers its requests
// 404; the check reaches no pod and is not counted as a request, so a
// scenario may wait on it before its load without changing what the
// load sees.
func WaitRouted(ctx context.Context, frontDoorURL, host string) error {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 5 * time.Second}
	const hash = "podgate-lab"
	return Poll(ctx, PollInterval, "the front door to route "+host, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, frontDoorURL, nil)
		if err != nil {
			return false, err
		}
		req.Host = host
		req.Header.Set(contract.NetworkProbeHeader, contract.NetworkProbeIngress)
		req.Header.Set(contract.NetworkHashHeader, hash)
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get(contract.NetworkHashHeader) != hash {
			return false, fmt.Errorf("route check: %d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}
		return true, nil
	})
}

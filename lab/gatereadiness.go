package lab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/podgate/podgate/gate/contract"
)

// GateReadiness is the gate's per-container verdict, from
// http://podIP:8022/readyz?verbose (docs/gate.md): for each line
// "[+]NAME ok …" or "[-]NAME failed: …", the name and whether it passed.
// The gate's own line is under "gate". Unlike the pod status, where a
// container whose readiness probe moved into the gate shows ready as soon
// as it runs, this says which container the gate is waiting for.
type GateReadiness struct {
	Ready      bool
	Containers map[string]bool
	Text       string
}

// ReadGateReadiness asks the gate of the pod at podIP, a loopback
// address.
func ReadGateReadiness(ctx context.Context, podIP string) (*GateReadiness, error) {
	return Loopback.ReadGateReadiness(ctx, podIP)
}

// ReadGateReadiness asks the gate of the pod at podIP.
func (h *PodHTTP) ReadGateReadiness(ctx context.Context, podIP string) (*GateReadiness, error) {
	resp, err := h.get(ctx, "gate readiness", podIP, contract.GateAdminPort, "/readyz?verbose")
	if err != nil {
		return nil, err
	}
	u := resp.Request.URL.String()
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("lab: gate readiness %s: %w", u, err)
	}
	g := parseGateReadiness(string(body))
	g.Ready = resp.StatusCode == http.StatusOK
	return g, nil
}

func parseGateReadiness(text string) *GateReadiness {
	g := &GateReadiness{Containers: map[string]bool{}, Text: text}
	for _, line := range strings.Split(text, "\n") {
		var ok bool
		switch {
		case strings.HasPrefix(line, "[+]"):
			ok = true
		case strings.HasPrefix(line, "[-]"):
		default:
			continue
		}
		name, _, _ := strings.Cut(line[3:], " ")
		g.Containers[name] = ok
	}
	return g
}

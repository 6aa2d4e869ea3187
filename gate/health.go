package gate

import (
	"io"
	"net/http"
	"strings"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/proxy"
)

// The health-check protocol of Knative's queue-proxy (docs/facts.md §4):
// its headers and User-Agents are in package wire.
const (
	// queueName is what a healthy gate answers, and the K-Network-Probe
	// value a health check must carry.
	queueName = contract.NetworkProbeQueue
)

// requestKind says how the serving port treats a request.
type requestKind int

const (
	kindTraffic requestKind = iota
	// kindHealth: the kubelet's, the activator's or the autoscaler's
	// health check, on any path. A K-Kubelet-Probe header counts too: a
	// mesh that rewrites probes drops the kubelet's User-Agent but keeps
	// that header. (queue-proxy v1.2x forwards such a request to the app,
	// past the concurrency limit.)
	kindHealth
	// kindNetworkProbe: K-Network-Probe: probe, the networking layer's
	// check that a route reaches this pod.
	kindNetworkProbe
)

func classify(r *http.Request) requestKind {
	h := r.Header
	ua := h.Get("User-Agent")
	switch {
	case strings.HasPrefix(ua, contract.KubeProbeUserAgentPrefix),
		strings.HasPrefix(ua, contract.ActivatorProbeUserAgent),
		strings.HasPrefix(ua, contract.AutoscalingProbeUserAgent),
		h.Get(contract.KubeletProbeHeader) != "":
		return kindHealth
	case contract.IsRouteCheck(r):
		return kindNetworkProbe
	}
	return kindTraffic
}

// serveHealth answers a health check from state kept current in the
// background, plus, when the pod is ready and a readiness probe is
// aggressive, one more attempt of those containers' probes
// (Aggregator.Recheck, shared by concurrent checks), so the answer is
// their state at this moment, as queue-proxy's probe per check. The
// answer is immediate otherwise, except
// while the pod has not been ready yet and a readiness probe is aggressive
// (periodSeconds: 0): queue-proxy then probes until the container is ready
// or 10 s pass, so a check is a long poll that turns 200 the moment the
// pod is ready. The gate holds such a check the same way, woken by the
// readiness change itself.
//
// Once the pod has been ready, every check is answered at once, also while
// periodSeconds is 0 (queue-proxy would hold it again): a container that
// went away should leave the endpoints now, and a caller learns that from
// an immediate 503, not from its own timeout.
func (g *Gate) serveHealth(w *proxy.Recorder, r *http.Request) {
	if g.drainer.Draining() {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	if ph := r.Header.Get(contract.NetworkProbeHeader); ph != queueName {
		http.Error(w, "unexpected probe header value: "+ph, http.StatusBadRequest)
		return
	}
	if g.Ready() {
		// An aggressive probe's container is probed once more now (shared
		// with concurrent checks): the answer is its state at this moment,
		// not at its worker's last tick.
		g.agg.Recheck()
		if g.Ready() {
			_, _ = io.WriteString(w, queueName)
			return
		}
	}
	if !g.holdsHealthChecks() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	g.held.Add(1)
	defer g.held.Add(-1)
	limit := g.clock.NewTimer(g.holdLimit)
	defer limit.Stop()
	for {
		changed := g.readinessSignal()
		switch {
		case g.drainer.Draining():
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		case g.Ready():
			_, _ = io.WriteString(w, queueName)
			return
		case !g.holdsHealthChecks():
			// Ready and unready again while this check slept.
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		select {
		case <-changed:
		case <-limit.C():
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case <-r.Context().Done():
			// The caller gave up (its timeout): nobody reads an answer.
			w.ClientLeft()
			return
		}
	}
}

// holdsHealthChecks: a not-ready answer waits for readiness instead.
func (g *Gate) holdsHealthChecks() bool { return g.holdChecks && !g.everReady.Load() }

// serveNetworkProbe answers K-Network-Probe: probe by echoing its hash.
func serveNetworkProbe(w http.ResponseWriter, r *http.Request, draining bool) {
	if draining {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	contract.AnswerRouteCheck(w, r)
}

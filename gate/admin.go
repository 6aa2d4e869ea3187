package gate

import (
	"context"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/probe/prober"
)

// preStopRelease is how long /wait-for-drain waits for a SIGTERM before it
// concludes that one container is being restarted, not the pod stopped,
// and releases the hook (queue-proxy's rule).
const preStopRelease = time.Second

// AdminHandler serves the admin port: /wait-for-drain, the routed probes,
// /readyz, /livez, the gate's own preStop (/start-drain) and the only
// router's confirmation (/unrouted).
func (g *Gate) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(contract.DrainPath, g.waitForDrain)
	mux.HandleFunc(contract.ProbePathPrefix, g.routedProbe)
	mux.HandleFunc("/readyz", g.readyz)
	mux.HandleFunc(contract.GateReadyPath, g.gateReady)
	mux.HandleFunc(contract.LivezPath, func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc(contract.StartDrainPath, g.startDrain)
	mux.HandleFunc(contract.UnroutedPath, g.unrouted)
	return mux
}

// startDrain is the gate's own preStop hook. The kubelet runs every
// container's preStop at once when the pod is deleted, native sidecars'
// included (their SIGTERM waits for the other containers to stop): this
// is how the gate learns of the deletion on a cluster, in time to drain
// before the other containers stop.
//
// The kubelet also runs it when it restarts the gate alone, and then the
// SIGTERM follows the hook at once. So, as queue-proxy's /wait-for-drain
// (which drains for one second and resets without a SIGTERM), the hook
// alone is not taken for a deletion: the drain starts when, within
// preStopRelease, the SIGTERM comes, the status source reports the
// deletion, or another container's preStop hook arrives at
// /wait-for-drain (the kubelet runs them together on a deletion). Until
// then the gate answers not ready; without any of them the hook is
// released and nothing lasting changed.
func (g *Gate) startDrain(w http.ResponseWriter, r *http.Request) {
	if !g.allowAdmin(w, r, "start the drain") {
		return
	}
	select {
	case <-g.terminating:
		_, _ = io.WriteString(w, "draining\n")
		return
	default:
	}
	g.log.Info("the gate's preStop hook: draining if a SIGTERM, the status source or another container's preStop hook confirms the deletion within "+preStopRelease.String(),
		"remote", r.RemoteAddr)
	t := g.clock.NewTimer(preStopRelease)
	defer t.Stop()
	g.stopping.Add(1)
	defer g.stopping.Add(-1)
	g.admin.ownPreStop.Add(1)
	defer g.admin.ownPreStop.Add(-1)
	if g.admin.containerPreStops.Load() > 0 {
		g.terminate("the gate's and another container's preStop hooks: the pod is being deleted")
	}
	select {
	case <-g.terminating:
		_, _ = io.WriteString(w, "draining\n")
	case <-t.C():
		select {
		case <-g.terminating:
			_, _ = io.WriteString(w, "draining\n")
		default:
			g.log.Info("the gate's preStop hook released: nothing confirmed a deletion, so the gate alone restarts; no drain",
				"after", preStopRelease.String())
			_, _ = io.WriteString(w, "released: nothing confirmed the pod's deletion; not draining\n")
		}
	case <-r.Context().Done():
	}
}

// unrouted takes the confirmation of the pod's only router (POST
// ?pod=<name>) that it sends nothing here any more: the drain may then end
// as soon as nothing is in flight. Only a gate told that this router is
// its only one (PODGATE_ONLY_ROUTER) believes it; otherwise the quiet
// period covers the routers the gate does not know of.
func (g *Gate) unrouted(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if !g.allowAdmin(w, r, "end the drain early") {
		return
	}
	q := r.URL.Query()
	switch pod := q.Get("pod"); {
	case g.cfg.OnlyRouter == "":
		http.Error(w, "ignored: "+contract.EnvOnlyRouter+" is not set, so routers the gate does not know of may still send traffic; the drain waits out its quiet period", http.StatusConflict)
		return
	case pod != g.cfg.Pod:
		// A pod IP is reused: a confirmation meant for an earlier pod
		// must not shorten this one's drain.
		http.Error(w, fmt.Sprintf("ignored: this is the gate of pod %q, not %q", g.cfg.Pod, pod), http.StatusConflict)
		return
	case q.Get(contract.UnroutedIf) == contract.UnroutedIfDraining && !g.drainer.Draining():
		// The router stops but the pod does not (an activator replaced
		// while its pods run on): its successor routes here, so the
		// confirmation would be stale by the time the pod is deleted.
		http.Error(w, "ignored: the gate is not draining", http.StatusConflict)
		return
	}
	if g.drainer.Unrouted() {
		g.log.Info("the "+g.cfg.OnlyRouter+" confirms it no longer routes to this pod: the drain ends once nothing is in flight",
			"remote", r.RemoteAddr, "draining", g.drainer.Draining(), "inFlight", g.drainer.InFlight())
	}
	_, _ = io.WriteString(w, "ok\n")
}

// waitForDrain is every container's preStop hook. On pod deletion the gate
// learns of it at the same time (SIGTERM, the status source, its own
// preStop hook): the hook then holds until the drain is complete, so no
// container stops while traffic still reaches the pod. Without that
// within a second, a single container is being restarted (a liveness kill
// runs preStop too): the hook is released, and meanwhile the pod counts as
// not ready, since that container is about to go.
//
// Only a hook from the pod or with the admin token changes anything. A
// gate without a token (a pod spec written for queue-proxy, whose hook
// carries none) serves a stranger's call too, as queue-proxy does, but
// that call neither turns the pod unready nor confirms a deletion.
func (g *Gate) waitForDrain(w http.ResponseWriter, r *http.Request) {
	trusted := g.trustedAdmin(r)
	if !trusted && g.cfg.AdminToken != "" {
		g.refuseAdmin(w, r, "hold a preStop hook")
		return
	}
	g.log.Info("preStop hook waiting for the drain", "remote", r.RemoteAddr, "userAgent", r.UserAgent(), "fromPodOrToken", trusted)
	g.preStops.Add(1)
	defer g.preStops.Add(-1)
	select {
	case <-g.terminating:
	default:
		// The timer exists before the gate reports not ready, so whoever
		// sees the gate unready knows the one-second rule is running.
		t := g.clock.NewTimer(preStopRelease)
		if trusted {
			g.stopping.Add(1)
			g.admin.containerPreStops.Add(1)
			if g.admin.ownPreStop.Load() > 0 {
				g.terminate("the gate's and another container's preStop hooks: the pod is being deleted")
			}
		}
		var released bool
		select {
		case <-g.terminating:
		case <-t.C():
			select {
			case <-g.terminating:
			default:
				released = true
			}
		case <-r.Context().Done():
		}
		t.Stop()
		if trusted {
			g.admin.containerPreStops.Add(-1)
			g.stopping.Add(-1)
		}
		if released {
			g.log.Info("preStop hook released: no SIGTERM, so a container restarts, the pod stays", "after", preStopRelease.String())
			_, _ = io.WriteString(w, "released: the gate is not terminating\n")
			return
		}
		if r.Context().Err() != nil {
			return
		}
	}
	select {
	case <-g.drainSaid:
		_, _ = io.WriteString(w, "drained\n")
	case <-r.Context().Done():
	}
}

// routedProbe runs a container's original liveness or startup probe for
// the kubelet (or node agent) that calls /probe/<container>/<kind> — in a
// pod injected by an older podgate, which routed those probes through the
// gate (PODGATE_ROUTED_PROBES; the injector now leaves them on their
// containers and the gate watches a copy) — and
// answers so that the caller concludes what probing the container directly
// would have: 200 for a success; for a warning (an HTTP 3xx not followed)
// the same 3xx without Location and with the original body, which the
// kubelet turns into the same ProbeWarning message; for a failure the
// original HTTP status (so "HTTP probe failed with statuscode: N" reads the
// same) or 500, with the original message as body. Every answer carries
// the original message in the Podgate-Probe-Message header, which podgate's
// node agent records instead of its own reading. Seeing every result lets
// the gate take a container out of traffic before the kubelet kills it;
// with an admin token only the results of callers that send it (the
// kubelet, through the injected probe's header) or of the pod count.
func (g *Gate) routedProbe(w http.ResponseWriter, r *http.Request) {
	name, kind, err := contract.ParseProbePath(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	p := g.cfg.WatchedProbes[name].Probe(kind)
	if p == nil {
		http.Error(w, fmt.Sprintf("no %s probe of container %q is routed through the gate", kind, name), http.StatusNotFound)
		return
	}
	out := g.runRouted(r.Context(), p)
	if !g.cfg.ProbesRouted {
		// The gate watches this probe itself (the kubelet probes the
		// container directly): an answer here is a courtesy and counts
		// for nothing, or the gate would count two schedules.
		writeRouted(w, out)
		return
	}
	g.metrics.ProbeResult(name, string(kind), out.Result)
	if g.cfg.AdminToken != "" && !g.trustedAdmin(r) {
		// Answered, as everyone may ask, but a stranger calling in a loop
		// must not hurry the liveness count that drops readiness.
		writeRouted(w, out)
		return
	}
	switch kind {
	case contract.Liveness:
		g.agg.LivenessResult(name, out, prober.FailureThresholdOf(p))
	case contract.Startup:
		g.agg.StartupResult(name, out)
	}
	writeRouted(w, out)
}

// writeRouted answers a routed probe with its outcome (see routedProbe).
func writeRouted(w http.ResponseWriter, out probe.Outcome) {
	h := w.Header()
	h.Set(contract.ProbeMessageHeader, strconv.QuoteToASCII(out.Message))
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	switch out.Result {
	case probe.Error:
		// The kubelet drops an errored probe; so must the caller. A body
		// shorter than announced makes its read fail, which the kubelet
		// counts as a probe error, not a failure (docs/facts.md §1).
		msg := "probe errored: " + out.Message
		h.Set("Content-Length", strconv.Itoa(len(msg)+1))
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, msg)
	case probe.Success:
		_, _ = io.WriteString(w, "success\n")
	case probe.Warning:
		code := out.StatusCode
		if code < 300 || code > 399 {
			code = http.StatusMultipleChoices // a Warning is always an HTTP 3xx; be safe
		}
		// No Location: the kubelet follows no redirect and reads the body
		// into the same "Probe terminated redirects, Response body: …".
		w.WriteHeader(code)
		if code != http.StatusNotModified { // a 304 has no body, here as there
			body, _ := strings.CutPrefix(out.Message, probe.RedirectWarningPrefix)
			_, _ = io.WriteString(w, body)
		}
	default:
		code := http.StatusInternalServerError
		// A final status that a server can send again: 1xx are
		// informational (a 101 would switch protocols).
		if c := out.StatusCode; c >= 400 && c <= 999 {
			code = c
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, out.Message+"\n")
	}
}

// routedMargin is how much sooner than the probe's timeout the gate gives
// up on the original probe: the caller's request has that same timeout,
// and the gate must answer (and count the failure) before it goes.
const routedMargin = 100 * time.Millisecond

// runRouted is one kubelet tick of a routed probe (errors retried up to
// probe.MaxAttempts times), finished even if the caller went away: a hung
// container makes the kubelet give up on /probe, and that failure must
// count here as it counts there.
func (g *Gate) runRouted(ctx context.Context, p *corev1.Probe) probe.Outcome {
	ctx = context.WithoutCancel(ctx)
	timeout := prober.TimeoutOf(p) - routedMargin
	var out probe.Outcome
	for i := 0; i < probe.MaxAttempts; i++ {
		out = g.runner.Attempt(ctx, p, g.target, timeout)
		if out.Result != probe.Error {
			break
		}
	}
	return out
}

// readyz answers 200 or 503 by the gate's readiness; with ?verbose, one
// line per container in the kube-apiserver's format ([+]name ok /
// [-]name failed: reason) with the last probe of each.
func (g *Gate) readyz(w http.ResponseWriter, r *http.Request) {
	ready := g.Ready()
	code := http.StatusOK
	if !ready {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, verbose := r.URL.Query()["verbose"]; !verbose {
		w.WriteHeader(code)
		if ready {
			_, _ = io.WriteString(w, "ok\n")
		} else {
			_, _ = io.WriteString(w, "not ready\n")
		}
		return
	}
	var b strings.Builder
	now := g.clock.Now()
	switch {
	case g.drainer.Draining():
		quiet, inFlight := g.drainer.Remaining()
		fmt.Fprintf(&b, "[-]gate failed: draining (the pod is being deleted), %d request(s) in flight, %s of quiet period left\n",
			inFlight, quiet.Round(time.Millisecond))
	case g.status != nil && !g.statusSeen.Load():
		b.WriteString("[-]gate failed: waiting for the status source's first report\n")
	case g.stopping.Load() > 0:
		b.WriteString("[-]gate failed: a container's preStop hook is running\n")
	default:
		b.WriteString("[+]gate ok\n")
	}
	for _, c := range g.agg.Report() {
		if c.Excluded {
			fmt.Fprintf(&b, "[~]%s excluded by %s\n", c.Name, contract.ExcludeContainersAnnotation)
			continue
		}
		if c.Ready {
			fmt.Fprintf(&b, "[+]%s ok", c.Name)
		} else {
			fmt.Fprintf(&b, "[-]%s failed: %s", c.Name, c.Reason)
		}
		var notes []string
		if c.Serving {
			notes = append(notes, "serving")
		}
		if c.Probe != "" {
			notes = append(notes, c.Probe)
		}
		if c.Delegated {
			notes = append(notes, "readiness delegated to the node agent")
		}
		if c.Watched != "" {
			notes = append(notes, c.Watched)
		}
		if c.Attempts > 0 {
			last := "last " + c.LastResult
			if c.LastMessage != "" {
				last += " (" + c.LastMessage + ")"
			}
			notes = append(notes, fmt.Sprintf("%s %s ago, %d attempt(s)", last, now.Sub(c.LastAt).Round(time.Millisecond), c.Attempts))
		}
		if len(notes) > 0 {
			b.WriteString(" [" + strings.Join(notes, "; ") + "]")
		}
		b.WriteByte('\n')
	}
	if n := g.RequestsHeld(); n > 0 {
		fmt.Fprintf(&b, "%d request(s) held until every container is ready\n", n)
	}
	if ready {
		b.WriteString("readyz check passed\n")
	} else {
		b.WriteString("readyz check failed\n")
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, b.String())
}

// gateReady answers for the gate itself, not for the other containers:
// 200 while it serves, is not draining and its status source (if any) has
// reported; 503 with the reason otherwise. The injected gate container's
// kubelet readiness probe calls it, so that a sidecar's failing probe
// marks that sidecar unready in the pod's status, not the gate (the
// sidecar's own probe stays on it; the gate's pod condition, under the
// pod's readiness gate, still holds the pod's Ready while any container
// is not ready in the gate's view).
func (g *Gate) gateReady(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	switch {
	case g.drainer.Draining():
		http.Error(w, "draining: the pod is being deleted", http.StatusServiceUnavailable)
	case g.status != nil && !g.statusSeen.Load():
		http.Error(w, "waiting for the status source's first report", http.StatusServiceUnavailable)
	default:
		_, _ = io.WriteString(w, "ok\n")
	}
}

// adminState is what the admin port's calls that change the gate's state
// keep.
type adminState struct {
	// ownPreStop counts the gate's own preStop hooks waiting for a
	// confirmation of the deletion; containerPreStops the other
	// containers' hooks (from the pod or with the token) in their first
	// second. Each confirms the other.
	ownPreStop, containerPreStops atomic.Int32
	// lastRefusalLog (UnixNano) rate-limits the log of refused calls.
	lastRefusalLog atomic.Int64
}

// refusalLogEvery: a stranger calling in a loop must not flood the log.
const refusalLogEvery = 10 * time.Second

// fromPod reports a connection from the pod itself: its source address
// is the address it reached. Inside a pod's network namespace that is its
// loopback (127.0.0.1 to 127.0.0.1) or its pod IP (a connection to one's
// own interface address leaves from it); the kubelet (the node's address)
// and other pods never are. Locally, where every pod is a loopback
// address 127.0.1.N of the one host, a connection to it comes from
// 127.0.0.1 unless its client binds 127.0.1.N: only the pod's own
// address counts, as it would in its own namespace. Another host cannot
// forge the source: the kernel drops a packet from outside that claims a
// local source, and the handshake's answer would never reach it.
func fromPod(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil {
		return false
	}
	la, err := netip.ParseAddrPort(local.String())
	if err != nil {
		return false
	}
	ra, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	return la.Addr().Unmap() == ra.Addr().Unmap()
}

// trustedAdmin: the call comes from the pod itself or carries the pod's
// admin token.
func (g *Gate) trustedAdmin(r *http.Request) bool {
	if fromPod(r) {
		return true
	}
	tok := g.cfg.AdminToken
	got := r.Header.Get(contract.AdminTokenHeader)
	return tok != "" && subtle.ConstantTimeCompare([]byte(got), []byte(tok)) == 1
}

// allowAdmin lets a call that changes the gate's state through when it
// is trusted, and refuses it otherwise.
func (g *Gate) allowAdmin(w http.ResponseWriter, r *http.Request, what string) bool {
	if g.trustedAdmin(r) {
		return true
	}
	g.refuseAdmin(w, r, what)
	return false
}

// refuseAdmin answers 403 and logs it, at most once per refusalLogEvery.
func (g *Gate) refuseAdmin(w http.ResponseWriter, r *http.Request, what string) {
	now := g.clock.Now().UnixNano()
	last := g.admin.lastRefusalLog.Load()
	if (last == 0 || now-last >= int64(refusalLogEvery)) && g.admin.lastRefusalLog.CompareAndSwap(last, now) {
		g.log.Warn("admin call refused: only the pod itself or a caller with the pod's admin token may "+what,
			"path", r.URL.Path, "remote", r.RemoteAddr, "tokenSent", r.Header.Get(contract.AdminTokenHeader) != "",
			"tokenConfigured", g.cfg.AdminToken != "")
	}
	msg := "forbidden: only the pod itself (a connection from the address it reaches) or a caller with " +
		contract.AdminTokenHeader + " (the pod's " + contract.EnvAdminToken + ") may " + what
	http.Error(w, msg, http.StatusForbidden)
}

package gate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/probe"
)

// preStopRelease is how long /wait-for-drain waits for a SIGTERM before it
// concludes that one container is being restarted, not the pod stopped,
// and releases the hook (queue-proxy's rule).
const preStopRelease = time.Second

// AdminHandler serves the admin port: /wait-for-drain, the routed probes
// and /readyz.
func (g *Gate) AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(gateenv.DrainPath, g.waitForDrain)
	mux.HandleFunc(gateenv.ProbePathPrefix, g.routedProbe)
	mux.HandleFunc("/readyz", g.readyz)
	return mux
}

// waitForDrain is every container's preStop hook. On pod deletion the gate
// gets its SIGTERM at the same time (it has no preStop): the hook then
// holds until the drain is complete, so no container stops while traffic
// still reaches the pod. Without a SIGTERM within a second, a single
// container is being restarted (a liveness kill runs preStop too): the hook
// is released, and meanwhile the pod counts as not ready, since that
// container is about to go.
func (g *Gate) waitForDrain(w http.ResponseWriter, r *http.Request) {
	g.log.Info("preStop hook waiting for the drain", "remote", r.RemoteAddr, "userAgent", r.UserAgent())
	g.preStops.Add(1)
	defer g.preStops.Add(-1)
	select {
	case <-g.terminating:
	default:
		// The timer exists before the gate reports not ready, so whoever
		// sees the gate unready knows the one-second rule is running.
		t := g.clock.NewTimer(preStopRelease)
		g.stopping.Add(1)
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
		g.stopping.Add(-1)
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
	case <-g.drainer.Done():
		_, _ = io.WriteString(w, "drained\n")
	case <-r.Context().Done():
	}
}

// routedProbe runs a container's original liveness or startup probe for
// the kubelet (or node agent) that calls /probe/<container>/<kind>, and
// answers with its result: 200, or 500 with the probe's message. Seeing
// every result lets the gate take a container out of traffic before the
// kubelet kills it.
func (g *Gate) routedProbe(w http.ResponseWriter, r *http.Request) {
	name, kind, err := gateenv.ParseProbePath(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	p := g.cfg.RoutedProbes[name].Probe(kind)
	if p == nil {
		http.Error(w, fmt.Sprintf("no %s probe of container %q is routed through the gate", kind, name), http.StatusNotFound)
		return
	}
	out := g.runRouted(r.Context(), p)
	g.metrics.probeResult(name, string(kind), out.Result)
	switch kind {
	case gateenv.Liveness:
		threshold := int(p.FailureThreshold)
		if threshold <= 0 {
			threshold = probe.DefaultFailureThreshold
		}
		g.agg.LivenessResult(name, out, threshold)
	case gateenv.Startup:
		g.agg.StartupResult(name, out)
	}
	switch {
	case out.Result == probe.Error:
		// The kubelet drops an errored probe; so must the caller. A body
		// shorter than announced makes its read fail, which the kubelet
		// counts as a probe error, not a failure (docs/facts.md §1).
		msg := "probe errored: " + out.Message
		w.Header().Set("Content-Length", strconv.Itoa(len(msg)+1))
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, msg)
	case out.Result.Passed():
		_, _ = io.WriteString(w, strings.TrimSpace(out.Result.String()+" "+out.Message))
	default:
		http.Error(w, out.Message, http.StatusInternalServerError)
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
	timeout := time.Duration(p.TimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = probe.DefaultTimeoutSeconds * time.Second
	}
	timeout -= routedMargin
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
		fmt.Fprintf(&b, "[-]gate failed: draining (SIGTERM received), %d request(s) in flight\n", g.drainer.InFlight())
	case g.stopping.Load() > 0:
		b.WriteString("[-]gate failed: a container's preStop hook is running\n")
	default:
		b.WriteString("[+]gate ok\n")
	}
	for _, c := range g.agg.Report() {
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
	if ready {
		b.WriteString("readyz check passed\n")
	} else {
		b.WriteString("readyz check failed\n")
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, b.String())
}

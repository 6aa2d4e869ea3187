package activator

import (
	"context"
	"net/http/httputil"

	"github.com/podgate/podgate/internal/h1"
)

// backend is one pod of a target. Its fields are guarded by the target's
// lock, except the immutable ones (name, addr, proxy, fast, kick, stop).
type backend struct {
	name, addr string
	// direct is pod.Direct, fixed for the backend's life: the prober
	// reads it without the lock.
	direct bool
	pod    Pod
	// everReady is set once the endpoint was seen ready: from then on the
	// gate's answer alone no longer suffices (the fast path is only for a
	// pod's first start), so an endpoint that Kubernetes marks unready
	// keeps traffic away even if the gate disagrees.
	everReady bool
	// gateReady is the gate's last answer, or false after a failed connect.
	gateReady bool
	// gen counts passive downs; a probe result from an older generation
	// was started before the failure and is dropped.
	gen       uint64
	probes    int
	lastError string
	inflight  int
	removed   bool
	// unrouted: the gate was told it gets no more traffic from here.
	unrouted bool
	// routable is usable() as last recorded (pod-in, pod-out).
	routable bool

	proxy *httputil.ReverseProxy
	// fast sends b's GETs on connections of its own (nil with a custom
	// Transport); closed when b is removed, so that its idle connections
	// to a pod that is gone do not linger.
	fast *h1.Client
	// kick asks the prober for a health check now.
	kick chan struct{}
	// stop ends the prober.
	stop context.CancelFunc
}

// usable is the routing rule: both views agree the pod can serve.
func (b *backend) usable() bool {
	if b.removed || b.pod.Terminating || !b.gateReady {
		return false
	}
	return b.pod.Ready || (b.pod.FastPath && !b.everReady)
}

// probeNow asks for a health check without waiting for the next tick.
func (b *backend) probeNow() {
	select {
	case b.kick <- struct{}{}:
	default: // one is pending already
	}
}

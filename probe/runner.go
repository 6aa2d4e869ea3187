package probe

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// MaxAttempts is how many attempts one tick makes at most. Only attempts
// that *error* are retried, at once and within the same tick, like the
// kubelet's maxProbeRetries; a Failure ends the tick.
const MaxAttempts = 3

// Option configures a Runner.
type Option func(*Runner)

// WithKubeletVersion sets the "major.minor" that names the User-Agent of
// HTTP and gRPC probes ("kube-probe/<version>"). Default
// contract.KubeletVersion.
func WithKubeletVersion(version string) Option {
	return func(r *Runner) { r.userAgent = contract.KubeProbeUserAgent(version) }
}

// WithExecutor sets the Executor for exec probes whose Target has none.
// Default HostExecutor{} (runs on this host, inheriting its environment).
func WithExecutor(e Executor) Option {
	return func(r *Runner) { r.exec = e }
}

// Runner runs probes. It is safe for concurrent use; one Runner should serve
// every worker, because it holds the HTTP transport they share.
type Runner struct {
	userAgent string
	exec      Executor
	dialer    *net.Dialer
	transport *http.Transport
	// transportOnly sends plain-HTTP probes through transport too, as
	// before plainHTTP: the reference its tests compare it with.
	transportOnly bool
	// h2c is the transport of AttemptH2C, made at its first use.
	h2cOnce sync.Once
	h2c     *http.Transport
}

// NewRunner returns a Runner with the kubelet's defaults.
func NewRunner(opts ...Option) *Runner {
	r := &Runner{
		userAgent: contract.KubeProbeUserAgent(contract.KubeletVersion),
		exec:      HostExecutor{},
		dialer:    probeDialer(),
	}
	for _, o := range opts {
		o(r)
	}
	r.transport = newHTTPTransport(r.dialer)
	return r
}

// UserAgent is the User-Agent HTTP probes send unless the probe sets one.
func (r *Runner) UserAgent() string { return r.userAgent }

// Run is one tick of a kubelet probe worker: an attempt, repeated at once
// while it errors, up to MaxAttempts. Each attempt is bounded by the probe's
// timeoutSeconds (0 counts as 1s, the API default). When ctx ends (the
// worker stops) the tick ends with Result Error, which callers discard.
func (r *Runner) Run(ctx context.Context, p *corev1.Probe, t Target) Outcome {
	return r.run(ctx, p, t, nil)
}

// Bind returns the tick of probe p against target t, equal to Run(ctx,
// p, t) in every respect (attempts, retries, outcome), for a worker that
// runs the same probe against the same target on every tick: an httpGet
// probe's request, its URL parsed and its headers made the kubelet's
// way, is built here once instead of on every attempt. p and t must not
// change afterwards.
func (r *Runner) Bind(p *corev1.Probe, t Target) func(ctx context.Context) Outcome {
	var prep *preparedHTTP
	if p != nil && p.Exec == nil && p.HTTPGet != nil {
		prep = r.prepareHTTP(p.HTTPGet, t)
	}
	return func(ctx context.Context) Outcome { return r.run(ctx, p, t, prep) }
}

// run is Run with an httpGet probe's request prepared by Bind, if prep is
// not nil.
func (r *Runner) run(ctx context.Context, p *corev1.Probe, t Target, prep *preparedHTTP) Outcome {
	start := time.Now()
	timeout := attemptTimeout(p)
	var o Outcome
	for o.Attempts < MaxAttempts {
		o.Attempts++
		o.Result, o.Message, o.StatusCode, o.Err = r.attempt(ctx, p, t, timeout, r.transport, prep)
		if o.Err == nil || ctx.Err() != nil {
			break
		}
	}
	o.Duration = time.Since(start)
	return o
}

// Attempt makes exactly one attempt, without the retry of errors, bounded by
// timeout (or by the probe's timeoutSeconds when timeout <= 0). It is for
// callers with their own cadence, such as Knative's aggressive readiness
// (100 ms per attempt).
func (r *Runner) Attempt(ctx context.Context, p *corev1.Probe, t Target, timeout time.Duration) Outcome {
	return r.attemptOnce(ctx, p, t, timeout, r.transport)
}

// AttemptH2C is Attempt for a plain-HTTP httpGet probe sent as HTTP/2
// with prior knowledge (h2c), as Knative's queue-proxy tries a readiness
// probe under ENABLE_HTTP2_AUTO_DETECTION: a container that speaks only
// h2c closes an HTTP/1.1 connection unanswered. The request, its headers,
// the redirects followed and the verdict are the kubelet's, as for
// Attempt. A probe that is not httpGet is an Error.
func (r *Runner) AttemptH2C(ctx context.Context, p *corev1.Probe, t Target, timeout time.Duration) Outcome {
	if p == nil || p.HTTPGet == nil || p.Exec != nil {
		err := errors.New("h2c: not an httpGet probe")
		return Outcome{Result: Error, Message: err.Error(), Err: err, Attempts: 1}
	}
	r.h2cOnce.Do(func() { r.h2c = newH2CTransport(r.dialer) })
	return r.attemptOnce(ctx, p, t, timeout, r.h2c)
}

// attemptOnce is Attempt with httpGet probes sent through transport.
func (r *Runner) attemptOnce(ctx context.Context, p *corev1.Probe, t Target, timeout time.Duration, transport *http.Transport) Outcome {
	start := time.Now()
	if timeout <= 0 {
		timeout = attemptTimeout(p)
	}
	o := Outcome{Attempts: 1}
	o.Result, o.Message, o.StatusCode, o.Err = r.attempt(ctx, p, t, timeout, transport, nil)
	o.Duration = time.Since(start)
	return o
}

// errNoHandler is the error of a probe with no handler; the kubelet treats
// it as a probe error too.
var errNoHandler = errors.New("missing probe handler")

// attempt runs the probe's handler once. Handlers report an error only for
// what the kubelet counts as a probe error; a returned error always comes
// with Result Error and a Message equal to its text. code is the HTTP
// status of the answer that decided an httpGet probe, 0 otherwise; it
// went through transport, with the request prep when not nil.
func (r *Runner) attempt(ctx context.Context, p *corev1.Probe, t Target, timeout time.Duration, transport *http.Transport, prep *preparedHTTP) (Result, string, int, error) {
	var (
		res  Result
		msg  string
		code int
		err  error
	)
	switch {
	case ctx.Err() != nil:
		// The worker stopped already: start nothing (no process, no dial).
	case p == nil:
		err = errNoHandler
	case p.Exec != nil: // the kubelet's order of handlers
		res, msg, err = r.execProbe(ctx, p.Exec, t, timeout)
	case p.HTTPGet != nil:
		res, msg, code, err = r.httpProbe(ctx, transport, p.HTTPGet, t, timeout, prep)
	case p.TCPSocket != nil:
		res, msg, err = r.tcpProbe(ctx, p.TCPSocket, t, timeout)
	case p.GRPC != nil:
		res, msg, err = r.grpcProbe(ctx, p.GRPC, t, timeout)
	default:
		err = errNoHandler
	}
	// A stopped worker must not record what a cancelled attempt saw (a
	// refused dial, a killed command): report it as a discarded error.
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return Error, err.Error(), code, err
	}
	return res, msg, code, nil
}

// attemptTimeout is the probe's timeoutSeconds; unset counts as the API
// default of 1s.
func attemptTimeout(p *corev1.Probe) time.Duration {
	if p == nil || p.TimeoutSeconds <= 0 {
		return time.Second
	}
	return time.Duration(p.TimeoutSeconds) * time.Second
}

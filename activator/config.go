package activator

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"k8s.io/utils/clock"

	"github.com/podgate/podgate/record"
)

// Defaults, Knative's where Knative has one (docs/facts.md §5).
const (
	// DefaultProbeInterval is how often each gate is health-checked.
	DefaultProbeInterval = 200 * time.Millisecond
	// DefaultProbeTimeout bounds one health check.
	DefaultProbeTimeout = 300 * time.Millisecond
	// DefaultQueueDepth is how many requests may wait for a backend.
	DefaultQueueDepth = 10000
	// DefaultRequestTimeout is Knative's default revision timeout.
	DefaultRequestTimeout = 300 * time.Second
	// DefaultConnectTimeout bounds the dial to a gate; a dial that fails
	// sent nothing, so the request is retried on another backend.
	DefaultConnectTimeout = time.Second
)

// Config tunes a Target. The zero value uses the defaults above.
type Config struct {
	// ContainerConcurrency is how many requests one pod may hold at once;
	// 0 is unlimited (Knative's containerConcurrency).
	ContainerConcurrency int
	// QueueDepth is how many requests may wait for a backend; beyond it
	// requests get 503 "pending request queue full".
	QueueDepth int
	// RequestTimeout bounds the time from arrival until the backend starts
	// its response: waiting for a backend plus waiting for the response
	// headers. Past it the client gets 504 "activator request timeout".
	// A response that has started is not cut (the gate enforces the
	// revision timeout on the whole exchange).
	RequestTimeout time.Duration
	// ProbeInterval and ProbeTimeout time the gate health checks.
	ProbeInterval time.Duration
	ProbeTimeout  time.Duration
	// ConnectTimeout bounds a dial to a gate.
	ConnectTimeout time.Duration
	// Dial connects to a gate, for proxied requests and health checks
	// alike, when the default transports are used (default: a
	// net.Dialer). Tests that run pods on loopback reach them through it
	// at the addresses a real API server takes in EndpointSlices.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Clock drives the request timeout and the probe interval
	// (default the real clock).
	Clock clock.WithTickerAndDelayedExecution
	// Logger gets backend transitions and proxy errors (default: discard).
	Logger *slog.Logger
	// Metrics receives measurements (default: none).
	Metrics Metrics
	// Transport carries proxied requests; default one made from
	// ConnectTimeout. A custom one should tag dial failures with
	// ConnectError, or they are not retried.
	Transport http.RoundTripper
	// ProbeTransport carries health checks (default: a dedicated
	// keep-alive transport).
	ProbeTransport http.RoundTripper
	// Recorder, when set, hears every routing decision (routed, held,
	// released, timed out) and every request's end (`podgate run
	// --record`). It is called on the request's goroutine, outside the
	// target's lock. Nil records nothing and costs a request nothing.
	Recorder record.Sink
	// UnroutedIfDraining: a pod not known to be terminating is told that
	// it gets nothing more (the target closing) only on the condition that
	// its gate drains already (contract.UnroutedIf). On a cluster a target
	// closes when idle and the activator may be replaced while its pods
	// run on: a confirmation to such a pod would be stale by its deletion.
	UnroutedIfDraining bool

	// fastDial is the default Transport's dial (connect timeout, failures
	// tagged ConnectError), for the fast HTTP/1.1 clients that send its
	// GETs; nil with a custom Transport, which then carries every request.
	fastDial func(ctx context.Context, network, addr string) (net.Conn, error)
}

func (c Config) withDefaults() (Config, error) {
	switch {
	case c.ContainerConcurrency < 0:
		return c, fmt.Errorf("containerConcurrency: Invalid value: %d: must be 0 (unlimited) or more", c.ContainerConcurrency)
	case c.QueueDepth < 0:
		return c, fmt.Errorf("queueDepth: Invalid value: %d: must be 0 (default) or more", c.QueueDepth)
	case c.RequestTimeout < 0, c.ProbeInterval < 0, c.ProbeTimeout < 0, c.ConnectTimeout < 0:
		return c, fmt.Errorf("timeouts and intervals must not be negative")
	}
	if c.QueueDepth == 0 {
		c.QueueDepth = DefaultQueueDepth
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.ProbeInterval == 0 {
		c.ProbeInterval = DefaultProbeInterval
	}
	if c.ProbeTimeout == 0 {
		c.ProbeTimeout = DefaultProbeTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	if c.Transport == nil {
		c.fastDial = connectDial(c.ConnectTimeout, c.Dial)
		c.Transport = transportOver(c.fastDial)
	}
	if c.ProbeTransport == nil {
		c.ProbeTransport = newProbeTransport(c.ProbeTimeout, c.Dial)
	}
	return c, nil
}

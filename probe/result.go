// Package probe runs one probe attempt — httpGet, tcpSocket, grpc or exec —
// for a corev1.Probe, with the kubelet's exact semantics (docs/facts.md §1).
//
// It knows nothing about timing, thresholds or workers; that is package
// prober. One call to Run is one tick of a kubelet probe worker, including
// the kubelet's immediate retry of attempts that errored.
package probe

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Result is what one probe tick concluded.
type Result int

const (
	// Error means the probe could not be carried out (unknown named port,
	// body read error, exec command that cannot start). The kubelet drops
	// such a result: the worker's state does not change.
	Error Result = iota
	// Success: the container passed.
	Success
	// Warning counts as success but is recorded as a ProbeWarning event
	// (HTTP 3xx, redirect to another host).
	Warning
	// Failure: the container failed the probe; counts toward failureThreshold.
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Warning:
		return "warning"
	case Failure:
		return "failure"
	default:
		return "error"
	}
}

// Passed reports whether the result counts as a success for thresholds.
func (r Result) Passed() bool { return r == Success || r == Warning }

// Outcome is the full answer of one tick.
type Outcome struct {
	Result Result
	// Message is what the kubelet would record: the failure reason, the
	// warning text, or exec output (an exec probe carries its output on
	// success too). Empty on an HTTP/TCP/gRPC success. For Error it is
	// Err's text.
	Message string
	// Err is set when Result is Error (the last attempt's error).
	Err error
	// StatusCode is the HTTP status of the answer that decided an httpGet
	// probe (the 3xx of a Warning, the code of an HTTP Failure); 0 when no
	// answer came or the probe is not httpGet.
	StatusCode int
	// Attempts is how many attempts the tick made (errors are retried up to
	// MaxAttempts times in one tick).
	Attempts int
	// Duration is the wall time of the whole tick.
	Duration time.Duration
}

// Target is the container a probe is aimed at.
type Target struct {
	// PodIP is the default host of httpGet/tcpSocket and the only host of grpc.
	PodIP string
	// Ports are the container's declared ports, for named-port resolution.
	Ports []corev1.ContainerPort
	// Env is the container's static environment, for $(VAR) expansion in
	// exec commands (as the kubelet does, only static values count).
	Env []corev1.EnvVar
	// Exec runs exec probes in the container's context. Nil means
	// HostExecutor with no extra context.
	Exec Executor
	// MessageHeader, if set, names a response header of an httpGet probe
	// whose value (Go-quoted, as strconv.Quote writes it) replaces the
	// probe's message. The gate answers a routed liveness or startup probe
	// with the original probe's message there; podgate's node agent sets
	// it for those probes, so it records what probing the container
	// directly would have. The kubelet knows nothing of it.
	MessageHeader string
}

// Executor runs an exec probe's argv in a container's context and returns
// its combined output (stdout then stderr) and exit code. It must kill the
// whole process tree when ctx ends and then return an error (wrapping
// ctx.Err()); the probe reports that as a timeout Failure, or as an Error
// when the worker stopped. A command that cannot be started is returned as
// an error too (a probe error, not a failure).
type Executor interface {
	Exec(ctx context.Context, argv []string) (output []byte, exitCode int, err error)
}

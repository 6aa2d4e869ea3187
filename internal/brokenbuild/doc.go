// Package brokenbuild breaks podgate on purpose, in test builds only, so
// that the tests can show their checks fail when the product is wrong: a
// scenario whose rules pass against a gate that never withholds
// readiness checks nothing.
//
// A normal build cannot be broken: Has is the constant false there, and
// the faults are compiled out. A build with the tag podgate_broken reads
// the faults from the linker:
//
//	go build -tags podgate_broken \
//	  -ldflags '-X github.com/podgate/podgate/internal/brokenbuild.faults=readiness' \
//	  ./cmd/podgate
//
// Faults (a comma-separated list), each what one scenario is about:
//
//   - readiness: the gate says every container is ready, whatever its
//     probes, restarts and liveness say (no aggregation, no withdrawal
//     before a liveness kill).
//   - exec-readiness: the node counts every exec readiness probe as
//     passing.
//   - kill-first: the node kills a container that failed its liveness
//     probe before it publishes it not ready (the kubelet's order).
//   - no-prestop: the node runs no preStop hook, so containers hear
//     SIGTERM before the gate has drained.
//   - no-early-drain: the gate's drain ignores the only router's word and
//     waits its quiet period, as on a cluster where other routers lag.
package brokenbuild

// The faults a broken build can carry.
const (
	Readiness     = "readiness"
	ExecReadiness = "exec-readiness"
	KillFirst     = "kill-first"
	NoPreStop     = "no-prestop"
	NoEarlyDrain  = "no-early-drain"
)

package prober

import "fmt"

// Kind is the kind of a probe.
type Kind int

const (
	// Readiness decides whether the container gets traffic.
	Readiness Kind = iota
	// Liveness decides whether the container is restarted.
	Liveness
	// Startup holds readiness and liveness back until the container has
	// started, and restarts it if it never does.
	Startup
	numKinds
)

// kindOrder is the order in which a container's resets are published.
var kindOrder = [...]Kind{Startup, Readiness, Liveness}

// String is the word the kubelet puts in event messages ("Liveness probe
// failed: …").
func (k Kind) String() string {
	switch k {
	case Readiness:
		return "Readiness"
	case Liveness:
		return "Liveness"
	case Startup:
		return "Startup"
	default:
		return fmt.Sprintf("Kind(%d)", int(k))
	}
}

// field is the container field that holds a probe of this kind.
func (k Kind) field() string {
	switch k {
	case Readiness:
		return "readinessProbe"
	case Liveness:
		return "livenessProbe"
	case Startup:
		return "startupProbe"
	default:
		return k.String()
	}
}

func (k Kind) valid() bool { return k >= 0 && k < numKinds }

// initial is the state a worker publishes for a container it has not probed
// yet: the container is not ready, is assumed alive, and has not started.
func (k Kind) initial() State {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	default:
		return Unknown
	}
}

// State is the published verdict of one probe on one container.
type State int

const (
	// Unknown: no verdict yet (startup before its threshold).
	Unknown State = iota
	Success
	Failure
)

func (s State) String() string {
	switch s {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	default:
		return "Unknown"
	}
}

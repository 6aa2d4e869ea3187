package prober

import (
	"fmt"
	"time"

	"github.com/podgate/podgate/probe"
)

// UpdateType says what an Update reports.
type UpdateType int

const (
	// StateChanged: the published state of (Container, Kind) changed to
	// State. Cause says why.
	StateChanged UpdateType = iota + 1
	// AttemptFailed: one tick returned Failure (the kubelet's Unhealthy
	// event, recorded on every failed tick, not only at the threshold).
	AttemptFailed
	// AttemptWarned: one tick returned Warning (event ProbeWarning); it
	// counted as a success.
	AttemptWarned
	// AttemptErrored: one tick could not be carried out; its result was
	// dropped (state and counters unchanged). Event Unhealthy "… probe
	// errored …".
	AttemptErrored
	// Attempted: one tick, whatever its result, after the thresholds were
	// applied: State is the published state after it and Restart is set
	// when it took liveness or startup to Failure. Sent only with
	// Options.EveryAttempt (a recording of every probe tick), after the
	// tick's other Updates; it records no event and changes nothing.
	Attempted
)

func (t UpdateType) String() string {
	switch t {
	case StateChanged:
		return "StateChanged"
	case AttemptFailed:
		return "AttemptFailed"
	case AttemptWarned:
		return "AttemptWarned"
	case AttemptErrored:
		return "AttemptErrored"
	case Attempted:
		return "Attempted"
	default:
		return fmt.Sprintf("UpdateType(%d)", int(t))
	}
}

// Cause says why a StateChanged happened.
type Cause int

const (
	// CauseProbe: a threshold of consecutive probe results was reached;
	// Update.Outcome is the attempt that reached it.
	CauseProbe Cause = iota + 1
	// CauseContainerReplaced: a new container ID reset the state to the
	// kind's initial value.
	CauseContainerReplaced
	// CauseContainerStopped: the container stopped; readiness is Failure.
	CauseContainerStopped
	// CausePodTerminating: the pod is terminating; liveness and startup
	// report Success and stop.
	CausePodTerminating
)

func (c Cause) String() string {
	switch c {
	case CauseProbe:
		return "Probe"
	case CauseContainerReplaced:
		return "ContainerReplaced"
	case CauseContainerStopped:
		return "ContainerStopped"
	case CausePodTerminating:
		return "PodTerminating"
	default:
		return fmt.Sprintf("Cause(%d)", int(c))
	}
}

// Update is one notification from a Manager. Updates are delivered one at a
// time, in the order they happened, on a goroutine of the Manager's own.
type Update struct {
	Type        UpdateType
	Container   string
	ContainerID string
	Kind        Kind
	// State is the published state of (Container, Kind) after this update.
	State State
	// Previous is the state before a StateChanged.
	Previous State
	// Cause is set on StateChanged only.
	Cause Cause
	// Outcome is the attempt behind the update; zero for a StateChanged
	// that no attempt caused.
	Outcome probe.Outcome
	// Started and Ready are the container's after this update. Consumers
	// should take readiness from here rather than derive it from Kind and
	// State: a liveness Failure also makes the container not Ready.
	Started bool
	Ready   bool
	// Restart is set on the StateChanged that takes liveness or startup to
	// Failure: the runtime must kill ContainerID (the container is already
	// not Ready in this same update) using TerminationGracePeriodSeconds if
	// set, else the pod's grace period.
	Restart bool
	// TerminationGracePeriodSeconds is the probe-level override (liveness
	// and startup only); nil means use the pod's.
	TerminationGracePeriodSeconds *int64
	// At is the Manager's clock time of the update.
	At time.Time
}

// Event returns the event the kubelet records for this update: type,
// reason and message. ok is false when the update records none (state
// changes: the runtime writes "Killing" itself with its own wording).
func (u Update) Event() (eventType, reason, message string, ok bool) {
	switch u.Type {
	case AttemptFailed:
		return "Warning", "Unhealthy", fmt.Sprintf("%s probe failed: %s", u.Kind, u.Outcome.Message), true
	case AttemptWarned:
		return "Warning", "ProbeWarning", fmt.Sprintf("%s probe warning: %s", u.Kind, u.Outcome.Message), true
	case AttemptErrored:
		text := u.Outcome.Message
		if u.Outcome.Err != nil {
			text = u.Outcome.Err.Error()
		}
		return "Warning", "Unhealthy", fmt.Sprintf("%s probe errored and resulted in unknown state: %s", u.Kind, text), true
	default:
		return "", "", "", false
	}
}

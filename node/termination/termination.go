package termination

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultGrace is terminationGracePeriodSeconds when the pod spec has none,
// and the grace period of a deletion that names none.
const DefaultGrace = 30 * time.Second

// PodGrace is the pod's terminationGracePeriodSeconds (default 30).
func PodGrace(spec *corev1.PodSpec) time.Duration {
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		return time.Duration(*g) * time.Second
	}
	return DefaultGrace
}

// ProbeKillGrace is the grace period of a kill a liveness or startup probe
// asks for: the probe's own terminationGracePeriodSeconds when it has
// one, else the pod's.
func ProbeKillGrace(spec *corev1.PodSpec, probeGrace *int64) time.Duration {
	if probeGrace != nil {
		return time.Duration(*probeGrace) * time.Second
	}
	return PodGrace(spec)
}

// State is where a pod stands on its way out. The zero value is a pod
// that runs on.
type State struct {
	// Terminating: the pod is being deleted, or the agent shuts down; no
	// container starts or restarts any more.
	Terminating bool
	// Completed: every main container finished for good (or a regular
	// init container failed): nothing restarts and the native sidecars
	// stop, within the pod's grace period.
	Completed bool
	// Deadline is when the grace period ends, shared by every
	// container's kill. While Terminating it is also the pod's
	// metadata.deletionTimestamp, as the API server sets it.
	Deadline time.Time
	// Seconds is the pod's metadata.deletionGracePeriodSeconds while
	// Terminating.
	Seconds int64
	// Forced: a grace period of 0 was asked for: every process of the pod
	// is killed at once, without preStop or SIGTERM.
	Forced bool
}

// Begin starts the termination at now with grace period g and reports
// true; when the pod is terminating already, it reports false and only
// shortens the grace period, as a second `kubectl delete --grace-period`
// can: a deadline later than the current one changes nothing, and g 0
// forces the kill whatever the deadline.
func (s *State) Begin(now time.Time, g time.Duration) bool {
	deadline := now.Add(g)
	if s.Terminating {
		if deadline.Before(s.Deadline) {
			s.Deadline, s.Seconds = deadline, int64(g/time.Second)
		}
		if g == 0 {
			s.Forced = true
		}
		return false
	}
	s.Terminating = true
	s.Forced = g == 0
	s.Deadline, s.Seconds = deadline, int64(g/time.Second)
	return true
}

// Complete marks the pod complete at now: its native sidecars get grace
// period g from now. Unlike a deletion's, a g of 0 forces nothing: each
// sidecar still hears SIGTERM first.
func (s *State) Complete(now time.Time, g time.Duration) {
	s.Completed = true
	s.Deadline = now.Add(g)
}

// Ending reports whether nothing of the pod restarts any more: it is
// terminating or complete.
func (s *State) Ending() bool { return s.Terminating || s.Completed }

// Remaining is the grace period left at now for a kill that starts then;
// 0 once the deadline passed.
func (s *State) Remaining(now time.Time) time.Duration {
	if d := s.Deadline.Sub(now); d > 0 {
		return d
	}
	return 0
}

// Container is what the stop order knows of one of the pod's containers.
type Container struct {
	// Sidecar: a native sidecar (an init container with restartPolicy
	// Always).
	Sidecar bool
	// Running: an instance of it runs.
	Running bool
	// Stopping: its kill is under way.
	Stopping bool
}

// Stop is the next step in stopping the pod's containers cs, given in the
// pod spec's order (init containers, then containers): the indices of
// those whose kill starts now, and whether any container still runs
// (false: the pod's containers have all stopped). Every running regular
// container (a main one, or a regular init container) stops at once;
// only once none runs does the last running native sidecar stop, and the
// one before it only after it has exited.
func Stop(cs []Container) (stop []int, running bool) {
	for i, c := range cs {
		if c.Sidecar || !c.Running {
			continue
		}
		running = true
		if !c.Stopping {
			stop = append(stop, i)
		}
	}
	if running {
		return stop, true
	}
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		if !c.Sidecar || !c.Running {
			continue
		}
		if !c.Stopping {
			stop = append(stop, i)
		}
		return stop, true
	}
	return nil, false
}

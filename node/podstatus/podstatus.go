package podstatus

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Container is what the status says of one container of the spec.
type Container struct {
	Name  string
	Image string
	// ID is the current or last instance's containerID ("" before the
	// first); it is reported only once an instance was Created.
	ID      string
	Created bool
	Init    bool // in spec.initContainers
	Sidecar bool // an init container with restartPolicy Always

	// The current instance.
	Running   bool
	StartedAt time.Time
	Started   bool // its startup probe passed (or it has none)
	Ready     bool // its readiness probe passed (or it has none)

	RestartCount int32
	LastState    corev1.ContainerState
	Terminated   *corev1.ContainerStateTerminated // the current state, when it is that
	Waiting      *corev1.ContainerStateWaiting    // CrashLoopBackOff while backing off
	// SetupError, when set, is why the container cannot be started at
	// all: it waits as CreateContainerConfigError with this message.
	SetupError string
	Succeeded  bool // a regular init container that exited 0
	Done       bool // will not be started again
}

// Pod is what the status depends on of the pod.
type Pod struct {
	Inits, Mains []Container
	// Initialized: every init container is done (a sidecar: started).
	Initialized bool
	// FailedInit: an init container failed for good.
	FailedInit    bool
	Terminating   bool
	RestartPolicy corev1.RestartPolicy
	// ReadinessGates are the spec's; GateConditions the conditions others
	// wrote on the pod that they name.
	ReadinessGates []corev1.PodReadinessGate
	GateConditions []corev1.PodCondition

	// Where and since when it runs, and its QoS class (the API server's).
	HostIP, PodIP string
	StartTime     metav1.Time
	QOSClass      corev1.PodQOSClass
}

// Status is the pod's whole status now: the phase, the addresses, the
// start time and QoS class, each container's status, and the conditions
// (prev: the ones reported last, whose transition times carry on).
func Status(p *Pod, prev map[corev1.PodConditionType]corev1.PodCondition, now metav1.Time) corev1.PodStatus {
	start := p.StartTime
	st := corev1.PodStatus{
		Phase:     Phase(p),
		HostIP:    p.HostIP,
		HostIPs:   []corev1.HostIP{{IP: p.HostIP}},
		PodIP:     p.PodIP,
		PodIPs:    []corev1.PodIP{{IP: p.PodIP}},
		StartTime: &start,
		QOSClass:  p.QOSClass,
	}
	for i := range p.Inits {
		st.InitContainerStatuses = append(st.InitContainerStatuses, ContainerStatus(p, &p.Inits[i]))
	}
	for i := range p.Mains {
		st.ContainerStatuses = append(st.ContainerStatuses, ContainerStatus(p, &p.Mains[i]))
	}
	st.Conditions = Conditions(p, st.Phase, prev, now)
	return st
}

func (p *Pod) anyRunning() bool {
	for _, cs := range [][]Container{p.Inits, p.Mains} {
		for _, c := range cs {
			if c.Running {
				return true
			}
		}
	}
	return false
}

func (p *Pod) allMainsDone() bool {
	for _, c := range p.Mains {
		if c.Running || !c.Done {
			return false
		}
	}
	return len(p.Mains) > 0
}

// ContainerStatus is c's status in pod p.
func ContainerStatus(p *Pod, c *Container) corev1.ContainerStatus {
	started := c.Running && c.Started
	cs := corev1.ContainerStatus{
		Name:                 c.Name,
		Image:                c.Image,
		ImageID:              c.Image,
		ContainerID:          c.ID,
		RestartCount:         c.RestartCount,
		LastTerminationState: c.LastState,
		Started:              &started,
	}
	switch {
	case c.Running:
		cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(c.StartedAt)}
		cs.Ready = c.Ready && c.Started
	case c.Waiting != nil:
		w := *c.Waiting
		cs.State.Waiting = &w
	case c.Terminated != nil:
		t := *c.Terminated
		cs.State.Terminated = &t
		// A regular init container that completed counts as ready.
		cs.Ready = c.Succeeded
	case c.SetupError != "":
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: c.SetupError}
	default:
		// Init containers wait as PodInitializing, and so do the main
		// containers until the init containers are done; without init
		// containers (still being prepared: PodExtras.Prepare) they wait
		// as ContainerCreating.
		reason := "ContainerCreating"
		if c.Init || (!p.Initialized && len(p.Inits) > 0) {
			reason = "PodInitializing"
		}
		cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
	}
	if !c.Created {
		cs.ContainerID = ""
	}
	return cs
}

// Phase is the kubelet's getPhase for the containers podgate tracks.
func Phase(p *Pod) corev1.PodPhase {
	if p.FailedInit {
		return corev1.PodFailed
	}
	if !p.Initialized {
		return corev1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, c := range p.Mains {
		switch {
		case c.Running:
			running++
		case c.Terminated != nil:
			stopped++
			if c.Terminated.ExitCode == 0 {
				succeeded++
			}
		case c.LastState.Terminated != nil:
			stopped++ // waiting to be restarted: it has run
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case stopped > 0 && p.Terminating && !p.anyRunning():
		// A deleted pod whose containers all stopped ends in a terminal
		// phase, as kubelets since 1.27 report.
		if stopped == succeeded {
			return corev1.PodSucceeded
		}
		return corev1.PodFailed
	case stopped > 0:
		switch {
		case p.RestartPolicy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded && p.allMainsDone():
			return corev1.PodSucceeded
		case p.RestartPolicy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

package node

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/containerconfig"
	"github.com/podgate/podgate/node/kill"
	"github.com/podgate/podgate/node/logbuf"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/node/restart"
	"github.com/podgate/podgate/node/seccontext"
	"github.com/podgate/podgate/probe"
)

// ContainerIDPrefix is the runtime part of containerID: podgate://<id>.
const ContainerIDPrefix = "podgate://"

// container is the pod worker's view of one container of the spec: the
// resolved command and environment, the current instance if any, and what
// the status reports. Only the pod worker's goroutine touches it.
type container struct {
	name    string
	spec    *corev1.Container
	init    bool // in spec.initContainers
	sidecar bool // an init container with restartPolicy Always

	// cfg is what it runs with (Exec runs its exec probes and hooks;
	// Errs: why it cannot be started, if anything).
	cfg containerconfig.Config
	// sec is how its securityContext applies: what the process gives
	// up, the fields not enforced, or the kubelet's refusal to start it.
	sec seccontext.Decision
	// refusalSeen: the Failed event of a refusal was recorded.
	refusalSeen bool
	// pullWaiting is what a container whose image the node does not have
	// (cfg.Absent) waits as since the last look (package
	// node/imagepull); pullNext is when the node looks again.
	pullWaiting *corev1.ContainerStateWaiting
	pullNext    time.Time

	// The current instance.
	id        string
	proc      *proc.Process
	stdout    *logbuf.LineWriter
	stderr    *logbuf.LineWriter
	startedAt time.Time
	running   bool
	kill      *kill.Kill // set while a kill is under way
	ready     bool
	started   bool

	// History: the instances' output kept (Logs reads it from other
	// goroutines), their restarts and states.
	output logbuf.Kept
	hist   restart.History
}

// probeTarget is where this container's probes aim.
func (c *container) probeTarget(podIP string) probe.Target {
	return probe.Target{
		PodIP: podIP,
		Ports: c.spec.Ports,
		// docs/facts.md §1: only static values take part in $(VAR) expansion.
		Env:  c.spec.Env,
		Exec: c.cfg.Exec,
	}
}

// blocked reports a container that cannot start at all (it waits as
// CreateContainerConfigError): its configuration has a problem, or its
// securityContext refuses its user.
func (c *container) blocked() bool { return c.cfg.Blocked() || c.sec.Refused != "" }

// kind is where c is in the spec, as the restart rule sees it.
func (c *container) kind() restart.Kind {
	switch {
	case c.sidecar:
		return restart.Sidecar
	case c.init:
		return restart.Init
	}
	return restart.Main
}

// fieldPath is the events' fieldPath for the container.
func (c *container) fieldPath() string {
	if c.init {
		return "spec.initContainers{" + c.name + "}"
	}
	return "spec.containers{" + c.name + "}"
}

func (c *container) containerID() string {
	if c.id == "" {
		return ""
	}
	return ContainerIDPrefix + c.id
}

// newContainerID is 64 hex digits, like containerd's.
func newContainerID() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

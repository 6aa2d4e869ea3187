package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/runtime/proc"
)

// ContainerIDPrefix is the runtime part of containerID: podgate://<id>.
const ContainerIDPrefix = "podgate://"

// container is the pod worker's view of one container of the spec: the
// resolved command and environment, the current instance if any, and what
// the status reports. Only the pod worker's goroutine touches it.
type container struct {
	name    string
	spec    *corev1.Container
	path    *field.Path
	init    bool // in spec.initContainers
	sidecar bool // an init container with restartPolicy Always

	env   *envList
	argv  []string
	dir   string
	exec  probe.Executor  // runs its exec probes and hooks
	setup field.ErrorList // why it cannot be started, if anything

	// The current instance.
	id        string
	proc      *proc.Process
	stdout    *lineWriter
	stderr    *lineWriter
	startedAt time.Time
	running   bool
	kill      *killing // set while a kill is under way
	ready     bool
	started   bool

	// History.
	created      bool // an instance has existed
	restartCount int32
	logs, prev   *logBuffer
	terminated   *corev1.ContainerStateTerminated // the current state, when it is that
	lastState    corev1.ContainerState
	waiting      *corev1.ContainerStateWaiting // CrashLoopBackOff while backing off
	backoff      crashBackoff
	notBefore    time.Time // no restart before this
	succeeded    bool      // a regular init container that exited 0
	done         bool      // will not be started again
}

// probeTarget is where this container's probes aim.
func (c *container) probeTarget(podIP string) probe.Target {
	return probe.Target{
		PodIP: podIP,
		Ports: c.spec.Ports,
		// docs/facts.md §1: only static values take part in $(VAR) expansion.
		Env:  c.spec.Env,
		Exec: c.exec,
	}
}

// hostExecutor runs a container's exec probes and hooks on this host. A
// command "podgate" runs this binary, as a container's command does: the
// gate's startup probe is `podgate gate wait`.
type hostExecutor struct {
	probe.HostExecutor
	self string
}

func (e hostExecutor) Exec(ctx context.Context, argv []string) ([]byte, int, error) {
	if len(argv) > 0 && argv[0] == "podgate" && e.self != "" {
		argv = append([]string{e.self}, argv[1:]...)
	}
	return e.HostExecutor.Exec(ctx, argv)
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

// resolveExecutable finds argv[0] as a container runtime would: a name
// with a slash is a path (relative to the working directory), a bare name
// is looked up in the container's own PATH.
func resolveExecutable(name, dir string, env *envList) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		if _, err := os.Stat(p); err != nil {
			return "", &exec.Error{Name: name, Err: err}
		}
		return p, nil
	}
	pathEnv, _ := env.get("PATH")
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", &exec.Error{Name: name, Err: exec.ErrNotFound}
}

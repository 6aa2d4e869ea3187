// Package restart is the kubelet's restart rule for a container instance
// that ended, by the pod's restartPolicy and the container's kind (a
// native sidecar always restarts, a regular init container only after a
// failure, a main container as its policy says, where a liveness or
// startup kill counts as a failure whatever the exit code), and a
// container's History as its status tells it: the restart count, the
// current and last states, when the next instance may start (package
// node/backoff's CrashLoopBackOff delay), and the words it is seen in —
// the CrashLoopBackOff waiting state and BackOff event of a container
// held back, the Killing event of a probe's kill.
package restart

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Kind is where a container is in the pod spec, as the restart rule sees
// it.
type Kind int

const (
	// Main is a container of spec.containers.
	Main Kind = iota
	// Init is a regular init container.
	Init
	// Sidecar is a native sidecar: an init container with restartPolicy
	// Always.
	Sidecar
)

// Should reports whether an instance of a container of kind that exited
// with exitCode starts again under the pod's restart policy; probeKill: a
// liveness or startup failure killed it. An empty policy is Always, the
// API server's default.
func Should(policy corev1.RestartPolicy, kind Kind, exitCode int32, probeKill bool) bool {
	switch kind {
	case Sidecar:
		return true
	case Init:
		return exitCode != 0 && policy != corev1.RestartPolicyNever
	}
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exitCode != 0 || probeKill
	default:
		return true
	}
}

// backOff is how a container held back for delay before its restart is
// seen: its waiting state and the message of its BackOff event, naming
// the pod as the kubelet does (NAME_NAMESPACE(UID)).
func backOff(pod, namespace string, uid types.UID, container string, delay time.Duration) (corev1.ContainerStateWaiting, string) {
	podName := fmt.Sprintf("%s_%s(%s)", pod, namespace, uid)
	return corev1.ContainerStateWaiting{
			Reason:  "CrashLoopBackOff",
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", delay, container, podName),
		},
		fmt.Sprintf("Back-off restarting failed container %s in pod %s", container, podName)
}

// ProbeKill is the message of the Killing event of a container that a
// liveness or startup probe (probe: its kind, "Liveness" or "Startup")
// failed, saying whether it will be restarted.
func ProbeKill(container, probe string, policy corev1.RestartPolicy, kind Kind) string {
	msg := fmt.Sprintf("Container %s failed %s probe", container, strings.ToLower(probe))
	if policy != corev1.RestartPolicyNever || kind == Sidecar {
		msg += ", will be restarted"
	}
	return msg
}

// Package podsetup is what a node adds to a pod besides its spec (on a
// cluster: the pod's service-account credentials and how to reach the API
// server) and the preparation of it: Extras, given by a Func for every
// pod the node agent admits, and Retry, which runs Extras.Prepare until
// it succeeds, with the back-off of the kubelet's volume manager.
//
// Package node names these types node.PodExtras and
// node.PodSetupFunc (Options.PodSetup).
package podsetup

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podgate/podgate/node/env"
)

// Delays between the attempts of a Prepare that failed: the kubelet's
// volume manager retries a failed mount with a back-off of its own, from
// half a second up to about two minutes; a pod here waits for its node's
// work, so the cap is lower.
const (
	FirstRetry = 500 * time.Millisecond
	MaxRetry   = 30 * time.Second
)

// Func gives one pod what the node adds to it besides its spec. It is
// called once per pod the agent admits, on the agent's watch goroutine,
// so it must not block: the slow part belongs in Extras.Prepare.
type Func func(pod *corev1.Pod) Extras

// Extras is what a node adds to one pod.
type Extras struct {
	// Env is set in every container (and its exec probes and hooks) after
	// HOSTNAME and POD_IP and before the container's own envFrom and env,
	// which may refer to these variables or replace them, as they may the
	// kubelet's service variables.
	Env []env.Var
	// Prepare, when set, runs on a goroutine of its own once the pod is
	// admitted, and no container of the pod starts before it returned nil
	// (they wait as ContainerCreating). A failure is recorded as a Warning
	// event FailedMount on the pod, as the kubelet records a volume it
	// could not set up, and Prepare is called again after a back-off. ctx
	// ends when the pod starts terminating.
	Prepare func(ctx context.Context) error
	// Release, when set, runs once every process of the pod is gone.
	Release func()
	// Volumes names volumes of the pod this setup fills (by name: a
	// directory of this machine, written by Prepare): on a node that
	// mounts volumes, each is bound from there as it is (node/kube: the
	// service-account token volume).
	Volumes map[string]string
}

// Retry calls prepare until it returns nil or ctx ends, waiting on clk
// between attempts from FirstRetry, doubling up to MaxRetry, and telling
// failed of every failure. It reports whether prepare succeeded (false:
// ctx ended first; nothing is told of an attempt ctx cut short).
func Retry(ctx context.Context, prepare func(context.Context) error, clk clock.Clock, failed func(error)) bool {
	delay := FirstRetry
	for {
		err := prepare(ctx)
		if ctx.Err() != nil {
			return false
		}
		if err == nil {
			return true
		}
		failed(err)
		select {
		case <-ctx.Done():
			return false
		case <-clk.After(delay):
		}
		delay = min(2*delay, MaxRetry)
	}
}

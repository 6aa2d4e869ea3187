package runtime

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/runtime/env"
)

// Delays between the attempts of a PodExtras.Prepare that failed: the
// kubelet's volume manager retries a failed mount with a back-off of its
// own, from half a second up to about two minutes; a pod here waits for
// its node's work, so the cap is lower.
const (
	prepareFirstRetry = 500 * time.Millisecond
	prepareMaxRetry   = 30 * time.Second
)

// PodSetupFunc gives one pod what the node adds to it besides its spec
// (Options.PodSetup). It is called once per pod the agent admits, on the
// agent's watch goroutine, so it must not block: the slow part belongs in
// PodExtras.Prepare.
type PodSetupFunc func(pod *corev1.Pod) PodExtras

// PodExtras is what a node adds to one pod (kubenode: the pod's
// service-account credentials and how to reach the API server).
type PodExtras struct {
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
}

// evPrepared: PodExtras.Prepare succeeded; containers may start.
type evPrepared struct{}

// startPrepare runs the pod's Prepare until it succeeds or the pod
// terminates; without one, the pod is prepared at once.
func (p *pod) startPrepare() {
	if p.extras.Prepare == nil {
		p.prepared = true
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancelPrepare = cancel
	p.tasks.Add(1)
	go func() {
		defer p.tasks.Done()
		delay := prepareFirstRetry
		for {
			err := p.extras.Prepare(ctx)
			if ctx.Err() != nil {
				return
			}
			if err == nil {
				p.post(evPrepared{})
				return
			}
			p.record(nil, corev1.EventTypeWarning, ReasonFailedMount, err.Error())
			select {
			case <-ctx.Done():
				return
			case <-p.a.clock.After(delay):
			}
			delay = min(2*delay, prepareMaxRetry)
		}
	}()
}

// stopPrepare ends a Prepare still under way.
func (p *pod) stopPrepare() {
	if p.cancelPrepare != nil {
		p.cancelPrepare()
	}
}

package node

import (
	"context"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/node/events"
	"github.com/podgate/podgate/node/imagepull"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/node/podworkers"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/node/queue"
	"github.com/podgate/podgate/node/startorder"
	"github.com/podgate/podgate/node/termination"
	"github.com/podgate/podgate/node/volumes"
	"github.com/podgate/podgate/probe/prober"
)

// podEvent is what reaches a pod worker through its queue.
type podEvent interface{}

type (
	// evExited: a container instance's process group is gone.
	evExited struct {
		c    *container
		id   string
		exit proc.Exit
	}
	// evProbe: an Update from the pod's prober.Manager.
	evProbe struct{ u prober.Update }
	// evSync: look again (a backoff expired, a restart is due).
	evSync struct{}
	// evDelete: the API marked the pod for deletion: terminate it
	// gracefully within grace seconds.
	evDelete struct{ grace *int64 }
	// evStop: the agent is shutting down: terminate without replacement.
	evStop struct{}
	// evForce: kill every process at once.
	evForce struct{}
	// evConditions: the conditions the pod's readiness gates name changed
	// on the API's pod (their values now; a gate without one is absent).
	evConditions struct{ conds []corev1.PodCondition }
	// evBarrier: closed once everything queued before it was handled and
	// the result published (tests step a fake clock, then wait on it).
	evBarrier struct{ done chan struct{} }
)

// pod is the kubelet's pod worker for one pod. Its goroutine (run) owns
// every field not marked otherwise.
type pod struct {
	a        *Agent
	qos      corev1.PodQOSClass // the API server's, kept in every status
	injected bool               // the gate is one of its containers
	extras   PodExtras          // Options.PodSetup's

	namespace, name string
	uid             types.UID
	ip              netip.Addr
	net             PodNet
	// hostNetwork: spec.hostNetwork, the node's network (net is hostNet).
	hostNetwork bool
	// dir holds the pod's own files (in Options.PodsDir), if the node
	// gives it any.
	dir string
	// files are the pod's resolv.conf and hosts file, if the node gives
	// pods their own (Options.ResolvConf).
	files podFiles
	// vols are the pod's volumes, when the node mounts them (as it gives
	// pods their own DNS files).
	vols         *volumes.Pod
	obj          *corev1.Pod // metadata and spec as created; status is built
	inits, mains []*container
	byName       map[string]*container
	mgr          *prober.Manager
	q            *queue.Queue[podEvent]
	tasks        sync.WaitGroup // process waiters and killers
	timers       []interface{ Stop() bool }
	// pulls are the pod's image pulls and their back-off; pullTimer
	// brings the worker back at pullAt to look again at an image it
	// does not have (one timer, however many looks: a pod waiting for an
	// image looks every 10 s for as long as it exists).
	pulls     imagepull.Puller
	pullTimer interface{ Stop() bool }
	pullAt    time.Time

	prepared      bool               // extras.Prepare succeeded: containers may start
	cancelPrepare context.CancelFunc // ends a Prepare under way

	startTime   metav1.Time
	initialized bool
	conditions  map[corev1.PodConditionType]corev1.PodCondition
	// gateConds are the conditions others wrote on the API's pod that its
	// readiness gates name (the gate's contract.ContainersReadyCondition, a
	// load balancer controller's): the pod is Ready only once every one
	// of them is True, as the kubelet decides (package podstatus). The
	// agent learns of them through its PodSource, as the kubelet through
	// its pod watch (package podwatch tells a change), and publishes Ready
	// again as soon as one changes, without waiting for a probe.
	gateConds []corev1.PodCondition

	term        termination.State // deletion, agent shutdown, completion
	removeAtEnd bool              // delete from the store once everything stopped
	failedInit  bool
	finished    bool
	acks        []chan struct{}
}

func (p *pod) post(ev podEvent) { p.q.Push(ev) }

// Stop and Force are what the agent's drain asks of the worker
// (podworkers.Worker).
func (p *pod) Stop()  { p.post(evStop{}) }
func (p *pod) Force() { p.post(evForce{}) }

func (p *pod) key() podworkers.Key { return podworkers.Key{Namespace: p.namespace, Name: p.name} }

func (p *pod) ref() events.Object {
	return events.Object{Namespace: p.namespace, Name: p.name, UID: p.uid}
}

func (p *pod) record(c *container, eventType, reason, message string) {
	fp := ""
	if c != nil {
		fp = c.fieldPath()
	}
	p.a.events.Record(p.ref(), events.Event{FieldPath: fp, Type: eventType, Reason: reason, Message: message, Component: events.ComponentKubelet})
}

// run is the pod worker's loop: take what happened, decide, publish.
func (p *pod) run() {
	defer p.a.workers.Done()
	for {
		<-p.q.Wake()
		for _, ev := range p.q.Take() {
			p.handle(ev)
		}
		if !p.finished {
			p.sync()
		}
		p.publish()
		for _, ack := range p.acks {
			close(ack)
		}
		p.acks = nil
		if p.finished {
			p.finish()
			return
		}
	}
}

func (p *pod) handle(ev podEvent) {
	switch ev := ev.(type) {
	case evExited:
		p.onExit(ev.c, ev.id, ev.exit)
	case evProbe:
		p.onProbe(ev.u)
	case evSync:
	case evPrepared:
		p.prepared = true
	case evDelete:
		p.beginTermination(ev.grace, true)
	case evStop:
		p.beginTermination(nil, true)
	case evForce:
		zero := int64(0)
		p.beginTermination(&zero, true)
	case evBarrier:
		p.acks = append(p.acks, ev.done)
	case evConditions:
		p.gateConds = ev.conds
	case evExec:
		p.onExec(ev)
	}
}

// sync is the kubelet's SyncPod: start what should run, stop what should
// not. It never blocks: kills and process waits run on their own
// goroutines and report back through the queue.
func (p *pod) sync() {
	switch {
	case p.term.Terminating:
		p.syncTermination()
		return
	case p.term.Completed:
		p.stopNext()
		return
	}
	if !p.prepared {
		return
	}
	now := p.a.clock.Now()
	all := p.containers()
	step := startorder.Next(startView(all), p.initialized)
	if step.InitFailed {
		// A regular init container failed with restartPolicy Never: the
		// pod has failed; its sidecars go.
		p.failedInit = true
		p.term.Complete(now, termination.PodGrace(&p.obj.Spec))
		p.stopNext()
		return
	}
	for _, i := range step.Start {
		p.maybeStart(all[i], now)
	}
	if !step.Initialized {
		return
	}
	p.initialized = true
	// Asked after the starts: one that failed at once may have finished
	// the pod.
	if startorder.Complete(startView(all)) {
		// Every main container finished and none restarts (restartPolicy
		// Never or OnFailure): the pod is complete; its sidecars go.
		p.term.Complete(now, termination.PodGrace(&p.obj.Spec))
		p.stopNext()
	}
}

// containers are the pod's containers in spec order: init containers,
// then containers.
func (p *pod) containers() []*container {
	return append(append([]*container{}, p.inits...), p.mains...)
}

// startView is what the start order knows of cs.
func startView(cs []*container) []startorder.Container {
	out := make([]startorder.Container, len(cs))
	for i, c := range cs {
		out[i] = startorder.Container{Init: c.init, Sidecar: c.sidecar, Running: c.running,
			Started: c.started, Succeeded: c.hist.Succeeded, Done: c.hist.Done}
	}
	return out
}

// maybeStart starts c unless it is backing off; the timer set when it
// died brings the worker back in time.
func (p *pod) maybeStart(c *container, now time.Time) {
	if c.cfg.Absent != nil {
		// The kubelet pulls a container's image before it looks at
		// anything else of it; this node has no image to pull.
		p.lookForImage(c, now)
		return
	}
	if c.sec.Refused != "" && !c.refusalSeen {
		// The kubelet's event of a container it cannot create.
		c.refusalSeen = true
		p.record(c, corev1.EventTypeWarning, events.ReasonFailed, "Error: "+c.sec.Refused)
	}
	if c.blocked() || now.Before(c.hist.NotBefore) {
		return
	}
	p.startContainer(c)
}

// lookForImage is a look at c, whose image the node does not have: at
// most one every imagepull.RetryEvery, however often the worker wakes,
// with the kubelet's events and waiting reason (package node/imagepull).
func (p *pod) lookForImage(c *container, now time.Time) {
	if now.Before(c.pullNext) {
		p.pullDue(c.pullNext)
		return
	}
	at := p.pulls.Absent(c.spec.Image, c.spec.ImagePullPolicy, images.PullError(c.spec.Image), now)
	for _, e := range at.Events {
		p.record(c, e.Type, e.Reason, e.Message)
	}
	w := at.Waiting
	c.pullWaiting, c.pullNext = &w, at.Next
	p.pullDue(at.Next)
}

// pullDue makes the worker look again at t, unless a look at or before t
// is already due.
func (p *pod) pullDue(t time.Time) {
	now := p.a.clock.Now()
	if p.pullTimer != nil && p.pullAt.After(now) && !p.pullAt.After(t) {
		return
	}
	if p.pullTimer != nil {
		p.pullTimer.Stop()
	}
	p.pullAt = t
	p.pullTimer = p.a.clock.AfterFunc(t.Sub(now), func() { p.post(evSync{}) })
}

// restartDue makes the worker look again at t.
func (p *pod) restartDue(t time.Time) {
	d := t.Sub(p.a.clock.Now())
	if d <= 0 {
		p.post(evSync{})
		return
	}
	p.timers = append(p.timers, p.a.clock.AfterFunc(d, func() { p.post(evSync{}) }))
}

// finish releases what the pod held once nothing of it runs any more.
func (p *pod) finish() {
	for _, t := range p.timers {
		t.Stop()
	}
	if p.pullTimer != nil {
		p.pullTimer.Stop()
	}
	p.mgr.Stop()
	p.stopPrepare()
	p.tasks.Wait()
	if p.extras.Release != nil {
		p.extras.Release()
	}
	if p.removeAtEnd {
		if err := p.a.opts.Pods.RemovePod(p.namespace, p.name, p.uid); err != nil && !apierrors.IsNotFound(err) {
			p.a.log.Warn("remove pod", "pod", p.namespace+"/"+p.name, "err", err)
		}
	}
	p.closeNet()
	p.a.workers.Remove(p.key(), p)
}

// containerNames lists the containers' names for messages.
func containerNames(cs []*container) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.name
	}
	return out
}

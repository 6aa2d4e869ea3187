package gatestatus

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Event reasons the service writes on pods.
const (
	eventRequestRefused = "GateRequestRefused"
	eventNotWritten     = "GateConditionNotWritten"
	eventNotConnected   = "GateNotConnected"
)

// eventWriter writes Warning Events on pods as the kubelet does
// (involvedObject the pod, source the component and the node), at most
// one per pod, reason and cause per interval: a gate retrying a refused
// request must not flood the API server with Events.
type eventWriter struct {
	client   kubernetes.Interface
	node     string
	clock    clock.PassiveClock
	interval time.Duration
	metrics  *metrics
	log      *slog.Logger

	seq     atomic.Int64 // keeps names apart when the clock stands still
	mu      sync.Mutex
	last    map[eventKey]time.Time
	running sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

type eventKey struct {
	uid           types.UID
	reason, cause string
}

func newEventWriter(client kubernetes.Interface, node string, clk clock.PassiveClock, interval time.Duration, m *metrics, log *slog.Logger) *eventWriter {
	ctx, cancel := context.WithCancel(context.Background())
	return &eventWriter{client: client, node: node, clock: clk, interval: interval, metrics: m, log: log, last: map[eventKey]time.Time{}, ctx: ctx, cancel: cancel}
}

// warnLimited writes a Warning Event reason on pod unless one of the same
// reason and cause was written for it within the interval. The write is
// made in the background: a refusal is answered at once.
func (e *eventWriter) warnLimited(pod *corev1.Pod, reason, cause, msg string) {
	now := e.clock.Now()
	k := eventKey{uid: pod.UID, reason: reason, cause: cause}
	e.mu.Lock()
	if t, ok := e.last[k]; ok && now.Sub(t) < e.interval {
		e.mu.Unlock()
		return
	}
	e.last[k] = now
	e.mu.Unlock()
	e.running.Go(func() { e.create(pod, reason, msg, now) })
}

func (e *eventWriter) create(pod *corev1.Pod, reason, msg string, at time.Time) {
	t := metav1.NewTime(at)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, time.Now().UnixNano()+e.seq.Add(1)), Namespace: pod.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
		},
		Reason: reason, Message: msg, Type: corev1.EventTypeWarning,
		Source:         corev1.EventSource{Component: Component, Host: e.node},
		FirstTimestamp: t, LastTimestamp: t, Count: 1,
		ReportingController: Component, ReportingInstance: e.node,
	}
	ctx, cancel := context.WithTimeout(e.ctx, writeTimeout)
	defer cancel()
	if _, err := e.client.CoreV1().Events(pod.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		e.log.Warn("event not written", "pod", pod.Namespace+"/"+pod.Name, "reason", reason, "err", err)
		return
	}
	e.metrics.events.WithLabelValues(reason).Inc()
}

// forget drops the rate limit's memory of pods no longer on the node.
func (e *eventWriter) forget(keep map[types.UID]bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for k := range e.last {
		if !keep[k.uid] {
			delete(e.last, k)
		}
	}
}

// stop ends the writes in flight and waits for them.
func (e *eventWriter) stop() {
	e.cancel()
	e.running.Wait()
}

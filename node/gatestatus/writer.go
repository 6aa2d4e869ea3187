package gatestatus

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// writeTimeout bounds one forwarded write.
const writeTimeout = 10 * time.Second

// writeResult is the outcome of the write that carried a gate's value
// (its own, or a later one that replaced it).
type writeResult struct {
	pod *corev1.Pod
	err error
}

// batch is the next write of one pod: the latest value asked for, and
// every request it answers.
type batch struct {
	pod     *corev1.Pod // the caller: namespace, name, UID
	cond    map[string]any
	waiters []chan writeResult
}

// writers forward condition writes, at most one in flight per pod. A
// write asked for while one is in flight waits for it, and replaces any
// other waiting value of the same pod: the latest value wins, and a gate
// that flips quickly costs the API server two writes, not one per flip.
type writers struct {
	client  kubernetes.Interface
	metrics *metrics

	mu      sync.Mutex
	pending map[types.UID]*batch
	busy    map[types.UID]bool
	running sync.WaitGroup
	ctx     context.Context
	cancel  context.CancelFunc
}

func newWriters(client kubernetes.Interface, m *metrics) *writers {
	ctx, cancel := context.WithCancel(context.Background())
	return &writers{client: client, metrics: m, pending: map[types.UID]*batch{}, busy: map[types.UID]bool{}, ctx: ctx, cancel: cancel}
}

// write asks for cond on pod and waits for the write that carries it (or
// for ctx, the caller's request, to end).
func (ws *writers) write(ctx context.Context, pod *corev1.Pod, cond map[string]any) writeResult {
	done := make(chan writeResult, 1)
	ws.mu.Lock()
	b := ws.pending[pod.UID]
	if b == nil {
		b = &batch{}
		ws.pending[pod.UID] = b
	} else {
		ws.metrics.writesMerged.Inc()
	}
	b.pod, b.cond = pod, cond
	b.waiters = append(b.waiters, done)
	if !ws.busy[pod.UID] {
		ws.busy[pod.UID] = true
		ws.running.Go(func() { ws.drain(pod.UID) })
	}
	ws.mu.Unlock()
	select {
	case res := <-done:
		return res
	case <-ctx.Done():
		return writeResult{err: apierrors.NewTimeoutError(fmt.Sprintf("the write of pod %s/%s did not end before the request: %v", pod.Namespace, pod.Name, ctx.Err()), 1)}
	}
}

// drain forwards the pod's pending batches one after the other until
// none is left.
func (ws *writers) drain(uid types.UID) {
	for {
		ws.mu.Lock()
		b := ws.pending[uid]
		delete(ws.pending, uid)
		if b == nil {
			delete(ws.busy, uid)
			ws.mu.Unlock()
			return
		}
		ws.mu.Unlock()
		res := ws.forward(b)
		for _, w := range b.waiters {
			w <- res
		}
	}
}

// forward patches the condition of b's pod, with the pod's UID in the
// patch: the API server refuses it when the pod of that name is another
// one now (the kubelet's status writes carry the same precondition).
func (ws *writers) forward(b *batch) writeResult {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": b.pod.UID},
		"status":   map[string]any{"conditions": []any{b.cond}},
	})
	if err != nil {
		return writeResult{err: fmt.Errorf("patch of pod %s/%s: %w", b.pod.Namespace, b.pod.Name, err)}
	}
	ctx, cancel := context.WithTimeout(ws.ctx, writeTimeout)
	defer cancel()
	out, err := ws.client.CoreV1().Pods(b.pod.Namespace).Patch(ctx, b.pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		ws.metrics.writes.WithLabelValues("failed").Inc()
		return writeResult{err: err}
	}
	ws.metrics.writes.WithLabelValues("forwarded").Inc()
	return writeResult{pod: out}
}

// stop ends the writes in flight and waits for them.
func (ws *writers) stop() {
	ws.cancel()
	ws.running.Wait()
}

// writeFailed answers a write the API server refused or failed with the
// API's own code, and leaves GateConditionNotWritten on the pod.
func (s *Service) writeFailed(w http.ResponseWriter, caller *corev1.Pod, err error) {
	msg := fmt.Sprintf("the node status service could not write the condition %s of pod %s/%s: the API server answered: %v",
		"podgate.dev/containers-ready", caller.Namespace, caller.Name, err)
	s.log.Warn("condition not written", "pod", caller.Namespace+"/"+caller.Name, "err", err)
	s.events.warnLimited(caller, eventNotWritten, fmt.Sprint(apierrors.ReasonForError(err)), msg)
	st, ok := err.(apierrors.APIStatus)
	if !ok {
		writeStatus(w, apierrors.NewInternalError(fmt.Errorf("%s", msg)))
		return
	}
	status := st.Status()
	status.Kind, status.APIVersion, status.Message = "Status", "v1", msg
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	writeJSON(w, int(status.Code), &status)
}

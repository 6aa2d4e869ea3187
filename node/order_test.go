package node

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/podgate/podgate/node/events"
)

// storeSnapshot is what the store showed when SIGTERM reached the
// container.
type storeSnapshot struct {
	podReady      corev1.ConditionStatus
	endpointReady *bool
	serving       *bool
	killingEvents int
}

// TestNotReadyBeforeTheKill pins podgate's order on a liveness failure
// (docs/facts.md §3, seed 004): the pod's Ready condition goes False and its
// endpoint ready=false before the Killing event, and all three before
// SIGTERM reaches the process. The container is this test binary in
// term-reporter mode: on SIGTERM it calls the test, which looks at the
// store at that instant.
func TestNotReadyBeforeTheKill(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	if err := os.WriteFile(live, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	snaps := make(chan storeSnapshot, 8)
	var serving sync.WaitGroup
	serving.Add(1)
	go func() {
		defer serving.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			snaps <- h.snapshot("order")
			_, _ = c.Write([]byte{1})
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); serving.Wait() })

	// Watch every write from the start: the store's resourceVersion is one
	// counter for all kinds, so it orders pod, slice and event writes.
	rec := h.record()
	h.start(podYAML("order", fmt.Sprintf(`  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: podgate-test
    command: [%q, "term-reporter"]
    env: [{name: REPORT_ADDR, value: %q}]
    livenessProbe:
      exec: {command: ["cat", %q]}
      periodSeconds: 1
      failureThreshold: 2
`, exe, ln.Addr().String(), live)))
	h.waitPod("order", "ready", podReady)
	// SIGTERM must find the handler installed.
	h.waitOutputCount("order", "term-reporter running", 1)
	// The endpoint follows the pod status it is derived from.
	h.waitSlice("order", "ready before the failure", func(s *discoveryv1.EndpointSlice) bool {
		ep := endpointOf(s, "order")
		return ep != nil && *ep.Conditions.Ready
	})
	if err := os.Remove(live); err != nil {
		t.Fatal(err)
	}

	var snap storeSnapshot
	select {
	case snap = <-snaps:
	case <-time.After(waitLimit):
		t.Fatalf("no SIGTERM reached the container within %s", waitLimit)
	}
	if snap.podReady != corev1.ConditionFalse {
		t.Errorf("at SIGTERM the pod's Ready condition was %q, want False", snap.podReady)
	}
	if snap.endpointReady == nil || *snap.endpointReady || snap.serving == nil || *snap.serving {
		t.Errorf("at SIGTERM the endpoint was ready=%v serving=%v, want both false", deref(snap.endpointReady), deref(snap.serving))
	}
	if snap.killingEvents != 1 {
		t.Errorf("at SIGTERM %d Killing events were recorded, want 1", snap.killingEvents)
	}

	h.restarted("order", "c", 1)
	notReady, sliceNotReady, killing := rec.firstNotReady("order"), rec.firstSliceNotReady("order"), rec.firstEvent("order", events.ReasonKilling)
	if !(notReady > 0 && notReady < sliceNotReady && sliceNotReady < killing) {
		t.Errorf("write order (resourceVersion): pod Ready=False %d, endpoint ready=false %d, Killing event %d; want strictly increasing", notReady, sliceNotReady, killing)
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}

func (h *harness) snapshot(pod string) storeSnapshot {
	var s storeSnapshot
	if p, err := h.store.Pods.Get("default", pod); err == nil {
		s.podReady = conditionStatus(p, corev1.PodReady)
	}
	if ep := endpointOf(h.slice(pod), pod); ep != nil {
		s.endpointReady, s.serving = ep.Conditions.Ready, ep.Conditions.Serving
	}
	s.killingEvents = len(h.events(pod, events.ReasonKilling))
	return s
}

// recorder keeps every pod, slice and event write with its version.
type writeLog struct {
	mu     sync.Mutex
	pods   []*corev1.Pod
	slices []*discoveryv1.EndpointSlice
	events []*corev1.Event
}

func (h *harness) record() *writeLog {
	l := &writeLog{}
	ctx := h.t.Context()
	pw, err1 := h.store.Pods.Watch(ctx, "")
	sw, err2 := h.store.EndpointSlices.Watch(ctx, "")
	ew, err3 := h.store.Events.Watch(ctx, "")
	if err1 != nil || err2 != nil || err3 != nil {
		h.t.Fatal(err1, err2, err3)
	}
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		for ev := range pw {
			l.mu.Lock()
			l.pods = append(l.pods, ev.Object)
			l.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range sw {
			l.mu.Lock()
			l.slices = append(l.slices, ev.Object)
			l.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev := range ew {
			l.mu.Lock()
			l.events = append(l.events, ev.Object)
			l.mu.Unlock()
		}
	}()
	h.t.Cleanup(wg.Wait)
	return l
}

func rv(o interface{ GetResourceVersion() string }) int {
	n, _ := strconv.Atoi(o.GetResourceVersion())
	return n
}

// firstNotReady is the version of the first write that took the pod from
// Ready to not Ready.
func (l *writeLog) firstNotReady(pod string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	wasReady := false
	for _, p := range l.pods {
		if p == nil || p.Name != pod {
			continue
		}
		if podReady(p) {
			wasReady = true
		} else if wasReady {
			return rv(p)
		}
	}
	return 0
}

func (l *writeLog) firstSliceNotReady(pod string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	wasReady := false
	for _, s := range l.slices {
		ep := endpointOf(s, pod)
		if ep == nil {
			continue
		}
		if *ep.Conditions.Ready {
			wasReady = true
		} else if wasReady {
			return rv(s)
		}
	}
	return 0
}

func (l *writeLog) firstEvent(pod, reason string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e != nil && e.InvolvedObject.Name == pod && e.Reason == reason {
			return rv(e)
		}
	}
	return 0
}

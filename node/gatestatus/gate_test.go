package gatestatus

import (
	"context"
	"net/netip"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/podapi"
)

// watchAsGate runs the gate's real status source (client-go's reflector
// through podapi) for pod name from ip, and returns its reports.
func watchAsGate(t *testing.T, h *harness, name string, ip netip.Addr) *reports {
	t.Helper()
	src, err := podapi.ForConfig(h.gateConfig(ip), "default", name)
	if err != nil {
		t.Fatal(err)
	}
	r := &reports{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.WatchPod(ctx, r.add) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return r
}

// reports are what a gate's status source reported, in order.
type reports struct {
	mu  sync.Mutex
	all []gate.PodStatus
}

func (r *reports) add(ps gate.PodStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, ps)
}

func (r *reports) last() (gate.PodStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.all) == 0 {
		return gate.PodStatus{}, false
	}
	return r.all[len(r.all)-1], true
}

func containerReady(ps gate.PodStatus, name string) bool {
	for _, c := range ps.Containers {
		if c.Name == name {
			return c.Ready
		}
	}
	return false
}

// TestAGateReadsAndWatchesItsOwnPodThroughTheNodeService runs the gate's
// own status source (gate/podapi: client-go's reflector) against the
// service from the pod's IP: it lists its pod, follows a change of a
// container's readiness, and sees the pod's deletion start and end.
func TestAGateReadsAndWatchesItsOwnPodThroughTheNodeService(t *testing.T) {
	h := startService(t, nil)
	ip := podIP()
	p := h.createPod("reader", ip, podOpts{gateStarted: time.Now()})
	r := watchAsGate(t, h, "reader", ip)
	eventually(t, "the gate sees its pod with app ready", func() bool {
		ps, ok := r.last()
		return ok && containerReady(ps, "app") && !ps.Terminating
	})

	p.Status.ContainerStatuses[0].Ready = false
	if _, err := h.admin.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gate sees app turn unready", func() bool {
		ps, ok := r.last()
		return ok && !containerReady(ps, "app") && len(ps.Containers) == 2
	})

	// A deletion with a grace period: the pod stays, terminating.
	if err := h.admin.CoreV1().Pods("default").Delete(context.Background(), "reader", metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(30))}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the gate sees its pod terminating", func() bool {
		ps, ok := r.last()
		return ok && ps.Terminating
	})
	if n := h.svc.metrics.apiWatchesOpenValue(); n != 1 {
		t.Errorf("the service holds %v watches on the API server, want 1", n)
	}
}

func ptr[T any](v T) *T { return &v }

// TestAGateConditionIsWrittenToItsOwnPodOnly writes the gate's condition
// with the gate's own writer (gate/podapi) through the service: it lands
// on the gate's pod beside the kubelet's condition, as True then False
// with a reason, and the neighbour pod on the node is left alone.
func TestAGateConditionIsWrittenToItsOwnPodOnly(t *testing.T) {
	h := startService(t, nil)
	ip, other := podIP(), podIP()
	h.createPod("writer", ip, podOpts{gateStarted: time.Now()})
	h.createPod("neighbour", other, podOpts{gateStarted: time.Now()})
	w, err := podapi.ConditionWriterForConfig(h.gateConfig(ip), "default", "writer")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []gate.PodCondition{
		{Ready: true, LastTransition: time.Now().Truncate(time.Second)},
		{Ready: false, Reason: "ContainersNotReady", Message: "app is not ready", LastTransition: time.Now().Truncate(time.Second)},
	} {
		if err := w.WriteCondition(context.Background(), c); err != nil {
			t.Fatalf("write %+v: %v", c, err)
		}
		got, err := h.admin.CoreV1().Pods("default").Get(context.Background(), "writer", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := corev1.ConditionFalse
		if c.Ready {
			want = corev1.ConditionTrue
		}
		gc, scheduled := condition(got, contract.ContainersReadyCondition), condition(got, corev1.PodScheduled)
		if gc == nil || gc.Status != want || gc.Reason != c.Reason || gc.Message != c.Message {
			t.Errorf("after writing %+v the pod's condition is %+v", c, gc)
		}
		if scheduled == nil || scheduled.Status != corev1.ConditionTrue {
			t.Errorf("the kubelet's PodScheduled condition is %+v, want it kept", scheduled)
		}
	}
	n, err := h.admin.CoreV1().Pods("default").Get(context.Background(), "neighbour", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(n, contract.ContainersReadyCondition); c != nil {
		t.Errorf("the neighbour pod got the condition %+v", c)
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

package gatestatus

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/podapi"
)

// TestAPodReplacedUnderTheSameNameIsNotWritten: a write asked for by a
// pod that the API has meanwhile replaced with another of the same name
// (the service's informer a moment behind) is refused by the API server
// for the UID in the patch, and the new pod keeps no condition of the old
// pod's gate. Once the informer caught up, the old address is no pod and
// the new pod's gate writes its own.
func TestAPodReplacedUnderTheSameNameIsNotWritten(t *testing.T) {
	h := startService(t, nil)
	oldIP, newIP := podIP(), podIP()
	old := h.createPod("phoenix", oldIP, podOpts{gateStarted: time.Now()})
	if err := h.admin.CoreV1().Pods("default").Delete(context.Background(), "phoenix", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the old pod is gone", func() bool {
		_, err := h.admin.CoreV1().Pods("default").Get(context.Background(), "phoenix", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	replacement := h.createPod("phoenix", newIP, podOpts{gateStarted: time.Now()})

	// What the service forwards for the old pod's request while its
	// cache still held the old pod.
	res := h.svc.writes.write(context.Background(), old, map[string]any{"type": contract.ContainersReadyCondition, "status": "True"})
	if res.err == nil || !(apierrors.IsConflict(res.err) || apierrors.IsInvalid(res.err)) || !strings.Contains(res.err.Error(), string(old.UID)) {
		t.Errorf("the old pod's write: %v, want the API server's refusal naming the old UID", res.err)
	}
	t.Logf("the API server's answer to the old pod's write: %v", res.err)
	got, err := h.admin.CoreV1().Pods("default").Get(context.Background(), "phoenix", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(got, contract.ContainersReadyCondition); c != nil {
		t.Errorf("the replacement got the old pod's condition: %+v", c)
	}

	oldGate, err := podapi.ConditionWriterForConfig(h.gateConfig(oldIP), "default", "phoenix")
	if err != nil {
		t.Fatal(err)
	}
	if err := oldGate.WriteCondition(context.Background(), gate.PodCondition{Ready: true, LastTransition: time.Now()}); err == nil ||
		!strings.Contains(err.Error(), oldIP.String()+" is the pod IP of no running pod") {
		t.Errorf("the old gate's write: %v, want a refusal: its address is no pod", err)
	}
	newGate, err := podapi.ConditionWriterForConfig(h.gateConfig(newIP), "default", "phoenix")
	if err != nil {
		t.Fatal(err)
	}
	if err := newGate.WriteCondition(context.Background(), gate.PodCondition{Ready: true, LastTransition: time.Now()}); err != nil {
		t.Fatalf("the new gate's write: %v", err)
	}
	got, err = h.admin.CoreV1().Pods("default").Get(context.Background(), "phoenix", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(got, contract.ContainersReadyCondition); c == nil || got.UID != replacement.UID {
		t.Errorf("the replacement's own gate's condition was not written: %+v", got.Status.Conditions)
	}
}

// TestWritesCoalesceTheLastValueWins holds the service's first write on
// its way to the API server while the gate asks for two more values: the
// middle one is never sent, the last is, and every request is answered
// 200 once a write carrying its value or a later one is done.
func TestWritesCoalesceTheLastValueWins(t *testing.T) {
	h := startService(t, nil)
	ip := podIP()
	p := h.createPod("flapper", ip, podOpts{gateStarted: time.Now()})
	c := from(ip)
	url := h.url + "/api/v1/namespaces/default/pods/flapper/status"
	patch := func(reason string) string {
		return fmt.Sprintf(`{"status":{"conditions":[{"type":"podgate.dev/containers-ready","status":"False","reason":%q}]}}`, reason)
	}
	h.patches.close()
	var wg sync.WaitGroup
	codes := make([]int, 3)
	send := func(i int, reason string) {
		wg.Go(func() { codes[i], _ = do(t, c, http.MethodPatch, url, smp, patch(reason)) })
	}
	waiting := func(n int) func() bool {
		return func() bool {
			h.svc.writes.mu.Lock()
			defer h.svc.writes.mu.Unlock()
			b := h.svc.writes.pending[p.UID]
			return b != nil && len(b.waiters) == n
		}
	}
	send(0, "first")
	eventually(t, "the first write is on its way", func() bool { n, _ := h.patches.seen(); return n == 1 })
	send(1, "second")
	eventually(t, "the second waits", waiting(1))
	send(2, "third")
	eventually(t, "the third waits with it", waiting(2))
	h.patches.open()
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusOK {
			t.Errorf("request %d answered %d, want 200", i, code)
		}
	}
	n, bodies := h.patches.seen()
	if n != 2 || !strings.Contains(bodies[0], `"first"`) || !strings.Contains(bodies[1], `"third"`) {
		t.Errorf("the API server got %d patches %q, want the first and the third", n, bodies)
	}
	if !strings.Contains(bodies[0], `"uid":"`+string(p.UID)+`"`) {
		t.Errorf("the patch %s does not carry the pod's UID as precondition", bodies[0])
	}
	got, err := h.admin.CoreV1().Pods("default").Get(context.Background(), "flapper", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := condition(got, contract.ContainersReadyCondition); c == nil || c.Reason != "third" {
		t.Errorf("the pod's condition is %+v, want the last value's", c)
	}
	if v := testutil.ToFloat64(h.svc.metrics.writesMerged); v != 1 {
		t.Errorf("coalesced writes metric %v, want 1", v)
	}
	if v := testutil.ToFloat64(h.svc.metrics.writes.WithLabelValues("forwarded")); v != 2 {
		t.Errorf("forwarded writes metric %v, want 2", v)
	}
}

package node

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/node/events"
)

// heldWithdrawal is an EndpointWithdrawal whose endpoint is withdrawn
// when the test says so: it reports each wait and returns on release or
// when its context ends.
type heldWithdrawal struct {
	waiting chan string // namespace/name@ip of each wait begun
	release chan struct{}

	mu    sync.Mutex
	ended []error // ctx.Err() of each wait that returned (nil: released)
}

func newHeldWithdrawal() *heldWithdrawal {
	return &heldWithdrawal{waiting: make(chan string, 10), release: make(chan struct{})}
}

func (w *heldWithdrawal) WaitWithdrawn(ctx context.Context, namespace, name string, ip netip.Addr) {
	w.waiting <- fmt.Sprintf("%s/%s@%s", namespace, name, ip)
	var err error
	select {
	case <-w.release:
	case <-ctx.Done():
		err = ctx.Err()
	}
	w.mu.Lock()
	w.ended = append(w.ended, err)
	w.mu.Unlock()
}

func withWithdrawal(w EndpointWithdrawal) harnessOption {
	return func(o *Options) { o.Withdrawal = w }
}

// livenessFailsOnRemove is a container whose liveness probe fails once
// the test removes its file; SIGTERM leaves a mark in the directory.
func livenessFailsOnRemove(dir string) string {
	return podYAML("held", fmt.Sprintf(`  terminationGracePeriodSeconds: 30
  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "trap 'touch %[1]s/term; exit 0' TERM; touch %[1]s/live; sleep 600 & wait"]
    livenessProbe:
      exec: {command: ["cat", "%[1]s/live"]}
      periodSeconds: 1
      failureThreshold: 1
    startupProbe:
      exec: {command: ["cat", "%[1]s/live"]}
      periodSeconds: 1
      failureThreshold: 120
`, dir))
}

func TestALivenessKillWaitsForTheEndpointsWithdrawal(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// end ends the wait: release it, or delete the pod at once
		// (which forces the kill).
		end       func(h *harness, w *heldWithdrawal)
		wantEnded error
	}{
		{"the kill begins once the endpoint is withdrawn", func(_ *harness, w *heldWithdrawal) { close(w.release) }, nil},
		{"a forced kill does not wait", func(h *harness, _ *heldWithdrawal) {
			if err := h.pods.DeletePod(context.Background(), "default", "held", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
				h.t.Fatal(err)
			}
		}, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newHeldWithdrawal()
			h := newHarness(t, withWithdrawal(w))
			dir := t.TempDir()
			h.start(livenessFailsOnRemove(dir))
			p := h.waitPod("held", "started", func(p *corev1.Pod) bool {
				s := containerStatus(p, "c").Started
				return s != nil && *s
			})
			if err := os.Remove(filepath.Join(dir, "live")); err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-w.waiting:
				if want := "default/held@" + p.Status.PodIP; got != want {
					t.Errorf("waited for %s, want %s", got, want)
				}
			case <-time.After(waitLimit):
				t.Fatal("the liveness failure did not wait for the endpoint's withdrawal")
			}
			// Held: not ready, and neither Killing nor SIGTERM yet.
			h.waitPod("held", "not ready while the kill is held", func(p *corev1.Pod) bool { return !podReady(p) })
			if n := len(h.events("held", events.ReasonKilling)); n != 0 {
				t.Errorf("%d Killing events while the kill is held, want none", n)
			}
			if _, err := os.Stat(filepath.Join(dir, "term")); err == nil {
				t.Error("the container got SIGTERM while the kill was held")
			}
			tc.end(h, w)
			h.waitEvent("held", events.ReasonKilling, "")
			deadline := time.Now().Add(waitLimit)
			for {
				w.mu.Lock()
				ended := append([]error(nil), w.ended...)
				w.mu.Unlock()
				if len(ended) == 1 {
					if ended[0] != tc.wantEnded {
						t.Errorf("the wait ended with %v, want %v", ended[0], tc.wantEnded)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("waits ended: %v, want one", ended)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

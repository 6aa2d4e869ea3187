package withdrawal

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	discoveryclient "k8s.io/client-go/kubernetes/typed/discovery/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/node/proc"
)

// slice is an EndpointSlice of Service svc with one endpoint per address,
// for pod pod, ready as given (nil: Ready left unset).
func slice(svc, pod string, ready *bool, addrs ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: svc, Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, a := range addrs {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{a},
			Conditions: discoveryv1.EndpointConditions{Ready: ready},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: pod},
		})
	}
	return s
}

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	goleak.VerifyTestMain(m)
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWaitWithdrawnOnARealAPIServer pins WaitWithdrawn against the real
// API server, read with a node's credential (the control plane's
// ClusterRole lets it).
func TestWaitWithdrawnOnARealAPIServer(t *testing.T) {
	if Role != controlplane.NodeEndpointSlicesRole {
		t.Errorf("this package names the ClusterRole %q, the control plane installs %q", Role, controlplane.NodeEndpointSlicesRole)
	}
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	admin := discoveryclient.NewForConfigOrDie(cp.AdminConfig()).EndpointSlices("default")
	kc, err := cp.NodeKubeconfig("withdrawals")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	node := discoveryclient.NewForConfigOrDie(rc)
	if ok, err := CanRead(t.Context(), node); !ok || err != nil {
		t.Fatalf("a node may read EndpointSlices: %v, %v; want true", ok, err)
	}
	const timeout = 20 * time.Second
	w, err := New(node, timeout, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := w.Start(ctx)
	defer func() { cancel(); <-done }()
	eventually(t, time.Minute, "the EndpointSlice watch synced", func() (bool, string) { return w.Synced(), "not yet" })

	// seen waits until the watch has the slice as the API server has it.
	seen := func(s *discoveryv1.EndpointSlice) {
		t.Helper()
		eventually(t, time.Minute, "the watch seeing slice "+s.Name, func() (bool, string) {
			obj, ok, _ := w.inf.GetStore().Get(s)
			return ok && obj.(*discoveryv1.EndpointSlice).ResourceVersion == s.ResourceVersion, "not yet"
		})
	}
	wait := func(ctx context.Context, pod, ip string) <-chan time.Duration {
		out := make(chan time.Duration, 1)
		go func() {
			begin := time.Now()
			w.WaitWithdrawn(ctx, "default", pod, netip.MustParseAddr(ip))
			out <- time.Since(begin)
		}()
		return out
	}

	t.Run("returns once the endpoint is not ready, and not before", func(t *testing.T) {
		s, err := admin.Create(t.Context(), slice("web", "web-1", ptr.To(true), "10.251.0.5"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		seen(s)
		returned := wait(t.Context(), "web-1", "10.251.0.5")
		// A change that leaves the endpoint ready: the wait goes on.
		s.Endpoints = append(s.Endpoints, slice("web", "web-2", ptr.To(true), "10.251.0.6").Endpoints...)
		if s, err = admin.Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		seen(s)
		select {
		case d := <-returned:
			t.Fatalf("returned after %s while the endpoint was still ready", d)
		default:
		}
		s.Endpoints[0].Conditions.Ready = ptr.To(false)
		if _, err = admin.Update(t.Context(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case d := <-returned:
			t.Logf("withdrawn after %s", d.Round(time.Millisecond))
		case <-time.After(timeout / 2):
			t.Fatal("WaitWithdrawn did not return once the endpoint turned not ready")
		}
	})

	for _, tc := range []struct {
		name      string
		slice     *discoveryv1.EndpointSlice
		pod, ip   string
		cancel    bool
		wantAbout time.Duration // 0: at once
	}{
		{"an address no slice lists returns at once", nil, "web-1", "10.251.0.99", false, 0},
		{"a ready entry of another pod at the address returns at once", slice("old", "old-1", ptr.To(true), "10.251.0.7"), "new-1", "10.251.0.7", false, 0},
		{"a Ready left unset counts as ready until the context ends", slice("unset", "unset-1", nil, "10.251.0.8"), "unset-1", "10.251.0.8", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.slice != nil {
				s, err := admin.Create(t.Context(), tc.slice, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				seen(s)
			}
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			returned := wait(ctx, tc.pod, tc.ip)
			if tc.cancel {
				select {
				case d := <-returned:
					t.Fatalf("returned after %s while the endpoint counts as ready", d)
				case <-time.After(200 * time.Millisecond):
				}
				stop()
			}
			select {
			case d := <-returned:
				if d > timeout/2 {
					t.Errorf("returned after %s, want at once", d)
				}
			case <-time.After(timeout):
				t.Fatalf("WaitWithdrawn did not return (cancel %v)", tc.cancel)
			}
		})
	}

	t.Run("gives up at its timeout", func(t *testing.T) {
		short, err := New(node, 300*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		sctx, scancel := context.WithCancel(t.Context())
		sdone := short.Start(sctx)
		defer func() { scancel(); <-sdone }()
		eventually(t, time.Minute, "synced", func() (bool, string) { return short.Synced(), "not yet" })
		eventually(t, time.Minute, "the still-ready endpoint seen", func() (bool, string) {
			return short.serving("default", "web-2", netip.MustParseAddr("10.251.0.6")), "not yet"
		})
		begin := time.Now()
		short.WaitWithdrawn(t.Context(), "default", "web-2", netip.MustParseAddr("10.251.0.6"))
		if d := time.Since(begin); d < 300*time.Millisecond || d > 10*time.Second {
			t.Errorf("returned after %s, want the timeout of 300ms", d)
		}
	})
}

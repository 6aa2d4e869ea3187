package kubebackends

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/local/objstore"
)

// startFeed runs a Feed over the store's control API until the test ends.
func startFeed(t *testing.T, store *objstore.Store, opts Options) *Feed {
	t.Helper()
	return runFeed(t, startAPI(t, store), opts)
}

// runFeed runs a Feed over client until the test ends, once synced.
func runFeed(t *testing.T, client kubernetes.Interface, opts Options) *Feed {
	t.Helper()
	c, err := NewFeed(client, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { c.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	if !c.WaitForSync(t.Context()) {
		t.Fatal("informers never synced")
	}
	return c
}

func podIn(namespace, name string, sidecarProbe *corev1.Probe) *corev1.Pod {
	p := pod(name, sidecarProbe)
	p.Namespace = namespace
	return p
}

// TestFeedServesEveryServiceFromOneInformerPair: one Feed feeds the
// Services of every namespace, each its own pods; it knows which
// Services have slices; a gate is never given an admin address.
func TestFeedServesEveryServiceFromOneInformerPair(t *testing.T) {
	store := objstore.New(objstore.Options{})
	gated := podIn(ns, "web-a", nil)
	gated.Spec.InitContainers = []corev1.Container{{Name: "podgate", Image: "g",
		Ports: []corev1.ContainerPort{{Name: "queue-port", ContainerPort: 8012}, {Name: "queueadm-port", ContainerPort: 8022}}}}
	put(t, store.Pods, gated)
	put(t, store.Pods, podIn(ns, "web-b", execProbe))
	put(t, store.Pods, podIn("shop", "cart-a", nil))
	put(t, store.EndpointSlices, slice("web-1", "web",
		ep{pod: "web-a", ip: "10.0.0.1", ready: true},
		ep{pod: "web-b", ip: "10.0.0.2"}))
	cart := slice("cart-1", "cart", ep{pod: "cart-a", ip: "10.0.1.1", ready: true})
	cart.Namespace = "shop"
	cart.Endpoints[0].TargetRef.Namespace = "shop"
	put(t, store.EndpointSlices, cart)
	c := startFeed(t, store, Options{Namespace: ""})

	t.Run("a Service is known by its slices", func(t *testing.T) {
		for _, tc := range []struct {
			namespace, name string
			want            bool
		}{{ns, "web", true}, {"shop", "cart", true}, {"shop", "web", false}, {ns, "cart", false}, {ns, "nope", false}} {
			if got := c.HasService(tc.namespace, tc.name); got != tc.want {
				t.Errorf("HasService(%s, %s) = %v, want %v", tc.namespace, tc.name, got, tc.want)
			}
		}
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	web := c.Backends(ns, "web", 0).Pods(ctx)
	cartPods := c.Backends("shop", "cart", 9000).Pods(ctx)
	t.Run("each Service gets its own pods, fast path from the pod's spec, no admin address", func(t *testing.T) {
		until(t, web, []activator.Pod{
			{Name: "web-a", Addr: "10.0.0.1:8012", Ready: true, FastPath: true},
			{Name: "web-b", Addr: "10.0.0.2:8012"},
		})
		until(t, cartPods, []activator.Pod{{Name: "cart-a", Addr: "10.0.1.1:9000", Ready: true, FastPath: true}})
	})
	t.Run("an endpoint change reaches its Service", func(t *testing.T) {
		put(t, store.EndpointSlices, slice("web-1", "web",
			ep{pod: "web-a", ip: "10.0.0.1", ready: true},
			ep{pod: "web-b", ip: "10.0.0.2", ready: true}))
		until(t, web, []activator.Pod{
			{Name: "web-a", Addr: "10.0.0.1:8012", Ready: true, FastPath: true},
			{Name: "web-b", Addr: "10.0.0.2:8012", Ready: true},
		})
	})
	t.Run("a pod that arrives after its endpoint, or starts its deletion, changes the snapshot", func(t *testing.T) {
		put(t, store.EndpointSlices, slice("web-1", "web",
			ep{pod: "web-a", ip: "10.0.0.1", ready: true},
			ep{pod: "web-b", ip: "10.0.0.2", ready: true},
			ep{pod: "web-c", ip: "10.0.0.3", ready: true}))
		until(t, web, []activator.Pod{
			{Name: "web-a", Addr: "10.0.0.1:8012", Ready: true, FastPath: true},
			{Name: "web-b", Addr: "10.0.0.2:8012", Ready: true},
			{Name: "web-c", Addr: "10.0.0.3:8012", Ready: true}, // no pod: no fast path
		})
		put(t, store.Pods, podIn(ns, "web-c", nil))
		until(t, web, []activator.Pod{
			{Name: "web-a", Addr: "10.0.0.1:8012", Ready: true, FastPath: true},
			{Name: "web-b", Addr: "10.0.0.2:8012", Ready: true},
			{Name: "web-c", Addr: "10.0.0.3:8012", Ready: true, FastPath: true},
		})
		deleting := podIn(ns, "web-c", nil)
		now := metav1.Now()
		deleting.DeletionTimestamp = &now
		put(t, store.Pods, deleting)
		// Terminating from the pod's deletion, before the slice says so.
		until(t, web, []activator.Pod{
			{Name: "web-a", Addr: "10.0.0.1:8012", Ready: true, FastPath: true},
			{Name: "web-b", Addr: "10.0.0.2:8012", Ready: true},
			{Name: "web-c", Addr: "10.0.0.3:8012", Ready: true, Terminating: true},
		})
	})
	t.Run("a Service whose slices go is unknown and has no pods", func(t *testing.T) {
		if _, err := store.EndpointSlices.Delete("shop", "cart-1"); err != nil {
			t.Fatal(err)
		}
		until(t, cartPods, []activator.Pod{})
		if c.HasService("shop", "cart") {
			t.Error("HasService(shop, cart) after its only slice went")
		}
	})
	t.Run("streams end with their context and unsubscribe", func(t *testing.T) {
		cancel()
		for range web {
		}
		for range cartPods {
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.subs) != 0 {
			t.Errorf("subscriptions left: %v", c.subs)
		}
	})
}

// TestFeedKeepsPodsSmall: the pod informer's store holds what the
// fast-path rule reads and nothing of the pod's status or environment.
func TestFeedKeepsPodsSmall(t *testing.T) {
	p := podIn(ns, "web-a", execProbe)
	p.Labels = map[string]string{"app": "web"}
	p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "SECRETISH", Value: "x"}}
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	store := objstore.New(objstore.Options{})
	put(t, store.Pods, p)
	c := startFeed(t, store, Options{Namespace: ns})
	o, ok, _ := c.pods.GetStore().GetByKey(ns + "/web-a")
	if !ok {
		t.Fatal("pod not in the store")
	}
	got := o.(*corev1.Pod)
	if got.Labels != nil || got.Spec.Containers[0].Env != nil || got.Status.Conditions != nil {
		t.Errorf("kept more than needed: labels %v, env %v, conditions %v", got.Labels, got.Spec.Containers[0].Env, got.Status.Conditions)
	}
	if got.UID == "" || len(got.Spec.ReadinessGates) != 1 || got.Spec.Containers[1].ReadinessProbe == nil || got.Spec.Containers[1].ReadinessProbe.Exec == nil {
		t.Errorf("dropped what the fast-path rule reads: %+v", got.Spec)
	}
	if activator.FastPathAllowed(&got.Spec) != activator.FastPathAllowed(&p.Spec) {
		t.Error("the fast-path rule reads the kept pod differently")
	}
}

package kubebackends

import (
	"context"
	"reflect"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/activator"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/objstore"
)

// TestGatesAreThePodsWhoseGatesBelieveTheActivator: Gates lists the pods
// with an IP whose gate says PODGATE_ONLY_ROUTER=activator, with the
// gate's admin address and token, their deletion, and whether a Service
// with an open stream lists them.
func TestGatesAreThePodsWhoseGatesBelieveTheActivator(t *testing.T) {
	gated := func(name, ip string, env ...corev1.EnvVar) *corev1.Pod {
		p := pod(name, nil)
		p.Spec.Containers = append([]corev1.Container{{
			Name: contract.GateContainerName, Image: "g", Env: env,
			Ports: []corev1.ContainerPort{{Name: contract.GateAdminPortName, ContainerPort: 8022}},
		}}, p.Spec.Containers...)
		p.Status.PodIP = ip
		return p
	}
	believes := corev1.EnvVar{Name: contract.EnvOnlyRouter, Value: contract.OnlyRouterActivator}
	token := corev1.EnvVar{Name: contract.EnvAdminToken, Value: "t0ken"}
	store := objstore.New(objstore.Options{})
	put(t, store.Pods, gated("served", "127.0.1.1", believes, token))
	put(t, store.Pods, gated("idle", "127.0.1.2", believes))
	put(t, store.Pods, gated("doubts", "127.0.1.3"))    // the quiet period rules
	put(t, store.Pods, gated("unplaced", "", believes)) // no IP yet
	put(t, store.Pods, pod("plain", nil))               // no gate
	put(t, store.EndpointSlices, slice("web-1", "web", ep{pod: "served", ip: "127.0.1.1", ready: true}))
	c := startFeed(t, store, Options{Namespace: ns, OnlyRouter: true})

	gates := func() []Gate {
		g := c.Gates()
		sort.Slice(g, func(i, j int) bool { return g[i].Pod.Name < g[j].Pod.Name })
		for i := range g {
			g[i].UID = ""
		}
		return g
	}
	want := []Gate{
		{Pod: activator.Pod{Name: "idle", AdminAddr: "127.0.1.2:8022"}},
		{Pod: activator.Pod{Name: "served", AdminAddr: "127.0.1.1:8022", AdminToken: "t0ken"}},
	}
	if got := gates(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Gates() = %+v, want %+v", got, want)
	}

	// A target's stream follows Service web: its pod is followed.
	ctx, cancel := context.WithCancel(context.Background())
	ch := c.Backends(ns, "web", 0).Pods(ctx)
	<-ch
	want[1].Followed = true
	if got := gates(); !reflect.DeepEqual(got, want) {
		t.Errorf("with web's stream open: Gates() = %+v, want %+v", got, want)
	}
	cancel()
	for range ch {
	}

	// A deletion rings GatesChanged and shows as Terminating.
	select {
	case <-c.GatesChanged():
	default:
	}
	now := metav1.Now()
	idle, _ := store.Pods.Get(ns, "idle")
	idle.DeletionTimestamp = &now
	put(t, store.Pods, idle)
	select {
	case <-c.GatesChanged():
	case <-time.After(10 * time.Second):
		t.Fatal("GatesChanged not rung by a deletion")
	}
	want[0].Pod.Terminating, want[1].Followed = true, false
	if got := gates(); !reflect.DeepEqual(got, want) {
		t.Errorf("after idle's deletion: Gates() = %+v, want %+v", got, want)
	}
}

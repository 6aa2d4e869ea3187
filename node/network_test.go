package node

import (
	"context"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/controllers"
	"github.com/podgate/podgate/local/objstore"
	"github.com/podgate/podgate/node/loopnet"
	"github.com/podgate/podgate/node/podnetwork"
)

func TestNetworkOptions(t *testing.T) {
	t.Parallel()
	store := objstore.New(objstore.Options{})
	pods := controllers.NewPods(store, nil)
	pool, err := loopnet.New(nextCIDR())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		opts       Options
		wantErr    string
		wantHostIP string
	}{
		{"the loopback network by default, the host at 127.0.0.1", Options{}, "", HostIP},
		{"a network of the caller's with its host IP", Options{Network: podnetwork.Loopback(pool), HostIP: netip.MustParseAddr("10.244.0.1")}, "", "10.244.0.1"},
		{"a network of the caller's needs the host IP", Options{Network: podnetwork.Loopback(pool)}, "Options.HostIP is required with Options.Network", ""},
		{"a network of the caller's has its own range", Options{Network: podnetwork.Loopback(pool), HostIP: netip.MustParseAddr("10.244.0.1"), PodCIDR: "127.0.1.0/24"}, "Options.PodCIDR is the loopback network's", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.opts
			o.Events, o.Pods, o.Source, o.NoGuardian = controllers.NewEvents(store), pods, pods, true
			a, err := New(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("New = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = a.Shutdown(context.Background()) }()
			if a.hostIP != tc.wantHostIP || a.loopback != (tc.opts.Network == nil) {
				t.Errorf("hostIP %q loopback %v, want %q %v", a.hostIP, a.loopback, tc.wantHostIP, tc.opts.Network == nil)
			}
		})
	}
}

// countingNetwork is the loopback network, seen as a network of the
// caller's: it counts what the agent asks of it.
type countingNetwork struct {
	PodNetwork
	adds, enters, closes atomic.Int32
}

func (n *countingNetwork) Add(key string) (PodNet, error) {
	n.adds.Add(1)
	p, err := n.PodNetwork.Add(key)
	if err != nil {
		return nil, err
	}
	return countingPod{p, n}, nil
}

type countingPod struct {
	PodNet
	n *countingNetwork
}

func (p countingPod) Enter(fn func() error) error { p.n.enters.Add(1); return p.PodNet.Enter(fn) }
func (p countingPod) Close() error                { p.n.closes.Add(1); return p.PodNet.Close() }

// TestAPodsProcessesStartThroughItsNetwork: the container, its exec
// probes and its exec preStop hook each start through the pod's Enter,
// status.hostIP is Options.HostIP, and the network is closed once when
// the pod is gone.
func TestAPodsProcessesStartThroughItsNetwork(t *testing.T) {
	t.Parallel()
	pool, err := loopnet.New(nextCIDR())
	if err != nil {
		t.Fatal(err)
	}
	n := &countingNetwork{PodNetwork: podnetwork.Loopback(pool)}
	h := newHarness(t, func(o *Options) {
		o.Network, o.HostIP, o.PodCIDR = n, netip.MustParseAddr("127.0.0.1"), ""
	})
	// A startup probe stops once it passed: after that only the hook
	// starts anything.
	h.start(podYAML("netted", `  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "sleep 600"]
    startupProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
      timeoutSeconds: 10
    lifecycle:
      preStop:
        exec: {command: ["true"]}
`))
	p := h.waitPod("netted", "ready", podReady)
	if p.Status.HostIP != "127.0.0.1" || !poolPrefix(pool).Contains(netip.MustParseAddr(p.Status.PodIP)) {
		t.Errorf("hostIP %q podIP %q, want 127.0.0.1 and an address of %s", p.Status.HostIP, p.Status.PodIP, poolPrefix(pool))
	}
	if got := n.enters.Load(); got != 2 {
		t.Errorf("%d Enter calls once started, want 2: the container's and the startup probe's", got)
	}
	if err := h.pods.DeletePod(context.Background(), "default", "netted", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitGone("netted")
	if got := n.enters.Load(); got != 3 {
		t.Errorf("%d Enter calls once the pod is gone, want 3: the preStop hook's too", got)
	}
	if adds, closes := n.adds.Load(), n.closes.Load(); adds != 1 || closes != 1 {
		t.Errorf("%d Add and %d Close, want 1 and 1", adds, closes)
	}
}

// poolPrefix is the range of a loopback network.
func poolPrefix(n *loopnet.Network) netip.Prefix {
	_, p := n.Capacity()
	return p
}

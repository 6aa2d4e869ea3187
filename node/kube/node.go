package kube

import (
	"bufio"
	"context"
	"fmt"
	"net/netip"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	vklog "github.com/virtual-kubelet/virtual-kubelet/log"
	vkslog "github.com/virtual-kubelet/virtual-kubelet/log/slog"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// KubeletVersion is the node's status.nodeInfo.kubeletVersion: the
// Kubernetes version whose API podgate is built against (k8s.io/api
// v0.37.2), with build metadata naming podgate, which version comparisons
// ignore (a pre-release suffix would make it older than the control
// plane).
const KubeletVersion = "v1.37.2+podgate"

// DefaultMaxPods is the kubelet's default pod capacity (its --max-pods).
const DefaultMaxPods = 110

// leaseNamespace holds the nodes' Leases.
const leaseNamespace = "kube-node-lease"

// nodeObject is the Node the agent registers: its pod range, addresses,
// capacity, and Ready (the agent runs pods from the moment it watches).
func nodeObject(cfg Config) *corev1.Node {
	pods := rangeSize(cfg.PodCIDR)
	if cfg.Network != nil {
		pods, _ = cfg.Network.Capacity() // the node's own address is not a pod's
	}
	maxPods := cfg.MaxPods
	if maxPods <= 0 {
		maxPods = DefaultMaxPods
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: *resource.NewQuantity(memTotal(), resource.BinarySI),
		corev1.ResourcePods:   *resource.NewQuantity(int64(min(maxPods, pods)), resource.DecimalSI),
	}
	now := metav1.Now()
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg, LastHeartbeatTime: now, LastTransitionTime: now}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: cfg.NodeName,
			// The well-known labels a kubelet sets; NodeRestriction allows
			// a node exactly these (and the kubelet.kubernetes.io/ ones).
			Labels: map[string]string{
				corev1.LabelHostname:   cfg.NodeName,
				corev1.LabelOSStable:   goruntime.GOOS,
				corev1.LabelArchStable: goruntime.GOARCH,
			},
		},
		Spec: corev1.NodeSpec{PodCIDR: cfg.PodCIDR, PodCIDRs: []string{cfg.PodCIDR}},
		Status: corev1.NodeStatus{
			Capacity:    res,
			Allocatable: res,
			Conditions: []corev1.NodeCondition{
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "podgate node has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "podgate node has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "podgate node has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "podgate node is posting ready status"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: cfg.NodeIP},
				{Type: corev1.NodeHostName, Address: cfg.NodeName},
			},
			// Where the API server calls the kubelet API (0: none served).
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: cfg.kubeletPort}},
			NodeInfo: corev1.NodeSystemInfo{
				KubeletVersion:          KubeletVersion,
				ContainerRuntimeVersion: "podgate://" + cfg.Version,
				OperatingSystem:         goruntime.GOOS,
				Architecture:            goruntime.GOARCH,
				KernelVersion:           readTrimmed("/proc/sys/kernel/osrelease"),
				OSImage:                 osImage(),
				BootID:                  readTrimmed("/proc/sys/kernel/random/boot_id"),
				MachineID:               readTrimmed("/etc/machine-id"),
			},
		},
	}
}

// rangeSize is how many pod addresses cidr has (network and broadcast
// addresses excluded).
func rangeSize(cidr string) int {
	p, err := netip.ParsePrefix(cidr)
	if err != nil || p.Bits() < 8 {
		return DefaultMaxPods
	}
	return 1<<(32-p.Bits()) - 2
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// memTotal is the machine's memory in bytes (0 if unknown).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// osImage is /etc/os-release's PRETTY_NAME, as the kubelet reports it.
func osImage() string {
	for _, line := range strings.Split(readTrimmed("/etc/os-release"), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"`)
		}
	}
	return goruntime.GOOS
}

// checkRegistered refuses to run as a node already registered with
// another pod range: spec.podCIDR cannot change once set, and pods would
// get addresses outside the range the cluster knows for the node.
func checkRegistered(ctx context.Context, nodes corev1client.NodeInterface, cfg Config) error {
	n, err := nodes.Get(ctx, cfg.NodeName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("node %s: %w", cfg.NodeName, err)
	case n.Spec.PodCIDR != "" && n.Spec.PodCIDR != cfg.PodCIDR:
		return fmt.Errorf("node %s is registered with pod CIDR %s, not %s: run with --pod-cidr %s, or delete the Node first",
			cfg.NodeName, n.Spec.PodCIDR, cfg.PodCIDR, n.Spec.PodCIDR)
	}
	return nil
}

// nodeController registers the Node and keeps it and its Lease fresh:
// virtual-kubelet's NodeController, which creates the Node if absent,
// patches its status (merging with conditions others wrote) every
// StatusInterval, and renews the Lease in kube-node-lease.
func nodeController(cfg Config, nodes corev1client.NodeInterface, leases coordclient.LeasesGetter) (*node.NodeController, error) {
	opts := []node.NodeControllerOpt{
		node.WithNodeEnableLeaseV1WithRenewInterval(leases.Leases(leaseNamespace), cfg.LeaseDurationSeconds, cfg.LeaseRenewInterval),
		node.WithNodeStatusUpdateInterval(cfg.StatusInterval),
	}
	ctrl, err := node.NewNodeController(&node.NaiveNodeProvider{}, nodeObject(cfg), nodes, opts...)
	if err != nil {
		return nil, fmt.Errorf("node controller: %w", err)
	}
	return ctrl, nil
}

// register starts the node controller and waits until the Node is
// registered; stop ends the controller. A stop meanwhile (ctx, a signal)
// gives a nil controller and no error, a failure a nil controller and
// the error.
func register(ctx context.Context, cfg Config, nodes corev1client.NodeInterface, leases coordclient.LeasesGetter, sigs <-chan os.Signal) (ctrl *node.NodeController, stop func(), err error) {
	if ctrl, err = nodeController(cfg, nodes, leases); err != nil {
		return nil, nil, err
	}
	nodeCtx, stopNode := context.WithCancel(withVKLogger(context.WithoutCancel(ctx), cfg))
	go func() { _ = ctrl.Run(nodeCtx) }()
	stop = func() { stopNode(); <-ctrl.Done() }
	select {
	case <-ctrl.Ready():
		return ctrl, stop, nil
	case <-ctrl.Done():
		stopNode()
		return nil, nil, fmt.Errorf("register node %s: %w", cfg.NodeName, ctrl.Err())
	case <-ctx.Done():
	case <-sigs:
	}
	stop()
	return nil, nil, nil
}

// withVKLogger routes virtual-kubelet's logs to log.
func withVKLogger(ctx context.Context, cfg Config) context.Context {
	return vklog.WithLogger(ctx, vkslog.FromSlog(cfg.Logger.With("component", "node-controller")))
}

package node

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAHostNetworkPodOnTheLoopbackNetworkHasTheHostsAddress(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "onhost"},
		Spec: corev1.PodSpec{
			HostNetwork:                   true,
			TerminationGracePeriodSeconds: ptr(int64(1)),
			Containers: []corev1.Container{{Name: "app", Image: "busybox",
				Command: []string{"/bin/sh", "-c", `echo "POD_IP=$POD_IP"; exec sleep 600`}}},
		},
	}
	h.start(manifest(t, pod))
	p := h.waitPod("onhost", "running", func(p *corev1.Pod) bool {
		return containerStatus(p, "app").State.Running != nil
	})
	if p.Status.PodIP != HostIP || len(p.Status.PodIPs) != 1 || p.Status.PodIPs[0].IP != HostIP || p.Status.HostIP != HostIP {
		t.Errorf("podIP %s podIPs %v hostIP %s, want the host's %s for all", p.Status.PodIP, p.Status.PodIPs, p.Status.HostIP, HostIP)
	}
	h.waitOutputCount("onhost", "POD_IP="+HostIP, 1)
}

package node

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/events"
)

func TestPortConflicts(t *testing.T) {
	t.Parallel()
	t.Run("a port held by another container of ours names the pod and container", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		// The sidecar holds 8080 (its startup probe waits for that), then
		// the main container wants the same port.
		h.start(podYAML("clash", `  initContainers:
  - name: a
    image: ghcr.io/podgate/testapp
    restartPolicy: Always
    args: ["--port", "8080"]
    ports: [{containerPort: 8080}]
    startupProbe:
      tcpSocket: {port: 8080}
      periodSeconds: 1
      failureThreshold: 30
  containers:
  - name: b
    image: busybox
    command: ["/bin/sh", "-c", "sleep 600"]
    ports: [{containerPort: 8080}]
`))
		want := "port 8080/TCP of pod default/clash container b is already bound by pod default/clash container a"
		h.waitEvent("clash", events.ReasonFailed, want)
		p := h.waitPod("clash", "b failed to start", func(p *corev1.Pod) bool {
			lt := containerStatus(p, "b").LastTerminationState.Terminated
			return lt != nil && lt.Reason == "StartError"
		})
		if lt := containerStatus(p, "b").LastTerminationState.Terminated; lt.ExitCode != 128 || lt.Message == "" {
			t.Errorf("lastState = %+v, want exit code 128 with the conflict as message", lt)
		}
	})
	t.Run("a port held by another process names the process", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t)
		// The first pod gets the range's first address: hold its port.
		ln, err := net.Listen("tcp4", net.JoinHostPort(netip.MustParsePrefix(h.agent.opts.PodCIDR).Addr().Next().String(), "8080"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		h.start(podYAML("clash", `  containers:
  - name: b
    image: busybox
    command: ["/bin/sh", "-c", "sleep 600"]
    ports: [{containerPort: 8080}]
`))
		h.waitEvent("clash", events.ReasonFailed, fmt.Sprintf("port 8080/TCP of pod default/clash container b is already bound by another process (pid %d, ", os.Getpid()))
	})
}

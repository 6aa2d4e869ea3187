//go:build linux

package nodenet_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/node/netns"
)

// childLimit bounds a whole child: a node, its pods and their checks.
const childLimit = 4 * time.Minute

// childCmd is this binary in role, in a new namespace once started with
// netns.StartInNewNetns; the child dies with the test.
func childCmd(t *testing.T, role, cidr string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(self())
	cmd.Env = append(os.Environ(), childEnv+"="+role, cidrEnv+"="+cidr, dirEnv+"="+t.TempDir())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, &errb
}

// Each case is a node of its own: a child in a new network namespace
// with its pod CIDR, running one pod (or Deployment) on the agent with
// the adapter, and checking from there.
func TestTheAgentRunsEveryProcessOfAPodInItsNetworkNamespace(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, role, cidr string }{
		{"two replicas both bind 0.0.0.0:8080 and each answers at its own pod IP, which status, $POD_IP, the downward API and the EndpointSlice carry", "replicas", "10.231.0.0/16"},
		{"an exec readiness probe runs inside the pod's namespace and the pod goes Ready", "readiness", "10.232.0.0/16"},
		{"a failing exec liveness probe restarts the container in the same namespace with the same IP", "liveness", "10.233.0.0/16"},
		{"an exec preStop hook runs inside, and the deleted pod's namespace and veth are gone", "prestop", "10.234.0.0/16"},
		{"a spawner thread stranded in a pod's namespace starts nothing more, says why, and ends at shutdown", "stranded", "10.235.0.0/16"},
		{"every container of a ClusterFirst pod reads the kubelet's resolv.conf and hosts file, and Go's resolver finds a Service through the cluster DNS", "dns", "10.237.0.0/16"},
		{"a hostNetwork pod runs and listens on the node's address with NET_ADMIN and the node's DNS files; without cluster DNS ClusterFirst falls back with the kubelet's warning", "hostnet", "10.238.0.0/16"},
		{"a pod's configMap, secret, emptyDir, downwardAPI and service-account volumes are mounted as the kubelet mounts them, in each container's own mount namespace; a missing configMap holds the pod with FailedMount until it is created", "volumes", "10.239.0.0/16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cmd, errb := childCmd(t, tc.role, tc.cidr)
			var out bytes.Buffer
			cmd.Stdout = &out
			if err := netns.StartInNewNetns(cmd); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), childLimit)
			defer cancel()
			stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
			defer stop()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("%s in a new network namespace: %v\nstdout:\n%s\nstderr:\n%s", tc.role, err, out.String(), errb.String())
			}
		})
	}
}

func TestSIGKILLOfTheNodeLeavesNoContainerProcessAndNoNamespace(t *testing.T) {
	t.Parallel()
	cmd, errb := childCmd(t, "hold", "10.236.0.0/16")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := netns.StartInNewNetns(cmd); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	line := make(chan []byte, 1)
	go func() {
		b, _ := bufio.NewReader(stdout).ReadBytes('\n')
		line <- b
	}()
	var h held
	select {
	case b := <-line:
		if err := json.Unmarshal(b, &h); err != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			killed = true
			t.Fatalf("the node said %q: %v\nstderr:\n%s", b, err, errb.String())
		}
	case <-time.After(childLimit):
		t.Fatalf("the node's pod was not Ready within %s", childLimit)
	}
	if !alive(h.Pid) || len(netnsHolders(h.Pod)) == 0 || len(netnsHolders(h.Cluster)) == 0 {
		t.Fatalf("before the kill: container %d alive %v, holders of the pod's namespace %v, of the cluster's %v",
			h.Pid, alive(h.Pid), netnsHolders(h.Pod), netnsHolders(h.Cluster))
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	deadline := time.Now().Add(waitLimit)
	for {
		left := append(netnsHolders(h.Pod), netnsHolders(h.Cluster)...)
		if alive(h.Pid) {
			left = append(left, "the container's process")
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after SIGKILL of the node, still there: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

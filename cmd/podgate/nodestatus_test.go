package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/test/syncbuf"
	"github.com/podgate/podgate/test/testapp"
)

func TestNodeStatusUsageAndInvalidValues(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	absent := filepath.Join(t.TempDir(), "absent")
	// A kubeconfig that loads (its server is never reached: the address
	// is refused first) and an address another listener holds.
	kubeconf := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconf, []byte(`apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: k, context: {cluster: k, user: u}}]
users: [{name: u, user: {token: "t"}}]
current-context: k
`), 0o600); err != nil {
		t.Fatal(err)
	}
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	taken := held.Addr().String()
	tests := []struct {
		name          string
		nodeEnv, host string
		args          []string
		code          int
		want          string
	}{
		{"an argument", "", "", []string{"node-status", "--node", "n", "--listen", "127.0.0.1:0", "extra"}, exitUsage, "unknown command"},
		{"no node", "", "", []string{"node-status", "--listen", "127.0.0.1:0"}, exitUsage, "--node is required (or $NODE_NAME)"},
		{"no listen", "", "", []string{"node-status", "--node", "n"}, exitUsage, "--listen is required (or $HOST_IP"},
		{"a listen without port", "", "", []string{"node-status", "--node", "n", "--listen", "127.0.0.1"}, exitUsage, `--listen "127.0.0.1": address 127.0.0.1: missing port`},
		{"a port out of range", "", "", []string{"node-status", "--node", "n", "--listen", "127.0.0.1:70000"}, exitUsage, `--listen "127.0.0.1:70000": port "70000"`},
		{"no grace", "", "", []string{"node-status", "--node", "n", "--listen", "127.0.0.1:0", "--gate-grace", "0s"}, exitUsage, "--gate-grace 0s: must be positive"},
		{"an address taken", "", "", []string{"node-status", "--node", "n", "--listen", taken, "--kubeconfig", kubeconf}, exitInvalid, "--listen " + taken + ": listen tcp " + taken + ": bind: address already in use"},
		{"a kubeconfig that is not there", "", "", []string{"node-status", "--node", "n", "--listen", "127.0.0.1:0", "--kubeconfig", absent}, exitInvalid, "absent: no such file or directory"},
		// The DaemonSet's environment makes both flags' defaults: the
		// command gets as far as the cluster.
		{"node and listen from the environment", "n", "127.0.0.1", []string{"node-status", "--kubeconfig", absent}, exitInvalid, "absent: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("NODE_NAME", tt.nodeEnv)
			t.Setenv("HOST_IP", tt.host)
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr does not say %q:\n%s", tt.want, stderr.String())
			}
		})
	}
}

var nodeStatusListening = regexp.MustCompile(`msg="node status service listening" addr=(\S+)`)

// startProcess starts cmd, keeps its stderr, and reports the first
// submatch of pattern in it.
func startProcess(t *testing.T, cmd *exec.Cmd, pattern *regexp.Regexp) (string, chan error, *syncbuf.Buffer) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	found, exited := make(chan string, 1), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = io.WriteString(logs, sc.Text()+"\n")
			if m := pattern.FindStringSubmatch(sc.Text()); m != nil && len(found) == 0 {
				found <- m[1]
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", cmd.Args[1], logs.String())
		}
	})
	select {
	case m := <-found:
		return m, exited, logs
	case err := <-exited:
		t.Fatalf("%s exited before it was up: %v\n%s", cmd.Args[1], err, logs.String())
	case <-time.After(time.Minute):
		t.Fatalf("%s did not say it was up:\n%s", cmd.Args[1], logs.String())
	}
	return "", nil, nil
}

// TestNodeStatusBinaryGetsAGateReady runs the real `podgate node-status`
// against a real control plane, and the real gate (`podgate gate`) of a
// pod of that node with PODGATE_STATUS_SOURCE set to the service: the
// gate reads its pod through the service and its condition turns True on
// the pod, with no API credential of its own. The pod's IP is 127.0.0.1,
// the address the gate process dials from (the only pod of its node).
// SIGTERM ends the service with exit 0.
func TestNodeStatusBinaryGetsAGateReady(t *testing.T) {
	bin := podgateBinary(t)
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	admin, err := kubernetes.NewForConfig(cp.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gate-node"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err := admin.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-00001-pod"},
		Spec: corev1.PodSpec{NodeName: "gate-node", Containers: []corev1.Container{{Name: "app", Image: "ghcr.io/podgate/testapp"}, {Name: contract.GateContainerName, Image: "ghcr.io/podgate/podgate"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: contract.ContainersReadyCondition}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.Now()}}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "127.0.0.1", PodIPs: []corev1.PodIP{{IP: "127.0.0.1"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, State: running}, {Name: contract.GateContainerName, State: running}}}
	if _, err := admin.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	svc := exec.Command(bin, "node-status", "--kubeconfig", cp.AdminKubeconfig(), "--node", "gate-node", "--listen", "127.0.0.1:0")
	addr, svcExited, _ := startProcess(t, svc, nodeStatusListening)

	app, err := testapp.Start(testapp.Config{Name: "app", Addr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	_, appPort, _ := strings.Cut(app.Addr(), ":")
	env := gateEnv(appPort)
	env[contract.EnvStatusSource] = "http://" + addr
	env[contract.EnvContainers] = "app"
	gateCmd := exec.Command(bin, "gate")
	gateCmd.Env = gateEnviron(env)
	startProcess(t, gateCmd, gateListening)

	poll(t, "the gate's condition is True on its pod", func() (bool, string) {
		got, err := admin.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range got.Status.Conditions {
			if c.Type == contract.ContainersReadyCondition {
				return c.Status == corev1.ConditionTrue, string(c.Status) + " " + c.Message
			}
		}
		return false, "no condition"
	})
	if err := svc.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-svcExited:
		if err != nil {
			t.Fatalf("podgate node-status exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("podgate node-status did not exit on SIGTERM")
	}
}

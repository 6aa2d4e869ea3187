package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/test/syncbuf"
)

func TestNodeFlags(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	missing := filepath.Join(t.TempDir(), "absent.kubeconfig")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no kubeconfig", []string{"node", "--name", "n1"}, exitUsage, "--kubeconfig: required"},
		{"a name that is no DNS subdomain", []string{"node", "--kubeconfig", missing, "--name", "Node_1"}, exitUsage, `--name "Node_1"`},
		{"a pod range off loopback", []string{"node", "--kubeconfig", missing, "--name", "n1", "--pod-cidr", "10.0.0.0/24"}, exitUsage, "--pod-cidr"},
		{"a node IP that is none", []string{"node", "--kubeconfig", missing, "--name", "n1", "--node-ip", "ten"}, exitUsage, `--node-ip "ten"`},
		{"an --image without a path", []string{"node", "--kubeconfig", missing, "--name", "n1", "--image", "x"}, exitUsage, `--image "x"`},
		{"an argument", []string{"node", "--kubeconfig", missing, "--name", "n1", "extra"}, exitUsage, "unknown command"},
		{"an --image-layout that is no OCI layout", []string{"node", "--kubeconfig", missing, "--name", "n1", "--image-layout", t.TempDir()}, exitInvalid, "not an OCI image layout"},
		{"a kubeconfig that does not exist", []string{"node", "--kubeconfig", missing, "--name", "n1"}, exitInvalid, missing},
		{"a pod network that is none", []string{"node", "--kubeconfig", missing, "--name", "n1", "--pod-network", "bridge"}, exitUsage, `--pod-network "bridge": want loopback or netns`},
		{"a loopback pod range for pod network namespaces", []string{"node", "--kubeconfig", missing, "--name", "n1", "--pod-network", "netns", "--pod-cidr", "127.0.50.0/24"}, exitUsage, "--pod-cidr: pod CIDR \"127.0.50.0/24\" overlaps 127.0.0.0/8"},
		{"a cluster DNS address that is none", []string{"node", "--kubeconfig", missing, "--name", "n1", "--cluster-dns", "10.96.0.10,dns"}, exitUsage, `--cluster-dns "dns": not an IP address`},
		{"a cluster domain that is no DNS subdomain", []string{"node", "--kubeconfig", missing, "--name", "n1", "--cluster-domain", "Cluster_Local"}, exitUsage, `--cluster-domain "Cluster_Local"`},
		{"no resolv.conf", []string{"node", "--kubeconfig", missing, "--name", "n1", "--resolv-conf", ""}, exitUsage, "--resolv-conf: required"},
		{"no pod capacity", []string{"node", "--kubeconfig", missing, "--name", "n1", "--max-pods", "0"}, exitUsage, "--max-pods 0: want 1 or more"},
		{"a Lease too short to renew", []string{"node", "--kubeconfig", missing, "--name", "n1", "--node-lease-duration-seconds", "2"}, exitUsage, "--node-lease-duration-seconds 2"},
		{"a serving certificate without its key and client CA", []string{"node", "--kubeconfig", missing, "--name", "n1", "--tls-cert-file", "c.crt"}, exitUsage, "all three or none"},
		{"a kubelet port out of range", []string{"node", "--kubeconfig", missing, "--name", "n1", "--port", "70000"}, exitUsage, "--port 70000: want 0 to 65535"},
		{"pod network namespaces from the host's network namespace", []string{"node", "--kubeconfig", missing, "--name", "n1", "--pod-network", "netns"}, exitInvalid, "refusing to configure the host's network namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tc.args, &out, &errOut); code != tc.code || !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, errOut.String(), tc.code, tc.want)
			}
		})
	}
}

// TestNodeRunsAPodOfARealCluster runs the built binary as a node of a real
// control plane: it registers, runs a pod bound to it, serves its logs
// to the API server through the kubelet API, and drains on SIGINT.
func TestNodeRunsAPodOfARealCluster(t *testing.T) {
	bin := podgateBinary(t)
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	core := coreclient.NewForConfigOrDie(cp.AdminConfig())
	kubeconfig, err := cp.NodeKubeconfig("cli-node")
	if err != nil {
		t.Fatal(err)
	}
	tlsFlags := kubeletTLSFlags(t, cp, "cli-node")
	var stdout, stderr syncbuf.Buffer
	node := exec.Command(bin, append([]string{"node", "--kubeconfig", kubeconfig, "--name", "cli-node", "--pod-cidr", "127.3.3.0/24", "--port", "0"}, tlsFlags...)...)
	node.Stdout, node.Stderr = &stdout, &stderr
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- node.Wait() }()
	t.Cleanup(func() {
		_ = node.Process.Kill()
		if t.Failed() {
			t.Logf("podgate node's stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
		}
	})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:   "cli-node",
			Containers: []corev1.Container{{Name: "app", Image: images.TestappImage, Args: []string{"--port", "8080"}}},
		},
	}
	if _, err := core.Pods("default").Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "pod hello Running", func() (bool, string) {
		p, err := core.Pods("default").Get(t.Context(), "hello", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == corev1.PodRunning && strings.HasPrefix(p.Status.PodIP, "127.3.3."), fmt.Sprintf("phase %s, IP %s", p.Status.Phase, p.Status.PodIP)
	})

	// Through the API server, which dials the node's InternalIP at the
	// port the Node publishes.
	poll(t, "kubectl logs of pod hello", func() (bool, string) {
		b, err := core.Pods("default").GetLogs("hello", &corev1.PodLogOptions{}).DoRaw(t.Context())
		return err == nil && strings.Contains(string(b), "listening"), fmt.Sprintf("%q %v", b, err)
	})

	if err := node.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("podgate node after SIGINT: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("podgate node did not stop within a minute of SIGINT")
	}
	if _, err := core.Pods("default").Get(t.Context(), "hello", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("pod hello after the node drained: %v, want NotFound", err)
	}
}

// kubeletTLSFlags writes the node's kubelet API serving certificate (for
// 127.0.0.1) and the cluster's CA, and returns the flags naming them.
func kubeletTLSFlags(t *testing.T, cp *controlplane.ControlPlane, name string) []string {
	t.Helper()
	kp, ca, err := cp.KubeletServing(name, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string][]byte{"kubelet.crt": kp.CertPEM, "kubelet.key": kp.KeyPEM, "ca.crt": ca}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return []string{"--tls-cert-file", filepath.Join(dir, "kubelet.crt"), "--tls-private-key-file", filepath.Join(dir, "kubelet.key"),
		"--client-ca-file", filepath.Join(dir, "ca.crt")}
}

func poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a minute: %s", what, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

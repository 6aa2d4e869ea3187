package podstatus

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1client "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gateenv"
	"github.com/podgate/podgate/wire"
)

// A real kube-apiserver (with etcd), built by scripts/k8s-build.sh, with
// RBAC and static tokens: an admin, and the gate, which may do nothing
// until the test grants it.

type kubeAPIServer struct {
	url        string
	adminToken string
	gateToken  string
}

func (k *kubeAPIServer) config(token string) *rest.Config {
	return &rest.Config{Host: k.url, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
}

// freePort is a port nothing listens on now; etcd and kube-apiserver take
// a port number, not a listener.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func randomToken(t *testing.T) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// startProcess runs bin with args, its output in a file of dir; cleanup
// stops it (SIGTERM, then SIGKILL after 15 s) and shows the output's end
// when the test failed.
func startProcess(t *testing.T, dir, bin string, args ...string) {
	t.Helper()
	name := filepath.Base(bin)
	out, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	// Gone with the test binary, whatever happens to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		out.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		out.Close()
		if t.Failed() {
			data, _ := os.ReadFile(out.Name())
			if len(data) > 4000 {
				data = data[len(data)-4000:]
			}
			t.Logf("%s output (end):\n%s", name, data)
		}
	})
}

// startKubeAPIServer builds (or finds cached) the control plane and runs
// etcd and kube-apiserver on free loopback ports until the test ends.
func startKubeAPIServer(t *testing.T) *kubeAPIServer {
	t.Helper()
	out, err := exec.Command("../../scripts/k8s-build.sh").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("scripts/k8s-build.sh: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("scripts/k8s-build.sh: %v", err)
	}
	bin := strings.TrimSpace(string(out))
	dir := t.TempDir()
	k := &kubeAPIServer{adminToken: randomToken(t), gateToken: randomToken(t)}

	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	saKey := filepath.Join(dir, "sa.key")
	tokens := filepath.Join(dir, "tokens.csv")
	for path, data := range map[string][]byte{
		saKey:  pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}),
		tokens: fmt.Appendf(nil, "%s,admin,1,\"system:masters\"\n%s,gate,2\n", k.adminToken, k.gateToken),
	} {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	startProcess(t, dir, filepath.Join(bin, "etcd"), "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	port := freePort(t)
	// Registered after etcd's: cleanups run last first, so the API server
	// stops while etcd still answers.
	startProcess(t, dir, filepath.Join(bin, "kube-apiserver"),
		"--etcd-servers", etcdURL, "--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--advertise-address", "127.0.0.1", "--endpoint-reconciler-type", "none",
		"--cert-dir", filepath.Join(dir, "certs"), "--token-auth-file", tokens,
		"--authorization-mode", "RBAC", "--disable-admission-plugins", "ServiceAccount",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", saKey, "--service-account-signing-key-file", saKey)
	k.url = fmt.Sprintf("https://127.0.0.1:%d", port)

	admin, err := corev1client.NewForConfig(k.config(k.adminToken))
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		body, err := admin.RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		if err == nil && strings.TrimSpace(string(body)) == "ok" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after 3 minutes: %v %s", err, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The namespace controller makes "default" once the server runs.
	for {
		if _, err := admin.Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err == nil {
			return k
		}
		if time.Now().After(deadline) {
			t.Fatal("namespace default never appeared")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestOnAClusterAMissingPermissionIsLoggedOnceAndNamed runs the gate's
// writer as PODGATE_STATUS_SOURCE=kubernetes builds it ($KUBECONFIG)
// against a real kube-apiserver with RBAC. Without permission to patch
// pods/status the write is refused: the error names the permission, the
// gate logs it once however often it retries (every 30 s), and once the
// permission is granted the next retry writes the condition, beside the
// conditions already on the pod.
func TestOnAClusterAMissingPermissionIsLoggedOnceAndNamed(t *testing.T) {
	k := startKubeAPIServer(t)
	ctx := context.Background()
	admin, err := corev1client.NewForConfig(k.config(k.adminToken))
	if err != nil {
		t.Fatal(err)
	}
	p, err := admin.Pods("default").Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "ghcr.io/podgate/testapp"}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: wire.ContainersReadyCondition}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's condition (the kubelet's, on a node) is there first.
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	if _, err := admin.Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	kubeconfig := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "`+k.url+`", insecure-skip-tls-verify: true}}]
contexts: [{name: k, context: {cluster: k, user: gate}}]
users: [{name: gate, user: {token: "`+k.gateToken+`"}}]
current-context: k
`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", kubeconfig)
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	w, err := ConditionWriterForCluster("default", "web-1")
	if err != nil {
		t.Fatal(err)
	}
	err = w.WriteCondition(ctx, gate.PodCondition{Ready: true, LastTransition: time.Now()})
	if !errors.Is(err, gate.ErrNotPermitted) || !strings.Contains(err.Error(), `verb "patch" on resource "pods/status"`) ||
		!strings.Contains(err.Error(), `User "gate" cannot patch resource "pods/status"`) {
		t.Fatalf("write without permission: %v; want ErrNotPermitted naming the permission", err)
	}

	// The gate: no probes and no status source, so ready at once, and its
	// writer the only thing waiting on the clock.
	clk := testingclock.NewFakeClock(time.Now())
	host, port, _ := startApp(t)
	cfg := gateenv.Defaults()
	cfg.UpstreamHost, cfg.UserPort, cfg.DrainQuietPeriod = host, port, 0
	cfg.Namespace, cfg.Pod, cfg.Containers = "default", "web-1", []string{"web"}
	var logs syncBuffer
	g, err := gate.New(gate.Options{Config: cfg, Conditions: w, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	runGate(t, g)
	const refused = "the API refuses the gate's pod condition"
	eventually(t, "the refusal is logged", func() bool { return strings.Contains(logs.String(), refused) })
	for range 3 {
		eventually(t, "the writer waits to retry", clk.HasWaiters)
		clk.Step(30 * time.Second) // a refusal for want of permission is retried every 30 s
	}
	eventually(t, "the writer waits again", clk.HasWaiters)
	if n := strings.Count(logs.String(), refused); n != 1 {
		t.Errorf("the refusal was logged %d times over 4 attempts, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), `resources: [\"pods/status\"], verbs: [\"patch\"]`) {
		t.Errorf("the log does not name the permission:\n%s", logs.String())
	}

	rbac, err := rbacv1client.NewForConfig(k.config(k.adminToken))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.Roles("default").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "podgate-gate"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rbac.RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "podgate-gate"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "podgate-gate"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "gate"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The authorizer sees the binding within moments; retry until the
	// write goes through.
	var got *corev1.Pod
	deadline := time.Now().Add(testWait)
	for {
		eventually(t, "the writer waits to retry", clk.HasWaiters)
		clk.Step(30 * time.Second)
		eventually(t, "the attempt is over", func() bool {
			return clk.HasWaiters() || strings.Contains(logs.String(), "pod condition written")
		})
		if strings.Contains(logs.String(), "pod condition written") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the condition was not written after the permission was granted:\n%s", logs.String())
		}
	}
	if got, err = admin.Pods("default").Get(ctx, "web-1", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range got.Status.Conditions {
		types = append(types, fmt.Sprintf("%s=%s", c.Type, c.Status))
	}
	if strings.Join(types, " ") != wire.ContainersReadyCondition+"=True PodScheduled=True" &&
		strings.Join(types, " ") != "PodScheduled=True "+wire.ContainersReadyCondition+"=True" {
		t.Errorf("conditions %v, want PodScheduled kept and the gate's True", types)
	}
}

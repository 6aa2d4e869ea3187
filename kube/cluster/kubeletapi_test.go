package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/internal/certs"
	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/node/kubeletapi"
	"github.com/podgate/podgate/test/syncbuf"
)

// kubectlRun runs the real kubectl against the cluster with a deadline.
func (u *upProcess) kubectlRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(u.dir, KubeconfigFile))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	return out.String(), errb.String(), exitCode(err)
}

// chattyPod has a container that writes three lines and then one more
// each time the file NEXT appears, and one that writes "instance N" and
// fails after a second, restarting.
func chattyPod(next, count string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "chatty", Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{
				{Name: "writer", Image: "busybox", Command: []string{"/bin/sh", "-c",
					`echo first; echo second; echo third; while true; do if [ -e "$NEXT" ]; then rm "$NEXT"; echo "next line"; fi; sleep 0.1; done`},
					Env: []corev1.EnvVar{{Name: "NEXT", Value: next}}},
				{Name: "crasher", Image: "busybox", Command: []string{"/bin/sh", "-c",
					`n=$(cat "$COUNT" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$COUNT"; echo "instance $n"; sleep 1; exit 1`},
					Env: []corev1.EnvVar{{Name: "COUNT", Value: count}}},
			},
		},
	}
}

func TestKubectlLogsExecPortForwardThroughTheKubeletAPI(t *testing.T) {
	u := startUp(t, "10.253.24.0/24")
	ctx := context.Background()
	core := u.client.CoreV1()
	tmp := t.TempDir()
	next, count := filepath.Join(tmp, "next"), filepath.Join(tmp, "count")
	if _, err := core.Pods("default").Create(ctx, chattyPod(next, count), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u.outputLine("chatty", "writer", "third")

	t.Run("the Node publishes the kubelet port", func(t *testing.T) {
		n, err := core.Nodes().Get(ctx, DefaultNodeName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Status.DaemonEndpoints.KubeletEndpoint.Port; got != kubeletapi.DefaultPort {
			t.Errorf("kubeletEndpoint.port %d, want %d", got, kubeletapi.DefaultPort)
		}
	})
	t.Run("kubectl logs", func(t *testing.T) { testKubectlLogs(t, u, next) })
	t.Run("kubectl logs --previous after a restart", func(t *testing.T) { testLogsPrevious(t, u) })
	t.Run("the kubelet API refuses callers other than the API server", func(t *testing.T) { testKubeletAPIRefuses(t, u) })
	t.Run("kubectl exec", func(t *testing.T) { testKubectlExec(t, u, next) })
	t.Run("kubectl exec -it on a terminal", func(t *testing.T) { testKubectlExecTTY(t, u) })
	t.Run("kubectl exec runs as the container's user, with its volumes", func(t *testing.T) { testExecAsContainer(t, u) })
	t.Run("kubectl port-forward", func(t *testing.T) { testPortForward(t, u) })
}

func testKubectlExec(t *testing.T, u *upProcess, next string) {
	for _, tc := range []struct {
		name             string
		args             []string
		stdin            string
		wantOut, wantErr string
		wantCode         int
	}{
		{"stdout, stderr and the exit code come back", []string{"--", "sh", "-c", "echo out; echo err >&2; exit 3"}, "", "out\n", "err\n", 3},
		{"the container's environment and name", []string{"--", "sh", "-c", `echo "$NEXT $HOSTNAME"`}, "", next + " chatty\n", "", 0},
		{"-i passes stdin to its end", []string{"-i", "--", "sh", "-c", "cat; echo done"}, "typed\n", "typed\ndone\n", "", 0},
		{"a command that does not exist", []string{"--", "no-such-command-here"}, "", "", "no-such-command-here", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin, err := k8sbin.Path(k8sbin.Kubectl)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"exec", "chatty", "-c", "writer"}, tc.args...)...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(u.dir, KubeconfigFile))
			cmd.Stdin = strings.NewReader(tc.stdin)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			code := exitCode(cmd.Run())
			if code != tc.wantCode || out.String() != tc.wantOut || !strings.Contains(errb.String(), tc.wantErr) {
				t.Errorf("kubectl exec %v: exit %d, stdout %q, stderr %q; want %d, %q, stderr with %q", tc.args, code, out.String(), errb.String(), tc.wantCode, tc.wantOut, tc.wantErr)
			}
		})
	}
}

// testExecAsContainer execs into a container with runAsUser and a
// configMap volume: the command has the container's user and sees the
// volume at its mount path, as the container's own process does.
func testExecAsContainer(t *testing.T, u *upProcess) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kubeletapi-greet", Namespace: "default"}, Data: map[string]string{"msg": "hi from the volume"}}
	if _, err := u.client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: "default"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](65534), RunAsGroup: ptr.To[int64](65534)},
			Volumes: []corev1.Volume{{Name: "greet", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}}},
			Containers: []corev1.Container{{Name: "c", Image: "busybox", Command: []string{"sleep", "600"},
				VolumeMounts: []corev1.VolumeMount{{Name: "greet", MountPath: "/etc/podgate-kubeletapi-greet", ReadOnly: true}}}},
		},
	}
	if _, err := u.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u.waitPod("nobody", "running", func(p *corev1.Pod) (bool, string) {
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	out, errOut, code := u.kubectlRun(t, "exec", "nobody", "--", "sh", "-c", "id -u; id -g; cat /etc/podgate-kubeletapi-greet/msg")
	if code != 0 || out != "65534\n65534\nhi from the volume" {
		t.Errorf("kubectl exec: exit %d, %q (stderr %q); want user and group 65534 and the volume's file", code, out, errOut)
	}
}

// testKubectlExecTTY runs kubectl exec -it on a terminal of the test's
// own, types a command into the remote shell and reads its echo.
func testKubectlExecTTY(t *testing.T, u *upProcess) {
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	leader, follower := openTestPTY(t)
	defer leader.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "exec", "-it", "chatty", "-c", "writer", "--", "sh")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(u.dir, KubeconfigFile), "TERM=dumb")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = follower, follower, follower
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	follower.Close()
	var out syncbuf.Buffer
	copied := make(chan struct{})
	go func() { defer close(copied); _, _ = io.Copy(&out, leader) }()
	if _, err := io.WriteString(leader, "tty; stty size; echo marker-$((6*7)); exit 5\r"); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	leader.Close()
	<-copied
	got := out.String()
	// The shell echoes what was typed (the remote terminal's echo), then
	// runs it on a terminal of its own.
	// stty size: the remote terminal has the size of kubectl's (24x80).
	if !strings.Contains(got, "echo marker-$((6*7))") || !strings.Contains(got, "marker-42") || !regexp.MustCompile(`/dev/pts/\d+`).MatchString(got) ||
		!strings.Contains(got, "24 80") {
		t.Errorf("kubectl exec -it: %q; want the typed line echoed, marker-42, a /dev/pts terminal of 24 rows and 80 columns", got)
	}
	if code := exitCode(err); code != 5 {
		t.Errorf("kubectl exec -it: exit %d (%v), want 5", code, err)
	}
}

// testPortForward forwards a host loopback port to the test app's 8080
// in its pod and sends a request through it.
func testPortForward(t *testing.T, u *upProcess) {
	ctx := context.Background()
	spec := testappSpec(false)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"}, Spec: spec}
	if _, err := u.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u.waitPod("web", "ready", ready)
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, "port-forward", "pod/web", ":8080")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(u.dir, KubeconfigFile))
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) -> 8080`)
	var port string
	eventually(t, waitLimit, "kubectl port-forward listening", func() (bool, string) {
		m := re.FindStringSubmatch(out.String())
		if m == nil {
			return false, out.String()
		}
		port = m[1]
		return true, ""
	})
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	for i := range 2 { // a second connection through the same session
		resp, err := hc.Get("http://127.0.0.1:" + port + "/")
		if err != nil {
			t.Fatalf("request %d through the forward: %v\nkubectl: %s", i, err, out.String())
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "web") {
			t.Errorf("request %d through the forward: %d %q; want 200 from pod web", i, resp.StatusCode, b)
		}
	}
}

// openTestPTY opens a pseudo-terminal for kubectl -t: the test reads and
// writes leader, kubectl gets follower.
func openTestPTY(t *testing.T) (leader, follower *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	follower, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), follower
}

func testKubectlLogs(t *testing.T, u *upProcess, next string) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"-c names the container", []string{"-c", "writer"}, "first\nsecond\nthird\n"},
		{"--tail keeps the last lines", []string{"-c", "writer", "--tail", "1"}, "third\n"},
		{"--since covers lines of the last hour", []string{"-c", "writer", "--since", "1h"}, "first\nsecond\nthird\n"},
		{"--since-time in the future shows nothing", []string{"-c", "writer", "--since-time", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, ""},
		{"--limit-bytes cuts the output", []string{"-c", "writer", "--limit-bytes", "8"}, "first\nse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := u.kubectlRun(t, append([]string{"logs", "chatty"}, tc.args...)...)
			if code != 0 || out != tc.want {
				t.Errorf("kubectl logs %v: exit %d, %q (stderr %q); want %q", tc.args, code, out, errOut, tc.want)
			}
		})
	}
	t.Run("--timestamps prefixes each line with its RFC 3339 time", func(t *testing.T) {
		out, errOut, code := u.kubectlRun(t, "logs", "chatty", "-c", "writer", "--timestamps", "--tail", "1")
		if code != 0 || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z third\n$`).MatchString(out) {
			t.Errorf("kubectl logs --timestamps: exit %d, %q (stderr %q)", code, out, errOut)
		}
	})
	t.Run("without -c kubectl picks the first container", func(t *testing.T) {
		out, errOut, code := u.kubectlRun(t, "logs", "chatty")
		if code != 0 || out != "first\nsecond\nthird\n" || !strings.Contains(errOut, `Defaulted container "writer" out of: writer, crasher`) {
			t.Errorf("kubectl logs without -c: exit %d, %q, stderr %q; want writer's lines", code, out, errOut)
		}
	})
	t.Run("-f sees a line written after it started", func(t *testing.T) { testLogsFollow(t, u, next) })
}

func testLogsFollow(t *testing.T, u *upProcess, next string) {
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "logs", "-f", "chatty", "-c", "writer")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(u.dir, KubeconfigFile))
	var out syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	eventually(t, waitLimit, "kubectl logs -f showing the first lines", func() (bool, string) {
		return strings.Contains(out.String(), "third\n"), out.String()
	})
	if err := os.WriteFile(next, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitLimit, "kubectl logs -f showing the new line", func() (bool, string) {
		return out.String() == "first\nsecond\nthird\nnext line\n", out.String()
	})
}

func testLogsPrevious(t *testing.T, u *upProcess) {
	u.waitPod("chatty", "crasher restarted", func(p *corev1.Pod) (bool, string) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == "crasher" {
				return cs.RestartCount >= 1, fmt.Sprintf("restarts %d", cs.RestartCount)
			}
		}
		return false, "no status of crasher"
	})
	out, errOut, code := u.kubectlRun(t, "logs", "chatty", "-c", "crasher", "--previous")
	if code != 0 || !regexp.MustCompile(`^instance \d+\n$`).MatchString(out) {
		t.Errorf("kubectl logs --previous: exit %d, %q (stderr %q); want one instance line", code, out, errOut)
	}
	_, errOut, code = u.kubectlRun(t, "logs", "chatty", "-c", "writer", "--previous")
	if code == 0 || !strings.Contains(errOut, `previous terminated container "writer" in pod "chatty" not found`) {
		t.Errorf("kubectl logs --previous of a container never restarted: exit %d, stderr %q; want a 400", code, errOut)
	}
}

// testKubeletAPIRefuses calls the kubelet API directly, from inside the
// cluster's network namespace: without a client certificate (401), with
// one of another CA (the handshake fails), with one of the cluster's CA
// for a user without nodes/proxy (403) — and with the API server's own
// (200).
func testKubeletAPIRefuses(t *testing.T, u *upProcess) {
	pki := filepath.Join(u.dir, controlPlaneDir, "pki")
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := os.ReadFile(filepath.Join(pki, "ca.key"))
	if err != nil {
		t.Fatal(err)
	}
	ca, err := certs.Parse(caPEM, caKey)
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.Sign(&x509.Certificate{Subject: pkix.Name{CommonName: "other-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := func(issuer *certs.KeyPair, user string) *certs.KeyPair {
		kp, err := certs.Sign(&x509.Certificate{Subject: pkix.Name{CommonName: user}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, issuer)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	apiCert, err := os.ReadFile(filepath.Join(pki, "apiserver-kubelet-client.crt"))
	if err != nil {
		t.Fatal(err)
	}
	apiKey, err := os.ReadFile(filepath.Join(pki, "apiserver-kubelet-client.key"))
	if err != nil {
		t.Fatal(err)
	}
	apiServer, err := certs.Parse(apiCert, apiKey)
	if err != nil {
		t.Fatal(err)
	}
	node := nodeIP(t, u)
	url := "https://" + net.JoinHostPort(node, fmt.Sprint(kubeletapi.DefaultPort)) + "/containerLogs/default/chatty/writer"
	for _, tc := range []struct {
		name     string
		cert     *certs.KeyPair
		wantCode int    // 0: the handshake fails
		wantBody string // a part of the body
	}{
		{"no client certificate: 401", nil, http.StatusUnauthorized, "Unauthorized"},
		{"a certificate of another CA: refused in the handshake", client(other, "kube-apiserver-kubelet-client"), 0, ""},
		{"a user of the cluster's CA without nodes/proxy: 403", client(ca, "someone"), http.StatusForbidden, "Forbidden (user=someone, verb=get, resource=nodes, subresource=proxy)"},
		{"the API server's kubelet client: 200", apiServer, http.StatusOK, "first\nsecond\nthird\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, err := u.kubeletGet(url, caPEM, tc.cert)
			if tc.wantCode == 0 {
				if err == nil {
					t.Errorf("GET %s: %d %q; want the handshake refused", url, code, body)
				}
				return
			}
			if err != nil || code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("GET %s: %d %q %v; want %d with %q", url, code, body, err, tc.wantCode, tc.wantBody)
			}
		})
	}
}

// nodeIP is the node's InternalIP.
func nodeIP(t *testing.T, u *upProcess) string {
	t.Helper()
	n, err := u.client.CoreV1().Nodes().Get(context.Background(), DefaultNodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	t.Fatalf("node %s has no InternalIP: %v", n.Name, n.Status.Addresses)
	return ""
}

// kubeletGet GETs url from inside the cluster's network namespace,
// verifying the server against caPEM, showing cert when not nil.
func (u *upProcess) kubeletGet(url string, caPEM []byte, cert *certs.KeyPair) (int, string, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		c, err := cert.TLSCertificate()
		if err != nil {
			return 0, "", err
		}
		// Shown whatever CAs the server asks for (Go's client would
		// otherwise show none of another CA's).
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return c, nil }
	}
	hc := u.httpClient()
	hc.Transport.(*http.Transport).TLSClientConfig = tc
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

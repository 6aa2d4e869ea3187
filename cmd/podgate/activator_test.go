package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/test/syncbuf"
)

func TestActivatorUsageAndStartErrors(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"activator", "extra"}, exitUsage, "unknown command"},
		{[]string{"activator", "--nope"}, exitUsage, "unknown flag: --nope"},
		{[]string{"activator", "--listen", ""}, exitUsage, "--listen must not be empty"},
		{[]string{"activator", "--listen", "127.0.0.1"}, exitUsage, `listen: Invalid value: "127.0.0.1"`},
		{[]string{"activator", "--metrics-listen", ":99999"}, exitUsage, `metricsListen: Invalid value: ":99999"`},
		{[]string{"activator", "--domain", "Not_A.Domain"}, exitUsage, `domain: Invalid value: "Not_A.Domain"`},
		{[]string{"activator", "--namespace", "Shop"}, exitUsage, `namespace: Invalid value: "Shop"`},
		{[]string{"activator", "--gate-port", "0"}, exitUsage, "--gate-port 0: must be from 1 to 65535"},
		{[]string{"activator", "--queue-depth", "0"}, exitUsage, "--queue-depth 0: must be positive"},
		{[]string{"activator", "--idle-timeout", "0s"}, exitUsage, "--idle-timeout 0s: must be positive"},
		{[]string{"activator", "--request-timeout", "-1s"}, exitUsage, "--request-timeout -1s: must be positive"},
		{[]string{"activator", "--log-format", "xml"}, exitUsage, `invalid --log-format "xml"`},
		{[]string{"activator", "--kubeconfig", filepath.Join(t.TempDir(), "absent")}, exitInvalid, "absent: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
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

// TestBarePodgateInQueueProxysEnvironmentRunsTheGate: Knative starts its
// queue sidecar with no arguments; in queue-proxy's environment `podgate`
// alone is the gate (here it refuses the incomplete environment as the
// gate does), elsewhere it prints the help.
func TestBarePodgateInQueueProxysEnvironmentRunsTheGate(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(nil, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "Usage:") {
		t.Errorf("podgate without arguments: exit %d, stdout %q; want the help", code, stdout.String())
	}
	t.Setenv("QUEUE_SERVING_PORT", "8012")
	stdout.Reset()
	stderr.Reset()
	if code := run(nil, &stdout, &stderr); code != exitInvalid || !strings.Contains(stderr.String(), "USER_PORT: is required (queue-proxy's environment)") {
		t.Errorf("podgate without arguments, QUEUE_SERVING_PORT set: exit %d, stderr %q; want the gate's refusal", code, stderr.String())
	}
}

var activatorStarting = regexp.MustCompile(`msg="activator starting" listen=(\S+) metrics=(\S+)`)

// TestActivatorBinaryServesAndStopsOnSigterm runs the real `podgate
// activator` against a real control plane with an admin kubeconfig: it
// turns ready, answers 404 for a Service that does not exist, serves its
// metrics, and exits 0 on SIGTERM.
func TestActivatorBinaryServesAndStopsOnSigterm(t *testing.T) {
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
	cmd := exec.Command(bin, "activator", "--kubeconfig", cp.AdminKubeconfig(), "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	addrs, exited := make(chan []string, 1), make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			_, _ = io.WriteString(&logs, sc.Text()+"\n")
			if m := activatorStarting.FindStringSubmatch(sc.Text()); m != nil {
				addrs <- m[1:]
			}
		}
		exited <- cmd.Wait()
	}()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("podgate activator stderr:\n%s", logs.String())
		}
	}()
	var listen, metrics string
	select {
	case a := <-addrs:
		listen, metrics = a[0], a[1]
	case err := <-exited:
		t.Fatalf("podgate activator exited before serving: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("podgate activator did not report its addresses")
	}
	fetch := func(url, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	poll(t, "/readyz ok", func() (bool, string) {
		code, body := fetch("http://"+metrics+"/readyz", "")
		return code == http.StatusOK, body
	})
	if code, body := fetch("http://"+listen+"/", "web.shop.example.com"); code != http.StatusNotFound || !strings.Contains(body, `no Service "web" with endpoints in namespace "shop"`) {
		t.Errorf("unknown Service: %d %q", code, body)
	}
	if code, body := fetch("http://"+metrics+"/metrics", ""); code != http.StatusOK || !strings.Contains(body, `podgate_activator_unknown_requests_total{reason="service"} 1`) {
		t.Errorf("/metrics: %d, no unknown request counted:\n%s", code, body)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("podgate activator exited with %v after SIGTERM", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("podgate activator did not exit on SIGTERM")
	}
}

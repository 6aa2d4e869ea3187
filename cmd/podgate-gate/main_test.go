package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/test/freeport"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(childAddrEnv); addr != "" {
		runChild(addr) // a serving container, see queueproxy_test.go
		return
	}
	goleak.VerifyTestMain(m)
}

// gateBinary builds podgate-gate as its image ships it: static.
func gateBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "podgate")
	build := exec.Command("go", "build", "-o", bin, "github.com/podgate/podgate/cmd/podgate-gate")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// freePort is a loopback port nobody listens on right now.
func freePort(t *testing.T) int { return freeport.Port(t, "") }

func TestTheGateBinaryIsTheGate(t *testing.T) {
	bin := gateBinary(t)

	t.Run("bare in queue-proxy's environment it proxies to the serving container and drains on SIGTERM", func(t *testing.T) {
		app, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hello from the app\n") })}
		go func() { _ = srv.Serve(app) }()
		defer srv.Close()
		userPort := strconv.Itoa(app.Addr().(*net.TCPAddr).Port)
		servingPort := freePort(t)
		env := []string{
			"SERVING_NAMESPACE=default", "SERVING_SERVICE=hello", "SERVING_CONFIGURATION=hello",
			"SERVING_REVISION=hello-00001", "SERVING_POD=hello-00001-pod", "SERVING_POD_IP=127.0.0.1",
			"QUEUE_SERVING_PORT=" + strconv.Itoa(servingPort), "PODGATE_ADMIN_PORT=0", "PODGATE_METRICS_PORT=0", "PODGATE_AUTOSCALER_PORT=0",
			"USER_PORT=" + userPort, "CONTAINER_CONCURRENCY=0", "REVISION_TIMEOUT_SECONDS=300",
			"ENABLE_MULTI_CONTAINER_PROBES=false", "PODGATE_STATUS_SOURCE=none", "PODGATE_DRAIN_QUIET_PERIOD=0s",
			`SERVING_READINESS_PROBE={"tcpSocket":{"port":` + userPort + `,"host":"127.0.0.1"},"successThreshold":1}`,
		}
		cmd := exec.Command(bin) // no arguments: Knative's queue sidecar
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		defer func() {
			_ = cmd.Process.Kill()
		}()

		url := fmt.Sprintf("http://127.0.0.1:%d/", servingPort)
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := http.Get(url)
			if err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK && string(body) == "hello from the app\n" {
					break
				}
			}
			select {
			case err := <-done:
				t.Fatalf("the gate exited: %v\n%s", err, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no 200 from the app through the gate at %s: last %v\n%s", url, err, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("after SIGTERM the gate exited with %v, want 0\n%s", err, stderr.String())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("the gate did not exit after SIGTERM\n%s", stderr.String())
		}
	})

	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
	}{
		{"version names the gate binary", []string{"version"}, 0, "podgate-gate "},
		{"an unknown flag is a usage error", []string{"gate", "--nope"}, 2, "unknown flag: --nope"},
		{"gate wait refuses a timeout that is not positive", []string{"gate", "wait", "--timeout", "0s"}, 2, "--timeout 0s: must be positive"},
		{"the gate refuses an environment queue-proxy would", []string{"gate"}, 1, "QUEUE_SERVING_PORT: is required"},
		{"a command of the whole podgate is not here", []string{"run"}, 2, `unknown command "run"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tc.args...)
			cmd.Env = []string{}
			out, err := cmd.CombinedOutput()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(string(out), tc.wantOut) {
				t.Errorf("exit %d, output %q; want %d and %q", code, out, tc.wantCode, tc.wantOut)
			}
		})
	}
}

// TestTheGateBinaryLinksOnlyTheGate pins why this binary exists: none of
// the node agent, the webhook, the control plane or client-go's clientset
// (whose scheme registers every API group at start) is linked into what
// runs in every pod.
func TestTheGateBinaryLinksOnlyTheGate(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/podgate/podgate/cmd/podgate-gate").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	banned := []string{
		"k8s.io/client-go/kubernetes", "k8s.io/client-go/informers", "k8s.io/client-go/applyconfigurations",
		"sigs.k8s.io/controller-runtime", "github.com/virtual-kubelet/", "github.com/google/go-containerregistry",
		"github.com/podgate/podgate/node", "github.com/podgate/podgate/node/kube", "github.com/podgate/podgate/admission/webhook",
		"github.com/podgate/podgate/local", "github.com/podgate/podgate/kube/controlplane", "github.com/podgate/podgate/activator",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, b := range banned {
			if dep == b || strings.HasPrefix(dep, strings.TrimSuffix(b, "/")+"/") {
				t.Errorf("podgate-gate links %s", dep)
			}
		}
	}
}

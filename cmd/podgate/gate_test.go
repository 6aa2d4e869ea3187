package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/gate/gatemain"
	"github.com/podgate/podgate/test/syncbuf"
	"github.com/podgate/podgate/test/testapp"
)

// Helpers here carry a gate prefix: the package's other test files belong
// to other subcommands.

const gateWait = 60 * time.Second

// gateEnvNames are every variable the gate reads; tests clear them all.
var gateEnvNames = []string{
	contract.EnvServingReadinessProbe, contract.EnvMultiContainerProbes, contract.EnvHTTP2AutoDetection, contract.EnvQueueServingPort,
	contract.EnvUserPort, contract.EnvContainerConcurrency, contract.EnvRevisionTimeoutSeconds,
	contract.EnvServingNamespace, contract.EnvServingService, contract.EnvServingConfiguration,
	contract.EnvServingRevision, contract.EnvServingPod, contract.EnvServingPodIP,
	contract.EnvReadinessContainers, contract.EnvDelegatedReadiness, contract.EnvRoutedProbes, contract.EnvWatchedProbes, contract.EnvExcludedContainers,
	contract.EnvDrainQuietPeriod, contract.EnvStatusSource, contract.EnvContainers,
	contract.EnvUpstreamHost, contract.EnvAdminPort, contract.EnvMetricsPort, contract.EnvAutoscalerPort, contract.EnvOnlyRouter,
	"POD_IP", gatemain.EnvEnableRequestLog,
}

func gateClearEnv(t *testing.T) {
	for _, n := range gateEnvNames {
		t.Setenv(n, "")
	}
}

// gateEnv is a complete environment for `podgate gate` on loopback, free
// ports, in front of the serving container on userPort: every variable
// queue-proxy requires is set.
func gateEnv(userPort string) map[string]string {
	return map[string]string{
		"SERVING_NAMESPACE": "default", "SERVING_SERVICE": "hello", "SERVING_CONFIGURATION": "hello",
		"SERVING_REVISION": "hello-00001", "SERVING_POD": "hello-00001-pod",
		"SERVING_POD_IP":     "127.0.0.1", // listen on loopback only
		"QUEUE_SERVING_PORT": "0", "PODGATE_ADMIN_PORT": "0", "PODGATE_METRICS_PORT": "0", "PODGATE_AUTOSCALER_PORT": "0",
		"USER_PORT": userPort, "CONTAINER_CONCURRENCY": "0", "REVISION_TIMEOUT_SECONDS": "300",
		"ENABLE_MULTI_CONTAINER_PROBES": "false",
		"SERVING_READINESS_PROBE":       `{"tcpSocket":{"port":` + userPort + `,"host":"127.0.0.1"},"successThreshold":1}`,
		"PODGATE_STATUS_SOURCE":         "none",
	}
}

// gateEnviron is env as a process environment: nothing of the test's own.
func gateEnviron(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// TestGateConfigErrorsExit1NamingTheVariable runs the real binary with an
// environment that queue-proxy would refuse (a required variable missing,
// a value it cannot parse, the wrong probe form for the flag) or that the
// gate cannot use: it exits 1 at start, naming the variable, instead of
// serving with a default.
func TestGateConfigErrorsExit1NamingTheVariable(t *testing.T) {
	bin := podgateBinary(t)
	for _, tc := range []struct {
		name    string
		unset   string
		set     map[string]string
		wantErr string
	}{
		{"QUEUE_SERVING_PORT missing", "QUEUE_SERVING_PORT", nil, "QUEUE_SERVING_PORT: is required (queue-proxy's environment) but not set"},
		{"USER_PORT missing", "USER_PORT", nil, "USER_PORT: is required (queue-proxy's environment) but not set"},
		{"CONTAINER_CONCURRENCY missing", "CONTAINER_CONCURRENCY", nil, "CONTAINER_CONCURRENCY: is required"},
		{"REVISION_TIMEOUT_SECONDS missing", "REVISION_TIMEOUT_SECONDS", nil, "REVISION_TIMEOUT_SECONDS: is required"},
		{"SERVING_NAMESPACE missing", "SERVING_NAMESPACE", nil, "SERVING_NAMESPACE: is required"},
		{"SERVING_CONFIGURATION missing", "SERVING_CONFIGURATION", nil, "SERVING_CONFIGURATION: is required"},
		{"SERVING_REVISION missing", "SERVING_REVISION", nil, "SERVING_REVISION: is required"},
		{"SERVING_POD missing", "SERVING_POD", nil, "SERVING_POD: is required"},
		{"SERVING_POD_IP missing", "SERVING_POD_IP", nil, "SERVING_POD_IP: is required"},
		{"USER_PORT empty", "", map[string]string{"USER_PORT": ""}, `USER_PORT: "" is not a port number (1-65535)`},
		{"USER_PORT not a number", "", map[string]string{"USER_PORT": "http"}, `USER_PORT: "http" is not a port number (1-65535)`},
		{"USER_PORT out of range", "", map[string]string{"USER_PORT": "70000"}, `USER_PORT: "70000" is not a port number`},
		{"QUEUE_SERVING_PORT not a number", "", map[string]string{"QUEUE_SERVING_PORT": "web"}, `QUEUE_SERVING_PORT: "web" is not a port number`},
		{"CONTAINER_CONCURRENCY empty", "", map[string]string{"CONTAINER_CONCURRENCY": ""}, `CONTAINER_CONCURRENCY: "" is not a whole number >= 0`},
		{"CONTAINER_CONCURRENCY negative", "", map[string]string{"CONTAINER_CONCURRENCY": "-1"}, `CONTAINER_CONCURRENCY: "-1" is not a whole number >= 0`},
		{"REVISION_TIMEOUT_SECONDS not whole seconds", "", map[string]string{"REVISION_TIMEOUT_SECONDS": "5m"}, `REVISION_TIMEOUT_SECONDS: "5m" is not a whole number >= 0`},
		{"ENABLE_MULTI_CONTAINER_PROBES empty", "", map[string]string{"ENABLE_MULTI_CONTAINER_PROBES": ""}, `ENABLE_MULTI_CONTAINER_PROBES: "" is not true or false`},
		{"ENABLE_HTTP2_AUTO_DETECTION not a boolean", "", map[string]string{"ENABLE_HTTP2_AUTO_DETECTION": "auto"}, `ENABLE_HTTP2_AUTO_DETECTION: "auto" is not true or false`},
		{"multi-container probes with one probe object", "", map[string]string{"ENABLE_MULTI_CONTAINER_PROBES": "true"},
			"SERVING_READINESS_PROBE: is not a JSON array, which ENABLE_MULTI_CONTAINER_PROBES=true needs"},
		{"a probe list without the multi-container flag", "", map[string]string{"SERVING_READINESS_PROBE": `[{"tcpSocket":{"port":1}}]`},
			"SERVING_READINESS_PROBE: is a JSON array, which needs ENABLE_MULTI_CONTAINER_PROBES=true"},
		{"a probe list with the flag unset", "ENABLE_MULTI_CONTAINER_PROBES", map[string]string{"SERVING_READINESS_PROBE": `[{"tcpSocket":{"port":1}}]`},
			"SERVING_READINESS_PROBE: is a JSON array, which needs ENABLE_MULTI_CONTAINER_PROBES=true"},
		{"a readiness probe that is not JSON", "", map[string]string{"SERVING_READINESS_PROBE": `{"tcpSocket":`}, "SERVING_READINESS_PROBE: not a JSON probe"},
		{"an exec readiness probe", "", map[string]string{"SERVING_READINESS_PROBE": `{"exec":{"command":["true"]}}`}, "SERVING_READINESS_PROBE: the probe: exec probes run in their container"},
		{"a drain period that is no duration", "", map[string]string{"PODGATE_DRAIN_QUIET_PERIOD": "soon"}, `PODGATE_DRAIN_QUIET_PERIOD: "soon" is not a duration`},
		{"a pod IP that is no IP", "", map[string]string{"SERVING_POD_IP": "pod"}, `SERVING_POD_IP: "pod" is not an IP address`},
		{"a POD_IP that is no IP", "", map[string]string{"SERVING_POD_IP": "", "POD_IP": "pod"}, `POD_IP: "pod" is not an IP address`},
		{"a request log switch that is no boolean", "", map[string]string{"SERVING_ENABLE_REQUEST_LOG": "maybe"}, `SERVING_ENABLE_REQUEST_LOG: "maybe" is not true or false`},
		{"a status source without a pod name", "", map[string]string{"SERVING_POD": "", "PODGATE_STATUS_SOURCE": "http://127.0.0.1:9700"},
			"PODGATE_STATUS_SOURCE: the pod name (SERVING_POD) is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := gateEnv("8080")
			delete(env, tc.unset)
			for k, v := range tc.set {
				env[k] = v
			}
			ctx, cancel := context.WithTimeout(context.Background(), gateWait)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "gate")
			cmd.Env = gateEnviron(env)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != exitInvalid {
				t.Errorf("podgate gate: %v, want exit code %d; stderr:\n%s", err, exitInvalid, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

func TestGateUsageErrors(t *testing.T) {
	gateClearEnv(t)
	for _, args := range [][]string{{"gate", "extra"}, {"gate", "--log-format", "xml"}, {"gate", "--nope"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != exitUsage {
			t.Errorf("%v: exit code %d, want %d; stderr:\n%s", args, code, exitUsage, stderr.String())
		}
	}
}

var gateListening = regexp.MustCompile(`msg=listening serving=(\S+) admin=(\S+) metrics=(\S+)`)

// TestGateBinaryDrainsOnSigterm runs the real `podgate gate` in front of a
// test app: it proxies, fails health checks at once on SIGTERM while still
// serving, and exits 0 after the quiet period.
func TestGateBinaryDrainsOnSigterm(t *testing.T) {
	bin := podgateBinary(t)
	app, err := testapp.Start(testapp.Config{Name: "app", Addr: "127.0.0.1:0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Shutdown(context.Background())
	_, appPort, _ := strings.Cut(app.Addr(), ":")

	cmd := exec.Command(bin, "gate")
	env := gateEnv(appPort)
	env["PODGATE_DRAIN_QUIET_PERIOD"] = "500ms"
	cmd.Env = gateEnviron(env)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var logs syncbuf.Buffer
	addrs := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			_, _ = io.WriteString(&logs, line+"\n")
			if m := gateListening.FindStringSubmatch(line); m != nil {
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
			t.Logf("gate stderr:\n%s", logs.String())
		}
	}()
	var serving string
	select {
	case a := <-addrs:
		serving = a[0]
	case err := <-exited:
		t.Fatalf("podgate gate exited before listening: %v", err)
	case <-time.After(gateWait):
		t.Fatal("podgate gate did not report its addresses")
	}

	client := &http.Client{Timeout: gateWait, Transport: &http.Transport{DisableKeepAlives: true}}
	get := func(health bool) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+serving+"/", nil)
		if health {
			req.Header.Set("User-Agent", "kube-probe/1.37")
			req.Header.Set("K-Network-Probe", "queue")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(gateWait)
	for code, _ := get(true); code != http.StatusOK; code, _ = get(true) {
		if time.Now().After(deadline) {
			t.Fatalf("gate never ready (last health %d)", code)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if code, body := get(false); code != 200 || body != "app\n" {
		t.Fatalf("request through the gate: %d %q", code, body)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(gateWait)
	for code, _ := get(true); code != http.StatusServiceUnavailable; code, _ = get(true) {
		if time.Now().After(deadline) {
			t.Fatal("health checks do not fail after SIGTERM")
		}
		time.Sleep(time.Millisecond)
	}
	if code, body := get(true); code != 503 || body != "shutting down\n" {
		t.Errorf("health check while draining: %d %q, want 503 shutting down", code, body)
	}
	if code, body := get(false); code != 200 || body != "app\n" {
		t.Errorf("request while draining: %d %q, want 200 from the app", code, body)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if err != nil && errors.As(err, &ee) {
			t.Fatalf("podgate gate exited with %v", err)
		}
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(gateWait):
		t.Fatal("podgate gate did not exit after the quiet period")
	}
	if !strings.Contains(logs.String(), "drained: no request for the quiet period") {
		t.Errorf("no drain in the logs:\n%s", logs.String())
	}
}

// TestGateWaitPassesOnceTheGateServes: the native sidecar's startup probe
// waits for the admin port's /livez instead of failing while the gate
// starts, and fails with the reason when it never serves.
func TestGateWaitPassesOnceTheGateServes(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	ln.Close() // refused until the "gate" below starts

	t.Run("waits through refused connections, passes once /livez answers", func(t *testing.T) {
		gateClearEnv(t)
		t.Setenv("SERVING_POD_IP", "127.0.0.1")
		t.Setenv("PODGATE_ADMIN_PORT", port)
		started := make(chan *http.Server, 1)
		go func() {
			time.Sleep(200 * time.Millisecond)
			gln, err := net.Listen("tcp", "127.0.0.1:"+port)
			if err != nil {
				started <- nil
				return
			}
			mux := http.NewServeMux()
			mux.HandleFunc(contract.LivezPath, func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
			srv := &http.Server{Handler: mux}
			go func() { _ = srv.Serve(gln) }()
			started <- srv
		}()
		var stdout, stderr bytes.Buffer
		code := run([]string{"gate", "wait", "--timeout", "30s"}, &stdout, &stderr)
		srv := <-started
		if srv == nil {
			t.Fatal("the stand-in gate could not listen")
		}
		defer srv.Close()
		if code != 0 || !strings.Contains(stdout.String(), "the gate serves on http://127.0.0.1:"+port+"/livez") {
			t.Errorf("exit %d, stdout %q, stderr %q; want 0 and the address", code, stdout.String(), stderr.String())
		}
	})
	t.Run("fails with the last error when the gate never serves", func(t *testing.T) {
		gateClearEnv(t)
		t.Setenv("SERVING_POD_IP", "127.0.0.1")
		t.Setenv("PODGATE_ADMIN_PORT", port)
		var stdout, stderr bytes.Buffer
		code := run([]string{"gate", "wait", "--timeout", "300ms"}, &stdout, &stderr)
		if code != exitInvalid || !strings.Contains(stderr.String(), "the gate does not serve after 300ms") ||
			!strings.Contains(stderr.String(), "connection refused") {
			t.Errorf("exit %d, stderr %q; want %d naming the refused connection", code, stderr.String(), exitInvalid)
		}
	})
	t.Run("a timeout that is not positive is a usage error", func(t *testing.T) {
		gateClearEnv(t)
		var stdout, stderr bytes.Buffer
		if code := run([]string{"gate", "wait", "--timeout", "0s"}, &stdout, &stderr); code != exitUsage {
			t.Errorf("exit %d, want %d", code, exitUsage)
		}
	})
}

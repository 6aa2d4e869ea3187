package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func TestFrontDoorFlagErrors(t *testing.T) {
	sleeper := runManifest(t, `apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  containers:
  - {name: c, image: busybox, command: ["sleep", "600"]}
`)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"a front door off loopback is invalid", []string{"--listen", "0.0.0.0:0"}, exitInvalid, `--listen "0.0.0.0:0": the front door listens on loopback only`},
		{"a front door address without a port is invalid", []string{"--listen", "127.0.0.1"}, exitInvalid, `--listen "127.0.0.1"`},
		{"a front door address in use names the flag", []string{"--listen", taken.Addr().String()}, exitInvalid, "Choose another address with --listen"},
		{"a domain that is no DNS name is a usage error", []string{"--domain", "Not A Domain"}, exitUsage, `--domain "Not A Domain"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"run", "-f", sleeper, "--api", "127.0.0.1:0", "--pod-cidr", "127.0.66.0/24"}, tc.args...)
			code := run(args, &stdout, &stderr)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tc.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

var frontDoorCurl = regexp.MustCompile(`podgate: curl -H 'Host: ([^']+)' http://(127\.0\.0\.1:\d+)/`)

func TestFrontDoorRoutesByHost(t *testing.T) {
	bin := podgateBinary(t)
	// One workload of each kind: their EndpointSlices are named
	// differently (a Knative Service's after its revision).
	others := runManifest(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
        ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
`)
	r := runStart(t, bin, "-f", "../../examples/hello.yaml", "-f", others,
		"--pod-cidr", "127.0.65.0/24", "--listen", "127.0.0.1:0", "--domain", "podgate.test")

	// The curl lines are printed once the pods are started.
	r.waitFor(r.errOut, regexp.MustCompile(`podgate: curl -H 'Host: solo\.default\.podgate\.test'`))
	hosts := map[string]string{}
	var door string
	for _, m := range frontDoorCurl.FindAllStringSubmatch(r.errOut(), -1) {
		hosts[m[1]] = m[2]
		door = m[2]
	}
	for _, h := range []string{"hello.default.podgate.test", "web.shop.podgate.test", "solo.default.podgate.test"} {
		if hosts[h] == "" {
			t.Fatalf("no curl line for host %s in:\n%s", h, r.errOut())
		}
	}

	podOf := func(prefix string) *corev1.Pod {
		return r.waitPod(prefix+"* ready", func(p *corev1.Pod) bool {
			return strings.HasPrefix(p.Name, prefix) && runPodReady(p)
		})
	}
	hello, web, solo := podOf("hello-00001-deployment-"), podOf("web-"), podOf("solo")

	client := &http.Client{Timeout: 60 * time.Second}
	get := func(t *testing.T, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+door+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET with Host %s: %v", host, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct {
		name     string
		host     string
		wantCode int
		wantBody string
	}{
		{"a Knative Service's host reaches its revision's pod", "hello.default.podgate.test", 200, hello.Name},
		{"a Deployment's host reaches its pod in its namespace", "web.shop.podgate.test", 200, web.Name},
		{"a Pod's host reaches the pod", "solo.default.podgate.test", 200, solo.Name},
		{"the host ignores case and a port", "HELLO.default.podgate.test:80", 200, hello.Name},
		{"an unknown host gets 404 naming it", "nope.default.podgate.test", 404, `no service for host "nope.default.podgate.test"`},
		{"the default domain is not served under another", "hello.default.example.com", 404, "NAME.NAMESPACE.podgate.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, tc.host)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("GET Host %s = %d %q, want %d containing %q", tc.host, code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
	client.CloseIdleConnections()

	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	if strings.Contains(r.errOut(), "podgate: front door:") {
		t.Errorf("the front door did not shut down cleanly:\n%s", r.errOut())
	}
}

package local

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/test/syncbuf"
)

const sleeper = `apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - {name: c, image: busybox, command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"]}
`

func config(t *testing.T, cidr string, stderr *syncbuf.Buffer) Config {
	t.Helper()
	m, err := workload.Load(strings.NewReader(sleeper), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return Config{
		Workloads: m.Workloads, PodCIDR: cidr, APIAddr: "127.0.0.1:0", NoGate: true,
		Listen: "127.0.0.1:0", Domain: "example.com", NodeName: "n1",
		ProbeInterval: 200 * time.Millisecond, ProbeTimeout: time.Second,
		Stdout: &syncbuf.Buffer{}, Stderr: stderr,
	}
}

var apiLine = regexp.MustCompile(`control API on http://(127\.0\.0\.1:\d+)`)

// runningPod polls the control API until the pod runs.
func runningPod(t *testing.T, stderr *syncbuf.Buffer) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := apiLine.FindStringSubmatch(stderr.String()); m != nil {
			if resp, err := http.Get("http://" + m[1] + "/api/v1/namespaces/default/pods/sleeper"); err == nil {
				var p corev1.Pod
				err := json.NewDecoder(resp.Body).Decode(&p)
				resp.Body.Close()
				if err == nil && p.Status.Phase == corev1.PodRunning {
					return
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("pod sleeper not running within 20s; stderr:\n%s", stderr.String())
}

func TestRunStopsEverythingItStarted(t *testing.T) {
	stderr := &syncbuf.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, config(t, "127.0.230.0/24", stderr)) }()
	runningPod(t, stderr)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run after ctx ended: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return within 30s of ctx ending; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "all pods stopped in") {
		t.Errorf("no stop line; stderr:\n%s", stderr.String())
	}
	// goleak (TestMain) checks that no goroutine is left.
}

func TestRunFailingToStartLeavesNothingBehind(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	stderr := &syncbuf.Buffer{}
	cfg := config(t, "127.0.231.0/24", stderr)
	cfg.Listen = taken.Addr().String()
	err = Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Fatalf("Run with the front door's address taken: %v, want an error naming --listen", err)
	}
	if strings.Contains(stderr.String(), "control API on") {
		t.Errorf("the API served although the start failed; stderr:\n%s", stderr.String())
	}
	// The API listener, the agent and the controller were closed: goleak.
}

package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/test/syncbuf"
)

// kubectlColumns splits a line of kubectl's table into cells: kubectl
// pads columns with at least three spaces, and a cell holds at most
// single spaces ("1 (9s ago)", "NOMINATED NODE").
var kubectlColumns = regexp.MustCompile(`\s{3,}`)

// kubectlRows is kubectl's table output as the header's cells and each
// row's cells by the row's first cell (the pod's name).
func kubectlRows(out string) (header string, rows map[string][]string) {
	rows = map[string][]string{}
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		cells := kubectlColumns.Split(strings.TrimSpace(line), -1)
		if i == 0 {
			header = strings.Join(cells, "|")
			continue
		}
		rows[cells[0]] = cells
	}
	return header, rows
}

// allReady: READY is n/n, n > 0.
func allReady(cell string) bool {
	n, total, ok := strings.Cut(cell, "/")
	return ok && n == total && n != "0"
}

// restartsAgo is RESTARTS of a container that did restart: the count and
// the time since the last restart.
var restartsAgo = regexp.MustCompile(`^[1-9][0-9]* \([0-9]+[smh]+[0-9]*s? ago\)$`)

// The real kubectl against `podgate run`: a pod whose containers run and
// are ready and one whose container exits at once, and kubectl get pods
// prints them with the columns and cells a kube-apiserver prints (the
// Table podgate serves; local/apiserver's TestKubectlGetPrintsWhatKubeAPIServerPrints
// holds the same cells against a real kube-apiserver), -o wide adds IP NODE
// NOMINATED NODE READINESS GATES, and get -w prints rows as they change.
func TestKubectlGetAgainstRunPrintsTheAPIServersColumns(t *testing.T) {
	bin := podgateBinary(t)
	kubectl, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	manifest := runManifest(t, `apiVersion: v1
kind: Pod
metadata: {name: ready}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", "exit 1"]
`)
	r := runStart(t, bin, "-f", manifest, "--pod-cidr", "127.0.230.0/24")
	addr := runAPIAddr.FindStringSubmatch(r.errOut())[1]
	cache := filepath.Join(t.TempDir(), "cache")
	args := func(a ...string) []string {
		return append([]string{"-s", "http://" + addr, "--cache-dir", cache, "-n", "default"}, a...)
	}
	get := func(a ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		out, err := exec.CommandContext(ctx, kubectl, args(a...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(a, " "), err, out)
		}
		return string(out)
	}

	// Poll until both pods are where the test wants them: every container
	// of ready ready, crash restarted at least once.
	var out string
	var rows map[string][]string
	for deadline := time.Now().Add(runWait); ; time.Sleep(200 * time.Millisecond) {
		out = get("get", "pods")
		var header string
		header, rows = kubectlRows(out)
		if header != "NAME|READY|STATUS|RESTARTS|AGE" {
			t.Fatalf("header %q, want NAME READY STATUS RESTARTS AGE:\n%s", header, out)
		}
		ready, crash := rows["ready"], rows["crash"]
		if len(ready) == 5 && len(crash) == 5 && allReady(ready[1]) && restartsAgo.MatchString(crash[3]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pods not yet ready and restarted:\n%s", out)
		}
	}
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"ready", "crash"} {
		p, err := r.client.CoreV1().Pods("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pods[name] = p
	}
	total := len(pods["ready"].Spec.Containers) + len(pods["ready"].Spec.InitContainers) // the gate is a native sidecar
	if want := []string{"ready", fmt.Sprintf("%d/%d", total, total), "Running", "0"}; strings.Join(rows["ready"][:4], "|") != strings.Join(want, "|") {
		t.Errorf("ready pod: %q, want %q", rows["ready"][:4], want)
	}
	// The app never becomes ready (the gate, a sidecar, may run); between
	// restarts the status is the container's: CrashLoopBackOff while it
	// waits, Error once it exited, Running in the instant it runs.
	crashTotal := len(pods["crash"].Spec.Containers) + len(pods["crash"].Spec.InitContainers)
	if crash := rows["crash"]; crash[1] == fmt.Sprintf("%d/%d", crashTotal, crashTotal) ||
		(crash[2] != "CrashLoopBackOff" && crash[2] != "Error" && crash[2] != "Running") {
		t.Errorf("crash pod: %q, want the app not ready and STATUS CrashLoopBackOff, Error or Running", crash)
	}

	t.Run("-o wide adds IP NODE NOMINATED NODE READINESS GATES", func(t *testing.T) {
		out := get("get", "pods", "-o", "wide")
		header, rows := kubectlRows(out)
		if header != "NAME|READY|STATUS|RESTARTS|AGE|IP|NODE|NOMINATED NODE|READINESS GATES" {
			t.Fatalf("header %q:\n%s", header, out)
		}
		for name, p := range pods {
			// The ready pod meets every readiness gate (the gate's), the
			// crashing one none.
			gates := "<none>"
			if n := len(p.Spec.ReadinessGates); n > 0 && name == "ready" {
				gates = fmt.Sprintf("%d/%d", n, n)
			} else if n > 0 {
				gates = fmt.Sprintf("0/%d", n)
			}
			want := []string{p.Status.PodIP, p.Spec.NodeName, "<none>", gates}
			if got := rows[name]; len(got) != 9 || strings.Join(got[5:], "|") != strings.Join(want, "|") {
				t.Errorf("pod %s: %q, want wide cells %q", name, got, want)
			}
			if !strings.HasPrefix(p.Status.PodIP, "127.0.230.") {
				t.Errorf("pod %s IP %q: not from --pod-cidr", name, p.Status.PodIP)
			}
		}
	})

	t.Run("get -w prints a row for every change", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var watched syncbuf.Buffer
		cmd := exec.CommandContext(ctx, kubectl, args("get", "pods", "-w")...)
		cmd.Stdout, cmd.Stderr = &watched, &watched
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		// The list (header and two rows), then the crash pod's restarts as
		// rows of their own.
		for deadline := time.Now().Add(runWait); ; time.Sleep(100 * time.Millisecond) {
			lines := strings.Split(strings.TrimSpace(watched.String()), "\n")
			if len(lines) >= 4 {
				if h, _ := kubectlRows(lines[0]); h != "NAME|READY|STATUS|RESTARTS|AGE" {
					t.Fatalf("watch header %q", lines[0])
				}
				for _, l := range lines[1:] {
					if cells := kubectlColumns.Split(strings.TrimSpace(l), -1); len(cells) != 5 {
						t.Fatalf("watch row %q: want the 5 columns", l)
					}
				}
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("kubectl get -w printed no change:\n%s", watched.String())
			}
		}
	})
}

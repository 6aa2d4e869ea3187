package cluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/test/syncbuf"
)

// kubectlCells splits a line of kubectl's table into cells: columns are
// padded with at least three spaces, a cell holds at most single spaces
// ("1 (9s ago)", "NOMINATED NODE").
var kubectlCells = regexp.MustCompile(`\s{3,}`)

// podRows is kubectl get pods' output: the header's cells and each pod's
// cells by name.
func podRows(out string) (string, map[string][]string) {
	header, rows := "", map[string][]string{}
	for i, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		cells := kubectlCells.Split(strings.TrimSpace(line), -1)
		if i == 0 {
			header = strings.Join(cells, "|")
			continue
		}
		rows[cells[0]] = cells
	}
	return header, rows
}

// The issue's words: "get pods columns equal to what the real API server
// prints for the same pod on cluster up". The same two pods (one whose
// container runs and is ready, one whose container exits at once) run on
// `podgate cluster up` (the real kube-apiserver, podgate's node as the
// kubelet) and on `podgate run` (podgate's own API), without the gate on
// either (a bare cluster injects none), and the real kubectl prints the
// same header and the same READY and STATUS for each on both.
func TestKubectlGetPodsReadsTheSameOnClusterUpAndRun(t *testing.T) {
	u := startUp(t, "10.250.233.0/24")
	kubectl, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	manifest := filepath.Join(t.TempDir(), "pods.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: v1
kind: Pod
metadata: {name: ready, namespace: default}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    args: ["--port", "8080"]
    ports: [{containerPort: 8080}]
    readinessProbe: {httpGet: {path: /readyz, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Pod
metadata: {name: crash, namespace: default}
spec:
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", "exit 1"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	u.kubectl(t, "apply", "-f", manifest)
	runAPI := startRun(t, manifest, "127.0.231.0/24")

	cache := filepath.Join(t.TempDir(), "cache")
	worlds := map[string][]string{
		"cluster up":  {"--kubeconfig", filepath.Join(u.dir, KubeconfigFile), "--cache-dir", cache + "-cluster"},
		"podgate run": {"-s", runAPI, "--cache-dir", cache + "-run"},
	}
	get := func(world string, args ...string) string {
		t.Helper()
		out, err := exec.Command(kubectl, append(append([]string{}, worlds[world]...), args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: kubectl %s: %v\n%s", world, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Both settled: ready's container ready, crash's waiting out its
	// back-off after a restart.
	settled := func(rows map[string][]string) bool {
		r, c := rows["ready"], rows["crash"]
		return len(r) == 5 && len(c) == 5 && r[1] == "1/1" && c[2] == "CrashLoopBackOff" && c[3] != "0"
	}
	for _, args := range [][]string{{"get", "pods"}, {"get", "pods", "-o", "wide"}} {
		got := map[string]string{}
		for world := range worlds {
			var out string
			eventually(t, waitLimit, world+": kubectl "+strings.Join(args, " ")+" showing both pods settled", func() (bool, string) {
				out = get(world, args...)
				_, rows := podRows(out)
				short := map[string][]string{}
				for name, cells := range rows {
					short[name] = cells[:min(5, len(cells))]
				}
				return settled(short), out
			})
			header, rows := podRows(out)
			got[world] = header + "\nready " + strings.Join(rows["ready"][1:3], " ") + "\ncrash " + strings.Join(rows["crash"][1:3], " ")
		}
		if got["cluster up"] != got["podgate run"] {
			t.Errorf("kubectl %s: header and READY STATUS differ\ncluster up:\n%s\npodgate run:\n%s", strings.Join(args, " "), got["cluster up"], got["podgate run"])
		}
		want := "NAME|READY|STATUS|RESTARTS|AGE"
		if len(args) > 2 {
			want += "|IP|NODE|NOMINATED NODE|READINESS GATES"
		}
		if !strings.HasPrefix(got["podgate run"], want+"\n") {
			t.Errorf("kubectl %s on podgate run: header %q, want %q", strings.Join(args, " "), strings.SplitN(got["podgate run"], "\n", 2)[0], want)
		}
	}
}

// startRun runs `podgate run --no-gate` on manifest with pod CIDR cidr
// and returns its control API's URL; cleanup stops it with SIGINT.
func startRun(t *testing.T, manifest, cidr string) string {
	t.Helper()
	var stderr syncbuf.Buffer
	cmd := exec.Command(podgateBin, "run", "--no-gate", "-f", manifest, "--pod-cidr", cidr, "--api", "127.0.0.1:0", "--listen", "127.0.0.1:0")
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("podgate run did not stop within a minute of SIGINT:\n%s", stderr.String())
		}
	})
	apiAddr := regexp.MustCompile(`control API on (http://127\.0\.0\.1:\d+)`)
	var url string
	eventually(t, waitLimit, "podgate run printing its control API", func() (bool, string) {
		m := apiAddr.FindStringSubmatch(stderr.String())
		if m == nil {
			return false, stderr.String()
		}
		url = m[1]
		return true, ""
	})
	return url
}

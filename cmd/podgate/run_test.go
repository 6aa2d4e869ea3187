package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/api"
	"github.com/podgate/podgate/objstore"
)

// Helpers here carry a run prefix: the package's other test files belong
// to other subcommands.

const runWait = 90 * time.Second

// runProcess is a running `podgate run`.
type runProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	mu     sync.Mutex
	stdout bytes.Buffer
	stderr bytes.Buffer
	done   chan struct{}
	client *api.Client
}

var runAPIAddr = regexp.MustCompile(`control API on http://(127\.0\.0\.1:\d+)`)

func runStart(t *testing.T, bin string, args ...string) *runProcess {
	t.Helper()
	r := &runProcess{t: t, done: make(chan struct{})}
	r.cmd = exec.Command(bin, append([]string{"run", "--api", "127.0.0.1:0", "--listen", "127.0.0.1:0"}, args...)...)
	outPipe, err := r.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	errPipe, err := r.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var copying sync.WaitGroup
	copying.Add(2)
	for _, p := range []struct {
		r io.Reader
		w *bytes.Buffer
	}{{outPipe, &r.stdout}, {errPipe, &r.stderr}} {
		go func() {
			defer copying.Done()
			sc := bufio.NewScanner(p.r)
			for sc.Scan() {
				r.mu.Lock()
				p.w.WriteString(sc.Text() + "\n")
				r.mu.Unlock()
			}
		}()
	}
	go func() {
		copying.Wait()
		_ = r.cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
		if r.client != nil {
			r.client.Close()
		}
		if t.Failed() {
			t.Logf("podgate stdout:\n%s\nstderr:\n%s", r.out(), r.errOut())
		}
	})
	m := r.waitFor(r.errOut, runAPIAddr)
	c, err := api.NewClient(m[1])
	if err != nil {
		t.Fatal(err)
	}
	r.client = c
	return r
}

func (r *runProcess) out() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stdout.String()
}

func (r *runProcess) errOut() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stderr.String()
}

func (r *runProcess) waitFor(text func() string, re *regexp.Regexp) []string {
	r.t.Helper()
	deadline := time.Now().Add(runWait)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(text()); m != nil {
			return m
		}
		select {
		case <-r.done:
			// Everything podgate wrote is in by now.
			if m := re.FindStringSubmatch(text()); m != nil {
				return m
			}
			r.t.Fatalf("podgate exited before printing %s", re)
		case <-time.After(10 * time.Millisecond):
		}
	}
	r.t.Fatalf("podgate did not print %s within %s", re, runWait)
	return nil
}

func (r *runProcess) waitPod(what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	r.t.Helper()
	deadline := time.Now().Add(runWait)
	for time.Now().Before(deadline) {
		if list, err := r.client.ListPods(context.Background(), api.ListOptions{}); err == nil {
			for i := range list.Items {
				if cond(&list.Items[i]) {
					return &list.Items[i]
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("no pod %s within %s", what, runWait)
	return nil
}

// waitService polls the Knative Service name (namespace default) until
// cond holds.
func (r *runProcess) waitService(name, what string, cond func(*objstore.KnativeService) bool) *objstore.KnativeService {
	r.t.Helper()
	deadline := time.Now().Add(runWait)
	var last any
	for time.Now().Before(deadline) {
		list, err := r.client.ListServices(context.Background(), api.ListOptions{})
		last = err
		if err == nil {
			for i := range list.Items {
				if s := &list.Items[i]; s.Name == name && s.Namespace == "default" {
					last = s.Status
					if cond(s) {
						return s
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatalf("service %s not %s within %s; last: %+v", name, what, runWait, last)
	return nil
}

// exit waits for podgate to exit and returns its exit code.
func (r *runProcess) exit() int {
	r.t.Helper()
	select {
	case <-r.done:
		return r.cmd.ProcessState.ExitCode()
	case <-time.After(runWait):
		r.t.Fatalf("podgate did not exit within %s", runWait)
		return -1
	}
}

func runPodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func TestRunHelloEndToEnd(t *testing.T) {
	bin := podgateBinary(t)
	r := runStart(t, bin, "-f", "../../examples/hello.yaml", "--pod-cidr", "127.0.61.0/24")
	p := r.waitPod("ready", runPodReady)
	if !strings.HasPrefix(p.Name, "hello-00001-deployment-") || p.Labels["serving.knative.dev/service"] != "hello" {
		t.Errorf("pod %s labels %v: want Knative's naming and labels", p.Name, p.Labels)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}).Get("http://" + p.Status.PodIP + ":8080/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), p.Name) {
		t.Errorf("GET / = %d %q, want 200 naming the pod", resp.StatusCode, body)
	}
	if !strings.Contains(r.out(), p.Name+"/user-container | ") {
		t.Errorf("container output is not prefixed pod/container:\n%s", r.out())
	}

	// The gate is injected and traffic reaches the app through it: the
	// pod's endpoint is the gate's port, which answers with the app.
	if len(p.Spec.Containers) != 2 || p.Spec.Containers[0].Name != "podgate" {
		t.Errorf("containers %v: want the gate injected first", containerNames(p))
	}
	viaGate, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + p.Status.PodIP + ":8012/")
	if err != nil {
		t.Fatal(err)
	}
	gateBody, _ := io.ReadAll(viaGate.Body)
	viaGate.Body.Close()
	if viaGate.StatusCode != 200 || !strings.Contains(string(gateBody), p.Name) {
		t.Errorf("GET / through the gate = %d %q, want 200 from the app", viaGate.StatusCode, gateBody)
	}
	slices, err := r.client.ListEndpointSlices(context.Background(), api.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(slices.Items) != 1 || len(slices.Items[0].Ports) != 1 || slices.Items[0].Ports[0].Port == nil ||
		*slices.Items[0].Ports[0].Port != 8012 {
		t.Errorf("endpoint slices %+v: want one slice on the gate's port 8012", slices.Items)
	}

	// Deleting the pod starts a replacement at once.
	if _, err := r.client.DeletePod(context.Background(), "default", p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitPod("replacing "+p.Name, func(q *corev1.Pod) bool { return q.Name != p.Name && runPodReady(q) })

	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	if !strings.Contains(r.errOut(), "all pods stopped") {
		t.Errorf("stderr lacks the shutdown report:\n%s", r.errOut())
	}
}

func containerNames(p *corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

// runManifest writes a manifest into a temporary directory.
func runManifest(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runAlive reports whether pid runs (a zombie counts as dead: an orphan's
// new parent may be slow to reap it).
func runAlive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] != 'Z' && s[i+2] != 'X'
}

func TestRunLeavesNothingBehind(t *testing.T) {
	bin := podgateBinary(t)
	// A shell with a child of its own, in each of two pods, that ignore
	// SIGTERM: only podgate's killing (or its guards) can end them.
	manifest := runManifest(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: stubborn}
spec:
  replicas: 2
  selector: {matchLabels: {app: stubborn}}
  template:
    metadata: {labels: {app: stubborn}}
    spec:
      terminationGracePeriodSeconds: 600
      containers:
      - name: sh
        image: busybox
        command: ["/bin/sh", "-c", "trap '' TERM; sleep 600 & echo child=$!; echo leader=$$$$; wait"]  # $$$$: Kubernetes turns $$ into $
`)
	pidLine := regexp.MustCompile(`(?m)\| (child|leader)=(\d+)$`)
	pids := func(r *runProcess) []int {
		r.t.Helper()
		deadline := time.Now().Add(runWait)
		for time.Now().Before(deadline) {
			if m := pidLine.FindAllStringSubmatch(r.out(), -1); len(m) >= 4 {
				var out []int
				for _, x := range m {
					n, _ := strconv.Atoi(x[2])
					out = append(out, n)
				}
				return out
			}
			time.Sleep(10 * time.Millisecond)
		}
		r.t.Fatalf("pods did not print their pids:\n%s", r.out())
		return nil
	}
	waitDead := func(t *testing.T, all []int) {
		t.Helper()
		deadline := time.Now().Add(runWait)
		for _, pid := range all {
			for runAlive(pid) {
				if time.Now().After(deadline) {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					t.Fatalf("process %d survived podgate", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}

	t.Run("SIGKILL of podgate kills every container process", func(t *testing.T) {
		r := runStart(t, bin, "-f", manifest, "--pod-cidr", "127.0.62.0/24")
		all := pids(r)
		if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		r.exit()
		waitDead(t, all)
	})
	t.Run("a second SIGTERM kills at once what the first is stopping gracefully", func(t *testing.T) {
		r := runStart(t, bin, "-f", manifest, "--pod-cidr", "127.0.63.0/24")
		all := pids(r)
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r.waitFor(r.errOut, regexp.MustCompile("stopping pods gracefully"))
		if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		r.waitFor(r.errOut, regexp.MustCompile("killing pods now"))
		if code := r.exit(); code != 0 {
			t.Errorf("exit code = %d, want 0", code)
		}
		waitDead(t, all)
	})
}

func TestRunReportsPortOwners(t *testing.T) {
	bin := podgateBinary(t)
	// The sidecar binds the port; the main container of the same pod
	// declares it too.
	manifest := runManifest(t, `apiVersion: v1
kind: Pod
metadata: {name: clash}
spec:
  initContainers:
  - name: first
    image: ghcr.io/podgate/testapp
    restartPolicy: Always
    args: ["--port", "8080"]
    ports: [{containerPort: 8080}]
    startupProbe: {tcpSocket: {port: 8080}, periodSeconds: 1, failureThreshold: 30}
  containers:
  - name: second
    image: busybox
    command: ["sleep", "600"]
    ports: [{containerPort: 8080}]
`)
	r := runStart(t, bin, "-f", manifest, "--pod-cidr", "127.0.64.0/24")
	r.waitFor(r.errOut, regexp.MustCompile(regexp.QuoteMeta("port 8080/TCP of pod default/clash container second is already bound by pod default/clash container first")))
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

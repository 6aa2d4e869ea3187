package main

import (
	"bufio"
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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/podctl"
	"github.com/podgate/podgate/local/servingv1"
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
	client *podctl.Client
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
	c, err := podctl.NewClient(m[1])
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
		if list, err := r.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{}); err == nil {
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
func (r *runProcess) waitService(name, what string, cond func(*servingv1.Service) bool) *servingv1.Service {
	r.t.Helper()
	deadline := time.Now().Add(runWait)
	var last any
	for time.Now().Before(deadline) {
		list, err := r.client.Serving.Services("").List(context.Background(), metav1.ListOptions{})
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

var (
	runReadyLine   = regexp.MustCompile(`podgate: hello\.default is ready \((\d+)/(\d+) pods\): curl -H 'Host: hello\.default\.example\.com' http://(127\.0\.0\.1:\d+)/\n`)
	runMetricsLine = regexp.MustCompile(`podgate: front door metrics on http://(127\.0\.0\.1:\d+)/metrics`)
)

func TestRunHelloEndToEnd(t *testing.T) {
	bin := podgateBinary(t)
	r := runStart(t, bin, "-f", "../../examples/hello.yaml", "--pod-cidr", "127.0.61.0/24", "--metrics-listen", "127.0.0.1:0")

	// First, while it happens: the ready line.
	ready := r.waitFor(r.errOut, runReadyLine)
	readyPods, err := r.client.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("the ready line comes after the curl line, once the pod is Ready", func(t *testing.T) {
		if len(readyPods.Items) != 1 || !runPodReady(&readyPods.Items[0]) {
			t.Errorf("when the ready line was printed, pods were %+v, want the one pod Ready", readyPods.Items)
		}
		if ready[1] != "1" || ready[2] != "1" {
			t.Errorf("ready line %q, want 1/1 pods", ready[0])
		}
		errOut := r.errOut()
		curl := frontDoorCurl.FindStringIndex(errOut)
		readyAt := runReadyLine.FindStringIndex(errOut)
		if curl == nil || curl[0] > readyAt[0] {
			t.Errorf("the curl line does not come before the ready line:\n%s", errOut)
		}
		if m := frontDoorCurl.FindStringSubmatch(errOut); m == nil || m[2] != ready[3] {
			t.Errorf("the ready line's address %s is not the front door's (%v)", ready[3], m)
		}
		if !strings.Contains(errOut, "holds requests until a pod is ready") {
			t.Errorf("the front door line does not say that requests are held until a pod is ready:\n%s", errOut)
		}
		if n := len(runReadyLine.FindAllString(errOut, -1)); n != 1 {
			t.Errorf("%d ready lines, want 1", n)
		}
	})
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
	if len(p.Spec.InitContainers) != 1 || p.Spec.InitContainers[0].Name != "podgate" || p.Spec.InitContainers[0].RestartPolicy == nil {
		t.Errorf("init containers %+v: want the gate injected as a native sidecar", p.Spec.InitContainers)
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
	eps, err := r.client.DiscoveryV1().EndpointSlices("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(eps.Items) != 1 || len(eps.Items[0].Ports) != 1 || eps.Items[0].Ports[0].Port == nil ||
		*eps.Items[0].Ports[0].Port != 8012 {
		t.Errorf("endpoint slices %+v: want one slice on the gate's port 8012", eps.Items)
	}

	t.Run("the front door's metrics are served on --metrics-listen", func(t *testing.T) {
		door := r.waitFor(r.errOut, frontDoorCurl)[2]
		req, err := http.NewRequest(http.MethodGet, "http://"+door+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = "hello.default.example.com"
		client := &http.Client{Timeout: runWait, Transport: &http.Transport{DisableKeepAlives: true}}
		for range 3 {
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("GET through the front door = %d, want 200", resp.StatusCode)
			}
		}
		families := runScrape(t, client, "http://"+r.waitFor(r.errOut, runMetricsLine)[1]+"/metrics")
		for _, tc := range []struct {
			family  string
			labels  map[string]string
			atLeast float64
		}{
			{"podgate_activator_requests_total", map[string]string{"target": "default/hello", "code": "200"}, 3},
			{"podgate_activator_backends_ready", map[string]string{"target": "default/hello"}, 1},
			{"podgate_activator_backends", map[string]string{"target": "default/hello"}, 1},
			{"go_goroutines", nil, 1},
		} {
			v, ok := runMetricValue(families, tc.family, tc.labels)
			if !ok || v < tc.atLeast {
				t.Errorf("%s%v = %v (found %v), want at least %v", tc.family, tc.labels, v, ok, tc.atLeast)
			}
		}
		if v, ok := runMetricValue(families, "podgate_activator_queue_depth", map[string]string{"target": "default/hello"}); !ok || v != 0 {
			t.Errorf("podgate_activator_queue_depth = %v (found %v), want 0", v, ok)
		}
	})

	t.Run("help examples name the labels and containers pods really have", func(t *testing.T) {
		for _, sub := range []string{"get", "logs"} {
			code, help, _ := podgateExec(t, "", sub, "--help")
			if code != 0 {
				t.Fatalf("podgate %s --help: exit %d", sub, code)
			}
			for _, m := range regexp.MustCompile(`(?m)^\s+podgate .* -l (\S+)`).FindAllStringSubmatch(help, -1) {
				key, value, _ := strings.Cut(m[1], "=")
				if p.Labels[key] != value {
					t.Errorf("podgate %s --help shows -l %s; the pod's labels are %v", sub, m[1], p.Labels)
				}
			}
			for _, m := range regexp.MustCompile(`(?m)^\s+podgate .* -c (\S+)`).FindAllStringSubmatch(help, -1) {
				if !slices.Contains(containerNames(p), m[1]) {
					t.Errorf("podgate %s --help shows -c %s; the pod's containers are %v", sub, m[1], containerNames(p))
				}
			}
		}
		// And they work against the running pod.
		addr := runAPIAddr.FindStringSubmatch(r.errOut())[1]
		for _, args := range [][]string{
			{"get", "pods", "-l", "serving.knative.dev/service=hello", "-o", "name", "--api", addr},
			{"logs", p.Name, "-c", "podgate", "--tail", "1", "--api", addr},
		} {
			code, out, errOut := podgateExec(t, "", args...)
			if code != 0 || out == "" {
				t.Errorf("podgate %s: exit %d, stdout %q, stderr %q; want output", strings.Join(args, " "), code, out, errOut)
			}
		}
	})

	// Deleting the pod starts a replacement at once.
	if err := r.client.CoreV1().Pods("default").Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
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

// A Pod that declares no port still gets traffic on $PORT (8080, Knative's
// contract), but podgate must not announce a port the manifest never named.
func TestRunSaysWhenTheServingContainerDeclaresNoPort(t *testing.T) {
	bin := podgateBinary(t)
	manifest := runManifest(t, `apiVersion: v1
kind: Pod
metadata: {name: portless}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
`)
	r := runStart(t, bin, "-f", manifest, "--pod-cidr", "127.0.66.0/24")
	r.waitFor(r.errOut, regexp.MustCompile(regexp.QuoteMeta("podgate: running Pod/portless (namespace default, serving container app declaring no port, so on $PORT 8080, through the gate on port 8012)")))
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

// Knative's autoscaling annotations act only where Knative's autoscaler
// runs; podgate run says so before it starts the pods, naming each.
func TestRunWarnsThatItDoesNotAutoscale(t *testing.T) {
	bin := podgateBinary(t)
	manifest := runManifest(t, `apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: scaled}
spec:
  template:
    metadata:
      annotations: {autoscaling.knative.dev/max-scale: "5"}
    spec:
      containerConcurrency: 1
      containers: [{image: ghcr.io/podgate/testapp}]
`)
	r := runStart(t, bin, "-f", manifest, "--pod-cidr", "127.0.67.0/24")
	r.waitFor(r.errOut, regexp.MustCompile(regexp.QuoteMeta("podgate: warning: Service/scaled: spec.template.metadata.annotations[autoscaling.knative.dev/max-scale]: ignored: 'podgate run' does not autoscale; Knative's autoscaler acts on it on a cluster with Knative (podgate cluster up --knative)")))
	r.waitFor(r.errOut, regexp.MustCompile(regexp.QuoteMeta("podgate: warning: Service/scaled: spec.template.spec.containerConcurrency: the gate lets 1 request(s) at a time")))
	if err := r.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
}

// What used to make every gate crash-loop with a misleading message is
// refused before anything starts, naming the flag and the holder.
func TestRunRefusesAPodRangeOrGatePortInUseUpFront(t *testing.T) {
	bin := podgateBinary(t)
	manifest := runManifest(t, `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: app, image: ghcr.io/podgate/testapp, ports: [{containerPort: 8080}]}]
`)
	t.Run("a second podgate run on the same --pod-cidr", func(t *testing.T) {
		first := runStart(t, bin, "-f", manifest, "--pod-cidr", "127.0.90.0/24")
		first.waitPod("ready", runPodReady)
		second := exec.Command(bin, "run", "-f", manifest, "--pod-cidr", "127.0.90.0/24", "--api", "127.0.0.1:0", "--listen", "127.0.0.1:0")
		out, err := second.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInvalid {
			t.Fatalf("second run: %v, want exit %d; output:\n%s", err, exitInvalid, out)
		}
		want := fmt.Sprintf("--pod-cidr 127.0.90.0/24: in use by pid %d (", first.cmd.Process.Pid)
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "choose another --pod-cidr") {
			t.Errorf("second run said:\n%s\nwant %q… choose another --pod-cidr", out, want)
		}
		if strings.Contains(string(out), "Started container") {
			t.Errorf("the second run started a container:\n%s", out)
		}
		if err := first.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		if code := first.exit(); code != 0 {
			t.Errorf("first run: exit code = %d, want 0", code)
		}
	})
	t.Run("a program on a gate port of the pod addresses", func(t *testing.T) {
		// Bound on the range's first address, not 0.0.0.0: that would
		// take 8022 from the gates of every other test running.
		ln, err := net.Listen("tcp4", "127.0.91.1:8022")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		out, err := exec.Command(bin, "run", "-f", manifest, "--pod-cidr", "127.0.91.0/24", "--api", "127.0.0.1:0", "--listen", "127.0.0.1:0").CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitInvalid {
			t.Fatalf("run: %v, want exit %d; output:\n%s", err, exitInvalid, out)
		}
		want := fmt.Sprintf("the gate's admin port 8022 is taken on the first pod address 127.0.91.1 by another process (pid %d, ", os.Getpid())
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), "--no-gate") || strings.Count(string(out), "8022 is taken") != 1 {
			t.Errorf("run said:\n%s\nwant once %q… --no-gate", out, want)
		}
	})
}

// runScrape gets and parses a Prometheus text exposition.
func runScrape(t *testing.T, client *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return families
}

// runMetricValue is the value of the series of family with these labels
// (a subset of its labels).
func runMetricValue(families map[string]*dto.MetricFamily, family string, labels map[string]string) (float64, bool) {
	f := families[family]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.GetCounter() != nil:
			return m.GetCounter().GetValue(), true
		case m.GetGauge() != nil:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

// An example that restarts a container on purpose must not fail its own
// liveness probe while it starts: its first probes land after the app is
// up. The failures that say so name what was not there yet — the exec
// file, a port (the app's, or the gate's that routes the probe); a probe
// that times out on a loaded machine says nothing about the example.
// (Startup probes may fail while the app starts: that is what they are
// for.)
func TestRunExamplesPassTheirOwnProbesAtStart(t *testing.T) {
	bin := podgateBinary(t)
	for i, tc := range []struct {
		file    string
		replace []string // old, new: a toggle file of the test's own
	}{
		{"exec-liveness.yaml", []string{"/tmp/podgate-example-exec-liveness", "live"}},
		{"multi-container-liveness.yaml", nil},
		{"local/lifecycle.yaml", nil},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("../../examples", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			text := string(data)
			if tc.replace != nil {
				text = strings.ReplaceAll(text, tc.replace[0], filepath.Join(t.TempDir(), tc.replace[1]))
			}
			r := runStart(t, bin, "-f", runManifest(t, text), "--pod-cidr", fmt.Sprintf("127.0.%d.0/24", 72+i))
			p := r.waitPod("ready", runPodReady)
			// The window: every probe that could fail while the app
			// starts (the latest initial delay, plus a period for each
			// failure the threshold allows) has run by then.
			var last time.Time
			for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
				if pr := c.LivenessProbe; pr != nil {
					started := p.Status.StartTime.Time
					end := started.Add(time.Duration(pr.InitialDelaySeconds+pr.PeriodSeconds*(pr.FailureThreshold+1)) * time.Second)
					if end.After(last) {
						last = end
					}
				}
			}
			if last.IsZero() {
				t.Fatalf("%s has no liveness probe: the test is not about it", tc.file)
			}
			for {
				events, err := r.client.CoreV1().Events("").List(context.Background(), metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range events.Items {
					notThereYet := strings.Contains(e.Message, "No such file or directory") || strings.Contains(e.Message, "connection refused")
					if strings.Contains(e.Message, "Liveness probe failed") && notThereYet {
						t.Fatalf("%s: %s %s at start: %s", tc.file, e.Reason, e.InvolvedObject.FieldPath, e.Message)
					}
				}
				if time.Now().After(last) {
					break
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// containerNames lists a pod's containers as `podgate logs -c` takes them:
// init containers (the injected gate is a native sidecar) and then the
// regular ones.
func containerNames(p *corev1.Pod) []string {
	var names []string
	for _, c := range p.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range p.Spec.Containers {
		names = append(names, c.Name)
	}
	return names
}

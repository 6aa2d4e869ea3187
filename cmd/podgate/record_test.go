package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/kube/controlplane"
	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/load"
	"github.com/podgate/podgate/lab/manifest"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/test/syncbuf"
)

var (
	recordDoorLine  = regexp.MustCompile(`front door on http://(127\.0\.0\.1:\d+)`)
	recordReadyLine = regexp.MustCompile(`podgate: runtime\.default is ready`)
)

// readRecording reads a whole recording file; every line must be
// complete (flushed and closed).
func readRecording(t *testing.T, path string) (record.Header, []record.Fact) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h, facts, err := record.Read(f)
	if err != nil {
		t.Fatalf("reading the recording: %v", err)
	}
	return h, facts
}

// describe is a fact in one line, for failure logs.
func describe(f record.Fact) string {
	payload := map[record.Kind]any{
		record.KindProbe: f.Probe, record.KindContainer: f.State, record.KindEvent: f.Event,
		record.KindCondition: f.Condition, record.KindEndpoint: f.Endpoint, record.KindGate: f.Gate,
		record.KindRoute: f.Route, record.KindRequest: f.Request, record.KindMark: f.Mark, record.KindTruncated: f.Truncated,
	}[f.Kind]
	return fmt.Sprintf("%s %-9s %s/%s %+v", f.Time.Format("15:04:05.000"), f.Kind, f.Pod, f.Container, payload)
}

func describeAll(fs []record.Fact) string {
	var b strings.Builder
	for _, f := range fs {
		if f.Kind == record.KindRoute || f.Kind == record.KindRequest ||
			(f.Kind == record.KindProbe && f.Probe.Result == "success") {
			continue // the many routine ones
		}
		b.WriteString("  " + describe(f) + "\n")
	}
	return b.String()
}

// first is the index of the first fact from index from on that matches,
// or -1.
func first(fs []record.Fact, from int, match func(record.Fact) bool) int {
	for i := max(from, 0); i < len(fs); i++ {
		if match(fs[i]) {
			return i
		}
	}
	return -1
}

// TestRunRecordsTheLivenessRestart is seed 004's experiment recorded by
// `podgate run --record`: the exec liveness example under load through the
// front door, its probe turned to failing, the container restarted, then
// Ctrl-C. The recording is complete after Ctrl-C; it holds every kind of
// fact, in the order podgate acts (liveness failures, the endpoint not
// ready and the Killing event, the restart, ready again); it has no gap
// from the start to the stop; every request the load sent is in it, and
// none went to the pod while it was out of service.
func TestRunRecordsTheLivenessRestart(t *testing.T) {
	bin := podgateBinary(t)
	dir := t.TempDir()
	execFile := filepath.Join(dir, "live")
	m, err := manifest.Read("../../examples/exec-liveness.yaml", "/tmp/podgate-example-exec-liveness", execFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodSpec("terminationGracePeriodSeconds", 4); err != nil {
		t.Fatal(err)
	}
	manifest, err := m.Write(dir, "exec-liveness.yaml")
	if err != nil {
		t.Fatal(err)
	}
	recFile := filepath.Join(dir, "run.jsonl")
	r := runStart(t, bin, "-f", manifest, "--pod-cidr", "127.0.95.0/24", "--record", recFile)
	door := r.waitFor(r.errOut, recordDoorLine)[1]
	r.waitFor(r.errOut, recordReadyLine)
	gen, err := load.Start(load.Config{URL: "http://" + door + "/", Host: "runtime.default.example.com", Workers: 4, Rate: 50})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), runWait)
	defer cancel()
	served := func(n int, after time.Time, what string) {
		t.Helper()
		if _, err := gen.Wait(ctx, what, func(rec *load.Recording) bool {
			ok := 0
			for _, q := range rec.StartedBetween(after, time.Now().Add(time.Hour)) {
				if q.OK() {
					ok++
				}
			}
			return ok >= n
		}); err != nil {
			t.Fatal(err)
		}
	}
	served(20, time.Time{}, "requests served before the toggle")
	pod := r.waitPod("ready", runPodReady)
	if err := lab.Toggle(ctx, pod.Status.PodIP, 8080, lab.ToggleExec, false); err != nil {
		t.Fatal(err)
	}
	r.waitPod("restarted and ready", func(p *corev1.Pod) bool {
		cs := lab.ContainerStatus(p, "user-container")
		return cs != nil && cs.RestartCount > 0 && runPodReady(p)
	})
	served(20, time.Now(), "requests served after the restart")
	sent := gen.Stop(ctx)
	interrupted := time.Now()
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Fatalf("podgate run exit code after Ctrl-C = %d, want 0", code)
	}

	h, facts := readRecording(t, recFile)
	sorted := record.Sorted(facts)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the recording, without routine probe successes, routes and requests:\n%s", describeAll(sorted))
		}
	})
	t.Run("the header names the run", func(t *testing.T) {
		if h.Source != "podgate run" || !strings.Contains(h.Detail, "--record "+recFile) || h.Limit != 256<<20 {
			t.Errorf("header %+v: want source podgate run, the command line, the default bound of 256 MiB", h)
		}
	})
	t.Run("every kind of fact is there", func(t *testing.T) {
		kinds := map[record.Kind]int{}
		for _, f := range facts {
			kinds[f.Kind]++
		}
		for _, k := range []record.Kind{
			record.KindProbe, record.KindContainer, record.KindEvent, record.KindCondition,
			record.KindEndpoint, record.KindGate, record.KindRoute, record.KindRequest,
		} {
			if kinds[k] == 0 {
				t.Errorf("no %s fact (kinds: %v)", k, kinds)
			}
		}
	})
	t.Run("the restart in podgate's order", func(t *testing.T) {
		userContainer := func(f record.Fact) bool { return f.Pod == pod.Name && f.Container == "user-container" }
		failures := first(sorted, 0, func(f record.Fact) bool {
			return userContainer(f) && f.Kind == record.KindProbe && f.Probe.Probe == "liveness" && f.Probe.Result == "failure"
		})
		restart := first(sorted, failures, func(f record.Fact) bool {
			return userContainer(f) && f.Kind == record.KindProbe && f.Probe.Restart
		})
		killing := first(sorted, restart, func(f record.Fact) bool {
			return userContainer(f) && f.Kind == record.KindEvent && f.Event.Reason == "Killing" && strings.Contains(f.Event.Message, "failed liveness probe")
		})
		notReady := first(sorted, restart, func(f record.Fact) bool {
			return f.Kind == record.KindEndpoint && f.Pod == pod.Name && f.Endpoint.Ready != nil && !*f.Endpoint.Ready
		})
		started := first(sorted, killing, func(f record.Fact) bool {
			return userContainer(f) && f.Kind == record.KindEvent && f.Event.Reason == "Started"
		})
		running := first(sorted, killing, func(f record.Fact) bool {
			return userContainer(f) && f.Kind == record.KindContainer && f.State.State == "running" && f.State.RestartCount == 1
		})
		ready := first(sorted, max(started, notReady), func(f record.Fact) bool {
			return f.Kind == record.KindEndpoint && f.Pod == pod.Name && f.Endpoint.Ready != nil && *f.Endpoint.Ready
		})
		steps := []struct {
			name string
			at   int
		}{{"a liveness failure", failures}, {"the attempt that asks for the restart", restart}, {"the Killing event", killing},
			{"the endpoint not ready", notReady}, {"the Started event of the restart", started}, {"the container running again", running},
			{"the endpoint ready again", ready}}
		for _, s := range steps {
			if s.at < 0 {
				t.Fatalf("no fact for %s", s.name)
			}
		}
		if restartProbe := sorted[restart].Probe; restartProbe.Probe != "liveness" || restartProbe.State != "failure" {
			t.Errorf("the restart's attempt %+v: want a liveness failure publishing failure", restartProbe)
		}
		// podgate takes the endpoint out before the process hears of the
		// kill, and only a restarted container can start.
		if notReady > started || killing > started || ready < started {
			t.Errorf("order: endpoint not ready at %d, Killing at %d, Started at %d, endpoint ready at %d; want not ready and Killing before Started before ready",
				notReady, killing, started, ready)
		}
		// Did requests reach the dying container? The front door holds
		// them while the endpoint is not ready and releases them to the
		// restarted container. Its view of the endpoint and the
		// recording's are two watches of one API: slack on each side.
		from, back, to := sorted[notReady].Time, sorted[started].Time, sorted[ready].Time
		const slack = 500 * time.Millisecond
		held := 0
		for _, f := range sorted {
			if f.Kind != record.KindRoute {
				continue
			}
			switch d := f.Route.Decision; {
			case d == record.DecisionHeld && !f.Time.Before(from.Add(-slack)) && !f.Time.After(to):
				held++
			case d == record.DecisionReleased && f.Pod == pod.Name && f.Time.After(from) && f.Time.Before(back):
				t.Errorf("a held request was released to the pod before its container started again (%s): %s", back.Format("15:04:05.000"), describe(f))
			case d == record.DecisionRouted && f.Pod == pod.Name && f.Time.After(from.Add(slack)) && f.Time.Before(to.Add(-slack)):
				t.Errorf("a request was sent to the pod while its endpoint was not ready (%s … %s): %s",
					from.Format("15:04:05.000"), to.Format("15:04:05.000"), describe(f))
			}
		}
		if held == 0 {
			t.Errorf("no request was held while the pod was out of service (%s … %s)", from.Format("15:04:05.000"), to.Format("15:04:05.000"))
		}
	})
	t.Run("every request the load sent is recorded", func(t *testing.T) {
		var recorded []record.Fact
		for _, f := range facts {
			if f.Kind == record.KindRequest {
				recorded = append(recorded, f)
			}
		}
		if len(recorded) != len(sent.Requests) {
			t.Errorf("%d request facts, the load completed %d requests", len(recorded), len(sent.Requests))
		}
		for _, f := range recorded {
			q := f.Request
			if q.Status != 200 || f.Pod != pod.Name || q.Target != "default/runtime" || q.Latency <= 0 || !f.Time.Equal(q.Start.Add(q.Latency)) {
				t.Errorf("request %+v on pod %q: want 200 from %s for default/runtime, ending at start + latency", q, f.Pod, pod.Name)
				break
			}
		}
		if f := sent.Failures(); len(f) > 0 {
			t.Errorf("%d requests failed:\n%s", len(f), load.FormatRequests(f, time.Time{}, 10))
		}
	})
	t.Run("no gap from the start to the stop, and the stop is in", func(t *testing.T) {
		if len(sorted) == 0 {
			t.Fatal("no facts")
		}
		prev := h.Started
		for _, f := range sorted {
			// Liveness probes every second and 50 requests a second: a
			// longer silence is a hole in the recording.
			if gap := f.Time.Sub(prev); gap > 5*time.Second {
				t.Errorf("no fact for %s before %s", gap.Round(time.Millisecond), describe(f))
			}
			prev = f.Time
		}
		last := sorted[len(sorted)-1]
		if last.Time.Before(interrupted) {
			t.Errorf("the last fact %s is from before Ctrl-C at %s", describe(last), interrupted.Format("15:04:05.000"))
		}
		stopping := slices.ContainsFunc(facts, func(f record.Fact) bool {
			return f.Kind == record.KindEvent && f.Event.Reason == "Killing" && strings.HasPrefix(f.Event.Message, "Stopping container") && !f.Time.Before(interrupted)
		})
		removed := slices.ContainsFunc(facts, func(f record.Fact) bool {
			return f.Kind == record.KindEndpoint && f.Pod == pod.Name && (f.Endpoint.Removed || (f.Endpoint.Terminating != nil && *f.Endpoint.Terminating)) && !f.Time.Before(interrupted)
		})
		if !stopping || !removed {
			t.Errorf("after Ctrl-C: Killing \"Stopping container\" recorded %t, the endpoint terminating or removed %t; want both", stopping, removed)
		}
	})
}

// TestRunRecordingKeepsToItsLimit: a bound far too small for the run
// ends the file with the truncated line, keeps it within the bound, and
// podgate says so once on stderr, naming the flag; the run goes on.
func TestRunRecordingKeepsToItsLimit(t *testing.T) {
	bin := podgateBinary(t)
	recFile := filepath.Join(t.TempDir(), "small.jsonl")
	const limit = 8 << 10
	r := runStart(t, bin, "-f", "../../examples/hello.yaml", "--pod-cidr", "127.0.96.0/24", "--record", recFile, "--record-limit", "8Ki")
	msg := r.waitFor(r.errOut, regexp.MustCompile(`podgate: the recording .* reached --record-limit 8Ki \(8192 bytes\): later facts were dropped.*\n`))
	r.waitPod("ready", runPodReady)
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Fatalf("exit code %d after Ctrl-C, want 0: a full recording does not stop the run", code)
	}
	if n := strings.Count(r.errOut(), "reached --record-limit"); n != 1 {
		t.Errorf("the limit was reported %d times, want once: %q", n, msg[0])
	}
	data, err := os.ReadFile(recFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > limit {
		t.Errorf("the recording is %d bytes, over its bound of %d", len(data), limit)
	}
	h, facts := readRecording(t, recFile)
	last := facts[len(facts)-1]
	if h.Limit != limit || last.Kind != record.KindTruncated || last.Truncated.Limit != limit {
		t.Errorf("header limit %d, last fact %s: want %d and the truncated line", h.Limit, describe(last), limit)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		t.Error("the recording does not end with a whole line")
	}
}

func TestRecordFlagsAreChecked(t *testing.T) {
	dir := t.TempDir()
	sleeper := runManifest(t, `apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  containers:
  - {name: c, image: busybox, command: ["sleep", "600"]}
`)
	runArgs := func(args ...string) []string {
		return append([]string{"run", "-f", sleeper, "--api", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--pod-cidr", "127.0.97.0/24"}, args...)
	}
	missing := filepath.Join(dir, "no-such-dir", "rec.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"run: a limit that is no size", runArgs("--record", filepath.Join(dir, "a"), "--record-limit", "lots"), exitUsage, `--record-limit "lots": want a size in bytes`},
		{"run: a negative limit", runArgs("--record", filepath.Join(dir, "a"), "--record-limit", "-1Mi"), exitUsage, "0 or more"},
		{"run: a limit too small to hold anything", runArgs("--record", filepath.Join(dir, "a"), "--record-limit", "100"), exitUsage, "at least 4096 bytes"},
		{"run: a limit without a recording", runArgs("--record-limit", "1Mi"), exitUsage, "--record-limit needs --record FILE"},
		{"run: a file that cannot be created", runArgs("--record", missing), exitInvalid, "--record: open " + missing},
		{"record: no file", []string{"record", "-n", "x"}, exitUsage, "-o FILE is required"},
		{"record: one namespace and all", []string{"record", "-n", "x", "-A", "-o", filepath.Join(dir, "b")}, exitUsage, "-n and -A exclude each other"},
		{"record: an argument", []string{"record", "-o", filepath.Join(dir, "b"), "pods"}, exitUsage, "unknown command"},
		{"record: a limit that is no size", []string{"record", "-o", filepath.Join(dir, "b"), "--record-limit", "x"}, exitUsage, "--record-limit"},
		{"record: a kubeconfig that is not there", []string{"record", "--kubeconfig", filepath.Join(dir, "nope"), "-o", filepath.Join(dir, "b")}, exitInvalid, "nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
				t.Errorf("podgate %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error("a refused run created its recording file")
	}
	if _, err := os.Stat(filepath.Join(dir, "b")); err == nil {
		t.Error("a refused record created its recording file")
	}
}

// TestRecordAClusterUntilCtrlC runs the real `podgate record` against a
// real control plane (no node: the scheduler finds none) with an admin
// kubeconfig: a pod the scheduler cannot place, its FailedScheduling
// event, an Unhealthy event (a probe fact too), a container status and
// an EndpointSlice are recorded, and Ctrl-C leaves a complete file.
func TestRecordAClusterUntilCtrlC(t *testing.T) {
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
	cs := kubernetes.NewForConfigOrDie(cp.AdminConfig())
	ctx := t.Context()
	const ns = "shop"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	recFile := filepath.Join(t.TempDir(), "cluster.jsonl")
	cmd := exec.Command(bin, "record", "--kubeconfig", cp.AdminKubeconfig(), "-n", ns, "-o", recFile)
	var stderr syncbuf.Buffer
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			fmt.Fprintln(&stderr, sc.Text())
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("podgate record stderr:\n%s", stderr.String())
		}
	})
	poll(t, "recording line", func() (bool, string) {
		return strings.Contains(stderr.String(), "podgate: recording namespace shop until Ctrl-C"), stderr.String()
	})

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}
	if _, err = cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler may write the pod meanwhile: read, change, write
	// again on a conflict, as every writer of a pod must.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "app", RestartCount: 2, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		}}
		_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	unhealthy := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.unhealthy", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web", FieldPath: "spec.containers{app}"},
		Reason:         "Unhealthy", Message: "Liveness probe failed: HTTP probe failed with statuscode: 500", Type: corev1.EventTypeWarning, Count: 1,
	}
	if _, err := cs.CoreV1().Events(ns).Create(ctx, unhealthy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: map[string]string{
			discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "record-test",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			// A documentation address (TEST-NET-1): stored, never dialled.
			Addresses: []string{"192.0.2.20"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web"},
		}},
	}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The scheduler's word on the pod, as a condition and an event.
	poll(t, "the scheduler's verdict recorded", func() (bool, string) {
		data, _ := os.ReadFile(recFile)
		return bytes.Contains(data, []byte(`"reason":"FailedScheduling"`)) && bytes.Contains(data, []byte(`"type":"PodScheduled","status":"False"`)), string(data)
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("podgate record after Ctrl-C: %v, want exit 0", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("podgate record did not exit within a minute of Ctrl-C")
	}

	h, facts := readRecording(t, recFile)
	if h.Source != "cluster" || !strings.Contains(h.Detail, "record --kubeconfig") {
		t.Errorf("header %+v: want source cluster and the command line", h)
	}
	for _, want := range []struct {
		what  string
		match func(record.Fact) bool
	}{
		{"the container status", func(f record.Fact) bool {
			return f.Kind == record.KindContainer && f.Pod == "web" && f.Container == "app" && f.State.State == "waiting" &&
				f.State.Reason == "CrashLoopBackOff" && f.State.RestartCount == 2
		}},
		{"PodScheduled False", func(f record.Fact) bool {
			return f.Kind == record.KindCondition && f.Pod == "web" && f.Condition.Type == "PodScheduled" && f.Condition.Status == "False"
		}},
		{"the FailedScheduling event", func(f record.Fact) bool {
			return f.Kind == record.KindEvent && f.Pod == "web" && f.Event.Reason == "FailedScheduling" && f.Event.Type == corev1.EventTypeWarning
		}},
		{"the Unhealthy event", func(f record.Fact) bool {
			return f.Kind == record.KindEvent && f.Pod == "web" && f.Container == "app" && f.Event.Reason == "Unhealthy"
		}},
		{"the liveness failure it reports", func(f record.Fact) bool {
			return f.Kind == record.KindProbe && f.Pod == "web" && f.Container == "app" && f.Probe.Probe == "liveness" &&
				f.Probe.Result == "failure" && f.Probe.Message == "HTTP probe failed with statuscode: 500"
		}},
		{"the endpoint", func(f record.Fact) bool {
			return f.Kind == record.KindEndpoint && f.Pod == "web" && f.Namespace == ns && f.Endpoint.Address == "192.0.2.20" &&
				f.Endpoint.Service == "web" && f.Endpoint.Ready != nil && !*f.Endpoint.Ready
		}},
	} {
		if !slices.ContainsFunc(facts, want.match) {
			t.Errorf("no fact for %s; facts:\n%s", want.what, describeAll(facts))
		}
	}
}

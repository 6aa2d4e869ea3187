package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/podgate/podgate/node/images"
)

// Case is one behaviour: a pod and what to observe of it.
type Case struct {
	// Name says the behaviour.
	Name string
	// pod is the case's pod, given the scratch directory.
	pod func(dir string) *corev1.Pod
	// Run observes the behaviour once the pod exists.
	Run func(t *testing.T, e *Env)
}

// Cases is the table.
func Cases() []Case {
	return []Case{
		{"a failing exec liveness probe restarts the container", execLivenessPod, checkLivenessRestart("Liveness probe failed")},
		{"a failing HTTP liveness probe restarts the container", httpLivenessPod("http-liveness"),
			checkLivenessRestart("Liveness probe failed: HTTP probe failed with statuscode: 500")},
		{"a failing TCP liveness probe restarts the container", tcpLivenessPod, checkLivenessRestart("Liveness probe failed: dial tcp")},
		{"a gRPC liveness probe answered NOT_SERVING restarts the container", grpcLivenessPod, checkLivenessRestart("Liveness probe failed")},
		{"a failing readiness probe never restarts and keeps the endpoint not ready", readinessFailsPod, checkReadinessFails},
		{"the pod is not ready before initialDelaySeconds", initialDelayPod, checkInitialDelay},
		{"liveness is not probed until the startup probe succeeds", startupGatesPod, checkStartupGates},
		{"the restart count only grows across restarts", restartCountPod, checkRestartCountMonotonic},
		{"a terminating pod's endpoint is not ready, terminating, and serving as its readiness probe says", terminatingPod, checkTerminating},
		{"a liveness failure turns the endpoint not ready before the container is signalled", withdrawPod, checkWithdrawnBeforeKill},
	}
}

// Timings of the table's probes.
const (
	initialDelay = 3 // seconds
	// startupChances is the startup probe's failureThreshold where it
	// only guards a slow start.
	startupChances = 120
)

func pod(name string, c corev1.Container, grace int64) *corev1.Pod {
	c.Name = "c"
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{LabelCase: name},
		},
		Spec: corev1.PodSpec{
			Containers:                    []corev1.Container{c},
			TerminationGracePeriodSeconds: ptr.To(grace),
		},
	}
}

// testapp is a container of podgate's test app on :8080.
func testapp(args ...string) corev1.Container {
	return corev1.Container{
		Image: images.TestappImage,
		Args:  append([]string{"--port", "8080"}, args...),
		Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
	}
}

// shell is a container running script with /bin/sh; it exits on SIGTERM.
func shell(script string) corev1.Container {
	return corev1.Container{Image: "busybox", Command: []string{"/bin/sh", "-c", "trap 'exit 0' TERM; " + script}}
}

func probe(h corev1.ProbeHandler) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, FailureThreshold: 1}
}

func execProbe(cmd ...string) *corev1.Probe {
	return probe(corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: cmd}})
}

func httpProbe(path string) *corev1.Probe {
	return probe(corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(8080)}})
}

func tcpProbe(port int32) *corev1.Probe {
	return probe(corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}})
}

// slowStart is a startup probe that only waits for a port to listen: on
// a loaded machine the app may take seconds, and a liveness probe failing
// meanwhile would restart it for the wrong reason.
func slowStart(port int32) *corev1.Probe {
	p := tcpProbe(port)
	p.FailureThreshold = startupChances
	return p
}

// file is a path in the scratch directory, one per pod and purpose.
func file(dir, pod, what string) string { return filepath.Join(dir, pod+"."+what) }

func execLivenessPod(dir string) *corev1.Pod {
	health := file(dir, "exec-liveness", "health")
	c := shell(fmt.Sprintf("echo ok > %[1]s; sleep 1; rm -f %[1]s; sleep 600 & wait", health))
	c.LivenessProbe = execProbe("cat", health)
	c.LivenessProbe.InitialDelaySeconds = 1
	return pod("exec-liveness", c, 2)
}

func httpLivenessPod(name string) func(string) *corev1.Pod {
	return func(string) *corev1.Pod {
		c := testapp("--fail-live-after", "1s")
		c.LivenessProbe = httpProbe("/healthz")
		c.StartupProbe = slowStart(8080)
		return pod(name, c, 2)
	}
}

func tcpLivenessPod(string) *corev1.Pod {
	c := testapp()
	c.StartupProbe = slowStart(8080)
	c.LivenessProbe = tcpProbe(8081) // nothing listens there
	return pod("tcp-liveness", c, 2)
}

func grpcLivenessPod(string) *corev1.Pod {
	c := testapp("--grpc-port", "9090", "--fail-live-after", "1s")
	c.LivenessProbe = probe(corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: ptr.To("liveness")}})
	c.StartupProbe = slowStart(9090)
	return pod("grpc-liveness", c, 2)
}

// checkLivenessRestart: the container restarts, with the kubelet's
// Killing event and an Unhealthy event starting with unhealthy.
func checkLivenessRestart(unhealthy string) func(*testing.T, *Env) {
	return func(t *testing.T, e *Env) {
		e.restarted(t, 1)
		e.waitEvent(t, "Killing", "Container c failed liveness probe, will be restarted")
		e.waitEvent(t, "Unhealthy", unhealthy)
	}
}

func readinessFailsPod(string) *corev1.Pod {
	c := shell("sleep 600 & wait")
	c.ReadinessProbe = execProbe("false")
	return pod("readiness-fails", c, 2)
}

func checkReadinessFails(t *testing.T, e *Env) {
	const runs = 5
	eventually(t, fmt.Sprintf("%s: %d readiness failures", e.Pod, runs), func() (bool, string) {
		p, err := e.pod(t)
		if err != nil {
			return false, err.Error()
		}
		if podReady(p) {
			t.Fatalf("the pod turned Ready: %+v", p.Status.Conditions)
		}
		if n := restarts(p); n != 0 {
			t.Fatalf("restartCount %d, want 0", n)
		}
		n := e.eventCount(t, "Unhealthy", "Readiness probe failed")
		return n >= runs, fmt.Sprintf("%d failures", n)
	})
	if n := len(e.events(t, "Killing")); n != 0 {
		t.Errorf("%d Killing events, want none", n)
	}
	e.waitEndpoint(t, "present, neither ready nor serving", func(ep *discoveryv1.Endpoint) bool {
		return is(ep.Conditions.Ready, false) && is(ep.Conditions.Serving, false)
	})
}

func initialDelayPod(string) *corev1.Pod {
	c := testapp()
	c.ReadinessProbe = httpProbe("/readyz")
	c.ReadinessProbe.InitialDelaySeconds = initialDelay
	return pod("initial-delay", c, 2)
}

// checkInitialDelay compares the Ready condition's transition with the
// container's start, as the kubelet's e2e test does. Both are whole
// seconds on the wire; truncating both keeps a true difference of at
// least the delay at least the delay.
func checkInitialDelay(t *testing.T, e *Env) {
	p := e.waitPod(t, "Ready", func(p *corev1.Pod) (bool, string) {
		return podReady(p), fmt.Sprintf("conditions %+v", p.Status.Conditions)
	})
	running := containerStatus(p).State.Running
	if running == nil {
		t.Fatalf("container not running: %+v", containerStatus(p).State)
	}
	readyAt := podCondition(p, corev1.PodReady).LastTransitionTime.Time
	if d := readyAt.Sub(running.StartedAt.Time); d < initialDelay*time.Second {
		t.Errorf("Ready %s after the container started, want at least the initial delay of %ds", d, initialDelay)
	}
	if n := restarts(p); n != 0 {
		t.Errorf("restartCount %d, want 0", n)
	}
}

func startupGatesPod(dir string) *corev1.Pod {
	c := shell("sleep 600 & wait")
	c.LivenessProbe = execProbe("false")
	c.StartupProbe = execProbe("cat", file(dir, "startup-gates", "started"))
	c.StartupProbe.FailureThreshold = startupChances
	return pod("startup-gates", c, 2)
}

// checkStartupGates: while the startup probe fails, the liveness probe
// (which always fails) is not run; once it passes, liveness runs and
// restarts the container.
func checkStartupGates(t *testing.T, e *Env) {
	const runs = 5
	eventually(t, fmt.Sprintf("%s: %d startup failures", e.Pod, runs), func() (bool, string) {
		n := e.eventCount(t, "Unhealthy", "Startup probe failed")
		return n >= runs, fmt.Sprintf("%d failures", n)
	})
	if n := e.eventCount(t, "Unhealthy", "Liveness probe failed"); n != 0 {
		t.Fatalf("%d liveness failures before the startup probe passed, want none", n)
	}
	p, err := e.pod(t)
	if err != nil {
		t.Fatal(err)
	}
	if cs := containerStatus(p); cs.RestartCount != 0 || cs.Started == nil || *cs.Started {
		t.Fatalf("restartCount %d, started %v; want 0 and false", cs.RestartCount, cs.Started)
	}
	if err := os.WriteFile(file(e.Dir, e.Pod, "started"), []byte("ok\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.restarted(t, 1)
	e.waitEvent(t, "Killing", "Container c failed liveness probe, will be restarted")
}

// restartCountPod's liveness probe fails once its fail file exists, and
// on after every restart: the case starts the restarts when its watch is
// in place. (A pod that failed by itself would restart before a case run
// late on a loaded machine began watching; CI saw that.)
func restartCountPod(dir string) *corev1.Pod {
	c := shell("sleep 600 & wait")
	c.LivenessProbe = execProbe("/bin/sh", "-c", "test ! -e "+file(dir, "restart-count", "fail"))
	return pod("restart-count", c, 2)
}

// checkRestartCountMonotonic watches the pod from before its first
// restart through its second (after the 10 s back-off) and checks every
// status it was seen with: 0, then 1, then 2, never smaller than before.
func checkRestartCountMonotonic(t *testing.T, e *Env) {
	ctx, cancel := context.WithCancel(t.Context())
	w, err := e.Client.CoreV1().Pods(e.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + e.Pod})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []int32
	)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && ev.Type != watch.Error {
				mu.Lock()
				seen = append(seen, restarts(p))
				mu.Unlock()
			}
		}
	}()
	// The watch's first event is the pod as it was when the watch began.
	eventually(t, "the watch's first event", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) > 0, "no event yet"
	})
	if err := os.WriteFile(file(e.Dir, e.Pod, "fail"), []byte("fail\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.restarted(t, 2)
	// The status with restartCount 2 was read through a GET; the watch
	// delivers that update on its own time: stop it once it has.
	eventually(t, "the watch seeing restartCount 2", func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return seen[len(seen)-1] >= 2, fmt.Sprint(seen)
	})
	cancel()
	w.Stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if seen[0] != 0 {
		t.Fatalf("restartCount %d before the liveness probe could fail: %v", seen[0], seen)
	}
	if seen[len(seen)-1] < 2 {
		t.Fatalf("the watch ended at restartCount %d, want 2: %v", seen[len(seen)-1], seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("restartCount went from %d to %d: %v", seen[i-1], seen[i], seen)
		}
	}
	if !slices.Contains(seen, 1) {
		t.Errorf("the watch never saw restartCount 1: %v", seen)
	}
}

func terminatingPod(string) *corev1.Pod {
	// It serves on for a minute after SIGTERM; the test ends it sooner.
	c := testapp("--sleep-on-term", "60s")
	c.ReadinessProbe = httpProbe("/readyz")
	return pod("terminating", c, 60)
}

// checkTerminating deletes the pod and follows its endpoint: not ready
// and terminating at once, serving while the readiness probe passes, not
// serving once it fails; the pod's Ready follows the probe.
func checkTerminating(t *testing.T, e *Env) {
	e.waitPod(t, "Ready", func(p *corev1.Pod) (bool, string) { return podReady(p), "not Ready" })
	e.waitEndpoint(t, "ready", func(ep *discoveryv1.Endpoint) bool { return is(ep.Conditions.Ready, true) })
	if err := e.Client.CoreV1().Pods(e.Namespace).Delete(t.Context(), e.Pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitEndpoint(t, "terminating, not ready, serving", func(ep *discoveryv1.Endpoint) bool {
		return is(ep.Conditions.Terminating, true) && is(ep.Conditions.Ready, false) && is(ep.Conditions.Serving, true)
	})
	p, err := e.pod(t)
	if err != nil {
		t.Fatal(err)
	}
	if p.DeletionTimestamp == nil || !podReady(p) {
		t.Fatalf("deletionTimestamp %v, Ready %v: want terminating and still Ready while the probe passes", p.DeletionTimestamp, podReady(p))
	}
	e.get(t, "/toggleReady?set=false")
	e.waitPod(t, "not Ready while terminating", func(p *corev1.Pod) (bool, string) {
		return !podReady(p) && containerStatus(p).State.Running != nil, fmt.Sprintf("Ready %v, state %+v", podReady(p), containerStatus(p).State)
	})
	e.waitEndpoint(t, "terminating, not ready, not serving", func(ep *discoveryv1.Endpoint) bool {
		return is(ep.Conditions.Terminating, true) && is(ep.Conditions.Ready, false) && is(ep.Conditions.Serving, false)
	})
	if n := restarts(p); n != 0 {
		t.Errorf("restartCount %d, want 0", n)
	}
}

func withdrawPod(dir string) *corev1.Pod {
	live, term := file(dir, "withdraw", "live"), file(dir, "withdraw", "term")
	// SIGTERM writes when it arrived (nanoseconds since the epoch).
	c := corev1.Container{Image: "busybox", Command: []string{"/bin/sh", "-c",
		fmt.Sprintf("trap 'date +%%s%%N > %[2]s.tmp; mv %[2]s.tmp %[2]s; exit 0' TERM; touch %[1]s; sleep 600 & wait", live, term)}}
	c.ReadinessProbe = execProbe("true")
	c.LivenessProbe = execProbe("cat", live)
	c.StartupProbe = execProbe("cat", live)
	c.StartupProbe.FailureThreshold = startupChances
	return pod("withdraw", c, 2)
}

// checkWithdrawnBeforeKill makes the liveness probe fail and orders, by
// the API's resourceVersions, the write of the EndpointSlice that lists
// the pod not ready before the node's Killing event, which the node
// writes as the kill begins (before preStop and SIGTERM). Both worlds
// stamp every write from one counter (etcd's revision; the local store's
// shared counter), so the order is the API's own, free of the clocks
// and latencies of the test's watches. The container's SIGTERM comes
// after the Killing event; its time is logged against when the test saw
// the endpoint go.
func checkWithdrawnBeforeKill(t *testing.T, e *Env) {
	e.waitPod(t, "Ready", func(p *corev1.Pod) (bool, string) { return podReady(p), "not Ready" })
	e.waitEndpoint(t, "ready", func(ep *discoveryv1.Endpoint) bool { return is(ep.Conditions.Ready, true) })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	slices, err := e.Client.DiscoveryV1().EndpointSlices(e.Namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer slices.Stop()
	evs, err := e.Client.CoreV1().Events(e.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + e.Pod})
	if err != nil {
		t.Fatal(err)
	}
	defer evs.Stop()
	podWatch, err := e.Client.CoreV1().Pods(e.Namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + e.Pod})
	if err != nil {
		t.Fatal(err)
	}
	defer podWatch.Stop()
	notReady := first(podWatch, func(o any) bool {
		p, ok := o.(*corev1.Pod)
		return ok && !podReady(p)
	})
	unready := first(slices, func(o any) bool {
		s, ok := o.(*discoveryv1.EndpointSlice)
		if !ok {
			return false
		}
		ep := endpointOf([]discoveryv1.EndpointSlice{*s}, e.Pod)
		return ep != nil && is(ep.Conditions.Ready, false)
	})
	killing := first(evs, func(o any) bool {
		ev, ok := o.(*corev1.Event)
		return ok && ev.Reason == "Killing" && strings.Contains(ev.Message, "failed liveness probe")
	})
	// The watches start from now: the endpoint is ready in what they list.
	if err := os.Remove(file(e.Dir, e.Pod, "live")); err != nil {
		t.Fatal(err)
	}
	var kill, gone seen
	select {
	case kill = <-killing:
	case <-time.After(WaitLimit):
		t.Fatalf("no Killing event for the liveness failure within %s; events %v", WaitLimit, messages(e.events(t, "")))
	}
	select {
	case gone = <-unready:
	case <-time.After(WaitLimit):
		t.Fatalf("no EndpointSlice listed the pod not ready within %s of the liveness failure", WaitLimit)
	}
	if gone.rv >= kill.rv {
		t.Errorf("the EndpointSlice listing the pod not ready has resourceVersion %d, the Killing event %d: the kill began before the endpoint was withdrawn", gone.rv, kill.rv)
	}
	// The watches' clocks are no proof (the node and the test see the
	// same change within a millisecond or two of each other): logged.
	termAt := e.sigterm(t)
	var podGone seen
	select {
	case podGone = <-notReady:
	case <-time.After(WaitLimit):
		t.Fatal("the pod was not seen not Ready")
	}
	t.Logf("resourceVersions: pod not Ready %d, endpoint not ready %d, Killing %d; seen by the test: the pod not Ready, %s later the endpoint, %s later SIGTERM",
		podGone.rv, gone.rv, kill.rv, gone.at.Sub(podGone.at).Round(time.Microsecond), termAt.Sub(gone.at).Round(time.Microsecond))
	e.restarted(t, 1)
}

// seen is an object a watch delivered: its resourceVersion, and when.
type seen struct {
	rv uint64
	at time.Time
}

// first delivers the first object of w that match accepts.
func first(w watch.Interface, match func(any) bool) <-chan seen {
	out := make(chan seen, 1)
	go func() {
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error || ev.Type == watch.Bookmark || !match(ev.Object) {
				continue
			}
			o, ok := ev.Object.(metav1.Object)
			if !ok {
				continue
			}
			rv, err := strconv.ParseUint(o.GetResourceVersion(), 10, 64)
			if err != nil {
				continue
			}
			out <- seen{rv: rv, at: time.Now()}
			for range w.ResultChan() { // drain until stopped
			}
			return
		}
	}()
	return out
}

// sigterm is when the withdraw pod's container received SIGTERM, as its
// trap wrote it.
func (e *Env) sigterm(t *testing.T) time.Time {
	t.Helper()
	path := file(e.Dir, e.Pod, "term")
	var term string
	eventually(t, e.Pod+": the container receiving SIGTERM", func() (bool, string) {
		b, err := os.ReadFile(path)
		term = strings.TrimSpace(string(b))
		return err == nil && term != "", fmt.Sprint(err)
	})
	ns, err := strconv.ParseInt(term, 10, 64)
	if err != nil {
		t.Fatalf("%s: %q: %v", path, term, err)
	}
	return time.Unix(0, ns)
}

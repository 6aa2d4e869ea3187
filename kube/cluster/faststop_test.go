package cluster

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/k8sbin"
)

// The gate's log lines that say how its drain ended.
const (
	drainedByActivator = "drained: the activator, this pod's only router, no longer routes here"
	drainedByQuiet     = "drained: no request for the quiet period"
)

// TestStopsAreFastWithTheActivatorAsOnlyRouter runs `podgate cluster up`
// (no --knative: the activator is the pods' only router) and checks that
// a deleted injected pod's drain ends on the activator's confirmation —
// an idle pod no Service routes to, and one whose Service the activator
// has served — not after its quiet period; that a request straight to
// the pod IP after the confirmation brings the quiet period back (the
// confirmation only covers the activator); that the quiet period
// annotation reaches the gate and is validated with its field path; and
// how long `kubectl delete` and `cluster down` take.
func TestStopsAreFastWithTheActivatorAsOnlyRouter(t *testing.T) {
	u := startInstalled(t, "10.250.231.0/24")
	ctx := t.Context()

	t.Run("nothing but the activator routes: no kube-proxy; the activator and the webhook are told so", func(t *testing.T) {
		var activator, webhook []string
		for _, argv := range u.processes() {
			if len(argv) > 0 && filepath.Base(argv[0]) == "kube-proxy" {
				t.Errorf("kube-proxy runs: %q", argv)
			}
			if len(argv) > 1 && argv[1] == "activator" {
				activator = argv
			}
			if len(argv) > 1 && argv[1] == "webhook" {
				webhook = argv
			}
		}
		if !slices.Contains(activator, "--only-router") {
			t.Errorf("activator %q; want --only-router", activator)
		}
		if !slices.Contains(webhook, "--only-router=activator") {
			t.Errorf("webhook %q; want --only-router=activator", webhook)
		}
	})

	u.namespace(t, "shop", map[string]string{"podgate.dev/inject": "enabled"})
	// Pods of the test app with the default grace period (30 s: a quiet
	// period of 15 s), labelled app=NAME.
	pod := func(name string, annotations map[string]string) *corev1.Pod {
		spec := testappSpec(false)
		spec.TerminationGracePeriodSeconds = nil
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", Labels: map[string]string{"app": name}, Annotations: annotations}, Spec: spec}
	}
	create := func(t *testing.T, p *corev1.Pod) *corev1.Pod {
		t.Helper()
		if _, err := u.client.CoreV1().Pods("shop").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Pod
		eventually(t, waitLimit, "pod "+p.Name+" ready", func() (bool, string) {
			var err error
			if got, err = u.client.CoreV1().Pods("shop").Get(ctx, p.Name, metav1.GetOptions{}); err != nil {
				return false, err.Error()
			}
			return ready(got)
		})
		return got
	}
	// deleteTimed runs `kubectl delete pod` (which waits until the pod is
	// gone) and says how long it took.
	deleteTimed := func(t *testing.T, name string) time.Duration {
		t.Helper()
		begin := time.Now()
		u.kubectl(t, "delete", "pod", "-n", "shop", name)
		took := time.Since(begin)
		if _, err := u.client.CoreV1().Pods("shop").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s after kubectl delete: %v, want it gone", name, err)
		}
		return took
	}
	gateSaid := func(name, what string) bool {
		prefix := name + "/" + contract.GateContainerName + " | "
		for _, out := range []string{u.stdout.String(), u.stderr.String()} {
			for _, line := range strings.Split(out, "\n") {
				if strings.Contains(line, prefix) && strings.Contains(line, what) {
					return true
				}
			}
		}
		return false
	}
	quiet := func(p *corev1.Pod) string {
		for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
			if c.Name != contract.GateContainerName {
				continue
			}
			for _, e := range c.Env {
				if e.Name == contract.EnvDrainQuietPeriod {
					return e.Value
				}
			}
		}
		return "(none)"
	}
	onlyRouter := func(p *corev1.Pod) string {
		g := contract.GateContainer(&p.Spec)
		if g == nil {
			return "(no gate)"
		}
		for _, e := range g.Env {
			if e.Name == contract.EnvOnlyRouter {
				return e.Value
			}
		}
		return ""
	}

	t.Run("an idle pod's drain ends on the activator's confirmation", func(t *testing.T) {
		p := create(t, pod("idle", nil))
		if q, r := quiet(p), onlyRouter(p); q != "15s" || r != contract.OnlyRouterActivator {
			t.Fatalf("the injected gate: %s=%q %s=%q; want 15s (half the default grace period) and activator", contract.EnvDrainQuietPeriod, q, contract.EnvOnlyRouter, r)
		}
		took := deleteTimed(t, "idle")
		t.Logf("kubectl delete pod idle (injected, idle, quiet period 15s): %s", took.Round(time.Millisecond))
		if !gateSaid("idle", drainedByActivator) {
			t.Errorf("the gate of idle did not log %q", drainedByActivator)
		}
		if took >= 15*time.Second {
			t.Errorf("kubectl delete took %s: the quiet period ran", took)
		}
	})

	t.Run("a served pod's drain ends on the confirmation of the target that served it", func(t *testing.T) {
		create(t, pod("web", nil))
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
				Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(contract.GatePort)}}},
		}
		if _, err := u.client.CoreV1().Services("shop").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, waitLimit, "web answering through the front door", func() (bool, string) {
			code, body, err := u.frontDoorGet("web.shop.example.com")
			return err == nil && code == http.StatusOK && body == "web", fmt.Sprintf("%d %q %v", code, body, err)
		})
		took := deleteTimed(t, "web")
		t.Logf("kubectl delete pod web (injected, served through the front door just before): %s", took.Round(time.Millisecond))
		if !gateSaid("web", drainedByActivator) {
			t.Errorf("the gate of web did not log %q", drainedByActivator)
		}
		if took >= 15*time.Second {
			t.Errorf("kubectl delete took %s: the quiet period ran", took)
		}
	})

	t.Run("a request straight to the pod after the confirmation brings the quiet period back", func(t *testing.T) {
		p := create(t, pod("direct", map[string]string{contract.AnnotationDrainQuietPeriod: "3s"}))
		if q := quiet(p); q != "3s" {
			t.Fatalf("%s=%q; want the annotation's 3s", contract.EnvDrainQuietPeriod, q)
		}
		c := u.httpClient()
		defer c.CloseIdleConnections()
		base := "http://" + net.JoinHostPort(p.Status.PodIP, fmt.Sprint(contract.GatePort))
		get := func(path string) error {
			resp, err := c.Get(base + path)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %s", path, resp.Status)
			}
			return nil
		}
		// A slow request straight to the pod, in flight at the gate while
		// the activator confirms: the drain waits for it.
		slow := make(chan error, 1)
		go func() { slow <- get("/slow?for=2s") }()
		metrics := "http://" + net.JoinHostPort(p.Status.PodIP, fmt.Sprint(contract.GateMetricsPort)) + "/metrics"
		eventually(t, waitLimit, "the slow request in flight at the gate", func() (bool, string) {
			resp, err := c.Get(metrics)
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return strings.Contains(string(b), "\npodgate_requests_in_flight 1\n"), "not yet"
		})
		begin := time.Now()
		deleted := make(chan time.Time, 1)
		go func() {
			out, err := exec.Command(kubectlPath(t), "--kubeconfig", filepath.Join(u.dir, KubeconfigFile), "delete", "pod", "-n", "shop", "direct").CombinedOutput()
			if err != nil {
				t.Errorf("kubectl delete: %v\n%s", err, out)
			}
			deleted <- time.Now()
		}()
		eventually(t, waitLimit, "the gate of direct taking the activator's confirmation", func() (bool, string) {
			return gateSaid("direct", "confirms it no longer routes to this pod"), "not yet"
		})
		// Another way in: a request after the confirmation.
		if err := get("/"); err != nil {
			t.Fatalf("a request straight to the draining pod: %v", err)
		}
		last := time.Now()
		if err := <-slow; err != nil {
			t.Errorf("the slow request: %v", err)
		}
		var gone time.Time
		select {
		case gone = <-deleted:
		case <-time.After(waitLimit):
			t.Fatal("kubectl delete did not return")
		}
		t.Logf("kubectl delete pod direct (a request in flight, another straight to the pod after the confirmation, quiet period 3s): %s", gone.Sub(begin).Round(time.Millisecond))
		if !gateSaid("direct", drainedByQuiet) || gateSaid("direct", drainedByActivator) {
			t.Errorf("the gate of direct did not end its drain on the quiet period")
		}
		if since := gone.Sub(last); since < 3*time.Second {
			t.Errorf("kubectl delete returned %s after the last request, before the 3 s quiet period", since.Round(time.Millisecond))
		}
	})

	t.Run("the quiet period annotation is validated with its field path", func(t *testing.T) {
		for v, want := range map[string]string{
			"30":  `metadata.annotations[podgate.dev/drain-quiet-period]: Invalid value: "30": not a duration such as 5s or 1m30s`,
			"-1s": `metadata.annotations[podgate.dev/drain-quiet-period]: Invalid value: "-1s": must not be negative`,
			"30s": `metadata.annotations[podgate.dev/drain-quiet-period]: Invalid value: "30s": must be shorter than the pod's terminationGracePeriodSeconds (30)`,
		} {
			_, err := u.client.CoreV1().Pods("shop").Create(ctx, pod("bad", map[string]string{contract.AnnotationDrainQuietPeriod: v}), metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("a pod with the annotation %q: %v; want refused with %q", v, err, want)
				_ = u.client.CoreV1().Pods("shop").Delete(ctx, "bad", metav1.DeleteOptions{})
			}
		}
	})

	t.Run("cluster down with injected pods running", func(t *testing.T) {
		create(t, pod("a", nil))
		create(t, pod("b", nil))
		_ = u.ns.Close()
		u.ns = nil
		begin := time.Now()
		out, err := exec.Command(podgateBin, "cluster", "down", "--dir", u.dir).CombinedOutput()
		took := time.Since(begin)
		if err != nil || !strings.Contains(string(out), "is stopped") {
			t.Fatalf("cluster down: %v\n%s", err, out)
		}
		select {
		case <-u.exited:
		case <-time.After(waitLimit):
			t.Fatal("cluster up still runs after cluster down")
		}
		t.Logf("podgate cluster down (webhook, activator and 2 idle injected pods, quiet period 15s): %s", took.Round(time.Millisecond))
		for _, name := range []string{"a", "b"} {
			if !gateSaid(name, drainedByActivator) {
				t.Errorf("the gate of %s did not log %q", name, drainedByActivator)
			}
		}
		if took >= 15*time.Second {
			t.Errorf("cluster down took %s: a quiet period ran", took)
		}
		if t.Failed() {
			dumpLines(t, u.stdout.String(), "podgate-activator", "a/podgate", "b/podgate", "a/app")
		}
	})
}

func kubectlPath(t *testing.T) string {
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Error(err)
	}
	return bin
}

// dumpLines logs the lines of out that contain any of subs.
func dumpLines(t *testing.T, out string, subs ...string) {
	for _, line := range strings.Split(out, "\n") {
		for _, s := range subs {
			if strings.Contains(line, s) {
				t.Log(line)
				break
			}
		}
	}
}

package cluster

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/knativebin"
)

// knativeWait bounds the install of the Knative stack on a warm cache
// and a Knative Service's first Ready: minutes on a loaded 2-core machine.
const knativeWait = 10 * time.Minute

// startKnative runs `podgate cluster up --knative` with the queue sidecar
// queue and waits until it prints the ingress.
func startKnative(t *testing.T, cidr, queue string) (*upProcess, string) {
	t.Helper()
	// Built (or found) before the cluster starts, so that the wait below
	// is for the install alone; cluster up finds the same cache.
	if _, err := knativebin.Dir(); err != nil {
		t.Fatal(err)
	}
	u := start(t, cidr, []string{"--knative", "--queue-proxy", queue, "--ingress", "127.0.0.1:0"})
	re := regexp.MustCompile(`podgate: Knative ingress \(Traefik\) on (http://127\.0\.0\.1:\d+)`)
	var ingress string
	eventually(t, knativeWait, "cluster up printing Knative's ingress", func() (bool, string) {
		select {
		case <-u.exited:
			t.Fatalf("cluster up exited before Knative was ready: %v\nstderr:\n%s", u.exitErr, u.stderr.String())
		default:
		}
		m := re.FindStringSubmatch(u.stderr.String())
		if m == nil {
			return false, "not yet"
		}
		ingress = m[1]
		return true, ""
	})
	return u, ingress
}

// ingressGet sends GET path with Host host to the ingress.
func ingressGet(ingress, host, path string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, ingress+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}, Timeout: 2 * time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// knativeService is a Knative Service of the test app, scaled as asked.
func knativeService(name, annotations string, containerConcurrency int) string {
	return fmt.Sprintf(`apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: %s
  namespace: default
spec:
  template:
    metadata:
      annotations:
%s
    spec:
      containerConcurrency: %d
      containers:
        - image: ghcr.io/podgate/testapp
          ports:
            - containerPort: 8080
`, name, annotations, containerConcurrency)
}

// revisionPods counts the running pods of a Knative Service's revisions
// (with terminating, those being deleted too: a terminating pod may
// still serve while it drains).
func (u *upProcess) revisionPods(t *testing.T, service string, terminating bool) int {
	t.Helper()
	pods, err := u.client.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{
		LabelSelector: labels.Set{"serving.knative.dev/service": service}.String()})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if (terminating || p.DeletionTimestamp == nil) && p.Status.Phase == "Running" {
			n++
		}
	}
	return n
}

// ingressLoad is clients sending requests through the ingress, one at a time
// each, until stop.
type ingressLoad struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	first      time.Time // the first 200
	failures   []string  // the first five failures
	done       chan struct{}
	once       sync.Once
	wg         sync.WaitGroup
}

func startLoad(ingress, host, path string, clients int) *ingressLoad {
	l := &ingressLoad{done: make(chan struct{})}
	for range clients {
		l.wg.Go(func() {
			for {
				select {
				case <-l.done:
					return
				default:
				}
				sent := time.Now()
				code, body, err := ingressGet(ingress, host, path)
				l.mu.Lock()
				if err == nil && code == http.StatusOK {
					l.ok.Add(1)
					if l.first.IsZero() {
						l.first = time.Now()
					}
				} else {
					l.failed.Add(1)
					if len(l.failures) < 5 {
						l.failures = append(l.failures, fmt.Sprintf("%d %q %v (sent at %s, answered after %s)", code, body, err,
							sent.Format("15:04:05.000"), time.Since(sent).Round(time.Millisecond)))
					}
				}
				l.mu.Unlock()
			}
		})
	}
	return l
}

// stop ends the load once the requests in flight are answered, and says
// when that was.
func (l *ingressLoad) stop() time.Time {
	l.once.Do(func() { close(l.done) })
	l.wg.Wait()
	return time.Now()
}

// podSamples is a Service's running pods over time: "+SECONDS:PODS" at
// the start and at each change.
type podSamples []string

func (s podSamples) String() string { return strings.Join(s, " ") }

// samplePods counts the running pods of service, terminating ones not
// counted, every half second from begin; the function it returns stops
// the sampling and gives the samples.
func (u *upProcess) samplePods(t *testing.T, service string, begin time.Time) func() podSamples {
	var samples podSamples
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		last := -1
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			pods, err := u.client.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{
				LabelSelector: labels.Set{"serving.knative.dev/service": service}.String()})
			if err == nil {
				n := 0
				for _, p := range pods.Items {
					if p.DeletionTimestamp == nil && p.Status.Phase == "Running" {
						n++
					}
				}
				if n != last {
					samples = append(samples, fmt.Sprintf("+%.1fs:%d", time.Since(begin).Seconds(), n))
					last = n
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	end := sync.OnceFunc(func() { close(stop); <-stopped })
	t.Cleanup(end) // a test that fails midway
	return func() podSamples {
		end()
		return samples
	}
}

// TestClusterUpKnative: `podgate cluster up --knative` gives real Knative
// Serving with real cluster networking and Traefik as its ingress, with
// podgate's gate as the queue sidecar and with Knative's own queue-proxy:
// a Knative Service turns Ready and answers through the ingress; inside
// its pod, cluster DNS names resolve and Services' ClusterIPs route; it
// scales from zero on the first request, up under load, and back to zero.
func TestClusterUpKnative(t *testing.T) {
	for _, tc := range []struct{ queue, cidr string }{
		{QueueProxyGate, "10.250.40.0/24"},
		{QueueProxyKnative, "10.250.41.0/24"},
	} {
		t.Run("queue sidecar "+tc.queue, func(t *testing.T) {
			// The two clusters side by side: most of each run is
			// waiting on Knative (Ready, the stable window, pods
			// draining). Figures to compare: -parallel 1.
			t.Parallel()
			u, ingress := startKnative(t, tc.cidr, tc.queue)
			// A short stable window (Knative's own config-autoscaler),
			// so scale-to-zero happens within the test's wait.
			u.kubectl(t, "-n", "knative-serving", "patch", "configmap", "config-autoscaler", "--type", "merge",
				"-p", `{"data":{"stable-window":"10s","scale-to-zero-grace-period":"5s","scale-to-zero-pod-retention-period":"0s"}}`)
			apply := func(yaml string) {
				t.Helper()
				f := t.TempDir() + "/ksvc.yaml"
				if err := os.WriteFile(f, []byte(yaml), 0o600); err != nil {
					t.Fatal(err)
				}
				u.kubectl(t, "apply", "-f", f)
			}
			apply(knativeService("hello", `        autoscaling.knative.dev/min-scale: "0"`, 0))
			u.kubectl(t, "wait", "--for=condition=Ready", "ksvc/hello", "--timeout="+knativeWait.String())
			host := "hello.default.example.com"

			t.Run("a Knative Service answers through the ingress", func(t *testing.T) {
				eventually(t, knativeWait, "a 200 from hello through the ingress", func() (bool, string) {
					code, body, err := ingressGet(ingress, host, "/")
					return code == http.StatusOK && strings.HasPrefix(body, "hello-"), fmt.Sprintf("%d %q %v", code, body, err)
				})
			})

			t.Run("inside the pod cluster DNS resolves and ClusterIPs route", func(t *testing.T) {
				code, body, err := ingressGet(ingress, host, "/resolve?name=kubernetes.default.svc.cluster.local")
				if err != nil || code != http.StatusOK || strings.TrimSpace(body) != "10.96.0.1" {
					t.Errorf("resolve kubernetes.default.svc.cluster.local in the pod: %d %q %v, want 10.96.0.1", code, body, err)
				}
				// The Service's own cluster-local name: CoreDNS, then
				// kube-proxy to Traefik's internal entrypoint, then Knative.
				code, body, err = ingressGet(ingress, host, "/fetch?url="+url.QueryEscape("http://hello.default.svc.cluster.local/"))
				if err != nil || code != http.StatusOK || !strings.HasPrefix(body, "200\nhello-") {
					t.Errorf("GET http://hello.default.svc.cluster.local/ from the pod: %d %q %v", code, body, err)
				}
			})

			t.Run("in an opted-in namespace the gate as queue container is adopted, Knative's queue-proxy left alone", func(t *testing.T) {
				u.adoptedRevisionPod(t, apply, ingress, tc.queue == QueueProxyGate)
			})

			t.Run("scales to zero after the stable window and back on the first request", func(t *testing.T) {
				eventually(t, knativeWait, "hello scaled to zero, its last pod gone", func() (bool, string) {
					n := u.revisionPods(t, "hello", true)
					return n == 0, strconv.Itoa(n) + " pods"
				})
				start := time.Now()
				code, body, err := ingressGet(ingress, host, "/")
				if err != nil || code != http.StatusOK || !strings.HasPrefix(body, "hello-") {
					t.Fatalf("first request at zero: %d %q %v", code, body, err)
				}
				t.Logf("queue %s: zero to first response %s", tc.queue, time.Since(start).Round(time.Millisecond))
			})

			t.Run("scales from zero to 4 pods or more under load and back to zero, losing no request", func(t *testing.T) {
				apply(knativeService("busy", `        autoscaling.knative.dev/target-burst-capacity: "0"`, 1))
				u.kubectl(t, "wait", "--for=condition=Ready", "ksvc/busy", "--timeout="+knativeWait.String())
				// Traefik reports a Knative Ingress ready before its routes
				// are loaded (its 404 meanwhile): the load starts once the
				// ingress routes the Service, and the Service is at zero.
				busy := "busy.default.example.com"
				eventually(t, knativeWait, "a 200 from busy through the ingress", func() (bool, string) {
					code, body, err := ingressGet(ingress, busy, "/")
					return code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
				})
				eventually(t, knativeWait, "busy scaled to zero, its last pod gone", func() (bool, string) {
					n := u.revisionPods(t, "busy", true)
					return n == 0, strconv.Itoa(n) + " pods"
				})
				begin := time.Now()
				timeline := u.samplePods(t, "busy", begin)
				load := startLoad(ingress, busy, "/slow?for=500ms", 8)
				t.Cleanup(func() { load.stop() })
				most := 0
				eventually(t, knativeWait, "busy scaled to 4 pods or more", func() (bool, string) {
					most = max(most, u.revisionPods(t, "busy", false))
					return most >= 4, fmt.Sprintf("%d pods at most, %d ok", most, load.ok.Load())
				})
				toFour := time.Since(begin)
				// The load goes on at 4 pods or more a while, then stops.
				time.Sleep(10 * time.Second)
				loadEnd := load.stop()
				eventually(t, knativeWait, "busy back to zero after the load", func() (bool, string) {
					n := u.revisionPods(t, "busy", true)
					return n == 0, strconv.Itoa(n) + " pods"
				})
				toZero := time.Since(loadEnd)
				samples := timeline()
				t.Logf("queue %s: 8 clients at zero: first response %s, 4 pods after %s; %d requests, %d failed (first: %q); "+
					"back to zero %s after the load; pods over time: %s",
					tc.queue, load.first.Sub(begin).Round(time.Millisecond), toFour.Round(100*time.Millisecond),
					load.ok.Load(), load.failed.Load(), load.failures, toZero.Round(100*time.Millisecond), samples)
				if tc.queue == QueueProxyGate && load.failed.Load() > 0 {
					t.Errorf("%d requests failed with the gate (first: %q)", load.failed.Load(), load.failures)
				}
			})
		})
	}
}

// adoptedRevisionPod runs a Knative Service of two containers, each with an
// HTTP readiness probe, in a namespace opted in to podgate (the label
// only), and checks its pod as the API server has it:
// adopted (gate true) — the queue container named by podgate, its
// readiness at 1 s × 1, the readiness gate True with the pod Ready — or
// left as Knative wrote it.
func (u *upProcess) adoptedRevisionPod(t *testing.T, apply func(string), ingress string, gate bool) {
	t.Helper()
	u.kubectl(t, "create", "namespace", "adopt")
	u.kubectl(t, "label", "namespace", "adopt", "podgate.dev/inject=enabled")
	apply(`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: two, namespace: adopt}
spec:
  template:
    metadata:
      annotations: {autoscaling.knative.dev/min-scale: "1"}
    spec:
      containers:
        - name: app
          image: ghcr.io/podgate/testapp
          ports: [{containerPort: 8080}]
          readinessProbe: {httpGet: {path: /readyz}, periodSeconds: 1}
        - name: side
          image: ghcr.io/podgate/testapp
          args: ["--port", "8090"]
          readinessProbe: {httpGet: {path: /readyz, port: 8090}, periodSeconds: 1}
`)
	u.kubectl(t, "wait", "-n", "adopt", "--for=condition=Ready", "ksvc/two", "--timeout="+knativeWait.String())
	eventually(t, knativeWait, "a 200 from two through the ingress", func() (bool, string) {
		code, body, err := ingressGet(ingress, "two.adopt.example.com", "/")
		return code == http.StatusOK && strings.HasPrefix(body, "two-"), fmt.Sprintf("%d %q %v", code, body, err)
	})
	pods, err := u.client.CoreV1().Pods("adopt").List(t.Context(), metav1.ListOptions{LabelSelector: "serving.knative.dev/service=two"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the revision's pods: %v (%d)", err, len(pods.Items))
	}
	pod := pods.Items[0]
	var queue *corev1.Container
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == contract.KnativeQueueContainerName {
			queue = &pod.Spec.Containers[i]
		}
	}
	if queue == nil {
		t.Fatalf("pod %s has no queue container", pod.Name)
	}
	env := map[string]string{}
	for _, e := range queue.Env {
		env[e.Name] = e.Value
	}
	gated := slices.Contains(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: contract.ContainersReadyCondition})
	if !gate {
		// Knative copies the serving container's readiness timing
		// (here 1 s × 3, the failure threshold defaulted).
		if gated || env[contract.EnvStatusSource] != "" || queue.ReadinessProbe.FailureThreshold != 3 {
			t.Errorf("Knative's queue-proxy was changed: readiness gates %v, %s=%q, readiness failure threshold %d",
				pod.Spec.ReadinessGates, contract.EnvStatusSource, env[contract.EnvStatusSource], queue.ReadinessProbe.FailureThreshold)
		}
		return
	}
	if got := env[contract.EnvReadinessContainers]; got != "app,side" {
		t.Errorf("%s = %q, want app,side", contract.EnvReadinessContainers, got)
	}
	if p := queue.ReadinessProbe; p.PeriodSeconds != 1 || p.FailureThreshold != 1 {
		t.Errorf("queue readiness %d s × %d, want 1 s × 1", p.PeriodSeconds, p.FailureThreshold)
	}
	if !gated {
		t.Errorf("no readiness gate %s: %v", contract.ContainersReadyCondition, pod.Spec.ReadinessGates)
	}
	var gateCond, ready corev1.ConditionStatus
	for _, c := range pod.Status.Conditions {
		switch c.Type {
		case contract.ContainersReadyCondition:
			gateCond = c.Status
		case corev1.PodReady:
			ready = c.Status
		}
	}
	if gateCond != corev1.ConditionTrue || ready != corev1.ConditionTrue {
		t.Errorf("pod %s: %s %q, Ready %q; want both True (the gate writes its condition through its node's status service)", pod.Name, contract.ContainersReadyCondition, gateCond, ready)
	}
}

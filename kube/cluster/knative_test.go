package cluster

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

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

			t.Run("scales up under load with containerConcurrency 1 and loses no request", func(t *testing.T) {
				apply(knativeService("busy", `        autoscaling.knative.dev/target-burst-capacity: "0"`, 1))
				u.kubectl(t, "wait", "--for=condition=Ready", "ksvc/busy", "--timeout="+knativeWait.String())
				// Traefik reports a Knative Ingress ready before its routes
				// are loaded (its 404 meanwhile): the load starts once the
				// ingress routes the Service.
				eventually(t, knativeWait, "a 200 from busy through the ingress", func() (bool, string) {
					code, body, err := ingressGet(ingress, "busy.default.example.com", "/")
					return code == http.StatusOK, fmt.Sprintf("%d %q %v", code, body, err)
				})
				var ok, failed atomic.Int64
				var mu sync.Mutex
				var failures []string
				stop := make(chan struct{})
				var wg sync.WaitGroup
				for range 8 {
					wg.Go(func() {
						for {
							select {
							case <-stop:
								return
							default:
							}
							code, body, err := ingressGet(ingress, "busy.default.example.com", "/slow?for=500ms")
							if err == nil && code == http.StatusOK {
								ok.Add(1)
								continue
							}
							failed.Add(1)
							mu.Lock()
							if len(failures) < 5 {
								failures = append(failures, fmt.Sprintf("%d %q %v", code, body, err))
							}
							mu.Unlock()
						}
					})
				}
				most := 0
				eventually(t, knativeWait, "busy scaled to 4 pods or more", func() (bool, string) {
					most = max(most, u.revisionPods(t, "busy", false))
					return most >= 4, fmt.Sprintf("%d pods at most, %d ok", most, ok.Load())
				})
				close(stop)
				wg.Wait()
				t.Logf("queue %s: %d requests, %d failed (first: %q), %d pods at most", tc.queue, ok.Load(), failed.Load(), failures, most)
				if tc.queue == QueueProxyGate && failed.Load() > 0 {
					t.Errorf("%d requests failed with the gate (first: %q)", failed.Load(), failures)
				}
			})
		})
	}
}

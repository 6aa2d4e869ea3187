package main

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/local/servingv1"
)

func portOf(ln net.Listener) string {
	_, p, _ := net.SplitHostPort(ln.Addr().String())
	return p
}

var servicePortCurl = regexp.MustCompile(`podgate: curl http://(127\.0\.0\.1:\d+)/ +# (\S+) on its own port`)

var frontDoorCurl = regexp.MustCompile(`podgate: curl -H 'Host: ([^']+)' http://(127\.0\.0\.1:\d+)/`)

func TestFrontDoorRoutesByHost(t *testing.T) {
	bin := podgateBinary(t)
	// One workload of each kind: their EndpointSlices are named
	// differently (a Knative Service's after its revision).
	others := runManifest(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
        ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
`)
	r := runStart(t, bin, "-f", "../../examples/hello.yaml", "-f", others,
		"--pod-cidr", "127.0.65.0/24", "--listen", "127.0.0.1:0", "--domain", "podgate.test",
		"--service-port", "shop/web=0", "--service-port", "hello=0")

	// The curl lines are printed once the pods are started.
	r.waitFor(r.errOut, regexp.MustCompile(`podgate: curl -H 'Host: solo\.default\.podgate\.test'`))
	hosts := map[string]string{}
	var door string
	for _, m := range frontDoorCurl.FindAllStringSubmatch(r.errOut(), -1) {
		hosts[m[1]] = m[2]
		door = m[2]
	}
	for _, h := range []string{"hello.default.podgate.test", "web.shop.podgate.test", "solo.default.podgate.test"} {
		if hosts[h] == "" {
			t.Fatalf("no curl line for host %s in:\n%s", h, r.errOut())
		}
	}

	podOf := func(prefix string) *corev1.Pod {
		return r.waitPod(prefix+"* ready", func(p *corev1.Pod) bool {
			return strings.HasPrefix(p.Name, prefix) && runPodReady(p)
		})
	}
	hello, web, solo := podOf("hello-00001-deployment-"), podOf("web-"), podOf("solo")

	client := &http.Client{Timeout: 60 * time.Second}
	get := func(t *testing.T, host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+door+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET with Host %s: %v", host, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct {
		name     string
		host     string
		wantCode int
		wantBody string
	}{
		{"a Knative Service's host reaches its revision's pod", "hello.default.podgate.test", 200, hello.Name},
		{"a Deployment's host reaches its pod in its namespace", "web.shop.podgate.test", 200, web.Name},
		{"a Pod's host reaches the pod", "solo.default.podgate.test", 200, solo.Name},
		{"the host ignores case and a port", "HELLO.default.podgate.test:80", 200, hello.Name},
		{"an unknown host gets 404 naming it", "nope.default.podgate.test", 404, `no service for host "nope.default.podgate.test"`},
		{"the default domain is not served under another", "hello.default.example.com", 404, "NAME.NAMESPACE.podgate.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, tc.host)
			if code != tc.wantCode || !strings.Contains(body, tc.wantBody) {
				t.Errorf("GET Host %s = %d %q, want %d containing %q", tc.host, code, body, tc.wantCode, tc.wantBody)
			}
		})
	}
	t.Run("a service port reaches its workload whatever the Host", func(t *testing.T) {
		ports := map[string]string{}
		for _, m := range servicePortCurl.FindAllStringSubmatch(r.errOut(), -1) {
			ports[m[2]] = m[1]
		}
		for workload, wantPod := range map[string]string{"Deployment/web": web.Name, "Service/hello": hello.Name} {
			addr := ports[workload]
			if addr == "" {
				t.Fatalf("no service-port curl line for %s in:\n%s", workload, r.errOut())
			}
			resp, err := client.Get("http://" + addr + "/")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !strings.Contains(string(body), wantPod) {
				t.Errorf("GET %s (%s) = %d %q, want 200 from %s", addr, workload, resp.StatusCode, body, wantPod)
			}
		}
	})
	t.Run("the Knative Service's status has the front door's URL and is Ready", func(t *testing.T) {
		r.waitService("hello", "Ready with the domain's URL", func(s *servingv1.Service) bool {
			c := s.Status.Condition("Ready")
			return s.Status.URL == "http://hello.default.podgate.test" && c != nil && c.Status == corev1.ConditionTrue
		})
	})
	client.CloseIdleConnections()

	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := r.exit(); code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0", code)
	}
	if strings.Contains(r.errOut(), "podgate: front door:") {
		t.Errorf("the front door did not shut down cleanly:\n%s", r.errOut())
	}
}

package knative

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/podgate/podgate/internal/k8sbin"
)

// A Knative Ingress as Knative's Route makes one, after the revision's
// Service: the service's public host and its cluster-local one, both to
// that Service. (Traefik marks an Ingress Ready even when its Service is
// missing and it could make no route: it writes the status of every
// Ingress of its class, whatever building the routes said.)
const kingress = `apiVersion: v1
kind: Service
metadata:
  name: hello-00001
  namespace: default
spec:
  ports:
  - name: http
    port: 80
    targetPort: 8012
---
apiVersion: networking.internal.knative.dev/v1alpha1
kind: Ingress
metadata:
  name: hello
  namespace: default
  annotations:
    networking.knative.dev/ingress.class: traefik.ingress.networking.knative.dev
spec:
  rules:
  - hosts: [hello.default.example.com]
    visibility: ExternalIP
    http:
      paths:
      - splits:
        - serviceName: hello-00001
          serviceNamespace: default
          servicePort: 80
          percent: 100
  - hosts: [hello.default.svc.cluster.local]
    visibility: ClusterLocal
    http:
      paths:
      - splits:
        - serviceName: hello-00001
          serviceNamespace: default
          servicePort: 80
          percent: 100
`

// Traefik with the ingress Step's arguments, as its ServiceAccount (the
// Step's RBAC), against a real API server with Knative's CRDs: it routes
// a Knative Ingress of its class (its API lists the routers) and writes
// the status Knative's Route waits for: Ready, with the private and public
// Services as load balancers. No request goes through it: its backends are
// ClusterIPs, which route nowhere without kube-proxy (and are no address
// of this machine's to send to).
func TestTraefikReconcilesAKnativeIngressAndWritesTheStatusKnativeWaitsFor(t *testing.T) {
	bin := stackBinary(t, BinTraefik)
	kubectl, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	cp := startControlPlane(t)
	steps := writeSteps(t, testOptions(t))
	k := Kubectl{Path: kubectl, Kubeconfig: cp.AdminKubeconfig()}
	for _, s := range []string{StepCRDs, StepIngress} {
		if err := k.Apply(t.Context(), steps[s]); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.WaitFor(t.Context(), steps[StepCRDs]); err != nil {
		t.Fatal(err)
	}
	kubeconfig := serviceAccountKubeconfig(t, k, IngressNamespace, "traefik")

	var d appsv1.Deployment
	kustomize(t, steps[StepIngress].Dir).get(t, "Deployment", IngressNamespace, IngressService, &d)
	web, internal, api := freePort(t), freePort(t), freePort(t)
	var args []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--entrypoints.web.address="):
			a = fmt.Sprintf("--entrypoints.web.address=127.0.0.1:%d", web)
		case strings.HasPrefix(a, "--entrypoints.web-internal.address="):
			a = fmt.Sprintf("--entrypoints.web-internal.address=127.0.0.1:%d", internal)
		case strings.HasPrefix(a, "--entrypoints.traefik.address="):
			a = fmt.Sprintf("--entrypoints.traefik.address=127.0.0.1:%d", api)
		}
		args = append(args, a)
	}
	// The API (no dashboard: a go build of Traefik has no web UI
	// assets) to list the routers.
	args = append(args, "--api=true", "--api.insecure=true", "--api.dashboard=false", "--log.level=DEBUG")
	var log syncBuffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &log, &log
	// Outside a pod: the provider takes KUBECONFIG when there is no
	// KUBERNETES_SERVICE_HOST.
	cmd.Env = append(withoutEnv("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"), "KUBECONFIG="+kubeconfig)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("Traefik said:\n%s", log.String())
		}
	})
	waitHTTP200(t, fmt.Sprintf("http://127.0.0.1:%d/ping", api), &log)

	obj := filepath.Join(t.TempDir(), "kingress.yaml")
	if err := os.WriteFile(obj, []byte(kingress), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := k.run(t.Context(), "apply", "-f", obj); err != nil {
		t.Fatal(err)
	}

	var st struct {
		Status struct {
			ObservedGeneration int64 `json:"observedGeneration"`
			Conditions         []struct {
				Type, Status string
			} `json:"conditions"`
			Public struct {
				Ingress []struct {
					DomainInternal string `json:"domainInternal"`
				} `json:"ingress"`
			} `json:"publicLoadBalancer"`
			Private struct {
				Ingress []struct {
					DomainInternal string `json:"domainInternal"`
				} `json:"ingress"`
			} `json:"privateLoadBalancer"`
		} `json:"status"`
	}
	ready := func() bool {
		for _, c := range st.Status.Conditions {
			if c.Type == "Ready" {
				return c.Status == "True"
			}
		}
		return false
	}
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := k.run(t.Context(), "get", "-n", "default", "ingresses.networking.internal.knative.dev", "hello", "-o", "json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &st); err != nil {
			t.Fatal(err)
		}
		if ready() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Knative Ingress is not Ready within a minute: %+v", st.Status)
		}
		time.Sleep(200 * time.Millisecond)
	}
	wantPublic := IngressService + "." + IngressNamespace + ".svc.cluster.local"
	wantPrivate := IngressInternalService + "." + IngressNamespace + ".svc.cluster.local"
	if p := st.Status.Public.Ingress; len(p) != 1 || p[0].DomainInternal != wantPublic {
		t.Errorf("public load balancer %+v, want %s", p, wantPublic)
	}
	if p := st.Status.Private.Ingress; len(p) != 1 || p[0].DomainInternal != wantPrivate {
		t.Errorf("private load balancer %+v, want %s", p, wantPrivate)
	}
	for _, c := range []string{"NetworkConfigured", "LoadBalancerReady"} {
		found := false
		for _, got := range st.Status.Conditions {
			found = found || (got.Type == c && got.Status == "True")
		}
		if !found {
			t.Errorf("condition %s not True: %+v", c, st.Status.Conditions)
		}
	}

	// The routers: the public host on the public entrypoint, the
	// cluster-local one on the private (Traefik applies a new
	// configuration after its providers' throttle).
	want := []string{"hello.default.example.com on web", "hello.default.svc.cluster.local on web-internal"}
	for deadline := time.Now().Add(30 * time.Second); ; {
		found, body := knativeRouters(t, api)
		missing := false
		for _, w := range want {
			missing = missing || !found[w]
		}
		if !missing {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("routers %v within 30 s, want %q; Traefik's API says:\n%s", found, want, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// knativeRouters are the Knative provider's routers Traefik's API (on
// port api) lists, as "HOST on ENTRYPOINTS", for the test's hosts.
func knativeRouters(t *testing.T, api int) (map[string]bool, []byte) {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/api/http/routers", api))
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var routers []struct {
		Rule        string   `json:"rule"`
		EntryPoints []string `json:"entryPoints"`
		Provider    string   `json:"provider"`
	}
	if err := json.Unmarshal(body, &routers); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	found := map[string]bool{}
	for _, r := range routers {
		if r.Provider != "knative" {
			continue
		}
		for _, host := range []string{"hello.default.example.com", "hello.default.svc.cluster.local"} {
			if strings.Contains(r.Rule, host) {
				found[host+" on "+strings.Join(r.EntryPoints, ",")] = true
			}
		}
	}
	return found, body
}

// serviceAccountKubeconfig is a kubeconfig for ServiceAccount
// namespace/name of the cluster k administers: a token of its, the
// admin's server and CA.
func serviceAccountKubeconfig(t *testing.T, k Kubectl, namespace, name string) string {
	t.Helper()
	token, err := k.run(t.Context(), "create", "token", "-n", namespace, name, "--duration=1h")
	if err != nil {
		t.Fatal(err)
	}
	server, err := k.run(t.Context(), "config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}")
	if err != nil {
		t.Fatal(err)
	}
	ca, err := k.run(t.Context(), "config", "view", "--raw", "--minify", "-o", "jsonpath={.clusters[0].cluster.certificate-authority-data}")
	if err != nil {
		t.Fatal(err)
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
    token: %s
contexts:
- name: c
  context:
    cluster: c
    user: u
current-context: c
`, server, ca, strings.TrimSpace(token))
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// withoutEnv is this process's environment without the named variables.
func withoutEnv(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		keep := true
		for _, n := range names {
			keep = keep && !strings.HasPrefix(kv, n+"=")
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	admissionclient "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	appsclient "k8s.io/client-go/kubernetes/typed/apps/v1"
	coreclient "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/admission/inject"
	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/controlplane"
)

// cluster is a real control plane with podgate's webhook objects from
// kube/deploy/base applied, the webhook configurations pointed at a webhook
// running in this process.
type cluster struct {
	cp         *controlplane.ControlPlane
	admin      *rest.Config
	core       *coreclient.CoreV1Client
	apps       *appsclient.AppsV1Client
	admission  *admissionclient.AdmissionregistrationV1Client
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
	// webhookRest is the webhook's own identity: the ServiceAccount of
	// kube/deploy/base with its least-privilege RBAC.
	webhookRest *rest.Config
}

// eventually polls cond until it holds, failing after timeout with its
// last reason.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, timeout, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func kubectl(t *testing.T, cp *controlplane.ControlPlane, stdin []byte, args ...string) []byte {
	t.Helper()
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"--kubeconfig", cp.AdminKubeconfig()}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out
}

// buildBase builds kube/deploy/base with kubectl's kustomize: the webhook
// configurations, and every other object as YAML.
func buildBase(t *testing.T) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration, [][]byte) {
	t.Helper()
	bin, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	built, err := exec.Command(bin, "kustomize", "../../kube/deploy/base").Output()
	if err != nil {
		t.Fatalf("kubectl kustomize ../deploy/base: %v", err)
	}
	var mutating *admissionregistrationv1.MutatingWebhookConfiguration
	var validating *admissionregistrationv1.ValidatingWebhookConfiguration
	var others [][]byte
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(built), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		js, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		switch obj["kind"] {
		case "MutatingWebhookConfiguration":
			mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(js, mutating)
		case "ValidatingWebhookConfiguration":
			validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.UnmarshalStrict(js, validating)
		default:
			others = append(others, js)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if mutating == nil || validating == nil || len(others) < 8 {
		t.Fatalf("deploy/base built to %d objects and configurations %v %v", len(others), mutating != nil, validating != nil)
	}
	return mutating, validating, others
}

// startCluster starts the control plane and applies kube/deploy/base as
// kustomize builds it; the webhook configurations are kept back, to be
// created pointing at a webhook in this process.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	c := &cluster{cp: cp, admin: cp.AdminConfig()}
	c.core = coreclient.NewForConfigOrDie(c.admin)
	c.apps = appsclient.NewForConfigOrDie(c.admin)
	c.admission = admissionclient.NewForConfigOrDie(c.admin)

	var others [][]byte
	c.mutating, c.validating, others = buildBase(t)
	kubectl(t, cp, bytes.Join(others, []byte("---\n")), "apply", "-f", "-")

	// The webhook's own identity: a token of its ServiceAccount.
	tok, err := c.core.ServiceAccounts(DefaultNamespace).CreateToken(t.Context(), "podgate-webhook",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.webhookRest = &rest.Config{Host: c.admin.Host, BearerToken: tok.Status.Token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: c.admin.CAFile, CAData: c.admin.CAData}}
	return c
}

// pointAt creates (or updates) the webhook configurations of kube/deploy/base
// with every clientConfig a URL on addr instead of the Service: the API
// server runs on this host's loopback, as the webhook does.
func (c *cluster) pointAt(t *testing.T, addr string) {
	t.Helper()
	url := func(cc admissionregistrationv1.WebhookClientConfig, bundle []byte) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + addr + *cc.Service.Path), CABundle: bundle}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		m := c.mutating.DeepCopy()
		cur, err := c.admission.MutatingWebhookConfigurations().Get(t.Context(), m.Name, metav1.GetOptions{})
		for i := range m.Webhooks {
			var bundle []byte
			if err == nil {
				bundle = cur.Webhooks[i].ClientConfig.CABundle
			}
			m.Webhooks[i].ClientConfig = url(m.Webhooks[i].ClientConfig, bundle)
		}
		if apierrors.IsNotFound(err) {
			_, err = c.admission.MutatingWebhookConfigurations().Create(t.Context(), m, metav1.CreateOptions{})
			return err
		} else if err != nil {
			return err
		}
		m.ResourceVersion = cur.ResourceVersion
		_, err = c.admission.MutatingWebhookConfigurations().Update(t.Context(), m, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		v := c.validating.DeepCopy()
		cur, err := c.admission.ValidatingWebhookConfigurations().Get(t.Context(), v.Name, metav1.GetOptions{})
		for i := range v.Webhooks {
			var bundle []byte
			if err == nil {
				bundle = cur.Webhooks[i].ClientConfig.CABundle
			}
			v.Webhooks[i].ClientConfig = url(v.Webhooks[i].ClientConfig, bundle)
		}
		if apierrors.IsNotFound(err) {
			_, err = c.admission.ValidatingWebhookConfigurations().Create(t.Context(), v, metav1.CreateOptions{})
			return err
		} else if err != nil {
			return err
		}
		v.ResourceVersion = cur.ResourceVersion
		_, err = c.admission.ValidatingWebhookConfigurations().Update(t.Context(), v, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// bundles are the caBundles of every webhook of both configurations.
func (c *cluster) bundles(t *testing.T) [][]byte {
	t.Helper()
	m, err := c.admission.MutatingWebhookConfigurations().Get(t.Context(), DefaultConfiguration, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.admission.ValidatingWebhookConfigurations().Get(t.Context(), DefaultConfiguration, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, w := range m.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	for _, w := range v.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

// startWebhook runs a webhook in this process, as the ServiceAccount of
// kube/deploy/base, on a free loopback port; it stops at the test's end or
// when stop is called.
func (c *cluster) startWebhook(t *testing.T, name string, cfg Config) (*Server, func()) {
	t.Helper()
	cfg.Rest = rest.CopyConfig(c.webhookRest)
	cfg.Listen = "127.0.0.1:0"
	cfg.CertHosts = []string{"127.0.0.1"}
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo})).With("replica", name)
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			<-s.Done()
			if err := s.Err(); err != nil {
				t.Errorf("webhook %s: %v", name, err)
			}
		})
	}
	t.Cleanup(stop)
	return s, stop
}

// namespace creates a namespace with labels and waits for its default
// ServiceAccount (pods cannot be created before it exists).
func (c *cluster) namespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if _, err := c.core.Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	c.label(t, name, labels)
	eventually(t, time.Minute, "the default ServiceAccount of "+name, func() (bool, string) {
		_, err := c.core.ServiceAccounts(name).Get(t.Context(), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

func (c *cluster) label(t *testing.T, namespace string, labels map[string]string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ns, err := c.core.Namespaces().Get(t.Context(), namespace, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		for k, v := range labels {
			ns.Labels[k] = v
		}
		_, err = c.core.Namespaces().Update(t.Context(), ns, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "app", Image: "ghcr.io/podgate/testapp",
			Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intOrString(8080)},
			}},
		}}},
	}
}

// gate returns the injected gate container, nil if there is none.
func gate(p *corev1.Pod) *corev1.Container {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == contract.GateContainerName {
			return &p.Spec.InitContainers[i]
		}
	}
	return nil
}

func env(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// wantInjected checks the pod against podgate inject's pod for the same
// manifest: the gate sidecar with its environment, the pod's readiness
// gates and annotations.
func wantInjected(t *testing.T, got *corev1.Pod, sent *corev1.Pod) {
	t.Helper()
	g := gate(got)
	if g == nil {
		t.Fatalf("pod %s/%s has no gate: init containers %v", got.Namespace, got.Name, got.Spec.InitContainers)
	}
	sent = sent.DeepCopy()
	sent.Namespace = got.Namespace
	sent.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	js, err := yaml.Marshal(sent)
	if err != nil {
		t.Fatal(err)
	}
	w, problems, err := loadWorkload(js, got.Namespace)
	if err != nil || len(problems) > 0 {
		t.Fatal(err, problems)
	}
	want, err := inject.Gate(w, inject.Options{AdminToken: contract.AdminTokenOf(g)})
	if err != nil {
		t.Fatal(err)
	}
	wg := gate(want.Object().(*corev1.Pod))
	if g.Image != wg.Image || !slices.Equal(g.Command, wg.Command) || !slices.Equal(g.Args, wg.Args) {
		t.Errorf("gate %s %v %v, want %s %v %v", g.Image, g.Command, g.Args, wg.Image, wg.Command, wg.Args)
	}
	if g.RestartPolicy == nil || *g.RestartPolicy != corev1.ContainerRestartPolicyAlways || got.Spec.InitContainers[0].Name != contract.GateContainerName {
		t.Error("the gate is not the first init container with restartPolicy Always (a native sidecar)")
	}
	for _, e := range wg.Env {
		if e.ValueFrom == nil && env(g, e.Name) != e.Value {
			t.Errorf("gate env %s=%q, want %q", e.Name, env(g, e.Name), e.Value)
		}
	}
	if ns := env(g, "SERVING_NAMESPACE"); ns != got.Namespace {
		t.Errorf("SERVING_NAMESPACE %q, want the pod's namespace %q", ns, got.Namespace)
	}
	wantPod := want.Object().(*corev1.Pod)
	if !slices.Equal(got.Spec.ReadinessGates, wantPod.Spec.ReadinessGates) {
		t.Errorf("readiness gates %v, want podgate inject's %v", got.Spec.ReadinessGates, wantPod.Spec.ReadinessGates)
	}
	for k, v := range wantPod.Annotations {
		if got.Annotations[k] != v {
			t.Errorf("annotation %s=%q, want %q", k, got.Annotations[k], v)
		}
	}
}

// collectWarnings is a client-go warning handler that keeps what the
// API server relays.
type collectWarnings struct {
	mu   sync.Mutex
	msgs []string
}

func (c *collectWarnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msg)
}

// dialCert dials addr and returns the certificate it serves.
func dialCert(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

const knativeCRD = `
# A stand-in for Knative Serving's CRD: the webhook needs only the API.
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: services.serving.knative.dev
spec:
  group: serving.knative.dev
  names: {kind: Service, listKind: ServiceList, plural: services, singular: service, shortNames: [ksvc]}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
`

func TestTheWebhookOnARealControlPlane(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()
	kubectl(t, c.cp, []byte(knativeCRD), "apply", "-f", "-")
	kubectl(t, c.cp, nil, "wait", "--for=condition=Established", "--timeout=60s", "crd/services.serving.knative.dev")

	// The deployment's Secret is empty; the webhook fills it.
	s, stop := c.startWebhook(t, "a", Config{})
	c.pointAt(t, s.Addr().String())
	eventually(t, 30*time.Second, "the caBundle in every webhook", func() (bool, string) {
		secret, err := c.core.Secrets(DefaultNamespace).Get(ctx, DefaultSecret, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i, b := range c.bundles(t) {
			if !bytes.Equal(b, secret.Data[secretBundle]) {
				return false, fmt.Sprintf("webhook %d has a caBundle of %d bytes", i, len(b))
			}
		}
		return s.Ready(), "not ready"
	})
	if !s.KnativeServices() {
		t.Fatal("the Knative Services webhook is not registered though the CRD exists")
	}
	// Whether the certificate verifies with the bundle, as the API server
	// verifies it.
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.bundles(t)[0])
	if _, err := dialCert(t, s.Addr().String()).Verify(x509.VerifyOptions{Roots: pool, DNSName: "podgate-webhook.podgate-system.svc"}); err != nil {
		t.Fatalf("the served certificate does not verify for the Service name with the caBundle: %v", err)
	}

	c.namespace(t, "opted", map[string]string{InjectLabel: InjectEnabled})
	c.namespace(t, "plain", nil)
	// Even labelled, these two are never touched.
	c.label(t, KubeSystem, map[string]string{InjectLabel: InjectEnabled})
	c.label(t, DefaultNamespace, map[string]string{InjectLabel: InjectEnabled})
	enabled := map[string]string{InjectLabel: InjectEnabled}

	create := func(t *testing.T, ns string, p *corev1.Pod) *corev1.Pod {
		t.Helper()
		got, err := c.core.Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	t.Run("a pod in an opted-in namespace is injected, and admitting it again changes nothing", func(t *testing.T) {
		sent := testPod("web", nil)
		got := create(t, "opted", sent)
		wantInjected(t, got, sent)
		// The gate reads its pod from the API server: it needs the
		// service-account token, which the API server's ServiceAccount
		// admission mounts into the container a webhook added, as it
		// runs again after a webhook changed the pod.
		if !slices.ContainsFunc(gate(got).VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount"
		}) {
			t.Errorf("the gate does not mount the service-account token: %v", gate(got).VolumeMounts)
		}

		again := got.DeepCopy()
		again.ObjectMeta = metav1.ObjectMeta{Name: "web-again", Labels: got.Labels, Annotations: got.Annotations}
		again.Status = corev1.PodStatus{}
		readmitted := create(t, "opted", again)
		if !equalSpecs(readmitted.Spec, got.Spec) {
			a, _ := yaml.Marshal(got.Spec)
			b, _ := yaml.Marshal(readmitted.Spec)
			t.Fatalf("re-admission changed the spec:\n--- first\n%s\n--- again\n%s", a, b)
		}
	})

	t.Run("a pod labelled in a plain namespace is injected", func(t *testing.T) {
		sent := testPod("labelled", enabled)
		wantInjected(t, create(t, "plain", sent), sent)
	})

	t.Run("a Deployment's pods are injected one by one", func(t *testing.T) {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](2),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
					Spec:       testPod("", nil).Spec,
				},
			},
		}
		if _, err := c.apps.Deployments("opted").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pods []corev1.Pod
		eventually(t, time.Minute, "2 pods of the Deployment", func() (bool, string) {
			list, err := c.core.Pods("opted").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err.Error()
			}
			pods = list.Items
			return len(pods) == 2, fmt.Sprintf("%d pods", len(pods))
		})
		for i := range pods {
			sent := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pods[i].Name, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
			wantInjected(t, &pods[i], sent)
		}
	})

	t.Run("what is never injected", func(t *testing.T) {
		tests := []struct {
			name, namespace string
			labels          map[string]string
		}{
			{"a plain pod in a plain namespace", "plain", nil},
			{"a pod that opted out of an opted-in namespace", "opted", map[string]string{InjectLabel: InjectDisabled}},
			{"a labelled pod in a labelled kube-system", KubeSystem, enabled},
			{"a labelled pod in podgate's own labelled namespace", DefaultNamespace, enabled},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				got := create(t, tt.namespace, testPod(fmt.Sprintf("untouched-%d", i), tt.labels))
				if g := gate(got); g != nil || len(got.Spec.InitContainers) != 0 {
					t.Errorf("injected: %v", got.Spec.InitContainers)
				}
			})
		}
	})

	t.Run("invalid objects are refused with podgate validate's message", func(t *testing.T) {
		// The API server checks a probe port's syntax only (and its own
		// validation runs before validating webhooks): a name that no
		// port has is podgate's problem to find.
		bad := testPod("bad", nil)
		bad.Spec.Containers[0].Ports[0].Name = "http"
		bad.Spec.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromString("admin")
		badDeployment := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "bad"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bad"}}, Spec: bad.Spec},
			},
		}
		knative := readManifest(t, "../testdata/invalid/knative-timeout.yaml")
		dyn := dynamic.NewForConfigOrDie(c.admin)
		tests := []struct {
			name, webhook, manifest string
			create                  func() error
		}{
			{"a Pod", "namespace.pods.validate.podgate.dev", manifestOf(t, "Pod", bad), func() error {
				_, err := c.core.Pods("opted").Create(ctx, bad, metav1.CreateOptions{})
				return err
			}},
			{"a Deployment", "namespace.deployments.validate.podgate.dev", manifestOf(t, "Deployment", badDeployment), func() error {
				_, err := c.apps.Deployments("opted").Create(ctx, badDeployment, metav1.CreateOptions{})
				return err
			}},
			{"a Knative Service", "namespace.knative-services.validate.podgate.dev", string(knative), func() error {
				var u unstructured.Unstructured
				if err := yaml.Unmarshal(knative, &u.Object); err != nil {
					return err
				}
				_, err := dyn.Resource(schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}).
					Namespace("opted").Create(ctx, &u, metav1.CreateOptions{})
				return err
			}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := tt.create()
				if !apierrors.IsInvalid(err) {
					t.Fatalf("got %v, want 422 Invalid", err)
				}
				want := fmt.Sprintf("admission webhook %q denied the request: %s", tt.webhook, strings.Join(validateLines(t, tt.manifest), "\n"))
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error:\n%v\nwant it to say:\n%s", err, want)
				}
				t.Logf("the client sees: %v", err)
			})
		}
		t.Run("kubectl apply", func(t *testing.T) {
			bin, err := k8sbin.Path(k8sbin.Kubectl)
			if err != nil {
				t.Fatal(err)
			}
			manifest := manifestOf(t, "Deployment", badDeployment)
			cmd := exec.Command(bin, "--kubeconfig", c.cp.AdminKubeconfig(), "apply", "-n", "opted", "-f", "-")
			cmd.Stdin = strings.NewReader(manifest)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("kubectl apply succeeded:\n%s", out)
			}
			// kubectl prints an Invalid error's causes: field path and
			// message, as for the API server's own validation.
			line := validateLines(t, manifest)[0]
			want := `The Deployment "bad" is invalid: ` + strings.TrimPrefix(line, "Deployment/bad: ")
			if !strings.Contains(string(out), want) {
				t.Errorf("kubectl apply says:\n%s\nwant:\n%s", out, want)
			}
			t.Logf("kubectl apply says: %s", out)
		})
	})

	t.Run("podgate's warnings are admission warnings", func(t *testing.T) {
		warnings := &collectWarnings{}
		cfg := rest.CopyConfig(c.admin)
		cfg.WarningHandlerWithContext = warnings
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "exec-liveness"},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "exec"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "exec"}}, Spec: testPod("", nil).Spec},
			},
		}
		d.Spec.Template.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		if _, err := appsclient.NewForConfigOrDie(cfg).Deployments("opted").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		want := "Deployment/exec-liveness: spec.template.spec.containers[0].livenessProbe: exec probes stay with the kubelet/node agent, so the gate learns of a failure only when the container restarts"
		warnings.mu.Lock()
		defer warnings.mu.Unlock()
		if !slices.Contains(warnings.msgs, want) {
			t.Errorf("warnings %q, want %q", warnings.msgs, want)
		}
		d.Name = "exec-liveness-kubectl"
		bin, err := k8sbin.Path(k8sbin.Kubectl)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "--kubeconfig", c.cp.AdminKubeconfig(), "apply", "-n", "opted", "-f", "-")
		cmd.Stdin = strings.NewReader(manifestOf(t, "Deployment", d))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl apply: %v\n%s", err, out)
		}
		if want := "Warning: " + strings.Replace(want, "exec-liveness", "exec-liveness-kubectl", 1); !strings.Contains(string(out), want) {
			t.Errorf("kubectl apply says:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("the webhook's identity has only its rights", func(t *testing.T) {
		core := coreclient.NewForConfigOrDie(c.webhookRest)
		for what, err := range map[string]error{
			"list Secrets of its namespace": func() error {
				_, err := core.Secrets(DefaultNamespace).List(ctx, metav1.ListOptions{})
				return err
			}(),
			"read another Secret": func() error {
				_, err := core.Secrets(KubeSystem).Get(ctx, "anything", metav1.GetOptions{})
				return err
			}(),
			"read pods": func() error {
				_, err := core.Pods("opted").List(ctx, metav1.ListOptions{})
				return err
			}(),
		} {
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s: %v, want forbidden", what, err)
			}
		}
	})

	t.Run("admission latency", func(t *testing.T) {
		const n = 30
		var opted, plain []time.Duration
		for i := range n {
			for _, ns := range []string{"opted", "plain"} {
				begin := time.Now()
				create(t, ns, testPod(fmt.Sprintf("latency-%d", i), nil))
				if ns == "opted" {
					opted = append(opted, time.Since(begin))
				} else {
					plain = append(plain, time.Since(begin))
				}
			}
		}
		t.Logf("pod create, %d each, client to stored: opted in (mutating + validating webhook) p50 %s p90 %s; not opted in p50 %s p90 %s",
			n, percentile(opted, 50), percentile(opted, 90), percentile(plain, 50), percentile(plain, 90))
	})

	t.Run("a webhook that is down blocks only what opted in", func(t *testing.T) {
		stop()
		tests := []struct {
			name, namespace string
			labels          map[string]string
			refusedBy       string
		}{
			{"kube-system, labelled", KubeSystem, enabled, ""},
			{"a plain namespace", "plain", nil, ""},
			{"podgate's own namespace", DefaultNamespace, nil, ""},
			{"an opted-in namespace", "opted", nil, "namespace.inject.podgate.dev"},
			{"a labelled pod", "plain", enabled, "pod.inject.podgate.dev"},
		}
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := c.core.Pods(tt.namespace).Create(ctx, testPod(fmt.Sprintf("down-%d", i), tt.labels), metav1.CreateOptions{})
				if tt.refusedBy == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				want := fmt.Sprintf("failed calling webhook %q", tt.refusedBy)
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "connection refused") {
					t.Fatalf("got %v, want an error saying %s: … connection refused", err, want)
				}
				t.Logf("the client sees: %v", err)
			})
		}
		t.Run("a Deployment in an opted-in namespace (failurePolicy Ignore)", func(t *testing.T) {
			d := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "while-down"},
				Spec: appsv1.DeploymentSpec{
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "while-down"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "while-down"}}, Spec: testPod("", nil).Spec},
				},
			}
			if _, err := c.apps.Deployments("opted").Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	})

	t.Run("replicas agree on the certificates, and rotation keeps admission working", func(t *testing.T) {
		// Start over from an empty Secret, with lifetimes of seconds.
		// The replicas write the Secret too: on a conflict, read it again.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			secret, err := c.core.Secrets(DefaultNamespace).Get(ctx, DefaultSecret, metav1.GetOptions{})
			if err != nil {
				return err
			}
			secret.Data = nil
			_, err = c.core.Secrets(DefaultNamespace).Update(ctx, secret, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		short := Config{CALifetime: 24 * time.Second, CertLifetime: 6 * time.Second, SyncPeriod: 300 * time.Millisecond}
		var b, d *Server
		var wg sync.WaitGroup
		wg.Go(func() { b, _ = c.startWebhook(t, "b", short) })
		wg.Go(func() { d, _ = c.startWebhook(t, "c", short) })
		wg.Wait()
		if b == nil || d == nil {
			t.FailNow()
		}
		if !b.Certificate().Equal(d.Certificate()) {
			t.Fatal("two replicas started together serve different certificates")
		}
		c.pointAt(t, b.Addr().String())

		first := dialCert(t, b.Addr().String())
		serials, issuers := map[string]bool{}, map[string]bool{}
		maxTrusted := 0
		begin := time.Now()
		for i := 0; time.Since(begin) < 22*time.Second; i++ {
			p := create(t, "opted", testPod(fmt.Sprintf("rotation-%d", i), nil))
			if gate(p) == nil {
				t.Fatalf("pod %s not injected", p.Name)
			}
			cert := dialCert(t, b.Addr().String())
			serials[cert.SerialNumber.String()] = true
			issuers[cert.Issuer.CommonName] = true
			maxTrusted = max(maxTrusted, bytes.Count(c.bundles(t)[0], []byte("BEGIN CERTIFICATE")))
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("in %s: %d serving certificates from %d CAs, up to %d CAs in the bundle", time.Since(begin).Round(time.Second), len(serials), len(issuers), maxTrusted)
		if len(serials) < 3 || len(issuers) < 2 || maxTrusted < 2 {
			t.Errorf("want several serving certificates (%d), a second CA (%d) and a bundle with both (%d)", len(serials), len(issuers), maxTrusted)
		}
		if dialCert(t, b.Addr().String()).Equal(first) {
			t.Error("the served certificate never changed")
		}
		eventually(t, 10*time.Second, "the other replica serving the same certificate", func() (bool, string) {
			return d.Certificate().Equal(b.Certificate()), "different"
		})
	})

	t.Run("without its Secret the webhook says what to do", func(t *testing.T) {
		if err := c.core.Secrets(DefaultNamespace).Delete(ctx, DefaultSecret, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := Start(ctx, Config{Rest: rest.CopyConfig(c.webhookRest), Listen: "127.0.0.1:0"})
		if err == nil || !strings.Contains(err.Error(), "the Secret podgate-webhook-certs does not exist and podgate may not create it (deploy/base/webhook ships it empty)") {
			t.Fatalf("got %v", err)
		}
	})
}

// equalSpecs compares pod specs as stored.
func equalSpecs(a, b corev1.PodSpec) bool {
	ja, _ := yaml.Marshal(a)
	jb, _ := yaml.Marshal(b)
	return bytes.Equal(ja, jb)
}

func intOrString(port int32) intstr.IntOrString { return intstr.FromInt32(port) }

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[(len(s)-1)*p/100].Round(10 * time.Microsecond)
}

func readManifest(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// manifestOf writes obj as the manifest `podgate validate` would read.
func manifestOf(t *testing.T, kind string, obj any) string {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	apiVersion := "v1"
	if kind == "Deployment" {
		apiVersion = "apps/v1"
	}
	return fmt.Sprintf("apiVersion: %s\nkind: %s\n%s", apiVersion, kind, b)
}

// validateLines is what `podgate validate` prints for the manifest, each
// line without its file and document.
func validateLines(t *testing.T, manifest string) []string {
	t.Helper()
	m, err := workload.Load(strings.NewReader(manifest), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, w := range m.Workloads {
		w.Namespace = "opted"
		for _, p := range w.Problems(validation.Validate(w)) {
			lines = append(lines, problemLine(p))
		}
	}
	if len(lines) == 0 {
		t.Fatal("podgate validate finds nothing wrong")
	}
	return lines
}

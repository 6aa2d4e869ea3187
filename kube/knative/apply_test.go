package knative

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/internal/k8sbin"
	"github.com/podgate/podgate/kube/controlplane"
)

// The Steps as the lead's `cluster up --knative` applies them, against a
// real API server (no node: nothing runs, so only the CRDs are waited
// for): the API server accepts every object of every Step, in order, and
// again (a second apply changes nothing it refuses: Knative's webhook
// configurations, applied but not served, do not yet intercept the
// ConfigMaps).
func TestTheAPIServerAcceptsEveryStepInOrderAndAgain(t *testing.T) {
	kubectl, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := controlplane.Start(t.Context(), controlplane.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	opts := testOptions(t)
	opts.ServiceCIDR = controlplane.DefaultServiceCIDR
	steps, err := Write(opts)
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	k := Kubectl{Path: kubectl, Kubeconfig: cp.AdminKubeconfig(), Progress: &progress}
	for round := 1; round <= 2; round++ {
		for _, s := range steps {
			if err := k.Apply(t.Context(), s); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			if s.Dir == steps[1].Dir {
				if err := k.WaitFor(t.Context(), s); err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
			}
		}
	}
	t.Logf("%s", progress.String())
	// What the later Steps' waits name exists, as do the objects the
	// ordering is about.
	for _, obj := range []string{
		"-n kube-system daemonset/kube-proxy", "-n kube-system deployment/coredns", "-n kube-system service/kube-dns",
		"-n knative-serving deployment/webhook", "-n knative-serving deployment/controller",
		"-n knative-serving deployment/activator", "-n knative-serving deployment/autoscaler",
		"-n knative-serving configmap/config-deployment", "-n knative-serving certificates.networking.internal.knative.dev/routing-serving-certs",
		"-n knative-serving images.caching.internal.knative.dev/queue-proxy",
		"-n knative-serving horizontalpodautoscaler/activator",
		"validatingwebhookconfiguration/config.webhook.serving.knative.dev",
		"-n podgate-ingress deployment/traefik", "-n podgate-ingress service/traefik", "-n podgate-ingress service/traefik-internal",
	} {
		if _, err := k.run(t.Context(), append([]string{"get"}, strings.Fields(obj)...)...); err != nil {
			t.Error(err)
		}
	}
	// Pods are admitted too (a second admission after the apply's: the
	// priority classes, the service accounts): every Deployment's
	// ReplicaSet makes its pod, Pending with no node to run it.
	for _, d := range []struct{ ns, selector string }{
		{"kube-system", "k8s-app=kube-dns"},
		{Namespace, "app=webhook"}, {Namespace, "app=controller"},
		{Namespace, "app=autoscaler"}, {Namespace, "app=activator"},
		{IngressNamespace, "app=traefik"},
	} {
		for deadline := time.Now().Add(time.Minute); ; {
			out, err := k.run(t.Context(), "get", "pods", "-n", d.ns, "-l", d.selector, "-o", "name")
			if err == nil && strings.TrimSpace(out) != "" {
				break
			}
			if time.Now().After(deadline) {
				events, _ := k.run(t.Context(), "get", "events", "-n", d.ns)
				t.Errorf("no pod of %s in %s within a minute (%v); events:\n%s", d.selector, d.ns, err, events)
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	out, err := k.run(t.Context(), "get", "-n", "kube-system", "service", "kube-dns", "-o", "jsonpath={.spec.clusterIP}")
	if err != nil || out != "10.96.0.10" {
		t.Errorf("kube-dns's ClusterIP %q (%v), want 10.96.0.10", out, err)
	}
	out, err = k.run(t.Context(), "get", "-n", "knative-serving", "configmap", "config-deployment", "-o", "jsonpath={.data.queue-sidecar-image}")
	if err != nil || out != testGateImage {
		t.Errorf("queue-sidecar-image %q (%v), want %s", out, err, testGateImage)
	}
}

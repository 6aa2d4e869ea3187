package knative

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/podgate/podgate/internal/k8sbin"
)

// sources are Knative's modules, found once per test binary.
var sources = sync.OnceValues(func() (Sources, error) {
	return FindSources(context.Background())
})

func testSources(t testing.TB) Sources {
	t.Helper()
	s, err := sources()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// digestOf is a made-up digest, its hex all c.
func digestOf(c string) string { return "sha256:" + strings.Repeat(c, 64) }

// fakeImages are images by made-up digests, one hex digit each.
var fakeImages = Images{
	Controller: Registry + "/knative/controller@" + digestOf("1"),
	Webhook:    Registry + "/knative/webhook@" + digestOf("2"),
	Activator:  Registry + "/knative/activator@" + digestOf("3"),
	Autoscaler: Registry + "/knative/autoscaler@" + digestOf("4"),
	Queue:      Registry + "/knative/queue@" + digestOf("5"),
	Traefik:    Registry + "/traefik@" + digestOf("6"),
	CoreDNS:    Registry + "/coredns@" + digestOf("7"),
	KubeProxy:  Registry + "/kube-proxy@" + digestOf("8"),
}

const testGateImage = "ghcr.io/podgate/podgate-gate@sha256:9999999999999999999999999999999999999999999999999999999999999999"

func testOptions(t testing.TB) Options {
	return Options{
		Dir:         filepath.Join(t.TempDir(), "knative"),
		Sources:     testSources(t),
		Images:      fakeImages,
		GateImage:   testGateImage,
		PodCIDR:     "10.244.0.0/24",
		ServiceCIDR: "10.96.0.0/16",
		APIServer:   "https://10.244.0.1:6443",
	}
}

// built is a Step's kustomization as kubectl's kustomize builds it: the
// objects, and the raw text.
type built struct {
	objs []unstructured.Unstructured
	raw  string
}

func kustomize(t testing.TB, dir string) built {
	t.Helper()
	kubectl, err := k8sbin.Path(k8sbin.Kubectl)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kubectl kustomize %s: %v\n%s", dir, err, stderr.String())
	}
	b := built{raw: string(out)}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var u unstructured.Unstructured
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("kubectl kustomize %s: %v", dir, err)
		}
		if u.Object != nil {
			b.objs = append(b.objs, u)
		}
	}
	return b
}

// get is the object of kind, namespace and name, decoded into out.
func (b built) get(t testing.TB, kind, namespace, name string, out any) {
	t.Helper()
	for _, u := range b.objs {
		if u.GetKind() == kind && u.GetNamespace() == namespace && u.GetName() == name {
			j, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(j, out); err != nil {
				t.Fatalf("%s %s/%s: %v", kind, namespace, name, err)
			}
			return
		}
	}
	t.Fatalf("no %s %s/%s among %d objects", kind, namespace, name, len(b.objs))
}

func writeSteps(t testing.TB, opts Options) map[string]Step {
	t.Helper()
	steps, err := Write(opts)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	m := map[string]Step{}
	for _, s := range steps {
		dirs = append(dirs, filepath.Base(s.Dir))
		m[filepath.Base(s.Dir)] = s
	}
	if want := []string{StepNetwork, StepCRDs, StepServing, StepIngress}; !slices.Equal(dirs, want) {
		t.Fatalf("steps %q, want %q in this order", dirs, want)
	}
	return m
}

func TestKnativeServingIsKnativesManifestsWithTheBuiltImagesAndPodgatesConfig(t *testing.T) {
	for _, tc := range []struct {
		name      string
		queue     Queue
		wantQueue string
	}{
		{"the gate is the queue sidecar by default", "", testGateImage},
		{"Knative's queue-proxy with --queue-proxy knative", QueueKnative, fakeImages.Queue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			opts.Queue = tc.queue
			steps := writeSteps(t, opts)
			b := kustomize(t, steps[StepServing].Dir)
			if strings.Contains(b.raw, "ko://") {
				t.Errorf("a ko:// image is left:\n%s", grepLines(b.raw, "ko://"))
			}
			for name, want := range map[string]string{
				"controller": fakeImages.Controller, "webhook": fakeImages.Webhook,
				"activator": fakeImages.Activator, "autoscaler": fakeImages.Autoscaler,
			} {
				var d appsv1.Deployment
				b.get(t, "Deployment", Namespace, name, &d)
				if got := d.Spec.Template.Spec.Containers[0].Image; got != want {
					t.Errorf("Deployment %s: image %s, want %s", name, got, want)
				}
			}
			wantData := map[string]map[string]string{
				"config-deployment": {
					"queue-sidecar-image":               tc.wantQueue,
					"registries-skipping-tag-resolving": "kind.local,ko.local,dev.local,podgate.local,ghcr.io",
				},
				"config-features": {"multi-container-probing": "enabled"},
				"config-network":  {"ingress-class": IngressClass},
				"config-domain":   {"example.com": ""},
			}
			for name, want := range wantData {
				var cm corev1.ConfigMap
				b.get(t, "ConfigMap", Namespace, name, &cm)
				for k, v := range want {
					if got, ok := cm.Data[k]; !ok || got != v {
						t.Errorf("ConfigMap %s: %s = %q (set %v), want %q", name, k, got, ok, v)
					}
				}
				// Knative's webhook refuses a ConfigMap whose _example
				// is not the one its checksum annotation was made of:
				// kept as shipped.
				if cm.Data["_example"] == "" || cm.Annotations["knative.dev/example-checksum"] == "" {
					t.Errorf("ConfigMap %s: its _example or checksum is gone", name)
				}
				if orig := shipped(t, opts.Sources, name); orig.Data["_example"] != cm.Data["_example"] ||
					orig.Annotations["knative.dev/example-checksum"] != cm.Annotations["knative.dev/example-checksum"] {
					t.Errorf("ConfigMap %s: _example or its checksum changed from what Knative ships", name)
				}
			}
			var img struct {
				Spec struct {
					Image string `json:"image"`
				} `json:"spec"`
			}
			b.get(t, "Image", Namespace, "queue-proxy", &img)
			if img.Spec.Image != tc.wantQueue {
				t.Errorf("Image queue-proxy: %s, want the queue sidecar %s", img.Spec.Image, tc.wantQueue)
			}
			// Everything of Knative's config/core but its CRDs is here:
			// its namespace, webhooks, HPAs and PDBs as shipped.
			for _, want := range []struct{ kind, ns, name string }{
				{"Namespace", "", Namespace},
				{"ValidatingWebhookConfiguration", "", "config.webhook.serving.knative.dev"},
				{"ValidatingWebhookConfiguration", "", "validation.webhook.serving.knative.dev"},
				{"MutatingWebhookConfiguration", "", "webhook.serving.knative.dev"},
				{"Secret", Namespace, "webhook-certs"},
				{"HorizontalPodAutoscaler", Namespace, "activator"},
				{"PodDisruptionBudget", Namespace, "activator-pdb"},
				{"Certificate", Namespace, "routing-serving-certs"},
			} {
				var u map[string]any
				b.get(t, want.kind, want.ns, want.name, &u)
			}
			for _, u := range b.objs {
				if u.GetKind() == "CustomResourceDefinition" {
					t.Errorf("CRD %s in the serving Step: CRDs are their own Step, applied first", u.GetName())
				}
			}
		})
	}
}

// shipped is ConfigMap name as Knative's modules ship it.
func shipped(t testing.TB, s Sources, name string) corev1.ConfigMap {
	t.Helper()
	for _, root := range []string{filepath.Join(s.Serving, "config/core/configmaps"), filepath.Join(s.Networking, "config")} {
		files, err := yamlFiles(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			raw, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				t.Fatal(err)
			}
			var cm corev1.ConfigMap
			if err := sigsyaml.Unmarshal(raw, &cm); err == nil && cm.Kind == "ConfigMap" && cm.Name == name {
				return cm
			}
		}
	}
	t.Fatalf("ConfigMap %s not in Knative's modules", name)
	return corev1.ConfigMap{}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestKnativesCRDsAreAStepOfTheirOwnWaitedForByName(t *testing.T) {
	steps := writeSteps(t, testOptions(t))
	s := steps[StepCRDs]
	b := kustomize(t, s.Dir)
	var names []string
	for _, u := range b.objs {
		if u.GetKind() != "CustomResourceDefinition" {
			t.Errorf("%s %s in the CRD Step", u.GetKind(), u.GetName())
		}
		names = append(names, u.GetName())
	}
	var waits []string
	for _, w := range s.Wait {
		if w.Kind != "CustomResourceDefinition" {
			t.Errorf("CRD Step waits for %s", w)
		}
		waits = append(waits, w.Name)
	}
	slices.Sort(names)
	slices.Sort(waits)
	if !slices.Equal(names, waits) {
		t.Errorf("CRDs %q, waited for %q", names, waits)
	}
	// Serving's own, and what it needs from networking and caching.
	for _, want := range []string{
		"services.serving.knative.dev", "configurations.serving.knative.dev", "revisions.serving.knative.dev",
		"routes.serving.knative.dev", "domainmappings.serving.knative.dev",
		"podautoscalers.autoscaling.internal.knative.dev", "metrics.autoscaling.internal.knative.dev",
		"ingresses.networking.internal.knative.dev", "serverlessservices.networking.internal.knative.dev",
		"certificates.networking.internal.knative.dev", "clusterdomainclaims.networking.internal.knative.dev",
		"images.caching.internal.knative.dev",
	} {
		if !slices.Contains(names, want) {
			t.Errorf("no CRD %s among %q", want, names)
		}
	}
}

func TestTraefikIsKnativesIngressWithAPublicAndAPrivateService(t *testing.T) {
	steps := writeSteps(t, testOptions(t))
	b := kustomize(t, steps[StepIngress].Dir)
	var d appsv1.Deployment
	b.get(t, "Deployment", IngressNamespace, IngressService, &d)
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != fakeImages.Traefik {
		t.Errorf("image %s, want %s", c.Image, fakeImages.Traefik)
	}
	for _, want := range []string{
		"--experimental.knative=true",
		"--providers.knative=true",
		"--providers.knative.publicEntrypoints=web",
		"--providers.knative.privateEntrypoints=web-internal",
		// The KIngress status' load balancers: Knative's Route needs one
		// (the private one, when there is one) to become Ready.
		"--providers.knative.publicService.name=" + IngressService,
		"--providers.knative.publicService.namespace=" + IngressNamespace,
		"--providers.knative.privateService.name=" + IngressInternalService,
		"--providers.knative.privateService.namespace=" + IngressNamespace,
		"--entrypoints.web.address=:8080",
		"--entrypoints.web-internal.address=:8081",
		// A pod per request, not per kept connection (kube-proxy
		// balances connections to a ClusterIP).
		"--serversTransport.maxIdleConnsPerHost=-1",
	} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("Traefik's args lack %s: %q", want, c.Args)
		}
	}
	for name, target := range map[string]string{IngressService: "web", IngressInternalService: "web-internal"} {
		var svc corev1.Service
		b.get(t, "Service", IngressNamespace, name, &svc)
		if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != IngressPort || svc.Spec.Ports[0].TargetPort.StrVal != target {
			t.Errorf("Service %s: ports %+v, want %d to %s", name, svc.Spec.Ports, IngressPort, target)
		}
	}
	var role struct {
		Rules []struct {
			APIGroups []string `json:"apiGroups"`
			Resources []string `json:"resources"`
			Verbs     []string `json:"verbs"`
		} `json:"rules"`
	}
	b.get(t, "ClusterRole", "", "podgate:traefik-knative", &role)
	allowed := map[string]bool{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					allowed[g+"/"+res+":"+v] = true
				}
			}
		}
	}
	for _, want := range []string{
		"networking.internal.knative.dev/ingresses:list", "networking.internal.knative.dev/ingresses:watch",
		"networking.internal.knative.dev/ingresses/status:update",
		"/services:list", "/services:watch", "/secrets:list", "/secrets:watch",
	} {
		if !allowed[want] {
			t.Errorf("Traefik may not %s", want)
		}
	}
}

func TestClusterNetworkingIsKubeProxyAndCoreDNSWithoutForwarding(t *testing.T) {
	for _, mode := range []ProxyMode{ProxyNFTables, ProxyIPTables} {
		t.Run(string(mode), func(t *testing.T) {
			opts := testOptions(t)
			opts.ProxyMode = mode
			steps := writeSteps(t, opts)
			b := kustomize(t, steps[StepNetwork].Dir)

			var dns corev1.Service
			b.get(t, "Service", "kube-system", DNSService, &dns)
			if dns.Spec.ClusterIP != "10.96.0.10" {
				t.Errorf("kube-dns at %s, want 10.96.0.10 (the tenth address of 10.96.0.0/16)", dns.Spec.ClusterIP)
			}
			var coreCM corev1.ConfigMap
			b.get(t, "ConfigMap", "kube-system", "coredns", &coreCM)
			corefile := coreCM.Data["Corefile"]
			for _, want := range []string{"cluster.local:1053 in-addr.arpa:1053 ip6.arpa:1053 {", "kubernetes cluster.local in-addr.arpa ip6.arpa {", "pods insecure", "health :8080", "ready :8181"} {
				if !strings.Contains(corefile, want) {
					t.Errorf("Corefile lacks %q:\n%s", want, corefile)
				}
			}
			// Nothing leaves the cluster: no forward plugin, no server
			// block for the root zone.
			for _, line := range strings.Split(corefile, "\n") {
				l := strings.TrimSpace(line)
				if strings.HasPrefix(l, "forward") || strings.HasPrefix(l, ".:") || strings.HasPrefix(l, ". ") {
					t.Errorf("Corefile forwards or serves the root zone: %q", l)
				}
			}
			var coredns appsv1.Deployment
			b.get(t, "Deployment", "kube-system", "coredns", &coredns)
			if got := coredns.Spec.Template.Spec.Containers[0].Image; got != fakeImages.CoreDNS {
				t.Errorf("CoreDNS image %s", got)
			}
			if coredns.Spec.Template.Spec.DNSPolicy != corev1.DNSDefault {
				t.Errorf("CoreDNS's dnsPolicy %s: it would resolve through itself", coredns.Spec.Template.Spec.DNSPolicy)
			}

			var ds appsv1.DaemonSet
			b.get(t, "DaemonSet", "kube-system", "kube-proxy", &ds)
			ps := ds.Spec.Template.Spec
			if !ps.HostNetwork || ps.Containers[0].Image != fakeImages.KubeProxy ||
				ps.Containers[0].SecurityContext == nil || !*ps.Containers[0].SecurityContext.Privileged {
				t.Errorf("kube-proxy: hostNetwork %v, image %s, securityContext %+v", ps.HostNetwork, ps.Containers[0].Image, ps.Containers[0].SecurityContext)
			}
			// It runs the node's nft or iptables-restore, found on PATH
			// (the image's PATH is / alone).
			pathOK := false
			for _, e := range ps.Containers[0].Env {
				pathOK = pathOK || (e.Name == "PATH" && slices.Contains(strings.Split(e.Value, ":"), "/usr/sbin"))
			}
			if !pathOK {
				t.Errorf("kube-proxy's env %+v: no PATH with /usr/sbin, where nft and iptables-restore are", ps.Containers[0].Env)
			}
			var kpCM corev1.ConfigMap
			b.get(t, "ConfigMap", "kube-system", "kube-proxy", &kpCM)
			var conf struct {
				Kind             string `json:"kind"`
				Mode             string `json:"mode"`
				ClusterCIDR      string `json:"clusterCIDR"`
				ClientConnection struct {
					Kubeconfig string `json:"kubeconfig"`
				} `json:"clientConnection"`
			}
			if err := sigsyaml.Unmarshal([]byte(kpCM.Data["config.conf"]), &conf); err != nil {
				t.Fatal(err)
			}
			if conf.Kind != "KubeProxyConfiguration" || conf.Mode != string(mode) || conf.ClusterCIDR != opts.PodCIDR ||
				conf.ClientConnection.Kubeconfig != "/var/lib/kube-proxy/kubeconfig.conf" {
				t.Errorf("kube-proxy's config.conf: %+v", conf)
			}
			var kc struct {
				Clusters []struct {
					Cluster struct {
						Server string `json:"server"`
						CA     string `json:"certificate-authority"`
					} `json:"cluster"`
				} `json:"clusters"`
				Users []struct {
					User struct {
						TokenFile string `json:"tokenFile"`
					} `json:"user"`
				} `json:"users"`
			}
			if err := sigsyaml.Unmarshal([]byte(kpCM.Data["kubeconfig.conf"]), &kc); err != nil {
				t.Fatal(err)
			}
			if len(kc.Clusters) != 1 || kc.Clusters[0].Cluster.Server != opts.APIServer ||
				len(kc.Users) != 1 || kc.Users[0].User.TokenFile != "/var/run/secrets/kubernetes.io/serviceaccount/token" {
				t.Errorf("kube-proxy's kubeconfig: %+v", kc)
			}
		})
	}
}

func TestWriteRefusesOptionsItCannotInstall(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   string
	}{
		{"the gate's image without a digest", func(o *Options) { o.GateImage = "ghcr.io/podgate/podgate-gate:latest" }, "the gate's image"},
		{"Knative's queue-proxy without its image", func(o *Options) { o.Queue = QueueKnative; o.Images.Queue = "" }, "no image of knative-queue"},
		{"an unknown queue sidecar", func(o *Options) { o.Queue = "envoy" }, `queue sidecar "envoy"`},
		{"an unknown kube-proxy mode", func(o *Options) { o.ProxyMode = "ipvs" }, `kube-proxy mode "ipvs"`},
		{"an image by tag", func(o *Options) { o.Images.Traefik = Registry + "/traefik:cluster" }, "traefik's image"},
		{"no API server URL", func(o *Options) { o.APIServer = "" }, "API server"},
		{"a Service range without a tenth address", func(o *Options) { o.ServiceCIDR = "10.96.0.0/29" }, "no tenth address"},
		{"no sources", func(o *Options) { o.Sources = Sources{} }, "no sources"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := testOptions(t)
			tc.change(&opts)
			if _, err := Write(opts); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Write: %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

package knative

import (
	"bufio"
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/template"

	"k8s.io/apimachinery/pkg/util/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// manifests are this package's own: the cluster's networking (network/)
// and the ingress (ingress/).
//
//go:embed manifests
var manifests embed.FS

// Namespaces and names of what the Steps install.
const (
	// Namespace is Knative Serving's (its manifests').
	Namespace = "knative-serving"
	// IngressNamespace holds Traefik; IngressService is its public
	// Service (port IngressPort), the one `cluster up` forwards a loopback
	// port of the host to; IngressInternalService the private one
	// (cluster-local routes).
	IngressNamespace       = "podgate-ingress"
	IngressService         = "traefik"
	IngressInternalService = "traefik-internal"
	IngressPort            = 80
	// IngressClass is Traefik's Knative provider's class, config-network's
	// ingress-class.
	IngressClass = "traefik.ingress.networking.knative.dev"
	// DNSService is CoreDNS's Service in kube-system (kubeadm's name).
	DNSService = "kube-dns"
	// DefaultDomain is config-domain's default: a Knative Service NAME
	// of NAMESPACE answers at NAME.NAMESPACE.example.com (through the
	// ingress, with that Host header).
	DefaultDomain = "example.com"
)

// Queue is which program Knative runs as every revision's queue sidecar.
type Queue string

const (
	// QueueGate is podgate's gate (kube/deploy/knative): the default.
	QueueGate Queue = "gate"
	// QueueKnative is Knative's own queue-proxy of ServingVersion.
	QueueKnative Queue = "knative"
)

// ProxyMode is kube-proxy's mode.
type ProxyMode string

const (
	ProxyNFTables ProxyMode = "nftables"
	ProxyIPTables ProxyMode = "iptables"
)

// DefaultSkipTagResolving is config-deployment's
// registries-skipping-tag-resolving unless Options say otherwise:
// Knative's own default (kind.local, ko.local, dev.local), the stack's
// Registry and ghcr.io, podgate's images' registry (the test app's and the
// gate's). The node has no registry to ask: a revision whose image's
// registry is not listed fails to resolve its tag.
var DefaultSkipTagResolving = []string{"kind.local", "ko.local", "dev.local", Registry, "ghcr.io"}

// Options are what the manifests depend on.
type Options struct {
	// Dir receives one directory per Step (replaced if there).
	Dir string
	// Sources are Knative's modules (FindSources).
	Sources Sources
	// Images are the stack's images by digest (BuildImages).
	Images Images
	// Queue is the queue sidecar (default QueueGate).
	Queue Queue
	// GateImage is podgate's gate image by digest (install.Image.GateRef),
	// the queue sidecar with QueueGate.
	GateImage string
	// ProxyMode is kube-proxy's mode (default ProxyNFTables).
	ProxyMode ProxyMode
	// PodCIDR is kube-proxy's cluster CIDR (traffic from outside it to a
	// ClusterIP is masqueraded).
	PodCIDR string
	// ServiceCIDR is the API server's Service range; CoreDNS's Service
	// gets its tenth address, as kubeadm's does (DNSServiceIP).
	ServiceCIDR string
	// APIServer is the API server's URL as kube-proxy reaches it from the
	// node's network (it must not be the `kubernetes` Service's
	// ClusterIP, which works only once kube-proxy does); its certificate
	// must name that address, and be signed by the cluster CA the pods'
	// service-account volume holds (ca.crt).
	APIServer string
	// Domain is config-domain's domain (default DefaultDomain).
	Domain string
	// SkipTagResolving is config-deployment's
	// registries-skipping-tag-resolving (default DefaultSkipTagResolving).
	SkipTagResolving []string
}

// Step is one `kubectl apply -k Dir`, and what to wait for after it
// before the next Step is applied.
type Step struct {
	// Name says what the Step installs.
	Name string
	// Dir is the kustomization's directory.
	Dir string
	// Wait is what must be ready after the apply, in order.
	Wait []Wait
}

// Wait is one object to wait for: a CustomResourceDefinition until
// Established, a Deployment or DaemonSet until rolled out and available.
type Wait struct {
	Kind, Namespace, Name string
}

func (w Wait) String() string {
	if w.Namespace == "" {
		return w.Kind + " " + w.Name
	}
	return w.Kind + " " + w.Namespace + "/" + w.Name
}

// The Steps' directories under Options.Dir, in the order they are
// applied.
const (
	StepNetwork = "10-network"
	StepCRDs    = "20-knative-crds"
	StepServing = "30-knative-serving"
	StepIngress = "40-ingress"
)

// Write lays out the Steps under opts.Dir and returns them in the order
// they are to be applied:
//
//  1. the cluster's networking: kube-proxy (DaemonSet) and CoreDNS; every
//     Service's ClusterIP and every pod's cluster DNS need them, Knative
//     (activator to autoscaler, the controller to the webhook) and
//     Traefik (it proxies to ClusterIPs) too;
//  2. Knative's CRDs, waited for until Established: its manifests hold
//     custom resources (a Certificate, the queue's Image) that an apply
//     of the same batch would refuse before then;
//  3. Knative Serving: its manifests from the module cache, unchanged, with
//     the overlay's images by digest and ConfigMap values, in one apply
//     with Knative's webhook configurations (failurePolicy Fail, for the
//     config-* ConfigMaps and Knative's resources, this Step's
//     Certificate among them): kustomize orders ConfigMaps and custom
//     resources before webhook configurations, so the first apply is
//     through before anything calls the webhook, and a repeated one sends
//     nothing for unchanged objects; a changed one needs the webhook up;
//  4. Traefik as the Knative ingress.
func Write(opts Options) ([]Step, error) {
	if err := opts.defaults(); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(opts.Dir); err != nil {
		return nil, fmt.Errorf("knative manifests: %w", err)
	}
	network, err := writeNetwork(opts)
	if err != nil {
		return nil, err
	}
	crds, serving, err := writeServing(opts)
	if err != nil {
		return nil, err
	}
	ingress, err := writeIngress(opts)
	if err != nil {
		return nil, err
	}
	return []Step{network, crds, serving, ingress}, nil
}

// defaults fills in the defaults and checks the rest.
func (o *Options) defaults() error {
	if o.Dir == "" {
		return errors.New("knative manifests: no directory")
	}
	if o.Queue == "" {
		o.Queue = QueueGate
	}
	if o.ProxyMode == "" {
		o.ProxyMode = ProxyNFTables
	}
	if o.Domain == "" {
		o.Domain = DefaultDomain
	}
	if o.SkipTagResolving == nil {
		o.SkipTagResolving = DefaultSkipTagResolving
	}
	switch o.Queue {
	case QueueGate:
		if _, _, err := splitRef(o.GateImage); err != nil {
			return fmt.Errorf("knative manifests: the gate's %w", err)
		}
	case QueueKnative:
		if o.Images.Queue == "" {
			return fmt.Errorf("knative manifests: queue sidecar %q, but no image of %s (hack/knative-build.sh builds it)", o.Queue, BinQueue)
		}
	default:
		return fmt.Errorf("knative manifests: queue sidecar %q: want %q or %q", o.Queue, QueueGate, QueueKnative)
	}
	if o.ProxyMode != ProxyNFTables && o.ProxyMode != ProxyIPTables {
		return fmt.Errorf("knative manifests: kube-proxy mode %q: want %q or %q", o.ProxyMode, ProxyNFTables, ProxyIPTables)
	}
	if _, err := netip.ParsePrefix(o.PodCIDR); err != nil {
		return fmt.Errorf("knative manifests: pod CIDR: %w", err)
	}
	if _, err := DNSServiceIP(o.ServiceCIDR); err != nil {
		return err
	}
	if !strings.HasPrefix(o.APIServer, "https://") {
		return fmt.Errorf("knative manifests: API server %q: want https://HOST:PORT", o.APIServer)
	}
	if o.Sources.Serving == "" || o.Sources.Networking == "" || o.Sources.Caching == "" {
		return errors.New("knative manifests: no sources (FindSources)")
	}
	for bin, ref := range map[string]string{
		BinController: o.Images.Controller, BinWebhook: o.Images.Webhook, BinActivator: o.Images.Activator,
		BinAutoscaler: o.Images.Autoscaler, BinTraefik: o.Images.Traefik, BinCoreDNS: o.Images.CoreDNS,
		BinKubeProxy: o.Images.KubeProxy,
	} {
		if _, _, err := splitRef(ref); err != nil {
			return fmt.Errorf("knative manifests: %s's %w", bin, err)
		}
	}
	return nil
}

// DNSServiceIP is the cluster DNS Service's address in the Service range
// cidr: its tenth, as kubeadm's (10.96.0.10 of 10.96.0.0/16). Pods'
// resolv.conf name it.
func DNSServiceIP(cidr string) (netip.Addr, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("knative manifests: service CIDR: %w", err)
	}
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	if !p.Contains(a) {
		return netip.Addr{}, fmt.Errorf("knative manifests: service CIDR %s has no tenth address", cidr)
	}
	return a, nil
}

// copyEmbedded copies the embedded manifests/sub into dir.
func copyEmbedded(sub, dir string) error {
	root := "manifests/" + sub
	return fs.WalkDir(manifests, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(p, root)))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := manifests.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// render executes the template text with data into dir/name.
func render(dir, name, text string, data any) error {
	t, err := template.New(name).Option("missingkey=error").Parse(text)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644)
}

// imageEntry is one `images:` entry of a kustomization: name replaced by
// ref's name at ref's digest.
type imageEntry struct {
	Name, NewName, Digest string
}

func entry(name, ref string) imageEntry {
	n, d, _ := splitRef(ref) // checked by defaults
	return imageEntry{name, n, d}
}

// networkKustomization is the networking Step's: the embedded kube-proxy
// and CoreDNS, their images by digest, their ConfigMaps generated from
// the files beside it, CoreDNS's Service at the cluster DNS address.
const networkKustomization = `# Written by podgate: the cluster's networking, kube-proxy and CoreDNS.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- coredns.yaml
- kube-proxy.yaml
generatorOptions:
  disableNameSuffixHash: true
configMapGenerator:
- name: coredns
  namespace: kube-system
  files:
  - Corefile
- name: kube-proxy
  namespace: kube-system
  files:
  - config.conf
  - kubeconfig.conf
images:
{{- range .Images}}
- name: {{.Name}}
  newName: {{.NewName}}
  digest: {{.Digest}}
{{- end}}
patches:
- target:
    kind: Service
    name: kube-dns
  patch: |-
    - op: replace
      path: /spec/clusterIP
      value: {{.DNSIP}}
`

// kubeProxyConfig is kube-proxy's KubeProxyConfiguration (config.conf).
// conntrack's zeros leave the node's conntrack sysctls as they are (as
// kind does): kube-proxy would otherwise raise nf_conntrack_max and the
// TCP timeouts, settings of the whole machine's kernel, not the
// cluster's network namespace alone.
const kubeProxyConfig = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
mode: {{.Mode}}
clusterCIDR: {{.PodCIDR}}
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`

// kubeProxyKubeconfig is kube-proxy's kubeconfig (kubeconfig.conf), as
// kubeadm writes it: the API server's own address, the pod's
// service-account token and the cluster CA its volume holds.
const kubeProxyKubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: default
  cluster:
    certificate-authority: /var/run/secrets/kubernetes.io/serviceaccount/ca.crt
    server: {{.APIServer}}
contexts:
- name: default
  context:
    cluster: default
    namespace: default
    user: default
current-context: default
users:
- name: default
  user:
    tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token
`

func writeNetwork(opts Options) (Step, error) {
	dir := filepath.Join(opts.Dir, StepNetwork)
	if err := copyEmbedded("network", dir); err != nil {
		return Step{}, fmt.Errorf("knative manifests: %w", err)
	}
	dnsIP, _ := DNSServiceIP(opts.ServiceCIDR) // checked by defaults
	data := map[string]any{
		"Images": []imageEntry{
			entry(Registry+"/coredns", opts.Images.CoreDNS),
			entry(Registry+"/kube-proxy", opts.Images.KubeProxy),
		},
		"DNSIP":     dnsIP.String(),
		"Mode":      string(opts.ProxyMode),
		"PodCIDR":   opts.PodCIDR,
		"APIServer": opts.APIServer,
	}
	for name, text := range map[string]string{
		"kustomization.yaml": networkKustomization,
		"config.conf":        kubeProxyConfig,
		"kubeconfig.conf":    kubeProxyKubeconfig,
	} {
		if err := render(dir, name, text, data); err != nil {
			return Step{}, fmt.Errorf("knative manifests: %w", err)
		}
	}
	return Step{
		Name: "cluster networking (kube-proxy, CoreDNS)",
		Dir:  dir,
		Wait: []Wait{
			{"DaemonSet", "kube-system", "kube-proxy"},
			{"Deployment", "kube-system", "coredns"},
		},
	}, nil
}

// servingKustomization is Knative Serving's Step: its manifests as they
// ship (copied from the module cache into knative/), its images by
// digest, and the ConfigMap values podgate sets merged into Knative's
// ConfigMaps (their _example blocks and checksums untouched: Knative's
// webhook refuses a changed _example).
const servingKustomization = `# Written by podgate: Knative Serving {{.Version}}'s config/core and
# networking's config-network, as they ship (read from the Go module
# cache), with the images built for this cluster by digest and the
# ConfigMap values podgate sets.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
{{- range .Resources}}
- {{.}}
{{- end}}
images:
{{- range .Images}}
- name: {{.Name}}
  newName: {{.NewName}}
  digest: {{.Digest}}
{{- end}}
patches:
# The queue sidecar of every revision, and the registries whose images
# Knative's controller does not resolve to digests over the network
# (there is no registry: the node runs images from its layout).
- patch: |-
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: config-deployment
      namespace: knative-serving
    data:
      queue-sidecar-image: {{.QueueImage}}
      registries-skipping-tag-resolving: {{.SkipTagResolving}}
# Sidecars' readiness probes go into the queue sidecar's
# SERVING_READINESS_PROBE (without it, Knative's webhook refuses a
# sidecar's readiness probe).
- patch: |-
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: config-features
      namespace: knative-serving
    data:
      multi-container-probing: enabled
# Traefik's Knative provider reconciles the Ingresses of its class.
- patch: |-
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: config-network
      namespace: knative-serving
    data:
      ingress-class: {{.IngressClass}}
- patch: |-
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: config-domain
      namespace: knative-serving
    data:
      {{.Domain}}: ""
# Knative's image cache entry (for a caching controller, none here) names
# the queue sidecar revisions run.
- target:
    group: caching.internal.knative.dev
    kind: Image
    name: queue-proxy
  patch: |-
    - op: replace
      path: /spec/image
      value: {{.QueueImage}}
`

// koPrefix is how Knative's manifests name the images ko builds.
const koPrefix = "ko://knative.dev/serving/cmd/"

func writeServing(opts Options) (crds, serving Step, err error) {
	crdDir := filepath.Join(opts.Dir, StepCRDs)
	servingDir := filepath.Join(opts.Dir, StepServing)
	crdFiles, crdNames, servingFiles, err := copyKnative(opts.Sources, crdDir, servingDir)
	if err != nil {
		return Step{}, Step{}, fmt.Errorf("knative manifests: %w", err)
	}
	if len(crdFiles) == 0 || len(servingFiles) == 0 {
		return Step{}, Step{}, fmt.Errorf("knative manifests: %d CRD files and %d others in %s, %s and %s", len(crdFiles), len(servingFiles), opts.Sources.Serving, opts.Sources.Networking, opts.Sources.Caching)
	}
	crdKust := "# Written by podgate: the CRDs Knative Serving " + ServingVersion + " needs, as they ship.\n" +
		"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
	for _, f := range crdFiles {
		crdKust += "- " + f + "\n"
	}
	if err := os.WriteFile(filepath.Join(crdDir, "kustomization.yaml"), []byte(crdKust), 0o644); err != nil {
		return Step{}, Step{}, fmt.Errorf("knative manifests: %w", err)
	}
	queue := opts.GateImage
	if opts.Queue == QueueKnative {
		queue = opts.Images.Queue
	}
	images := []imageEntry{
		entry(koPrefix+"controller", opts.Images.Controller),
		entry(koPrefix+"webhook", opts.Images.Webhook),
		entry(koPrefix+"activator", opts.Images.Activator),
		entry(koPrefix+"autoscaler", opts.Images.Autoscaler),
	}
	data := map[string]any{
		"Version":          ServingVersion,
		"Resources":        servingFiles,
		"Images":           images,
		"QueueImage":       queue,
		"SkipTagResolving": strings.Join(opts.SkipTagResolving, ","),
		"IngressClass":     IngressClass,
		"Domain":           opts.Domain,
	}
	if err := render(servingDir, "kustomization.yaml", servingKustomization, data); err != nil {
		return Step{}, Step{}, fmt.Errorf("knative manifests: %w", err)
	}
	var crdWaits []Wait
	for _, n := range crdNames {
		crdWaits = append(crdWaits, Wait{"CustomResourceDefinition", "", n})
	}
	crds = Step{Name: "Knative's CRDs", Dir: crdDir, Wait: crdWaits}
	serving = Step{
		Name: "Knative Serving " + ServingVersion,
		Dir:  servingDir,
		Wait: []Wait{
			// The webhook first: the others' readiness does not need it,
			// but every Knative object the user applies does.
			{"Deployment", Namespace, "webhook"},
			{"Deployment", Namespace, "controller"},
			{"Deployment", Namespace, "autoscaler"},
			{"Deployment", Namespace, "activator"},
		},
	}
	return crds, serving, nil
}

// copyKnative copies the YAML files of Knative's modules (serving's
// config/core, networking's and caching's config) into crdDir, those
// that hold CustomResourceDefinitions, or servingDir, the others, under
// serving/, networking/ and caching/, and returns the files in each
// (relative to it) and the CRDs' names. A file that holds both is an
// error: its CRDs could not be established before its objects.
func copyKnative(src Sources, crdDir, servingDir string) (crdFiles, crdNames, servingFiles []string, err error) {
	for _, m := range []struct{ module, dir, as string }{
		{src.Serving, "config/core", "serving"},
		{src.Networking, "config", "networking"},
		{src.Caching, "config", "caching"},
	} {
		root := filepath.Join(m.module, filepath.FromSlash(m.dir))
		files, err := yamlFiles(root)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(root, f))
			if err != nil {
				return nil, nil, nil, err
			}
			names, others, err := crdsOf(b)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("%s: %w", filepath.Join(root, f), err)
			}
			rel := filepath.ToSlash(filepath.Join(m.as, f))
			to := servingDir
			switch {
			case len(names) > 0 && others > 0:
				return nil, nil, nil, fmt.Errorf("%s holds CRDs and other objects: cannot apply the CRDs first", filepath.Join(root, f))
			case len(names) > 0:
				crdFiles, crdNames, to = append(crdFiles, rel), append(crdNames, names...), crdDir
			case others > 0:
				servingFiles = append(servingFiles, rel)
			default:
				continue // nothing to apply
			}
			if err := copyFile(b, filepath.Join(to, filepath.FromSlash(rel))); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	return crdFiles, crdNames, servingFiles, nil
}

// copyFile writes b to dst, making its directory.
func copyFile(b []byte, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// yamlFiles are the .yaml files under root, slash-separated relative
// paths, sorted.
func yamlFiles(root string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		rel, err := filepath.Rel(root, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	slices.Sort(out)
	return out, err
}

// crdsOf parses the YAML documents of b and returns the names of its
// CustomResourceDefinitions and how many other objects it holds.
func crdsOf(b []byte) (crds []string, others int, err error) {
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return crds, others, nil
		} else if err != nil {
			return nil, 0, err
		}
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := sigsyaml.Unmarshal(doc, &obj); err != nil {
			return nil, 0, err
		}
		switch obj.Kind {
		case "":
			// A document of comments only.
		case "CustomResourceDefinition":
			crds = append(crds, obj.Metadata.Name)
		default:
			others++
		}
	}
}

// ingressKustomization is the ingress Step's: the embedded Traefik, its
// image by digest.
const ingressKustomization = `# Written by podgate: Traefik as Knative's ingress.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- traefik.yaml
images:
{{- range .Images}}
- name: {{.Name}}
  newName: {{.NewName}}
  digest: {{.Digest}}
{{- end}}
`

func writeIngress(opts Options) (Step, error) {
	dir := filepath.Join(opts.Dir, StepIngress)
	if err := copyEmbedded("ingress", dir); err != nil {
		return Step{}, fmt.Errorf("knative manifests: %w", err)
	}
	data := map[string]any{"Images": []imageEntry{entry(Registry+"/traefik", opts.Images.Traefik)}}
	if err := render(dir, "kustomization.yaml", ingressKustomization, data); err != nil {
		return Step{}, fmt.Errorf("knative manifests: %w", err)
	}
	return Step{
		Name: "Traefik, the Knative ingress",
		Dir:  dir,
		Wait: []Wait{{"Deployment", IngressNamespace, IngressService}},
	}, nil
}

// Prepare is the whole preparation `cluster up --knative` needs before
// Install: the images of binDir (hack/knative-build.sh's) into the node's
// layout, Knative's sources from the module cache (the go command run in
// opts.Dir's parent, which must hold no go.mod of a module), and the
// Steps written under opts.Dir. opts.Images and opts.Sources are filled
// in here.
func Prepare(ctx context.Context, binDir, layout string, opts Options) ([]Step, error) {
	images, err := BuildImages(binDir, layout)
	if err != nil {
		return nil, err
	}
	src, err := FindSources(ctx)
	if err != nil {
		return nil, err
	}
	opts.Images, opts.Sources = images, src
	return Write(opts)
}

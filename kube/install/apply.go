package install

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podgate/podgate/kube/deploy"
)

// DefaultTimeout bounds the install: the apply, the pods of the webhook,
// the activator and the node status service started from podgate's image,
// all ready.
const DefaultTimeout = 3 * time.Minute

// poll is how often Apply's wait asks the API server.
const poll = 100 * time.Millisecond

// Options is an Apply.
type Options struct {
	// Dir receives kube/deploy/base and the overlay (replaced if there).
	Dir string
	// Kubeconfig is the admin's, Kubectl the cluster's kubectl.
	Kubeconfig, Kubectl string
	// Image is podgate's image by digest (Image.Ref), GateImage the
	// gate's (Image.GateRef), which the webhook injects.
	Image, GateImage string
	// Timeout bounds the wait for readiness (default DefaultTimeout).
	Timeout time.Duration
	// OnlyRouter: the activator is the only router of the cluster's pods
	// (no kube-proxy, no ingress: `cluster up` without --knative). The
	// activator runs with --only-router and the webhook with
	// --only-router=activator, so a gate's drain ends on the activator's
	// confirmation; the activator's preStop sleeps 1 s, not 5 s, as its
	// only client, the front door's forward, stops picking a terminating
	// endpoint at once (onlyRouterOverlay).
	OnlyRouter bool
}

// overlay is the kustomization cluster up applies: kube/deploy/base (copied
// beside it from the binary) with podgate's image by digest, one replica
// of each Deployment (one node), the webhook injecting gates of the gate's
// image by digest, and readiness of the Deployments and the node status
// service's DaemonSet probed every second instead of every 5 s: a part's
// first probe comes as it starts, before it listens, so the period is
// what the install waits for.
const overlay = `# Written by podgate cluster up: deploy/base with podgate's image by
# digest (built from the podgate that started the cluster, in the OCI
# layout the node runs images from), one replica of each part on this one
# node, the gates the webhook injects of the gate's image by digest (in
# the same layout), and readiness probed every second (ready a probe
# period after the start).
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- base
images:
- name: %[1]s
  digest: %[2]s
replicas:
- name: %[3]s
  count: 1
- name: %[4]s
  count: 1
patches:
- target:
    kind: Deployment
    name: %[3]s
  patch: |-
    - op: test
      path: /spec/template/spec/containers/0/args/%[7]d
      value: --gate-image=%[8]s
    - op: replace
      path: /spec/template/spec/containers/0/args/%[7]d
      value: --gate-image=%[5]s
- target:
    kind: (Deployment|DaemonSet)
    name: (%[3]s|%[4]s|%[6]s)
  patch: |-
    - op: replace
      path: /spec/template/spec/containers/0/readinessProbe/periodSeconds
      value: 1
`

// baseGateImageArg is where the base's webhook names the release's gate
// image (--gate-image=GateImage:Version) among its args: the overlay
// replaces it with the gate's image by digest, after a test that it is
// there (kustomize refuses the overlay if the base moved it).
const baseGateImageArg = 7

// onlyRouterOverlay is appended to overlay's patches with
// Options.OnlyRouter.
const onlyRouterOverlay = `- target:
    kind: Deployment
    name: %[1]s
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --only-router=activator
- target:
    kind: Deployment
    name: %[2]s
  patch: |-
    - op: add
      path: /spec/template/spec/containers/0/args/-
      value: --only-router
    - op: replace
      path: /spec/template/spec/containers/0/lifecycle/preStop/sleep/seconds
      value: 1
`

// writeOverlay writes kube/deploy/base and the overlay into dir, replacing
// what a previous cluster left there: podgate's image of digest, and the
// webhook injecting gateImage; with onlyRouter, onlyRouterOverlay too.
func writeOverlay(dir, digest, gateImage string, onlyRouter bool) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	err := fs.WalkDir(deploy.Base, "base", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		b, err := fs.ReadFile(deploy.Base, p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		return fmt.Errorf("write deploy/base to %s: %w", dir, err)
	}
	k := fmt.Sprintf(overlay, deploy.Image, digest, deploy.Webhook, deploy.Activator, gateImage, deploy.NodeStatus,
		baseGateImageArg, deploy.GateImage+":"+deploy.Version)
	if onlyRouter {
		k = strings.TrimRight(k, "\n") + "\n" + fmt.Sprintf(onlyRouterOverlay, deploy.Webhook, deploy.Activator)
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644)
}

// Apply applies the overlay for opts.Image and opts.GateImage with kubectl (its kustomize
// is `kubectl apply -k`'s) and waits until the webhook and the activator
// are ready and their Services have a ready endpoint, and the node status
// service is ready on every node: the webhook then answers the API server
// (the pods that opted in can be created), the front door reaches an
// activator, and the gates of those pods find their node's service.
func Apply(ctx context.Context, opts Options) error {
	_, digest, ok := strings.Cut(opts.Image, "@")
	if !ok {
		return fmt.Errorf("podgate's image %q: no digest", opts.Image)
	}
	if !strings.Contains(opts.GateImage, "@") {
		return fmt.Errorf("the gate's image %q: no digest", opts.GateImage)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if err := writeOverlay(opts.Dir, digest, opts.GateImage, opts.OnlyRouter); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, opts.Kubectl, "--kubeconfig", opts.Kubeconfig, "apply", "-k", opts.Dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl apply -k %s: %w\n%s", opts.Dir, err, out.String())
	}
	rc, err := clientcmd.BuildConfigFromFlags("", opts.Kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	for {
		why := notReady(waitCtx, cs)
		if why == "" {
			return nil
		}
		select {
		case <-waitCtx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("podgate applied (%s) but not ready within %s: %s", opts.Dir, opts.Timeout, why)
		case <-time.After(poll):
		}
	}
}

// notReady says what of the install is not ready yet, "" once all is.
func notReady(ctx context.Context, cs kubernetes.Interface) string {
	var why []string
	for _, name := range []string{deploy.Webhook, deploy.Activator} {
		d, err := cs.AppsV1().Deployments(deploy.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if w := deploymentNotReady(d); w != "" {
			sel, _ := metav1.LabelSelectorAsSelector(d.Spec.Selector)
			why = append(why, fmt.Sprintf("Deployment %s: %s%s", name, w, podsSay(ctx, cs, d.Namespace, sel.String())))
			continue
		}
		if !hasReadyEndpoint(ctx, cs, name) {
			why = append(why, fmt.Sprintf("Service %s: no ready endpoint", name))
		}
	}
	ds, err := cs.AppsV1().DaemonSets(deploy.Namespace).Get(ctx, deploy.NodeStatus, metav1.GetOptions{})
	if err != nil {
		why = append(why, err.Error())
	} else if w := daemonSetNotReady(ds); w != "" {
		sel, _ := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
		why = append(why, fmt.Sprintf("DaemonSet %s: %s%s", deploy.NodeStatus, w, podsSay(ctx, cs, ds.Namespace, sel.String())))
	}
	return strings.Join(why, "; ")
}

// daemonSetNotReady says why the DaemonSet is not ready on every node it
// is meant for, "" once it is: scheduled on at least one node (a cluster
// up has its node), every pod of the current template ready.
func daemonSetNotReady(ds *appsv1.DaemonSet) string {
	st := ds.Status
	if st.ObservedGeneration < ds.Generation || st.DesiredNumberScheduled == 0 ||
		st.UpdatedNumberScheduled != st.DesiredNumberScheduled || st.NumberReady != st.DesiredNumberScheduled {
		return fmt.Sprintf("ready on %d of %d nodes (%d updated)", st.NumberReady, st.DesiredNumberScheduled, st.UpdatedNumberScheduled)
	}
	return ""
}

func deploymentNotReady(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.ReadyReplicas != want || st.Replicas != want {
		return fmt.Sprintf("%d of %d replicas ready (%d updated, %d in all)", st.ReadyReplicas, want, st.UpdatedReplicas, st.Replicas)
	}
	return ""
}

// podsSay is what the pods of a Deployment or DaemonSet (in namespace,
// of the label selector) report, for the error of an install that timed
// out: their phase and whatever their containers wait for.
func podsSay(ctx context.Context, cs kubernetes.Interface, namespace, selector string) string {
	pods, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(pods.Items) == 0 {
		return ""
	}
	var parts []string
	for _, p := range pods.Items {
		s := fmt.Sprintf("%s %s", p.Name, p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			if w := c.State.Waiting; w != nil {
				s += fmt.Sprintf(", %s waiting: %s %s", c.Name, w.Reason, w.Message)
			}
			if !c.Ready && c.State.Running != nil {
				s += ", " + c.Name + " running, not ready"
			}
		}
		parts = append(parts, s)
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// hasReadyEndpoint reports whether Service name of podgate's namespace
// has a ready endpoint.
func hasReadyEndpoint(ctx context.Context, cs kubernetes.Interface, name string) bool {
	slices, err := cs.DiscoveryV1().EndpointSlices(deploy.Namespace).List(ctx,
		metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		return false
	}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if endpointReady(ep) {
				return true
			}
		}
	}
	return false
}

// endpointReady is the EndpointSlice API's rule: a missing ready
// condition counts as ready.
func endpointReady(ep discoveryv1.Endpoint) bool {
	return ep.Conditions.Ready == nil || *ep.Conditions.Ready
}

package kubelab

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/manifest"
)

// Path is how requests reach a Knative revision's pods.
type Path string

const (
	// ThroughActivator: target-burst-capacity -1, Knative's activator
	// always in the request path.
	ThroughActivator Path = "activator"
	// ThroughIngress: target-burst-capacity 0, the ingress sends to the
	// pods once they are ready (the activator only while none is).
	ThroughIngress Path = "ingress"
)

// Burst is the path's target-burst-capacity.
func (p Path) Burst() (int, error) {
	switch p {
	case ThroughActivator:
		return -1, nil
	case ThroughIngress:
		return 0, nil
	}
	return 0, fmt.Errorf("path %q: want activator or ingress", p)
}

var (
	ksvcResource     = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}
	revisionResource = schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "revisions"}
)

// Knative labels of a revision's objects.
const (
	serviceLabel  = "serving.knative.dev/service"
	revisionLabel = "serving.knative.dev/revision"
)

// KnativeNamespace is a scenario's World on a cluster of `cluster up
// --knative`: a namespace opted in to podgate (podgate.dev/inject=enabled,
// the only step) where the scenario's Knative Services are
// applied as Knative Services, and load goes through Knative's ingress.
type KnativeNamespace struct {
	ns       *Namespace
	c        *Cluster
	name     string
	services []string
}

var _ lab.World = (*KnativeNamespace)(nil)

// KnativeNamespace creates namespace name as Namespace does, labelled
// podgate.dev/inject=enabled: podgate's webhook adopts Knative's queue
// container in opted-in namespaces when it is the gate.
func (c *Cluster) KnativeNamespace(ctx context.Context, name string) (*KnativeNamespace, error) {
	if c.ingress == "" {
		return nil, fmt.Errorf("kubelab: namespace %s: the cluster was started without Knative", name)
	}
	n, err := c.Namespace(ctx, name)
	if err != nil {
		return nil, err
	}
	ns, err := c.cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubelab: %w", err)
	}
	if ns.Labels == nil {
		ns.Labels = map[string]string{}
	}
	ns.Labels["podgate.dev/inject"] = "enabled"
	if _, err := c.cs.CoreV1().Namespaces().Update(ctx, ns, metav1.UpdateOptions{}); err != nil {
		return nil, fmt.Errorf("kubelab: label namespace %s: %w", name, err)
	}
	return &KnativeNamespace{ns: n, c: c, name: name}, nil
}

// Apply applies the manifest's Knative Services as Knative Services
// (manifest.Manifest.ForKnative: replicas pods, the path's
// target-burst-capacity) with `kubectl apply`. With routed it then waits
// until each is Ready and the ingress routes it: Traefik's Knative
// provider marks the Knative Ingress ready before its routes are loaded,
// and answers `404 page not found` until they are, so the wait is for an
// answer from the app itself. (A scenario whose pods never get ready has
// no Ready Service and no route: routed false.)
func (k *KnativeNamespace) Apply(ctx context.Context, m *manifest.Manifest, replicas int, path Path, routed bool) error {
	burst, err := path.Burst()
	if err != nil {
		return err
	}
	conv, names, err := m.ForKnative(replicas, burst)
	if err != nil {
		return err
	}
	data, err := conv.Bytes()
	if err != nil {
		return err
	}
	if _, err := k.c.Kubectl(ctx, data, "apply", "-n", k.name, "-f", "-"); err != nil {
		return err
	}
	k.services = names
	if !routed {
		return nil
	}
	for _, svc := range names {
		if err := k.waitReady(ctx, svc); err != nil {
			return err
		}
		if err := waitIngress(ctx, k.FrontDoorURL(), k.Host(svc)); err != nil {
			return err
		}
	}
	return nil
}

// waitReady waits for the Knative Service's Ready condition True.
func (k *KnativeNamespace) waitReady(ctx context.Context, svc string) error {
	return lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("Knative Service %s/%s Ready", k.name, svc), func(ctx context.Context) (bool, error) {
		u, err := k.c.dyn.Resource(ksvcResource).Namespace(k.name).Get(ctx, svc, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st, _, msg := condition(u, "Ready")
		return st == "True", fmt.Errorf("condition Ready=%s %s", st, msg)
	})
}

// waitIngress waits until the ingress answers host from the app: 200,
// not Traefik's 404 of a route not loaded yet.
func waitIngress(ctx context.Context, ingress, host string) error {
	tr := &http.Transport{Proxy: nil}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	return lab.Poll(ctx, lab.PollInterval, "the Knative ingress to route "+host, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ingress, nil)
		if err != nil {
			return false, err
		}
		req.Host = host
		resp, err := client.Do(req)
		if err != nil {
			return false, err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return false, fmt.Errorf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
		}
		return true, nil
	})
}

// condition is a Knative object's status condition: status, reason, message.
func condition(u *unstructured.Unstructured, typ string) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "Unknown", "", "no " + typ + " condition yet"
}

// FrontDoorURL is the Knative ingress: the scenario's load goes there.
func (k *KnativeNamespace) FrontDoorURL() string { return k.c.IngressURL() }

// Host is NAME.NAMESPACE.example.com, Knative's domain on this cluster
// (config-domain).
func (k *KnativeNamespace) Host(service string) string {
	return service + "." + k.name + ".example.com"
}

// revision is the Knative Service's latest created revision.
func (k *KnativeNamespace) revision(ctx context.Context, svc string) (string, error) {
	u, err := k.c.dyn.Resource(ksvcResource).Namespace(k.name).Get(ctx, svc, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	rev, _, _ := unstructured.NestedString(u.Object, "status", "latestCreatedRevisionName")
	if rev == "" {
		return "", fmt.Errorf("the Knative Service %s/%s has no revision yet", k.name, svc)
	}
	return rev, nil
}

// WaitService waits until the revision's private Service
// (REVISION-private, whose endpoints are the revision's pods, ready or
// not, as Knative's ServerlessService sees them) says state: Serving, a
// ready endpoint; NotServing and NeverServed, none.
func (k *KnativeNamespace) WaitService(ctx context.Context, service string, state lab.ServiceState) error {
	return lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("Knative Service %s/%s %s", k.name, service, state), func(ctx context.Context) (bool, error) {
		rev, err := k.revision(ctx, service)
		if err != nil {
			return false, err
		}
		l, err := k.c.cs.DiscoveryV1().EndpointSlices(k.name).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + rev + "-private"})
		if err != nil {
			return false, err
		}
		var ready, all []string
		for _, s := range l.Items {
			for _, ep := range s.Endpoints {
				r := ep.Conditions.Ready == nil || *ep.Conditions.Ready
				for _, a := range ep.Addresses {
					all = append(all, fmt.Sprintf("%s ready=%t", a, r))
					if r {
						ready = append(ready, a)
					}
				}
			}
		}
		if (state == lab.Serving) == (len(ready) > 0) {
			return true, nil
		}
		return false, fmt.Errorf("%s-private endpoints %v", rev, all)
	})
}

// StatusMessage is what `kubectl get ksvc,revision,pods` shows of the
// service: the Knative Service's and its revision's Ready conditions,
// and each pod's gate condition (podgate.dev/containers-ready) — with
// Knative's queue-proxy, which writes none, the pod's ContainersReady.
func (k *KnativeNamespace) StatusMessage(ctx context.Context, service string) (string, error) {
	u, err := k.c.dyn.Resource(ksvcResource).Namespace(k.name).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var parts []string
	st, reason, msg := condition(u, "Ready")
	parts = append(parts, fmt.Sprintf("ksvc %s Ready=%s %s: %s", service, st, reason, msg))
	if rev, _, _ := unstructured.NestedString(u.Object, "status", "latestCreatedRevisionName"); rev != "" {
		if r, err := k.c.dyn.Resource(revisionResource).Namespace(k.name).Get(ctx, rev, metav1.GetOptions{}); err == nil {
			st, reason, msg := condition(r, "Ready")
			parts = append(parts, fmt.Sprintf("revision %s Ready=%s %s: %s", rev, st, reason, msg))
		}
	}
	pods, err := k.c.cs.CoreV1().Pods(k.name).List(ctx, metav1.ListOptions{LabelSelector: serviceLabel + "=" + service})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		parts = append(parts, podCondition(&p))
	}
	return strings.Join(parts, "; "), nil
}

// podCondition is the pod's gate condition, else its ContainersReady.
func podCondition(p *corev1.Pod) string {
	var fallback string
	for _, c := range p.Status.Conditions {
		if string(c.Type) == contract.ContainersReadyCondition {
			return fmt.Sprintf("pod %s: %s=%s %s: %s", p.Name, c.Type, c.Status, c.Reason, c.Message)
		}
		if c.Type == corev1.ContainersReady {
			fallback = fmt.Sprintf("pod %s: %s=%s %s: %s", p.Name, c.Type, c.Status, c.Reason, c.Message)
		}
	}
	return fallback
}

// TimesOutHeldRequests: Knative's activator bounds each request it
// proxies, the wait for a ready pod included, by the revision's
// timeoutSeconds and answers 504 "activator request timeout" (its
// timeout handler wraps the whole handler); with target-burst-capacity 0
// the activator is back in the path as soon as no pod is ready.
func (k *KnativeNamespace) TimesOutHeldRequests() bool { return true }

// Logs are the namespace's Knative objects, pods and events, and what
// cluster up logged of them.
func (k *KnativeNamespace) Logs() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if out, err := k.c.Kubectl(ctx, nil, "get", "ksvc,revision,sks,kingress", "-n", k.name, "-o", "wide"); err == nil {
		b.Write(out)
	}
	b.WriteString(k.ns.Logs())
	return b.String()
}

// Namespace is the namespace's name.
func (k *KnativeNamespace) Namespace() string { return k.name }

// PodHTTP reaches the pods from inside the cluster's network namespace.
func (k *KnativeNamespace) PodHTTP() *lab.PodHTTP { return k.c.http }

// ListPods lists the namespace's pods.
func (k *KnativeNamespace) ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	return k.ns.ListPods(ctx, opts)
}

// ListEvents lists the namespace's events.
func (k *KnativeNamespace) ListEvents(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	return k.ns.ListEvents(ctx, opts)
}

// DeletePod deletes a pod of the namespace.
func (k *KnativeNamespace) DeletePod(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
	return k.ns.DeletePod(ctx, ns, name, opts)
}

// Output is the cluster's containers' output (every namespace's).
func (k *KnativeNamespace) Output() string { return k.c.Stdout() }

// knativeStop is the least a Knative namespace's deletion is given: its
// pods' grace is the revision's timeoutSeconds, after Knative's own
// objects (Route, Ingress, ServerlessService) are finalized; 90 s was
// not enough on a loaded 2-core machine with six namespaces at once.
const knativeStop = 4 * time.Minute

// Stop deletes the namespace and waits until it is gone (at least
// knativeStop).
func (k *KnativeNamespace) Stop(timeout time.Duration) error {
	return k.ns.Stop(max(timeout, knativeStop))
}

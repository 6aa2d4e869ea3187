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
	"k8s.io/apimachinery/pkg/types"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/manifest"
)

// Knative's labels on a revision's objects.
const (
	labelKnativeService = "serving.knative.dev/service"
	labelServiceType    = "networking.internal.knative.dev/serviceType"
)

// KnativeNamespace is a scenario's World on a cluster with Knative Serving
// (Config.Knative): a namespace opted in to podgate (label and the gate's
// RoleBinding, so that podgate's webhook adopts a gate running as the queue
// container), the scenario's Knative Services applied as they are, load
// through Knative's ingress. The pods, events, toggles and the stop are
// Namespace's.
type KnativeNamespace struct {
	*plainNamespace
	burst string
}

// plainNamespace is Namespace under a name that does not hide its
// Namespace method when embedded.
type plainNamespace = Namespace

var _ lab.World = (*KnativeNamespace)(nil)

// KnativeNamespace creates namespace name for Knative Services whose
// requests take the path burst says (manifest.BurstCapacityActivator or
// manifest.BurstCapacityDirect).
func (c *Cluster) KnativeNamespace(ctx context.Context, name, burst string) (*KnativeNamespace, error) {
	if c.ingress == "" {
		return nil, fmt.Errorf("kubelab: namespace %s: the cluster runs no Knative (Config.Knative)", name)
	}
	ns, err := c.Namespace(ctx, name)
	if err != nil {
		return nil, err
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"enabled"}}}`, injectLabel)
	if _, err := c.cs.CoreV1().Namespaces().Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return nil, fmt.Errorf("kubelab: opt namespace %s in: %w", name, err)
	}
	return &KnativeNamespace{plainNamespace: ns, burst: burst}, nil
}

const injectLabel = "podgate.dev/inject"

// Apply applies the manifest's Knative Services (manifest.ForKnative:
// replicas pods each, the namespace's request path) with `kubectl
// apply`, and waits until each is Ready and Knative's ingress answers it
// from the app: Traefik's Knative provider reports an Ingress ready
// before it has loaded its routes, and answers 404 meanwhile.
func (n *KnativeNamespace) Apply(ctx context.Context, m *manifest.Manifest, replicas int) error {
	conv, err := m.ForKnative(replicas, n.burst)
	if err != nil {
		return err
	}
	data, err := conv.Bytes()
	if err != nil {
		return err
	}
	if _, err := n.c.Kubectl(ctx, data, "apply", "-n", n.name, "-f", "-"); err != nil {
		return err
	}
	for _, svc := range conv.KnativeServices() {
		wait := fmt.Sprintf("--timeout=%ds", max(1, int(time.Until(deadline(ctx)).Seconds())))
		if _, err := n.c.Kubectl(ctx, nil, "wait", "-n", n.name, "--for=condition=Ready", "ksvc/"+svc, wait); err != nil {
			return err
		}
		if err := n.waitAnswers(ctx, svc); err != nil {
			return err
		}
	}
	return nil
}

func deadline(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(5 * time.Minute)
}

// waitAnswers waits until a request through the ingress is answered 200
// by the app.
func (n *KnativeNamespace) waitAnswers(ctx context.Context, service string) error {
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return lab.Poll(ctx, lab.PollInterval, "Knative's ingress to route "+n.Host(service), func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.FrontDoorURL(), nil)
		if err != nil {
			return false, err
		}
		req.Host = n.Host(service)
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

// FrontDoorURL is Knative's ingress.
func (n *KnativeNamespace) FrontDoorURL() string { return n.c.ingress + "/" }

// Host is NAME.NAMESPACE.example.com, the domain podgate's Knative
// install gives every Knative Service.
func (n *KnativeNamespace) Host(service string) string {
	return service + "." + n.name + "." + contract.Domain
}

// WaitService waits until the Knative Service's revisions' private
// EndpointSlices (the pods Knative's activator and the SKS route to) say
// state: Serving, a ready endpoint; NotServing and NeverServed, none.
func (n *KnativeNamespace) WaitService(ctx context.Context, service string, state lab.ServiceState) error {
	return lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("Knative Service %s/%s %s", n.name, service, state), func(ctx context.Context) (bool, error) {
		l, err := n.c.cs.DiscoveryV1().EndpointSlices(n.name).List(ctx, metav1.ListOptions{
			LabelSelector: labelKnativeService + "=" + service + "," + labelServiceType + "=Private"})
		if err != nil {
			return false, err
		}
		ready, all := readyAddresses(l.Items)
		if (state == lab.Serving) == (len(ready) > 0) {
			return true, nil
		}
		return false, fmt.Errorf("private endpoints %v", all)
	})
}

func readyAddresses(ss []discoveryv1.EndpointSlice) (ready, all []string) {
	for _, s := range ss {
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
	return ready, all
}

// StatusMessage is what the Knative Service's pods say: the gate's
// condition podgate.dev/containers-ready, pod by pod, where the gate was
// adopted; with Knative's queue-proxy there is none, and the pods' Ready
// condition is all there is (an error: no condition names a container).
func (n *KnativeNamespace) StatusMessage(ctx context.Context, service string) (string, error) {
	pods, err := n.c.cs.CoreV1().Pods(n.name).List(ctx, metav1.ListOptions{LabelSelector: labelKnativeService + "=" + service})
	if err != nil {
		return "", err
	}
	var parts, ready []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			switch {
			case string(c.Type) == contract.ContainersReadyCondition:
				parts = append(parts, fmt.Sprintf("pod %s: %s=%s %s: %s", p.Name, c.Type, c.Status, c.Reason, c.Message))
			case c.Type == corev1.PodReady:
				ready = append(ready, fmt.Sprintf("pod %s: Ready=%s %s", p.Name, c.Status, c.Message))
			}
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("no pod of Knative Service %s has the gate's condition (%s)", service, strings.Join(ready, "; "))
	}
	return strings.Join(parts, "; "), nil
}

// TimesOutHeldRequests: Knative's activator holds a request for its
// revision's timeoutSeconds, but answers 504 only once the whole
// request's time is up, which the lab's load does not pin (a request
// the gate handed off has spent part of it already).
func (n *KnativeNamespace) TimesOutHeldRequests() bool { return false }

// Logs are Namespace's, with the Knative Services' status.
func (n *KnativeNamespace) Logs() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if out, err := n.c.Kubectl(ctx, nil, "get", "ksvc,revision,sks", "-n", n.name, "-o", "wide"); err == nil {
		b.Write(out)
	}
	b.WriteString(n.plainNamespace.Logs())
	// The containers' output, of every pod the namespace's events name
	// (deleted ones too).
	pods := map[string]bool{}
	if evs, err := n.c.cs.CoreV1().Events(n.name).List(ctx, metav1.ListOptions{}); err == nil {
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "Pod" {
				pods[e.InvolvedObject.Name] = true
			}
		}
	}
	b.WriteString("the containers' output of namespace " + n.name + ":\n")
	for _, l := range strings.Split(n.c.Stdout(), "\n") {
		if pod, _, ok := strings.Cut(l, "/"); ok && pods[pod] {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// Stop deletes the namespace's Knative Services and waits until their
// pods are gone (each drained and stopped by the node), then deletes the
// namespace without waiting for it: what is left of it then is Knative's
// own objects and their finalizers, which its controller removes in its
// own time (seconds to minutes on a loaded 2-core machine).
func (n *KnativeNamespace) Stop(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := n.c.Kubectl(ctx, nil, "delete", "ksvc", "--all", "-n", n.name, "--wait=false"); err != nil {
		return fmt.Errorf("kubelab: delete the Knative Services of %s: %w", n.name, err)
	}
	err := lab.Poll(ctx, 100*time.Millisecond, "the pods of namespace "+n.name+" gone", func(ctx context.Context) (bool, error) {
		pods, err := n.c.cs.CoreV1().Pods(n.name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var left []string
		for _, p := range pods.Items {
			left = append(left, p.Name+" "+string(p.Status.Phase))
		}
		return len(left) == 0, fmt.Errorf("still there: %v", left)
	})
	if err != nil {
		return err
	}
	if err := n.c.cs.CoreV1().Namespaces().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("kubelab: delete namespace %s: %w", n.name, err)
	}
	return nil
}

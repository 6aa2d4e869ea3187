package kubelab

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/lab"
	"github.com/podgate/podgate/lab/manifest"
)

// Namespace is a scenario's World on a cluster: a namespace of its own,
// the scenario's manifests applied there. The gates need no right of
// their own: they ask the node status service podgate installs.
type Namespace struct {
	c    *Cluster
	name string
}

var _ lab.World = (*Namespace)(nil)

// Namespace creates namespace name and waits for its default service
// account (no pod can be created before it exists).
func (c *Cluster) Namespace(ctx context.Context, name string) (*Namespace, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := c.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("kubelab: %w", err)
	}
	err := lab.Poll(ctx, lab.PollInterval, "the default ServiceAccount of "+name, func(ctx context.Context) (bool, error) {
		_, err := c.cs.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, err
	})
	if err != nil {
		return nil, err
	}
	return &Namespace{c: c, name: name}, nil
}

// Apply applies the manifest as a cluster without Knative takes it
// (manifest.Manifest.ForCluster: Deployments of replicas pods, opted in to
// the gate, and their Services) with `kubectl apply`, and waits until the
// front door routes each Service (lab.WaitRouted): from then on the
// activator holds the Service's requests instead of answering 404.
// (The Service's EndpointSlice in the API is not enough: the activator
// learns of it through its own watch, a moment later.)
func (n *Namespace) Apply(ctx context.Context, m *manifest.Manifest, replicas int) error {
	conv, err := m.ForCluster(replicas)
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
	for _, svc := range conv.Services() {
		if err := lab.WaitRouted(ctx, n.FrontDoorURL(), n.Host(svc)); err != nil {
			return err
		}
	}
	return nil
}

// Namespace is the namespace's name.
func (n *Namespace) Namespace() string { return n.name }

// FrontDoorURL is the cluster's front door.
func (n *Namespace) FrontDoorURL() string { return n.c.FrontDoorURL() }

// Host is NAME.NAMESPACE.example.com, the activator's domain in
// kube/deploy/base.
func (n *Namespace) Host(service string) string {
	return service + "." + n.name + "." + contract.Domain
}

// PodHTTP reaches the pods from inside the cluster's network namespace.
func (n *Namespace) PodHTTP() *lab.PodHTTP { return n.c.http }

// ListPods lists the namespace's pods.
func (n *Namespace) ListPods(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	return n.c.cs.CoreV1().Pods(n.name).List(ctx, opts)
}

// ListEvents lists the namespace's events.
func (n *Namespace) ListEvents(ctx context.Context, opts metav1.ListOptions) (*corev1.EventList, error) {
	return n.c.cs.CoreV1().Events(n.name).List(ctx, opts)
}

// DeletePod deletes a pod of the namespace.
func (n *Namespace) DeletePod(ctx context.Context, _, name string, opts metav1.DeleteOptions) error {
	return n.c.cs.CoreV1().Pods(n.name).Delete(ctx, name, opts)
}

func (n *Namespace) slices(ctx context.Context, service string) ([]discoveryv1.EndpointSlice, error) {
	l, err := n.c.cs.DiscoveryV1().EndpointSlices(n.name).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + service})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// WaitService waits until the Service's EndpointSlices say state:
// Serving, a ready endpoint; NotServing and NeverServed, none (a cluster
// keeps no history of a Service's readiness).
func (n *Namespace) WaitService(ctx context.Context, service string, state lab.ServiceState) error {
	return lab.Poll(ctx, lab.PollInterval, fmt.Sprintf("Service %s/%s %s", n.name, service, state), func(ctx context.Context) (bool, error) {
		ss, err := n.slices(ctx, service)
		if err != nil {
			return false, err
		}
		var ready, all []string
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
		if (state == lab.Serving) == (len(ready) > 0) {
			return true, nil
		}
		return false, fmt.Errorf("endpoints %v", all)
	})
}

// StatusMessage is what the gates of the Service's pods say in their
// condition podgate.dev/containers-ready, pod by pod.
func (n *Namespace) StatusMessage(ctx context.Context, service string) (string, error) {
	svc, err := n.c.cs.CoreV1().Services(n.name).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	pods, err := n.c.cs.CoreV1().Pods(n.name).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return "", err
	}
	var parts []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if string(c.Type) == contract.ContainersReadyCondition {
				parts = append(parts, fmt.Sprintf("pod %s: %s=%s %s: %s", p.Name, c.Type, c.Status, c.Reason, c.Message))
			}
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("no pod of Service %s has the gate's condition", service)
	}
	return strings.Join(parts, "; "), nil
}

// TimesOutHeldRequests: the activator holds requests for its one
// --request-timeout (5 minutes in kube/deploy/base), whatever the workload.
func (n *Namespace) TimesOutHeldRequests() bool { return false }

// Output is the cluster's containers' output (every namespace's).
func (n *Namespace) Output() string { return n.c.Stdout() }

// Logs are the namespace's pods and events, and what cluster up logged
// of them.
func (n *Namespace) Logs() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if out, err := n.c.Kubectl(ctx, nil, "get", "pods,endpointslices", "-n", n.name, "-o", "wide"); err == nil {
		b.Write(out)
	}
	if out, err := n.c.Kubectl(ctx, nil, "get", "events", "-n", n.name, "--sort-by=.lastTimestamp"); err == nil {
		b.Write(out)
	}
	b.WriteString("cluster up's log of namespace " + n.name + ":\n")
	for _, l := range strings.Split(n.c.Stderr(), "\n") {
		if strings.Contains(l, "pod="+n.name+"/") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// Stop deletes the namespace and waits until it is gone: its pods
// stopped gracefully by the node and deleted.
func (n *Namespace) Stop(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.c.cs.CoreV1().Namespaces().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("kubelab: delete namespace %s: %w", n.name, err)
	}
	return lab.Poll(ctx, 100*time.Millisecond, "namespace "+n.name+" gone", func(ctx context.Context) (bool, error) {
		ns, err := n.c.cs.CoreV1().Namespaces().Get(ctx, n.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		return false, errors.New("still there, phase " + string(ns.Status.Phase))
	})
}

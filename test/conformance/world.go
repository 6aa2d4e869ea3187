// Package conformance is the kubelet's probe behaviours as one table
// of cases, run by tests in both of podgate's worlds: against `podgate
// run`'s control API (its own control plane and EndpointSlices) and
// against a real cluster of `podgate cluster up` (kube-apiserver, the real
// EndpointSlice controller, podgate's node as the kubelet). A case is a
// pod and what to observe of it through client-go: restarts, events,
// conditions, the pod's endpoint; what differs between the worlds —
// where the pods come from, how their addresses are reached — is the
// World's.
//
// The cases follow the kubelet's own end-to-end probe tests
// (test/e2e/common/node/container_probe.go) with periods of one second
// and thresholds of one or two, so the whole table runs in parallel in
// well under a minute on a loaded machine. Every wait polls with a
// deadline; a "never" is observed over a count of probe runs (events),
// not over a sleep.
//
// Only tests import this package.
package conformance

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// WaitLimit bounds every wait of a case: generous for a loaded 2-core
// machine; a passing case never waits that long.
const WaitLimit = 3 * time.Minute

// LabelCase labels every pod of the table with its name: a world whose
// EndpointSlices come from Services selects the pod with it (Service).
const LabelCase = "probeconformance.podgate.dev/case"

// World is where the cases run.
type World struct {
	// Client is a client-go clientset on the world's API.
	Client kubernetes.Interface
	// Namespace holds the pods.
	Namespace string
	// HTTP reaches the pods' addresses: the host's loopback locally, the
	// inside of the cluster's network namespace on a cluster.
	HTTP *http.Client
}

// Setup makes the pods exist in a world and returns it: the local world
// starts `podgate run` with them as its manifests, the cluster world
// creates them (and Services) through the API. The pods' files (exec
// probes read them) are in a directory of the test's, which the
// containers must see at the same path: podgate runs containers in the
// node's mount namespace.
type Setup func(t *testing.T, pods []*corev1.Pod) *World

// Run runs every case of the table in parallel in the world setup makes.
func Run(t *testing.T, setup Setup) {
	t.Helper()
	dir := t.TempDir()
	cases := Cases()
	pods := make([]*corev1.Pod, 0, len(cases))
	for _, c := range cases {
		pods = append(pods, c.pod(dir))
	}
	w := setup(t, pods)
	// Before the world stops: a pod a filtered run (-run) left alone would
	// hold the stop up for its grace period.
	t.Cleanup(func() {
		for _, p := range pods {
			w.forget(p.Name)
		}
	})
	began := time.Now()
	t.Run("table", func(t *testing.T) {
		for i, c := range cases {
			t.Run(c.Name, func(t *testing.T) {
				t.Parallel()
				name := pods[i].Name
				begin := time.Now()
				t.Cleanup(func() { w.forget(name) })
				c.Run(t, &Env{World: w, Dir: dir, Pod: name})
				t.Logf("%s: %s", name, time.Since(begin).Round(time.Millisecond))
			})
		}
	})
	t.Logf("the table took %s", time.Since(began).Round(time.Millisecond))
}

// Service is the Service of a table pod, for a world whose EndpointSlices
// come from Services (a cluster): named as the pod, selecting it alone.
func Service(pod *corev1.Pod) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{LabelCase: pod.Labels[LabelCase]},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
}

// forget deletes a case's pod at once, so that the world stops quickly.
func (w *World) forget(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = w.Client.CoreV1().Pods(w.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
}

// Env is one case's view of the world.
type Env struct {
	*World
	// Dir is the scratch directory shared with the containers.
	Dir string
	// Pod is the case's pod's name.
	Pod string
}

// eventually polls cond every 100 ms until it holds or WaitLimit passes.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(WaitLimit)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, WaitLimit, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pod is the case's pod as the API has it now.
func (e *Env) pod(t *testing.T) (*corev1.Pod, error) {
	t.Helper()
	return e.Client.CoreV1().Pods(e.Namespace).Get(t.Context(), e.Pod, metav1.GetOptions{})
}

// waitPod polls the pod until cond holds and returns it.
func (e *Env) waitPod(t *testing.T, what string, cond func(*corev1.Pod) (bool, string)) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	eventually(t, e.Pod+": "+what, func() (bool, string) {
		p, err := e.pod(t)
		if err != nil {
			return false, err.Error()
		}
		last = p
		return cond(p)
	})
	return last
}

// restarted waits until the container's restart count reaches n.
func (e *Env) restarted(t *testing.T, n int32) *corev1.Pod {
	t.Helper()
	return e.waitPod(t, fmt.Sprintf("restartCount %d", n), func(p *corev1.Pod) (bool, string) {
		got := restarts(p)
		return got >= n, fmt.Sprintf("restartCount %d", got)
	})
}

// events lists the events about the pod with reason (any when empty).
func (e *Env) events(t *testing.T, reason string) []corev1.Event {
	t.Helper()
	sel := "involvedObject.name=" + e.Pod
	list, err := e.Client.CoreV1().Events(e.Namespace).List(t.Context(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatalf("events of %s: %v", e.Pod, err)
	}
	var out []corev1.Event
	for _, ev := range list.Items {
		if reason == "" || ev.Reason == reason {
			out = append(out, ev)
		}
	}
	return out
}

// eventCount sums the counts of the pod's events with reason whose
// message starts with prefix (repeats are counted on one event).
func (e *Env) eventCount(t *testing.T, reason, prefix string) int32 {
	t.Helper()
	var n int32
	for _, ev := range e.events(t, reason) {
		if len(ev.Message) >= len(prefix) && ev.Message[:len(prefix)] == prefix {
			n += max(ev.Count, 1)
		}
	}
	return n
}

// waitEvent waits until the pod has an event with reason and a message
// starting with prefix.
func (e *Env) waitEvent(t *testing.T, reason, prefix string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s: a %s event %q", e.Pod, reason, prefix), func() (bool, string) {
		if e.eventCount(t, reason, prefix) > 0 {
			return true, ""
		}
		return false, fmt.Sprintf("events: %v", messages(e.events(t, "")))
	})
}

func messages(evs []corev1.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s %q x%d", ev.Reason, ev.Message, ev.Count))
	}
	return out
}

// endpoint is the pod's endpoint in any EndpointSlice of the namespace
// (nil when none lists it).
func (e *Env) endpoint(t *testing.T) (*discoveryv1.Endpoint, error) {
	t.Helper()
	list, err := e.Client.DiscoveryV1().EndpointSlices(e.Namespace).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return endpointOf(list.Items, e.Pod), nil
}

func endpointOf(slices []discoveryv1.EndpointSlice, pod string) *discoveryv1.Endpoint {
	for i := range slices {
		for j, ep := range slices[i].Endpoints {
			if ep.TargetRef != nil && ep.TargetRef.Kind == "Pod" && ep.TargetRef.Name == pod {
				return &slices[i].Endpoints[j]
			}
		}
	}
	return nil
}

// waitEndpoint polls the pod's endpoint until cond holds.
func (e *Env) waitEndpoint(t *testing.T, what string, cond func(*discoveryv1.Endpoint) bool) {
	t.Helper()
	eventually(t, e.Pod+": endpoint "+what, func() (bool, string) {
		ep, err := e.endpoint(t)
		if err != nil {
			return false, err.Error()
		}
		return ep != nil && cond(ep), "endpoint " + describeEndpoint(ep)
	})
}

func describeEndpoint(ep *discoveryv1.Endpoint) string {
	if ep == nil {
		return "absent"
	}
	b := func(p *bool) string {
		if p == nil {
			return "unset"
		}
		return strconv.FormatBool(*p)
	}
	c := ep.Conditions
	return fmt.Sprintf("%v ready=%s serving=%s terminating=%s", ep.Addresses, b(c.Ready), b(c.Serving), b(c.Terminating))
}

// is reports whether an endpoint condition is set to want.
func is(p *bool, want bool) bool { return p != nil && *p == want }

// get sends GET path to the pod's port 8080.
func (e *Env) get(t *testing.T, path string) {
	t.Helper()
	p, err := e.pod(t)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + net.JoinHostPort(p.Status.PodIP, "8080") + path
	resp, err := e.HTTP.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, body)
	}
}

func restarts(p *corev1.Pod) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		return cs.RestartCount
	}
	return 0
}

func containerStatus(p *corev1.Pod) *corev1.ContainerStatus {
	if len(p.Status.ContainerStatuses) == 0 {
		return &corev1.ContainerStatus{}
	}
	return &p.Status.ContainerStatuses[0]
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

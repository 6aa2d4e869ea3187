// Package preflight is the check of `podgate run` before anything starts:
// every problem that would stop the workloads from running on this node,
// reported at once, so that nothing starts unless all of them can.
//
// It knows how the local control plane names what it makes (a Pod keeps
// its name; every workload's EndpointSlice is named after the Pod, the
// Deployment or the Knative revision), to report two workloads that would
// collide, and it counts the pods the workloads start against the pod
// network's room. What keeps a workload's containers from starting is the
// node agent's to say, on a stand-in pod of each workload (Node, OnNode):
// the node sees only pods, the workloads are `podgate run`'s.
package preflight

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/node/images"
)

// Node is what the check asks of the node agent that will run the pods
// (node.Agent).
type Node interface {
	// CheckPod reports what would keep pod's containers from starting
	// there, each error at its field under specPath.
	CheckPod(pod *corev1.Pod, specPath *field.Path) field.ErrorList
	// Capacity is how many pods the pod network has room for, and its
	// range.
	Capacity() (pods int, cidr netip.Prefix)
}

// OnNode is the check of the workloads' pods on n; replicas, when set,
// is the replica count of every Deployment and Knative Service.
func OnNode(n Node, replicas *int32) Options {
	return Options{
		Containers: func(w *workload.Workload) field.ErrorList {
			return n.CheckPod(StandIn(w), w.SpecPath())
		},
		Capacity: n.Capacity,
		Replicas: replicas,
	}
}

// StandIn is a pod as w's controller would make it, for a check of what
// the node makes of it: the name a Pod keeps (a controller's pods get
// generated ones, which nothing checked depends on), the template's labels
// and annotations, and w's pod spec (shared, not copied: the node only
// reads it).
func StandIn(w *workload.Workload) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace,
			Labels: w.PodLabels(), Annotations: w.Template.Annotations},
		Spec: *w.PodSpec(),
	}
}

// Options are what the check asks of the node agent.
type Options struct {
	// Containers reports what would keep the workload's containers from
	// starting (a command without a local program, an environment source
	// that exists only in a cluster), each with its field path; nil
	// checks nothing there.
	Containers func(*workload.Workload) field.ErrorList
	// Capacity is how many pods the pod network has room for, and its
	// range. Required.
	Capacity func() (pods int, cidr netip.Prefix)
	// Replicas, when set, is the replica count of every Deployment and
	// Knative Service (a Pod is always one pod).
	Replicas *int32
}

// nsName is a name within a namespace.
type nsName struct{ namespace, name string }

// Check reports everything that would stop the workloads from running
// here: what Options.Containers finds, two workloads whose pods or
// EndpointSlices would share a name, more pods than the pod range has
// addresses. Each problem names the manifest (file and document), the
// workload and the field path; the error lists them all.
func Check(ws []*workload.Workload, o Options) error {
	var msgs []string
	if o.Containers != nil {
		for _, w := range ws {
			for _, err := range o.Containers(w) {
				msgs = append(msgs, where(w)+": "+err.Error())
			}
		}
	}
	dups, need := collisions(ws, o.Replicas)
	msgs = append(msgs, dups...)
	if size, cidr := o.Capacity(); need > size {
		msgs = append(msgs, fmt.Sprintf("--pod-cidr %s: room for %d pod(s), the workloads start %d: give it a larger range", cidr, size, need))
	}
	if len(msgs) > 0 {
		return fmt.Errorf("cannot run locally:\n  %s", strings.Join(msgs, "\n  "))
	}
	return nil
}

// collisions reports the workloads whose Pod or EndpointSlice another one
// already makes (the names the store and the EndpointSlices key on: a
// Pod's own name, and every workload's service name), and counts the pods
// the others start.
func collisions(ws []*workload.Workload, replicas *int32) (msgs []string, need int) {
	pods := map[nsName]*workload.Workload{}
	slices := map[nsName]*workload.Workload{}
	namePath := field.NewPath("metadata", "name")
	for _, w := range ws {
		// A Pod keeps its name; a controller's pods get generated ones.
		// The EndpointSlice is named after the Pod or Deployment, or the
		// Knative revision.
		serviceName := w.Name
		if w.Knative != nil {
			serviceName = w.Knative.RevisionName
		}
		if w.Kind == workload.KindPod {
			key := nsName{w.Namespace, w.Name}
			if other, ok := pods[key]; ok {
				msgs = append(msgs, fmt.Sprintf("%s: %s: %s: each workload runs once, rename one",
					where(w), field.Duplicate(namePath, w.Name).Error(), sameName(other)))
				continue
			}
			pods[key] = w
		}
		key := nsName{w.Namespace, serviceName}
		if other, ok := slices[key]; ok {
			what := sameName(other)
			if other.Kind != w.Kind {
				what = fmt.Sprintf("%s: %s makes EndpointSlice %s/%s too", other.Source, other.ID(), w.Namespace, serviceName)
			}
			msgs = append(msgs, fmt.Sprintf("%s: %s: %s: each workload runs once, rename one",
				where(w), field.Duplicate(namePath, w.Name).Error(), what))
			continue
		}
		slices[key] = w
		need += replicasOf(w, replicas)
	}
	return msgs, need
}

// where names a workload in messages: its manifest and document, and its
// kind and name.
func where(w *workload.Workload) string {
	if w.Source.File == "" {
		return w.ID()
	}
	return w.Source.String() + ": " + w.ID()
}

// sameName says where else a workload of that kind and name is defined.
func sameName(w *workload.Workload) string {
	return fmt.Sprintf("%s defines %s in namespace %s too", w.Source, w.ID(), w.Namespace)
}

// replicasOf is how many pods a workload starts with: one for a Pod, else
// its replicas, or replicas when set.
func replicasOf(w *workload.Workload, replicas *int32) int {
	switch {
	case w.Kind == workload.KindPod:
		return 1
	case replicas != nil:
		return int(*replicas)
	}
	return int(w.Replicas)
}

// Warnings names the containers of w that Kubernetes would run but
// podgate cannot run here as written: no command, and an image m has no
// entrypoint for. 'podgate validate' prints them as warnings; 'podgate
// run' refuses such a workload (Check, through the node's CheckPod),
// naming the same field. And for a Knative Service, what podgate run
// does not do that Knative would (Autoscaling).
func Warnings(w *workload.Workload, m images.Map) []string {
	var out []string
	spec := w.PodSpec()
	check := func(c *corev1.Container, path *field.Path) {
		if _, err := m.Argv(c.Image, c.Command, c.Args, path); err != nil {
			out = append(out, fmt.Sprintf("%s: image %q has no local entrypoint: Kubernetes runs the image, but 'podgate run' runs containers as local processes and needs a command, or --image %s=/path/to/program",
				err.Field, c.Image, images.Repository(c.Image)))
		}
	}
	for i := range spec.InitContainers {
		check(&spec.InitContainers[i], w.SpecPath().Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		check(&spec.Containers[i], w.SpecPath().Child("containers").Index(i))
	}
	return append(out, Autoscaling(w, nil)...)
}

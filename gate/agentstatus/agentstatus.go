// Package agentstatus is the gate's status source in local mode: it reads
// the gate's own pod from the node agent's control API (`podgate run`,
// PODGATE_STATUS_SOURCE=http://…) with a list and a watch, as a Kubernetes
// informer would, and reports its containers' statuses.
package agentstatus

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/podgate/podgate/api"
	"github.com/podgate/podgate/gate"
)

// Source implements gate.StatusSource over the control API.
type Source struct {
	client    *api.Client
	namespace string
	pod       string
}

var _ gate.PodWatcher = (*Source)(nil)

// New returns a Source for pod in namespace at the control API url. The
// pod name comes from SERVING_POD (the downward API): without it the gate
// cannot find itself.
func New(url, namespace, pod string) (*Source, error) {
	if pod == "" {
		return nil, errors.New("the pod name (SERVING_POD) is empty: the gate cannot find its own pod in the node agent's API")
	}
	if namespace == "" {
		namespace = "default"
	}
	c, err := api.NewClient(url)
	if err != nil {
		return nil, err
	}
	return &Source{client: c, namespace: namespace, pod: pod}, nil
}

// Close releases idle connections.
func (s *Source) Close() { s.client.Close() }

// Watch lists the pod, reports its containers, then every change until
// ctx ends or the watch breaks.
func (s *Source) Watch(ctx context.Context, update func([]gate.ContainerStatus)) error {
	return s.WatchPod(ctx, func(ps gate.PodStatus) { update(ps.Containers) })
}

// WatchPod is Watch with the pod's deletion: a deletionTimestamp (the node
// agent sets it when the deletion starts, as the API server does) or the
// pod gone from the API.
func (s *Source) WatchPod(ctx context.Context, update func(gate.PodStatus)) error {
	opts := api.ListOptions{Namespace: s.namespace, FieldSelector: "metadata.name=" + s.pod}
	list, err := s.client.ListPods(ctx, opts)
	if err != nil {
		return fmt.Errorf("list pod %s/%s: %w", s.namespace, s.pod, err)
	}
	// A pod that is not there (yet) has no statuses; it is not being
	// deleted either, as far as anyone can tell.
	st := gate.PodStatus{Containers: []gate.ContainerStatus{}}
	for i := range list.Items {
		st = PodStatusOf(&list.Items[i])
	}
	update(st)

	opts.ResourceVersion = list.ResourceVersion
	w, err := s.client.Watch(ctx, api.Pods, opts)
	if err != nil {
		return fmt.Errorf("watch pod %s/%s: %w", s.namespace, s.pod, err)
	}
	defer w.Close()
	for {
		ev, err := w.Next()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, io.EOF):
			return fmt.Errorf("watch of pod %s/%s ended", s.namespace, s.pod)
		case err != nil:
			return fmt.Errorf("watch pod %s/%s: %w", s.namespace, s.pod, err)
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			var p corev1.Pod
			if err := ev.Decode(&p); err != nil {
				return err
			}
			update(PodStatusOf(&p))
		case watch.Deleted:
			update(gate.PodStatus{Containers: []gate.ContainerStatus{}, Terminating: true})
		}
	}
}

// PodStatusOf is the gate's view of a pod: its containers' statuses and
// whether it is being deleted.
func PodStatusOf(p *corev1.Pod) gate.PodStatus {
	return gate.PodStatus{Containers: Statuses(p), Terminating: p.DeletionTimestamp != nil}
}

// Statuses turns a pod's container statuses (regular containers and
// native sidecars) into the gate's.
func Statuses(p *corev1.Pod) []gate.ContainerStatus {
	out := make([]gate.ContainerStatus, 0, len(p.Status.ContainerStatuses)+len(p.Status.InitContainerStatuses))
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			out = append(out, gate.ContainerStatus{
				Name:         cs.Name,
				Ready:        cs.Ready,
				Running:      cs.State.Running != nil,
				RestartCount: cs.RestartCount,
				ContainerID:  cs.ContainerID,
				Message:      stateMessage(cs.State),
			})
		}
	}
	return out
}

func stateMessage(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		if s.Waiting.Message != "" {
			return "waiting: " + s.Waiting.Reason + ": " + s.Waiting.Message
		}
		return "waiting: " + s.Waiting.Reason
	case s.Terminated != nil:
		return fmt.Sprintf("terminated: %s (exit code %d)", s.Terminated.Reason, s.Terminated.ExitCode)
	}
	return ""
}

// Package podapi is the gate's status source: a client-go informer on
// the gate's own pod, over any Kubernetes API. The same code serves both
// places the gate runs: `podgate run` (PODGATE_STATUS_SOURCE=http://…, the
// local control API) and a cluster (PODGATE_STATUS_SOURCE=kubernetes, the
// API server by in-cluster config or $KUBECONFIG). It reports the pod's
// containers' statuses (native sidecars included) and its deletion.
package podapi

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/podgate/podgate/gate"
	"github.com/podgate/podgate/gate/readiness"
	"github.com/podgate/podgate/internal/informers"
	"github.com/podgate/podgate/internal/kubeconfig"
)

// Source implements gate.PodWatcher with an informer on one pod.
type Source struct {
	client    *podsClient
	namespace string
	pod       string
}

var _ gate.PodWatcher = (*Source)(nil)

// ForURL is a Source over the API at url (podgate run's control API, which has
// no authentication).
func ForURL(url, namespace, pod string) (*Source, error) {
	return forConfig(&rest.Config{Host: url}, namespace, pod)
}

// ForConfig is ForURL with the client's whole configuration (cfg.Host
// the status source's URL): a test's gate dials from its pod's address
// with cfg.Dial, as a pod's gate does by being in the pod's network.
func ForConfig(cfg *rest.Config, namespace, pod string) (*Source, error) {
	return forConfig(cfg, namespace, pod)
}

// ForCluster is a Source over the cluster's API server, found as every podgate
// component finds it (internal/kubeconfig): $KUBECONFIG first (podgate's
// node hands each pod one with its bound service-account token), then the
// in-cluster service account, then ~/.kube/config.
func ForCluster(namespace, pod string) (*Source, error) {
	cfg, _, err := kubeconfig.Load("")
	if err != nil {
		return nil, err
	}
	return forConfig(cfg, namespace, pod)
}

// forConfig returns a Source for pod in namespace. The pod name comes
// from SERVING_POD (the downward API): without it the gate cannot find
// itself.
func forConfig(cfg *rest.Config, namespace, pod string) (*Source, error) {
	if pod == "" {
		return nil, errors.New("the pod name (SERVING_POD) is empty: the gate cannot find its own pod in the API")
	}
	if namespace == "" {
		namespace = "default"
	}
	c, err := newPodsClient(cfg, namespace)
	if err != nil {
		return nil, err
	}
	return &Source{client: c, namespace: namespace, pod: pod}, nil
}

// Close is a no-op kept for callers: informers end with WatchPod's ctx.
func (s *Source) Close() {}

// Watch reports the pod's containers: once the informer has synced (an
// empty slice while the pod does not exist), then on every change, until
// ctx ends.
func (s *Source) Watch(ctx context.Context, update func([]readiness.ContainerStatus)) error {
	return s.WatchPod(ctx, func(ps gate.PodStatus) { update(ps.Containers) })
}

// WatchPod is Watch with the pod's deletion: a deletionTimestamp (the API
// sets it when the deletion starts) or the pod gone from the API. The
// informer lists and watches again by itself when a watch breaks, so it
// only returns ctx.Err().
func (s *Source) WatchPod(ctx context.Context, update func(gate.PodStatus)) error {
	// One informer of its own on a core/v1-only client (see podsClient),
	// not a shared factory.
	inf := cache.NewSharedIndexInformer(s.client.listWatchOne(s.pod), &corev1.Pod{}, 0, cache.Indexers{})
	// The informer's handler only rings; reports are made here, one at a
	// time, from its current state.
	infs, err := informers.Start(ctx, inf)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("watch pod %s/%s: %w", s.namespace, s.pod, err)
	}
	defer infs.Stop()
	seen := false
	report := func() {
		infs.Take() // this report covers it
		obj, exists, _ := inf.GetStore().GetByKey(s.namespace + "/" + s.pod)
		if !exists {
			// A pod that is not there (yet) has no statuses and is not
			// being deleted; one that was there and is gone is deleted.
			update(gate.PodStatus{Containers: []readiness.ContainerStatus{}, Terminating: seen})
			return
		}
		seen = true
		update(PodStatusOf(obj.(*corev1.Pod)))
	}
	report()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-infs.Changed():
			report()
		}
	}
}

// PodStatusOf is the gate's view of a pod: its containers' statuses,
// whether it is being deleted and whether it is Ready.
func PodStatusOf(p *corev1.Pod) gate.PodStatus {
	return gate.PodStatus{Containers: Statuses(p), Terminating: p.DeletionTimestamp != nil, Ready: podReady(p)}
}

// podReady: the pod's Ready condition is True.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Statuses turns a pod's container statuses (regular containers and
// native sidecars) into the gate's.
func Statuses(p *corev1.Pod) []readiness.ContainerStatus {
	out := make([]readiness.ContainerStatus, 0, len(p.Status.ContainerStatuses)+len(p.Status.InitContainerStatuses))
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			out = append(out, readiness.ContainerStatus{
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

package kube

import (
	"context"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// mirrorPodAnnotation marks a static pod's mirror: the kubelet's own, not
// the API's to delete.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// deleteOwnPods marks the node's pods deleted in the API, each with its own
// grace period and preconditioned on its UID, as `kubectl drain` evicts
// them, before the node stops them: their deletion is then what everyone
// routing to them sees — the EndpointSlice controller marks their
// endpoints terminating, a gate's status source starts its drain before
// its pod's preStop hooks come, and an activator that is a pod's only
// router confirms it sends it nothing more — instead of a pod going away
// that nothing knew was leaving. Left alone, as `kubectl drain
// --ignore-daemonsets` leaves them: DaemonSet pods (kube-proxy routes for
// the others while they drain; their controller would only make them
// again), mirror pods and pods already deleting. The node stops every pod
// anyway; a failed deletion is only logged.
func deleteOwnPods(ctx context.Context, pods corev1client.PodsGetter, nodeName string, log *slog.Logger) {
	list, err := pods.Pods("").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String()})
	if err != nil {
		log.Warn("list the node's pods to delete them before stopping them", "node", nodeName, "err", err)
		return
	}
	var wg sync.WaitGroup
	for i := range list.Items {
		p := &list.Items[i]
		if !deletedOnDrain(p) {
			continue
		}
		wg.Go(func() {
			uid := p.UID
			err := pods.Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			// Gone, or another pod of that name by now: nothing to do.
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				log.Warn("delete the pod before stopping it", "pod", p.Namespace+"/"+p.Name, "err", err)
			}
		})
	}
	wg.Wait()
}

// deletedOnDrain: a pod the drain deletes in the API (see deleteOwnPods).
func deletedOnDrain(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Annotations[mirrorPodAnnotation] != "" {
		return false
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	for _, o := range p.OwnerReferences {
		if o.Controller != nil && *o.Controller && o.Kind == "DaemonSet" {
			return false
		}
	}
	return true
}

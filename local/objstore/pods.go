package objstore

import (
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// DefaultTerminationGracePeriodSeconds is the pod's grace period when
// neither the pod nor the deletion names one (the API's default).
const DefaultTerminationGracePeriodSeconds = 30

// DeletePod deletes a pod the way the API server does. A pod bound to a
// node (spec.nodeName) that is still running is not removed: it gets
// metadata.deletionTimestamp (now + the grace period) and
// deletionGracePeriodSeconds, and the node's kubelet, seeing them,
// terminates its containers and then deletes it again with grace period 0,
// which removes it. The grace period is opts.GracePeriodSeconds, else the
// pod's terminationGracePeriodSeconds, else 30. A pod that is unscheduled,
// already finished (Succeeded or Failed), or deleted with grace period 0
// is removed at once. Deleting a pod that is already terminating only ever
// shortens its grace period.
//
// It returns the pod as stored afterwards and whether it was removed.
// opts.Preconditions (uid, resourceVersion) are honoured with 409 Conflict.
func (s *Store) DeletePod(namespace, name string, opts metav1.DeleteOptions) (*corev1.Pod, bool, error) {
	c := s.Pods
	c.mu.Lock()
	k := key{namespace, name}
	cur, err := c.storedLocked(k)
	if err != nil {
		c.mu.Unlock()
		return nil, false, err
	}
	if p := opts.Preconditions; p != nil {
		if p.UID != nil && *p.UID != cur.UID {
			c.mu.Unlock()
			return nil, false, apierrors.NewConflict(c.gr, name, errPrecondition("UID", string(*p.UID), string(cur.UID)))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != cur.ResourceVersion {
			c.mu.Unlock()
			return nil, false, apierrors.NewConflict(c.gr, name, errPrecondition("ResourceVersion", *p.ResourceVersion, cur.ResourceVersion))
		}
	}
	grace := int64(DefaultTerminationGracePeriodSeconds)
	if g := cur.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if g := opts.GracePeriodSeconds; g != nil {
		grace = *g
	}
	// A grace period never grows on a second delete (the API server's
	// graceful deletion keeps the shorter one).
	if g := cur.DeletionGracePeriodSeconds; g != nil && *g < grace {
		grace = *g
	}
	finished := cur.Status.Phase == corev1.PodSucceeded || cur.Status.Phase == corev1.PodFailed
	if grace <= 0 || cur.Spec.NodeName == "" || finished {
		gone := c.copyOut(cur)
		c.commit(watch.Deleted, k, gone, cur)
		c.mu.Unlock()
		return c.copyOut(gone), true, nil
	}
	if g := cur.DeletionGracePeriodSeconds; g != nil && *g == grace {
		c.mu.Unlock()
		return c.copyOut(cur), false, nil
	}
	o := c.copyOut(cur)
	ts := metav1.NewTime(s.opts.Now().Add(secondsDuration(grace)).Truncate(1e9))
	o.DeletionTimestamp = &ts
	o.DeletionGracePeriodSeconds = &grace
	out := c.replace(k, cur, o)
	c.mu.Unlock()
	return out, false, nil
}

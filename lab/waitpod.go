package lab

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WaitPod polls the pods until one matches and returns it. match returns
// an error describing why a pod does not match, or nil when it does; the
// last reasons are part of the timeout error.
func WaitPod(ctx context.Context, c PodLister, what string, match func(*corev1.Pod) error) (*corev1.Pod, error) {
	var found *corev1.Pod
	err := Poll(ctx, PollInterval, "pod "+what, func(ctx context.Context) (bool, error) {
		list, err := c.ListPods(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		var why []string
		for i := range list.Items {
			p := &list.Items[i]
			if err := match(p); err != nil {
				why = append(why, p.Name+": "+err.Error())
				continue
			}
			found = p
			return true, nil
		}
		if len(why) == 0 {
			return false, errors.New("no pods")
		}
		return false, errors.New(strings.Join(why, "; "))
	})
	return found, err
}

// PodReady matches a pod whose Ready condition is True and that is not
// being deleted.
func PodReady(p *corev1.Pod) error {
	if p.DeletionTimestamp != nil {
		return errors.New("terminating")
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionTrue {
				return nil
			}
			return fmt.Errorf("condition Ready=%s %s %s", c.Status, c.Reason, c.Message)
		}
	}
	return errors.New("no Ready condition")
}

// Named narrows a pod match to the pod called name.
func Named(name string, match func(*corev1.Pod) error) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		if p.Name != name {
			return errors.New("another pod")
		}
		return match(p)
	}
}

// ContainerStatus finds a regular or init container's status by name.
func ContainerStatus(p *corev1.Pod, container string) *corev1.ContainerStatus {
	for _, list := range [][]corev1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == container {
				return &list[i]
			}
		}
	}
	return nil
}

// ContainerReady matches a pod whose container's ready flag is ready.
func ContainerReady(container string, ready bool) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		cs := ContainerStatus(p, container)
		if cs == nil {
			return fmt.Errorf("no status of container %s", container)
		}
		if cs.Ready != ready {
			return fmt.Errorf("container %s ready=%t", container, cs.Ready)
		}
		return nil
	}
}

// Restarted matches a pod whose container restarted more than before
// times and runs again.
func Restarted(container string, before int32) func(*corev1.Pod) error {
	return func(p *corev1.Pod) error {
		cs := ContainerStatus(p, container)
		if cs == nil {
			return fmt.Errorf("no status of container %s", container)
		}
		if cs.RestartCount <= before {
			return fmt.Errorf("container %s restartCount=%d", container, cs.RestartCount)
		}
		if cs.State.Running == nil {
			return fmt.Errorf("container %s restarted %d times, not running yet", container, cs.RestartCount)
		}
		return nil
	}
}

// WaitRestart waits until the pod's container restarted more than before
// times and runs again.
func WaitRestart(ctx context.Context, c PodLister, pod, container string, before int32) (*corev1.Pod, error) {
	return WaitPod(ctx, c, fmt.Sprintf("%s container %s restarted (restartCount > %d)", pod, container, before),
		Named(pod, Restarted(container, before)))
}

// WaitPodGone waits until no pod called name is listed any more.
func WaitPodGone(ctx context.Context, c PodLister, name string) error {
	return Poll(ctx, PollInterval, "pod "+name+" gone", func(ctx context.Context) (bool, error) {
		list, err := c.ListPods(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, p := range list.Items {
			if p.Name == name {
				return false, fmt.Errorf("still listed, phase %s", p.Status.Phase)
			}
		}
		return true, nil
	})
}

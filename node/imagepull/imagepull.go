package imagepull

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/node/backoff"
)

// The waiting reasons of a container whose image is not on the node, as
// the kubelet names them (its images package's errors).
const (
	ReasonErrImagePull      = "ErrImagePull"
	ReasonImagePullBackOff  = "ImagePullBackOff"
	ReasonErrImageNeverPull = "ErrImageNeverPull"
)

// The events' reasons, as the kubelet's (its events package).
const (
	EventPulling           = "Pulling"
	EventFailed            = "Failed"
	EventBackOff           = "BackOff"
	EventErrImageNeverPull = "ErrImageNeverPull"
)

// RetryEvery is how often the node looks again at a container whose image
// it does not have: the kubelet's pod worker re-syncs a pod whose sync
// failed after 10 s (plus up to 50% jitter, left out here).
const RetryEvery = 10 * time.Second

// Event is one event to record about the container.
type Event struct {
	Type, Reason, Message string
}

// Attempt is what one look at a container whose image is absent gives.
type Attempt struct {
	// Waiting is the container's state until the next look.
	Waiting corev1.ContainerStateWaiting
	// Events are recorded in this order.
	Events []Event
	// Next is when the node looks again.
	Next time.Time
}

// Puller is one pod's image pulls (the kubelet keys its back-off by pod
// and image: two containers of a pod with one image share it). The zero
// value is ready to use; it holds no clock.
type Puller struct {
	backoff backoff.ImagePull
}

// Absent is a look, at now, at a container of image, with pull policy
// policy, that the node does not have; why is what makes a pull of it
// fail. An empty policy is IfNotPresent (the API server's default for
// an image with a tag other than latest; Always pulls the same way here).
func (p *Puller) Absent(image string, policy corev1.PullPolicy, why string, now time.Time) Attempt {
	a := Attempt{Next: now.Add(RetryEvery)}
	if policy == corev1.PullNever {
		msg := fmt.Sprintf("Container image %q is not present with pull policy of Never", image)
		a.Waiting = corev1.ContainerStateWaiting{Reason: ReasonErrImageNeverPull, Message: msg}
		a.Events = []Event{
			{corev1.EventTypeWarning, EventErrImageNeverPull, msg},
			{corev1.EventTypeWarning, EventFailed, "Error: " + ReasonErrImageNeverPull},
		}
		return a
	}
	if _, backingOff := p.backoff.InBackOff(image, now); backingOff {
		a.Waiting = corev1.ContainerStateWaiting{Reason: ReasonImagePullBackOff,
			Message: fmt.Sprintf("Back-off pulling image %q: %s: %s", image, ReasonErrImagePull, why)}
		a.Events = []Event{
			{corev1.EventTypeNormal, EventBackOff, fmt.Sprintf("Back-off pulling image %q", image)},
			{corev1.EventTypeWarning, EventFailed, "Error: " + ReasonImagePullBackOff},
		}
		return a
	}
	p.backoff.Failed(image, now)
	a.Waiting = corev1.ContainerStateWaiting{Reason: ReasonErrImagePull, Message: why}
	a.Events = []Event{
		{corev1.EventTypeNormal, EventPulling, fmt.Sprintf("Pulling image %q", image)},
		{corev1.EventTypeWarning, EventFailed, fmt.Sprintf("Failed to pull image %q: %s", image, why)},
		{corev1.EventTypeWarning, EventFailed, "Error: " + ReasonErrImagePull},
	}
	return a
}

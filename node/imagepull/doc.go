// Package imagepull is what the kubelet does with a container whose image
// is not on the node, as one clock-free state machine per pod: the
// waiting reason and message the container's status shows, the events
// recorded, and when the node looks again.
//
// With imagePullPolicy Never the kubelet does not pull: the container
// waits as ErrImageNeverPull, with a Warning ErrImageNeverPull event
// ("Container image "X" is not present with pull policy of Never") and a
// Warning Failed "Error: ErrImageNeverPull", at every look. With Always or
// IfNotPresent it pulls: Normal Pulling, then, the pull failing, Warning
// Failed "Failed to pull image "X": REASON" and Warning Failed "Error:
// ErrImagePull", waiting as ErrImagePull with REASON; the pod's image then
// backs off (package node/backoff: 10 s doubling to 300 s), and a look
// during the back-off gives Normal BackOff "Back-off pulling image "X""
// and Warning Failed "Error: ImagePullBackOff", waiting as
// ImagePullBackOff with "Back-off pulling image "X": ErrImagePull: REASON".
//
// podgate's node does not pull images (it has no registry to pull from):
// an image is present when the node runs it from a program of its own,
// and a pull of any other fails with a REASON that says how to give the
// node the image. The kubelet looks again when its pod worker re-syncs a
// pod whose sync failed, 10 to 15 s later (10 s and a jitter); here every
// RetryEvery, without the jitter, so the sequence is the same every time.
package imagepull

// Package backoff is the kubelet's back-off timings: CrashLoopBackOff
// for one container (how long to wait, after a death, before starting it
// again) and the image pull back-off of one pod (ImagePull: how long a
// failed pull of an image holds the next one back). It holds no clock:
// times come in, delays go out, so the rules are tested without waiting
// and the node agent times them on its own clock.
package backoff

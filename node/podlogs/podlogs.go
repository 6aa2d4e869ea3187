// Package podlogs holds the API server's rules for a pods/log request, as
// `kubectl logs` meets them: which container a request means, how its
// options map onto a container's kept output, and the 400s it answers
// when there is nothing to read.
package podlogs

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podgate/podgate/node/logbuf"
)

// DefaultContainerAnnotation names the container `kubectl logs` picks when
// none is named.
const DefaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// Container picks the container of pod a request reads: the one named,
// else the pod's default-container annotation, else its only container;
// otherwise a 400 naming the choices, as the API server answers.
func Container(pod, name string, annotations map[string]string, mains, inits []string) (string, error) {
	if name == "" {
		name = annotations[DefaultContainerAnnotation]
	}
	if name == "" {
		if len(mains) == 1 && len(inits) == 0 {
			return mains[0], nil
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod, strings.Join(mains, " "))
		if len(inits) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(inits, " "))
		}
		return "", apierrors.NewBadRequest(msg)
	}
	if slices.Contains(mains, name) || slices.Contains(inits, name) {
		return name, nil
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod))
}

// ReadOptions maps a request's options onto a reader of the kept output.
// The previous instance has ended, so it is never followed; sinceTime wins
// over sinceSeconds.
func ReadOptions(opts corev1.PodLogOptions, now time.Time) logbuf.ReadOptions {
	ro := logbuf.ReadOptions{Follow: opts.Follow && !opts.Previous, Timestamps: opts.Timestamps, TailLines: opts.TailLines}
	if opts.SinceSeconds != nil {
		ro.Since = now.Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	if opts.SinceTime != nil {
		ro.Since = opts.SinceTime.Time
	}
	return ro
}

// Unavailable is the 400 for a container with no output to read: no
// previous instance, or none started yet.
func Unavailable(pod, container string, previous bool) error {
	if previous {
		return apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", container, pod))
	}
	return apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %s", container, pod, "ContainerCreating"))
}

// Read is the reader a request gets of a container's kept output: the
// current instance's or, with opts.Previous, the one before; Unavailable
// when there is none.
func Read(ctx context.Context, pod, container string, kept *logbuf.Kept, opts corev1.PodLogOptions, now time.Time) (io.ReadCloser, error) {
	buf := kept.Get(opts.Previous)
	if buf == nil {
		return nil, Unavailable(pod, container, opts.Previous)
	}
	return buf.Reader(ctx, ReadOptions(opts, now)), nil
}

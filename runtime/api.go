package runtime

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podgate/podgate/runtime/logbuf"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// defaultContainerAnnotation names the container `kubectl logs` picks.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

// Logs implements api.LogSource from the output the agent keeps: the
// current and the previous instance of each container.
func (a *Agent) Logs(ctx context.Context, namespace, name string, opts corev1.PodLogOptions) (io.ReadCloser, error) {
	p := a.pod(namespace, name)
	if p == nil {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	c, err := p.logContainer(opts.Container)
	if err != nil {
		return nil, err
	}
	p.logMu.Lock()
	buf := c.logs
	if opts.Previous {
		buf = c.prev
	}
	p.logMu.Unlock()
	if buf == nil {
		if opts.Previous {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("previous terminated container %q in pod %q not found", c.name, name))
		}
		return nil, apierrors.NewBadRequest(fmt.Sprintf("container %q in pod %q is waiting to start: %s", c.name, name, "ContainerCreating"))
	}
	ro := logbuf.ReadOptions{Follow: opts.Follow && !opts.Previous, Timestamps: opts.Timestamps, TailLines: opts.TailLines}
	if opts.SinceSeconds != nil {
		ro.Since = a.clock.Now().Add(-time.Duration(*opts.SinceSeconds) * time.Second)
	}
	if opts.SinceTime != nil {
		ro.Since = opts.SinceTime.Time
	}
	return buf.Reader(ctx, ro), nil
}

// logContainer picks the container: the one named, else the pod's
// default-container annotation, else its only container; otherwise a 400
// naming the choices, as the API server answers.
func (p *pod) logContainer(name string) (*container, error) {
	if name == "" {
		name = p.obj.Annotations[defaultContainerAnnotation]
	}
	if name == "" {
		if len(p.mains) == 1 && len(p.inits) == 0 {
			return p.mains[0], nil
		}
		msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", p.name, strings.Join(containerNames(p.mains), " "))
		if len(p.inits) > 0 {
			msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(containerNames(p.inits), " "))
		}
		return nil, apierrors.NewBadRequest(msg)
	}
	if c, ok := p.byName[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, p.name))
}

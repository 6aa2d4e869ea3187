package node

import (
	"context"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podgate/podgate/node/podlogs"
)

var podsResource = schema.GroupResource{Resource: "pods"}

// Logs implements apiserver.LogSource from the output the agent keeps: the
// current and the previous instance of each container.
func (a *Agent) Logs(ctx context.Context, namespace, name string, opts corev1.PodLogOptions) (io.ReadCloser, error) {
	p := a.pod(namespace, name)
	if p == nil {
		return nil, apierrors.NewNotFound(podsResource, name)
	}
	cname, err := podlogs.Container(p.name, opts.Container, p.obj.Annotations, containerNames(p.mains), containerNames(p.inits))
	if err != nil {
		return nil, err
	}
	return podlogs.Read(ctx, name, cname, &p.byName[cname].output, opts, a.clock.Now())
}

package runtime

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/runtime/containerconfig"
	"github.com/podgate/podgate/runtime/env"
)

// EnvPodIP is the pod's address, set in every container before
// its own env, which may refer to it or replace it (docs/running.md,
// "What a pod gets"). $PORT is the control plane's, in the pod spec.
const EnvPodIP = containerconfig.EnvPodIP

// prepareContainers resolves every container of the pod: the environment
// (downward API included), the command line with $(VAR) expanded, the
// working directory. Problems are kept on the container (it then fails to
// start with CreateContainerConfigError) and returned. enter starts the
// exec probes and hooks inside the pod's network (nil: as any process).
func (a *Agent) prepareContainers(specPath *field.Path, spec *corev1.PodSpec, info env.PodInfo, extra []env.Var, enter func(func() error) error) ([]*container, []*container, field.ErrorList) {
	var errs field.ErrorList
	var inits, mains []*container
	for i := range spec.InitContainers {
		c := a.prepareContainer(&spec.InitContainers[i], specPath.Child("initContainers").Index(i), info, extra, true, enter)
		errs = append(errs, c.cfg.Errs...)
		inits = append(inits, c)
	}
	for i := range spec.Containers {
		c := a.prepareContainer(&spec.Containers[i], specPath.Child("containers").Index(i), info, extra, false, enter)
		errs = append(errs, c.cfg.Errs...)
		mains = append(mains, c)
	}
	return inits, mains, errs
}

func (a *Agent) prepareContainer(spec *corev1.Container, path *field.Path, info env.PodInfo, extra []env.Var, init bool, enter func(func() error) error) *container {
	r := containerconfig.Resolver{Base: a.base, Images: a.opts.Images, WorkDir: a.workDir}
	return &container{
		name:    spec.Name,
		spec:    spec,
		path:    path,
		init:    init,
		sidecar: init && spec.RestartPolicy != nil && *spec.RestartPolicy == corev1.ContainerRestartPolicyAlways,
		cfg:     r.Resolve(spec, path, info, extra, enter),
	}
}

// checkWorkload resolves the workload's containers for a stand-in pod, to
// report up front what would keep them from starting.
func (a *Agent) checkWorkload(w *podspec.Workload) field.ErrorList {
	info := env.PodInfo{Name: w.Name, Namespace: w.Namespace, Labels: w.PodLabels(),
		Annotations: w.Template.Annotations, NodeName: a.opts.NodeName, PodIP: "127.0.0.1", HostIP: a.hostIP}
	_, _, errs := a.prepareContainers(w.SpecPath(), w.PodSpec(), info, nil, nil)
	return errs
}

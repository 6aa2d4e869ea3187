package runtime

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/expansion"
	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/probe"
	"github.com/podgate/podgate/runtime/env"
)

// EnvPodIP is the pod's address, set in every container before
// its own env, which may refer to it or replace it (docs/running.md,
// "What a pod gets"). $PORT is the control plane's, in the pod spec.
const EnvPodIP = "POD_IP"

// prepareContainers resolves every container of the pod: the environment
// (downward API included), the command line with $(VAR) expanded, the
// working directory. Problems are kept on the container (it then fails to
// start with CreateContainerConfigError) and returned. enter starts the
// exec probes and hooks inside the pod's network (nil: as any process).
func (a *Agent) prepareContainers(specPath *field.Path, spec *corev1.PodSpec, info env.PodInfo, enter func(func() error) error) ([]*container, []*container, field.ErrorList) {
	var errs field.ErrorList
	var inits, mains []*container
	for i := range spec.InitContainers {
		c := a.prepareContainer(&spec.InitContainers[i], specPath.Child("initContainers").Index(i), info, true, enter)
		errs = append(errs, c.setup...)
		inits = append(inits, c)
	}
	for i := range spec.Containers {
		c := a.prepareContainer(&spec.Containers[i], specPath.Child("containers").Index(i), info, false, enter)
		errs = append(errs, c.setup...)
		mains = append(mains, c)
	}
	return inits, mains, errs
}

func (a *Agent) prepareContainer(spec *corev1.Container, path *field.Path, info env.PodInfo, init bool, enter func(func() error) error) *container {
	c := &container{
		name:    spec.Name,
		spec:    spec,
		path:    path,
		init:    init,
		sidecar: init && spec.RestartPolicy != nil && *spec.RestartPolicy == corev1.ContainerRestartPolicyAlways,
	}
	injected := []env.Var{{Name: "HOSTNAME", Value: info.Name}, {Name: EnvPodIP, Value: info.PodIP}}
	vars, errs := env.Resolve(a.base, injected, spec, info, path)
	c.env = vars
	c.setup = append(c.setup, errs...)
	argv, ferr := a.opts.Images.Argv(spec.Image, spec.Command, spec.Args, path)
	if ferr != nil {
		c.setup = append(c.setup, ferr)
	}
	for i := range argv {
		argv[i] = expansion.Expand(argv[i], vars.Get)
	}
	c.argv = argv
	c.dir = spec.WorkingDir
	if c.dir == "" {
		c.dir = a.workDir
	}
	c.exec = a.opts.Images.Executor(probe.HostExecutor{Dir: c.dir, Env: vars.Strings(), Enter: enter})
	return c
}

// checkWorkload resolves the workload's containers for a stand-in pod, to
// report up front what would keep them from starting.
func (a *Agent) checkWorkload(w *podspec.Workload) field.ErrorList {
	info := env.PodInfo{Name: w.Name, Namespace: w.Namespace, Labels: w.PodLabels(),
		Annotations: w.Template.Annotations, NodeName: a.opts.NodeName, PodIP: "127.0.0.1", HostIP: a.hostIP}
	_, _, errs := a.prepareContainers(w.SpecPath(), w.PodSpec(), info, nil)
	return errs
}

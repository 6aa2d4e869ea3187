package runtime

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/podspec"
	"github.com/podgate/podgate/probe"
)

// Environment variables podgate sets in every container (before the
// container's own env, which may refer to them or replace them).
const (
	EnvPodIP = "POD_IP" // the pod's loopback address (docs/running.md, "What a pod gets")
	EnvPort  = "PORT"   // the serving container's port, as Knative sets it
)

// prepareContainers resolves every container of the pod: the environment
// (downward API included), the command line with $(VAR) expanded, the
// working directory. Problems are kept on the container (it then fails to
// start with CreateContainerConfigError) and returned.
func (a *Agent) prepareContainers(w *podspec.Workload, spec *corev1.PodSpec, info podInfo) ([]*container, []*container, field.ErrorList) {
	var errs field.ErrorList
	specPath := w.SpecPath()
	var inits, mains []*container
	for i := range spec.InitContainers {
		c := a.prepareContainer(w, &spec.InitContainers[i], specPath.Child("initContainers").Index(i), info, true)
		errs = append(errs, c.setup...)
		inits = append(inits, c)
	}
	for i := range spec.Containers {
		c := a.prepareContainer(w, &spec.Containers[i], specPath.Child("containers").Index(i), info, false)
		errs = append(errs, c.setup...)
		mains = append(mains, c)
	}
	return inits, mains, errs
}

func (a *Agent) prepareContainer(w *podspec.Workload, spec *corev1.Container, path *field.Path, info podInfo, init bool) *container {
	c := &container{
		name:    spec.Name,
		spec:    spec,
		path:    path,
		init:    init,
		sidecar: init && spec.RestartPolicy != nil && *spec.RestartPolicy == corev1.ContainerRestartPolicyAlways,
		serving: !init && spec.Name == w.ServingContainer,
	}
	injected := []envVar{{"HOSTNAME", info.name}, {EnvPodIP, info.podIP}}
	if c.serving {
		injected = append(injected, envVar{EnvPort, strconv.Itoa(int(w.ServingPort))})
		if k := w.Knative; k != nil {
			// Knative's runtime contract for the user container.
			injected = append(injected, envVar{"K_SERVICE", w.Name}, envVar{"K_CONFIGURATION", w.Name}, envVar{"K_REVISION", k.RevisionName})
		}
	}
	env, errs := resolveEnv(a.base, injected, spec, info, path)
	c.env = env
	c.setup = append(c.setup, errs...)
	argv, ferr := a.opts.Images.argv(spec.Image, spec.Command, spec.Args, path)
	if ferr != nil {
		c.setup = append(c.setup, ferr)
	}
	for i := range argv {
		argv[i] = expandVars(argv[i], env.get)
	}
	c.argv = argv
	c.dir = spec.WorkingDir
	if c.dir == "" {
		c.dir = a.workDir
	}
	c.exec = hostExecutor{HostExecutor: probe.HostExecutor{Dir: c.dir, Env: env.strings()}, self: a.opts.Images.Self}
	return c
}

// checkWorkload resolves the workload's containers for a stand-in pod, to
// report up front what would keep them from starting.
func (a *Agent) checkWorkload(w *podspec.Workload) field.ErrorList {
	info := podInfo{name: w.Name, namespace: w.Namespace, labels: w.PodLabels(),
		annotations: w.Template.Annotations, nodeName: a.opts.NodeName, podIP: "127.0.0.1", hostIP: HostIP}
	_, _, errs := a.prepareContainers(w, w.PodSpec(), info)
	return errs
}

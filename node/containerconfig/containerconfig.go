// Package containerconfig resolves what a container runs with, as the
// kubelet does before it creates one: the environment (injected variables,
// envFrom, env, the downward API), the command line from the image and the
// spec with $(VAR) expanded, the working directory, and the executor of its
// exec probes and hooks. A problem does not stop the resolution: it is kept
// so the container fails to start with CreateContainerConfigError.
package containerconfig

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/internal/expansion"
	"github.com/podgate/podgate/node/env"
	"github.com/podgate/podgate/node/images"
	"github.com/podgate/podgate/probe"
)

// EnvPodIP is the pod's address, set in every container before its own
// env, which may refer to it or replace it.
const EnvPodIP = "POD_IP"

// Config is one container's resolved configuration.
type Config struct {
	Env  *env.List
	Argv []string
	Dir  string
	Exec probe.Executor // runs its exec probes and hooks
	// Errs is why the container cannot be started, if anything.
	Errs field.ErrorList
	// Absent, when set, says the node does not have the container's
	// image (images.Map.Present): it waits as a kubelet's container waits
	// for an image it cannot pull (package node/imagepull), before
	// anything in Errs counts, as the kubelet pulls before it makes a
	// container's configuration. Pod's errors include it, so a check
	// before anything runs (podgate run's) refuses it.
	Absent *field.Error
}

// Blocked reports a container that cannot be started at all: it waits as
// CreateContainerConfigError, with Message.
func (c Config) Blocked() bool { return len(c.Errs) > 0 }

// Message is what a Blocked container waits with: its one problem, or
// all of them.
func (c Config) Message() string {
	if len(c.Errs) == 1 {
		return c.Errs[0].Error()
	}
	return fmt.Sprint(c.Errs.ToAggregate())
}

// allErrs is everything that keeps the container from starting: its
// image's absence first, as the kubelet pulls first.
func (c Config) allErrs() field.ErrorList {
	if c.Absent == nil {
		return c.Errs
	}
	return append(field.ErrorList{c.Absent}, c.Errs...)
}

// Resolver holds what every container of a node shares.
type Resolver struct {
	Base    []env.Var  // the node's base environment (PATH, HOME, …)
	Images  images.Map // image → program
	WorkDir string     // the directory of a container without workingDir
}

// Resolve resolves spec, found at path. extra comes after HOSTNAME and
// POD_IP; enter starts the exec probes and hooks inside the pod's network
// (nil: as any process).
func (r Resolver) Resolve(spec *corev1.Container, path *field.Path, info env.PodInfo, extra []env.Var, enter func(func() error) error) Config {
	injected := append([]env.Var{{Name: "HOSTNAME", Value: info.Name}, {Name: EnvPodIP, Value: info.PodIP}}, extra...)
	vars, errs := env.Resolve(r.Base, injected, spec, info, path)
	cfg := Config{Env: vars, Errs: errs, Dir: spec.WorkingDir}
	argv, ferr := r.Images.Argv(spec.Image, spec.Command, spec.Args, path)
	switch {
	case ferr == nil:
	case r.Images.Present(spec.Image, spec.Command):
		cfg.Errs = append(cfg.Errs, ferr)
	default:
		cfg.Absent = ferr
	}
	for i := range argv {
		argv[i] = expansion.Expand(argv[i], vars.Get)
	}
	cfg.Argv = argv
	if cfg.Dir == "" {
		cfg.Dir = r.WorkDir
	}
	cfg.Exec = r.Images.Executor(spec.Image, probe.HostExecutor{Dir: cfg.Dir, Env: vars.Strings(), Enter: enter})
	return cfg
}

// Pod resolves every container of spec, found at specPath: its init
// containers, then its containers, each Config with its own problems, and
// those of them all.
func (r Resolver) Pod(specPath *field.Path, spec *corev1.PodSpec, info env.PodInfo, extra []env.Var, enter func(func() error) error) (inits, mains []Config, errs field.ErrorList) {
	for i := range spec.InitContainers {
		cfg := r.Resolve(&spec.InitContainers[i], specPath.Child("initContainers").Index(i), info, extra, enter)
		errs = append(errs, cfg.allErrs()...)
		inits = append(inits, cfg)
	}
	for i := range spec.Containers {
		cfg := r.Resolve(&spec.Containers[i], specPath.Child("containers").Index(i), info, extra, enter)
		errs = append(errs, cfg.allErrs()...)
		mains = append(mains, cfg)
	}
	return inits, mains, errs
}

// Check resolves the containers of a stand-in of pod on node nodeName
// (whose pods reach it at hostIP), its spec found at specPath, and reports
// what would keep them from starting, before anything runs.
func (r Resolver) Check(pod *corev1.Pod, specPath *field.Path, nodeName, hostIP string) field.ErrorList {
	// The stand-in has no address yet; the loopback one resolves like any.
	info := env.PodInfo{Name: pod.Name, Namespace: pod.Namespace, Labels: pod.Labels,
		Annotations: pod.Annotations, NodeName: nodeName, PodIP: "127.0.0.1", HostIP: hostIP}
	_, _, errs := r.Pod(specPath, &pod.Spec, info, nil, nil)
	return errs
}

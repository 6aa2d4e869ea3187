package node

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/node/containerconfig"
	"github.com/podgate/podgate/node/env"
)

// EnvPodIP is the pod's address, set in every container before
// its own env, which may refer to it or replace it (docs/running.md,
// "What a pod gets"). $PORT is the control plane's, in the pod spec.
const EnvPodIP = containerconfig.EnvPodIP

// newContainers are the pod worker's containers of spec, resolved as
// the kubelet does before creating them (package containerconfig): the
// environment (downward API included), the command line with $(VAR)
// expanded, the working directory. A problem is kept on its container,
// which then fails to start with CreateContainerConfigError. enter starts
// the exec probes and hooks inside the pod's network (nil: as any
// process).
func (a *Agent) newContainers(spec *corev1.PodSpec, info env.PodInfo, extra []env.Var, enter func(func() error) error) (inits, mains []*container) {
	initCfgs, mainCfgs, _ := a.resolver.Pod(field.NewPath("spec"), spec, info, extra, enter)
	for i, cfg := range initCfgs {
		s := &spec.InitContainers[i]
		sidecar := s.RestartPolicy != nil && *s.RestartPolicy == corev1.ContainerRestartPolicyAlways
		inits = append(inits, &container{name: s.Name, spec: s, init: true, sidecar: sidecar, cfg: cfg})
	}
	for i, cfg := range mainCfgs {
		mains = append(mains, &container{name: spec.Containers[i].Name, spec: &spec.Containers[i], cfg: cfg})
	}
	return inits, mains
}

package node

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/node/containerconfig"
	"github.com/podgate/podgate/node/env"
	"github.com/podgate/podgate/node/seccontext"
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
//
// Each container's securityContext is decided here too (package
// node/seccontext): what its process gives up, and the kubelet's refusal
// of a runAsNonRoot container whose user is root.
func (a *Agent) newContainers(pod *corev1.Pod, info env.PodInfo, extra []env.Var, enter func(func() error) error) (inits, mains []*container) {
	spec := &pod.Spec
	initCfgs, mainCfgs, _ := a.resolver.Pod(field.NewPath("spec"), spec, info, extra, enter)
	decide := func(c *corev1.Container) seccontext.Decision {
		user, known := a.resolver.Images.User(c.Image)
		return seccontext.Decide(pod, c, seccontext.Image{Known: known, User: user}, a.self)
	}
	for i, cfg := range initCfgs {
		s := &spec.InitContainers[i]
		sec := decide(s)
		homeForUser(cfg, s, sec, a.self)
		sidecar := s.RestartPolicy != nil && *s.RestartPolicy == corev1.ContainerRestartPolicyAlways
		inits = append(inits, &container{name: s.Name, spec: s, init: true, sidecar: sidecar, cfg: cfg, sec: sec})
	}
	for i, cfg := range mainCfgs {
		s := &spec.Containers[i]
		sec := decide(s)
		homeForUser(cfg, s, sec, a.self)
		mains = append(mains, &container{name: s.Name, spec: s, cfg: cfg, sec: sec})
	}
	return inits, mains
}

// homeForUser gives a container that runs as another user than the node
// the home a container runtime gives a user its image does not list: "/"
// (the node's $HOME, inherited otherwise, is the node user's and
// unreadable to it: Traefik, as 65532, stops on /root/.config). The
// container's own env may set HOME.
func homeForUser(cfg containerconfig.Config, c *corev1.Container, d seccontext.Decision, self seccontext.Node) {
	if cfg.Env == nil || d.Security == nil || d.Security.UID == nil || *d.Security.UID == self.UID {
		return
	}
	for _, e := range c.Env {
		if e.Name == "HOME" {
			return
		}
	}
	cfg.Env.Set("HOME", "/")
}

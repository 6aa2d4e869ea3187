package readiness

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/gate/contract"
)

// DefaultServingContainer names the serving container when the
// configuration names none: a plain queue-proxy environment, where it is
// Knative's user container.
const DefaultServingContainer = "user-container"

// Container is one container the gate answers for.
type Container struct {
	Name string
	// Probe is the readiness probe the gate runs itself; nil for none.
	Probe *corev1.Probe
	// Delegated: the container's readiness probe stays with the node agent
	// or kubelet (exec), so the status source decides.
	Delegated bool
	// Serving: the container the gate's traffic goes to (exactly one).
	Serving bool
	// Liveness is the container's network liveness probe, which stays on
	// the container (the kubelet runs it) and of which the gate runs a
	// copy with the same timing: a watched probe. As its failures near the
	// kubelet's threshold the container counts as not ready, so traffic
	// leaves before the kill. nil for none, or when the kubelet reaches
	// the probe through the gate (an older injection's routed probes,
	// counted as the kubelet calls).
	Liveness *corev1.Probe
}

// Containers lists the containers of cfg, serving container first,
// then in the order of SERVING_READINESS_PROBE, PODGATE_CONTAINERS and
// PODGATE_DELEGATED_READINESS. The serving container is the first of
// PODGATE_CONTAINERS (the injector lists it first: in a Pod it may have no
// readiness probe in the gate at all), else the owner of the first probe.
// Containers named in PODGATE_EXCLUDED_CONTAINERS are left out.
// Without PODGATE_READINESS_CONTAINERS (plain Knative), probe 0 belongs to
// the serving container and the others are named container-1,
// container-2, … in their order.
func Containers(cfg contract.Config) ([]Container, error) {
	serving := DefaultServingContainer
	switch {
	case len(cfg.Containers) > 0:
		serving = cfg.Containers[0]
	case len(cfg.ReadinessContainers) > 0:
		serving = cfg.ReadinessContainers[0]
	}
	var specs []Container
	index := map[string]int{}
	add := func(name string) *Container {
		if i, ok := index[name]; ok {
			return &specs[i]
		}
		index[name] = len(specs)
		specs = append(specs, Container{Name: name, Serving: name == serving})
		return &specs[len(specs)-1]
	}
	add(serving)
	for i, p := range cfg.ReadinessProbes {
		name := serving
		switch {
		case i < len(cfg.ReadinessContainers):
			name = cfg.ReadinessContainers[i]
		case i > 0:
			name = fmt.Sprintf("container-%d", i)
		}
		s := add(name)
		if s.Probe != nil {
			return nil, fmt.Errorf("%s: container %q has two readiness probes", contract.EnvReadinessContainers, name)
		}
		s.Probe = p
	}
	for _, name := range cfg.Containers {
		add(name)
	}
	for _, name := range cfg.DelegatedReadiness {
		add(name).Delegated = true
	}
	watched := make([]string, 0, len(cfg.WatchedProbes))
	for name := range cfg.WatchedProbes {
		watched = append(watched, name)
	}
	slices.Sort(watched)
	for _, name := range watched {
		s := add(name)
		if !cfg.ProbesRouted {
			s.Liveness = cfg.WatchedProbes[name].Liveness
		}
	}
	if len(cfg.ExcludedContainers) == 0 {
		return specs, nil
	}
	if slices.Contains(cfg.ExcludedContainers, serving) {
		return nil, fmt.Errorf("%s: the serving container %q cannot be excluded: the gate's traffic goes to it", contract.EnvExcludedContainers, serving)
	}
	// Excluded containers are neither probed nor counted, whatever else
	// the configuration says of them.
	return slices.DeleteFunc(specs, func(c Container) bool {
		return slices.Contains(cfg.ExcludedContainers, c.Name)
	}), nil
}

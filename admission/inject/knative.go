package inject

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
)

// KnativeQueuePeriodSeconds is the kubelet readiness timing written on an
// adopted queue container: the gate answers health checks from state it
// keeps current (it does not probe on the kubelet's request), so a probe a
// second is cheap, and one failed answer is the truth. Knative copies the
// serving container's readiness timing there instead (10 s × 3 by
// default), which kept a pod with an unready sidecar in its Service's
// endpoints for up to 30 s.
const KnativeQueuePeriodSeconds = 1

// IsKnativeGate reports whether the pod is a Knative revision's whose queue
// container runs the gate: Knative's controller started podgate's gate
// image as queue-proxy (config-deployment's queue-sidecar-image), so
// AdoptKnativeQueue applies. The image matches gateImage exactly or by
// repository: a tag in Knative's ConfigMap and a digest in podgate's
// webhook name the same gate.
func IsKnativeGate(pod *corev1.Pod, gateImage string) bool {
	if pod.Labels[workload.LabelKnativeRevision] == "" {
		return false
	}
	q := queueContainer(&pod.Spec)
	if q == nil {
		return false
	}
	if gateImage == "" {
		gateImage = contract.DefaultImage
	}
	return q.Image == gateImage || repository(q.Image) == repository(gateImage)
}

// repository is an image reference without its tag or digest.
func repository(ref string) string {
	if i := strings.Index(ref, "@"); i >= 0 {
		ref = ref[:i]
	}
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func queueContainer(spec *corev1.PodSpec) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == contract.KnativeQueueContainerName {
			return &spec.Containers[i]
		}
	}
	return nil
}

// KnativeOptions shape an adoption.
type KnativeOptions struct {
	// HandoffURL is where the gate hands requests it holds while its pod
	// is not ready, once the pod has left its endpoints: Knative's
	// activator ("" hands nothing off; the requests wait for the pod).
	HandoffURL string
}

// AdoptKnativeQueue returns a copy of a Knative revision's pod whose queue
// container (Knative's queue-proxy, running the gate's image) is made
// podgate's gate, as injection would have made it, without a second gate:
// both would listen on queue-proxy's ports. Knative's environment stays
// (the gate reads it as queue-proxy does); podgate adds what Knative does
// not say:
//
//   - the containers' names: PODGATE_CONTAINERS, and
//     PODGATE_READINESS_CONTAINERS, whose order follows Knative's for
//     SERVING_READINESS_PROBE — the serving container's probe first, then
//     one per sidecar with an HTTP, TCP or gRPC readiness probe, in the
//     spec's order. Knative has already taken those probes off the
//     sidecars, so the sidecars they belonged to are the ones left without
//     a readiness probe; when there are more of those than probes (some
//     sidecar had none), which is which cannot be told, and the gate names
//     the probes by position (container-1, …);
//   - exec readiness probes, which Knative leaves on their container for
//     the kubelet (and leaves out of SERVING_READINESS_PROBE for a
//     sidecar): PODGATE_DELEGATED_READINESS, read from the pod's status;
//   - the status source (the node status service on the node's address,
//     NodeStatusSource, PODGATE_HOST_IP before it) and the readiness gate on the
//     condition the gate writes, which names the container that is not
//     ready and its probe's message;
//   - the queue container's kubelet readiness probe at 1 s × 1
//     (KnativeQueuePeriodSeconds), handler unchanged;
//   - the hand-off address (KnativeOptions.HandoffURL);
//   - the drain's quiet period, when half the grace period (Knative's
//     timeoutSeconds) is shorter than queue-proxy's 30 s.
//
// Liveness and startup probes are left where Knative puts them (on their
// containers): the gate's ride-through covers a restart without them.
// Adopting an adopted pod returns an unchanged copy.
func AdoptKnativeQueue(pod *corev1.Pod, opts KnativeOptions) (*corev1.Pod, error) {
	out := pod.DeepCopy()
	spec := &out.Spec
	q := queueContainer(spec)
	if q == nil {
		return nil, fmt.Errorf("adopt Knative's queue container: pod has no container %q", contract.KnativeQueueContainerName)
	}
	if hasEnv(q, contract.EnvStatusSource) {
		return out, nil
	}
	serving, err := knativeServing(spec, q)
	if err != nil {
		return nil, err
	}
	probes, err := knativeProbeCount(q)
	if err != nil {
		return nil, err
	}
	names := []string{spec.Containers[serving].Name}
	var delegated, withoutProbe []string
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c == q {
			continue
		}
		if i != serving {
			names = append(names, c.Name)
		}
		switch {
		case c.ReadinessProbe != nil && c.ReadinessProbe.Exec != nil:
			delegated = append(delegated, c.Name)
		case c.ReadinessProbe == nil && i != serving:
			withoutProbe = append(withoutProbe, c.Name)
		}
	}
	var readinessOwners []string
	if len(withoutProbe) == probes-1 {
		readinessOwners = append([]string{names[0]}, withoutProbe...)
	}
	set := func(name, value string) {
		if value != "" {
			setEnv(q, name, value)
		}
	}
	set(contract.EnvStatusSource, NodeStatusSource)
	// The node's address before the status source that names it.
	q.Env = withHostIP(q.Env)
	set(contract.EnvContainers, strings.Join(names, ","))
	set(contract.EnvReadinessContainers, strings.Join(readinessOwners, ","))
	set(contract.EnvDelegatedReadiness, strings.Join(delegated, ","))
	set(contract.EnvHandoffURL, opts.HandoffURL)
	// Knative gives a revision's pods its timeoutSeconds as their grace
	// period; the drain must end inside it, as in an injected pod.
	if q := drainQuietPeriod(spec.TerminationGracePeriodSeconds); q < contract.DefaultDrainQuietPeriodSeconds*time.Second {
		set(contract.EnvDrainQuietPeriod, q.String())
	}
	// The revision template's annotations are its pods': the workload's
	// own quiet period, when it is one that fits (validation names the
	// others on the Knative Service).
	if v, ok := out.Annotations[contract.AnnotationDrainQuietPeriod]; ok {
		grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
		if g := spec.TerminationGracePeriodSeconds; g != nil {
			grace = *g
		}
		if quiet, err := contract.ParseDrainQuietPeriod(v); err == nil && contract.QuietPeriodFits(quiet, grace) {
			setEnv(q, contract.EnvDrainQuietPeriod, quiet.String())
		}
	}
	if p := q.ReadinessProbe; p != nil {
		p.PeriodSeconds = KnativeQueuePeriodSeconds
		p.FailureThreshold = 1
		p.SuccessThreshold = 1
		p.TimeoutSeconds = max(p.TimeoutSeconds, 1)
	}
	addReadinessGate(spec)
	return out, nil
}

func hasEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}

// knativeServing is the index of the revision's serving container: the one
// that declares USER_PORT, Knative's only container with a port.
func knativeServing(spec *corev1.PodSpec, q *corev1.Container) (int, error) {
	userPort := ""
	for _, e := range q.Env {
		if e.Name == contract.EnvUserPort {
			userPort = e.Value
		}
	}
	first := -1
	for i := range spec.Containers {
		c := &spec.Containers[i]
		if c == q {
			continue
		}
		for _, p := range c.Ports {
			if strconv.Itoa(int(p.ContainerPort)) == userPort {
				return i, nil
			}
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return -1, fmt.Errorf("adopt Knative's queue container: no container declares the user port %s (%s)", userPort, contract.EnvUserPort)
	}
	return first, nil
}

// knativeProbeCount is how many readiness probes Knative gave its queue
// container in SERVING_READINESS_PROBE.
func knativeProbeCount(q *corev1.Container) (int, error) {
	env := map[string]string{}
	for _, e := range q.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
		}
	}
	cfg, err := contract.Decode(func(name string) string { return env[name] })
	if err != nil {
		return 0, fmt.Errorf("adopt Knative's queue container: %w", err)
	}
	return len(cfg.ReadinessProbes), nil
}

// Package inject puts the gate into a workload's pod, as `podgate inject`,
// `podgate run` and the admission webhook do: the gate container (a native
// sidecar, or a regular container for older clusters) configured through
// its environment (package gate/contract) with a copy of every container's
// readiness and liveness probe (the probes stay on their containers; in a
// Knative Service readiness moves into the gate, by Knative's design), the
// drain hooks, and the readiness gate on the condition it writes.
package inject

import (
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/probe/prober"
)

// Options shape the injection.
type Options struct {
	// GateImage is the gate container's image (default contract.DefaultImage).
	GateImage string
	// Local injects for `podgate run`: every pod has its own loopback
	// address and containers bind $POD_IP, so probes moved into the gate
	// keep an empty host (the gate dials its pod IP) and the gate reads
	// container status from the node agent. Otherwise (Kubernetes) moved
	// probes aim at 127.0.0.1 as Knative's do, and status comes from the
	// node status service on the pod's node (NodeStatusSource).
	Local bool
	// APIAddr is the node agent's control API in local mode
	// (default contract.APIAddr).
	APIAddr string
	// GateAsContainer puts the gate first among the regular containers
	// instead of making it a native sidecar (an init container with
	// restartPolicy: Always, Kubernetes 1.29 and later), for older
	// clusters. It costs what the native sidecar guarantees: the other
	// containers may start before the gate listens, and the gate is
	// stopped together with them instead of after them.
	GateAsContainer bool
	// AdminToken is the pod's admin token (contract.EnvAdminToken), which
	// the preStop hooks written here send: "" is a fresh random one per
	// injection (per pod through the webhook, which injects Pods).
	AdminToken string
	// OnlyRouter is contract.OnlyRouterActivator when podgate's activator
	// is known to be the only router of every pod injected (`podgate
	// cluster up` without --knative: one activator, no kube-proxy, no
	// ingress; the webhook's --only-router): the gate then ends its drain
	// on the activator's confirmation (PODGATE_ONLY_ROUTER). "" on a
	// cluster whose routers podgate cannot know: the quiet period runs.
	// Local injections set it regardless.
	OnlyRouter string
	// NamespaceFromPod makes the gate read its namespace (SERVING_NAMESPACE)
	// from its pod through the downward API (metadata.namespace) instead of
	// the manifest's: for `podgate inject`, whose output may be applied to
	// any namespace (`kubectl apply -n shop`), where a manifest without a
	// namespace would otherwise name "default" and the gate ask for a pod
	// that is not its own. The webhook knows the pod's namespace from the
	// request, so its literal is right.
	NamespaceFromPod bool
}

// NodeStatusSource is the gate's status source on a cluster: podgate's
// node status service on its node's address (contract.NodeStatusPort),
// which serves the gate its own pod and writes the gate's condition with
// the service's credentials, so the pod's service account needs no right.
// The kubelet expands $(PODGATE_HOST_IP) from the variable written before
// it (contract.EnvHostIP, the downward API's status.hostIP): Kubernetes
// expands references to earlier variables only.
var NodeStatusSource = fmt.Sprintf("http://$(%s):%d", contract.EnvHostIP, contract.NodeStatusPort)

// Gate returns a copy of the workload whose pod carries the gate:
//
//   - the gate is a native sidecar, the first init container (restartPolicy
//     Always): the kubelet starts the other containers once its startup
//     probe says it serves, and stops it after them; with GateAsContainer
//     it is the first regular container instead;
//   - every container's probes stay on it, so the kubelet marks the
//     container that fails unready (or restarts it) with its own messages
//     and events, and a stalled gate never fails a container's liveness;
//   - the gate gets a copy of every httpGet/tcpSocket/grpc readiness probe
//     (serving container first, then the other containers, then native
//     sidecars), which it runs for fast aggregation; exec readiness probes
//     are delegated (the gate reads the container's status);
//   - the gate gets a copy of every httpGet/tcpSocket/grpc liveness probe
//     (PODGATE_WATCHED_PROBES), which it runs with the same timing, taking
//     the container out of traffic as the failures near the kubelet's
//     threshold, before the kill;
//   - in a Knative Service readiness probes move into the gate instead
//     (Knative's design: the queue container probes, aggressively for
//     periodSeconds 0) and the serving container is always checked on its
//     port as well (Knative's contract); in a Pod or Deployment readiness
//     comes only from the probes the user wrote;
//   - containers named in the pod's podgate.dev/exclude-containers
//     annotation are not aggregated: the gate neither probes nor counts
//     them;
//   - every regular container without a preStop hook waits for the gate's
//     drain;
//   - the serving container gets $PORT;
//   - the gate gets a kubelet readiness probe that answers for the gate
//     itself (in a Knative Service: for every container, as fast as the
//     fastest container's, as queue-proxy's);
//   - the pod gets a readiness gate on the condition the gate writes
//     (contract.ContainersReadyCondition), which names the container that is
//     not ready.
//
// The user's native sidecars are aggregated as the other containers. They
// never wait for the drain: it is over by the time they stop.
//
// The workload should have passed validation (package
// admission/validation). Injecting an injected workload returns an unchanged
// copy.
func Gate(w *workload.Workload, opts Options) (*workload.Workload, error) {
	out := w.DeepCopy()
	if out.IsInjected() {
		return out, nil
	}
	spec := out.PodSpec()
	if out.Container(contract.GateContainerName) != nil {
		return nil, fmt.Errorf("inject %s: a container is already named %q, the gate's name", out.ID(), contract.GateContainerName)
	}
	serving := out.ServingIndex()
	if serving < 0 {
		return nil, fmt.Errorf("inject %s: no serving container", out.ID())
	}
	if opts.GateImage == "" {
		opts.GateImage = contract.DefaultImage
	}
	if opts.APIAddr == "" {
		opts.APIAddr = contract.APIAddr
	}
	if opts.AdminToken == "" {
		opts.AdminToken = contract.NewAdminToken()
	}
	cfg := baseConfig(out, opts)
	cfg.AdminToken = opts.AdminToken
	r := &rewriter{w: out, opts: opts, cfg: &cfg, fastest: -1}

	excluded, _ := contract.SplitExcludedContainers(out.Template.Annotations[contract.ExcludeContainersAnnotation])
	var errs []error
	for _, c := range r.containersInOrder() {
		sidecar := isNativeSidecar(c)
		if !sidecar {
			addDrainHook(c, opts.AdminToken)
		}
		if slices.Contains(excluded, c.Name) && c != &spec.Containers[serving] {
			// Not aggregated: the gate neither probes nor counts it, and
			// lists it in /readyz?verbose. (Validation refuses to exclude
			// the serving container; the gate's traffic goes to it, so
			// it is never left out here either.)
			cfg.ExcludedContainers = append(cfg.ExcludedContainers, c.Name)
			continue
		}
		cfg.Containers = append(cfg.Containers, c.Name)
		if err := r.readiness(c, c == &spec.Containers[serving]); err != nil {
			errs = append(errs, err)
		}
		if err := r.watch(c); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("inject %s: %w", out.ID(), err)
	}
	setServingEnv(out, &spec.Containers[serving])
	setDefaultContainer(out)
	addReadinessGate(spec)
	gate := gateContainer(cfg, opts, gateReadinessProbe(out, r))
	if opts.GateAsContainer {
		// First: the kubelet (and the node agent) start regular
		// containers in order, so the gate usually listens before the
		// routed probes of the others reach it — usually, not surely.
		spec.Containers = append([]corev1.Container{gate}, spec.Containers...)
	} else {
		// First of all init containers: it serves before any other
		// container starts (plain init containers included, whose
		// readiness it does not need but whose wait it may as well
		// report), and it is stopped last.
		spec.InitContainers = append([]corev1.Container{gate}, spec.InitContainers...)
	}
	return out, nil
}

// Manifests is what the files of m hold, in their order (m.InOrder), with
// the gate injected into every workload and the other objects as they
// are: what `podgate inject` prints. The first workload that cannot be
// injected is the error, named by its source.
func Manifests(m *workload.Manifests, opts Options) ([]any, error) {
	items := m.InOrder()
	for i, it := range items {
		w, ok := it.(*workload.Workload)
		if !ok {
			continue
		}
		iw, err := Gate(w, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.Source, err)
		}
		items[i] = iw
	}
	return items, nil
}

// defaultContainerAnnotation makes kubectl logs/exec pick a container
// when none is named; with the gate first it would pick the gate.
const defaultContainerAnnotation = "kubectl.kubernetes.io/default-container"

func setDefaultContainer(w *workload.Workload) {
	if _, ok := w.Template.Annotations[defaultContainerAnnotation]; ok {
		return
	}
	if w.Template.Annotations == nil {
		w.Template.Annotations = map[string]string{}
	}
	w.Template.Annotations[defaultContainerAnnotation] = w.ServingContainer
}

func isNativeSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// baseConfig is the gate's configuration before the probes are added.
func baseConfig(w *workload.Workload, opts Options) contract.Config {
	cfg := contract.Defaults()
	cfg.UserPort = int(w.ServingPort)
	cfg.Namespace = w.Namespace
	cfg.MultiContainerProbes = true
	if k := w.Knative; k != nil {
		cfg.Service, cfg.Configuration, cfg.Revision = w.Name, w.Name, k.RevisionName
		cfg.ContainerConcurrency = int(k.ContainerConcurrency)
		cfg.RevisionTimeout = time.Duration(k.TimeoutSeconds) * time.Second
		cfg.ResponseStartTimeout = time.Duration(k.ResponseStartTimeoutSeconds) * time.Second
		cfg.IdleTimeout = time.Duration(k.IdleTimeoutSeconds) * time.Second
	}
	cfg.DrainQuietPeriod = drainQuietPeriod(w.PodSpec().TerminationGracePeriodSeconds)
	if v, ok := w.Template.Annotations[contract.AnnotationDrainQuietPeriod]; ok {
		// Validation refuses a value that is no duration or does not fit
		// the grace period; such a pod is not injected, but the default
		// stays if one gets here.
		if q, err := contract.ParseDrainQuietPeriod(v); err == nil {
			cfg.DrainQuietPeriod = q
		}
	}
	cfg.OnlyRouter = opts.OnlyRouter
	if opts.Local {
		cfg.StatusSource = "http://" + opts.APIAddr
		// Locally the pod's only way in is podgate run's front door (a
		// request straight to the pod IP ends the early end; see the
		// Drainer), so its confirmation may end the drain early.
		cfg.OnlyRouter = contract.OnlyRouterActivator
	} else {
		cfg.StatusSource = NodeStatusSource
	}
	return cfg
}

// drainQuietPeriod keeps the drain inside the grace period: Knative's 30 s,
// but at most half the pod's terminationGracePeriodSeconds, since the
// preStop hooks that wait for the drain eat into it (docs/facts.md §2).
func drainQuietPeriod(grace *int64) time.Duration {
	q := contract.DefaultDrainQuietPeriodSeconds * time.Second
	if grace != nil {
		if half := time.Duration(*grace) * time.Second / 2; half < q {
			q = half
		}
	}
	if q < 0 {
		q = 0
	}
	return q
}

// addDrainHook makes the container's shutdown wait for the gate's drain.
// A preStop hook the user wrote is kept: it is their shutdown logic, and a
// container has only one. (Knative replaces the whole lifecycle; its
// webhook rejects user lifecycle hooks in the first place.) Such a
// container is then not held by the drain; Warnings says so.
func addDrainHook(c *corev1.Container, token string) {
	if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
		return
	}
	if c.Lifecycle == nil {
		c.Lifecycle = &corev1.Lifecycle{}
	}
	c.Lifecycle.PreStop = &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
		Path:        contract.DrainPath,
		Port:        intstr.FromInt32(contract.GateAdminPort),
		Scheme:      corev1.URISchemeHTTP,
		HTTPHeaders: adminTokenHeader(token),
	}}
}

// adminTokenHeader is what a hook from the kubelet (the node's address,
// not the pod's) sends so that the gate lets it change its state.
func adminTokenHeader(token string) []corev1.HTTPHeader {
	return []corev1.HTTPHeader{{Name: contract.AdminTokenHeader, Value: token}}
}

// setServingEnv gives the serving container $PORT and, in a Knative
// Service, every container Knative's K_* variables (its runtime contract).
func setServingEnv(w *workload.Workload, serving *corev1.Container) {
	setEnv(serving, "PORT", fmt.Sprint(w.ServingPort))
	if k := w.Knative; k != nil {
		for i := range w.PodSpec().Containers {
			c := &w.PodSpec().Containers[i]
			setEnv(c, "K_SERVICE", w.Name)
			setEnv(c, "K_CONFIGURATION", w.Name)
			setEnv(c, "K_REVISION", k.RevisionName)
		}
	}
}

// fieldEnv is a variable of the downward API's field path.
func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
}

// setFieldEnv makes variable name of env the downward API's path, where
// it is (or last, if it is not there).
func setFieldEnv(env []corev1.EnvVar, name, path string) []corev1.EnvVar {
	for i := range env {
		if env[i].Name == name {
			env[i] = fieldEnv(name, path)
			return env
		}
	}
	return append(env, fieldEnv(name, path))
}

// withHostIP puts contract.EnvHostIP (the node's address) right before
// the status source, which names the node status service on it: the
// kubelet expands $(VAR) only for variables defined earlier in the list.
// A variable of that name already in env is replaced.
func withHostIP(env []corev1.EnvVar) []corev1.EnvVar {
	env = slices.DeleteFunc(env, func(e corev1.EnvVar) bool { return e.Name == contract.EnvHostIP })
	at := slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == contract.EnvStatusSource })
	if at < 0 {
		at = len(env)
	}
	return slices.Insert(env, at, fieldEnv(contract.EnvHostIP, "status.hostIP"))
}

func setEnv(c *corev1.Container, name, value string) {
	for i := range c.Env {
		if c.Env[i].Name == name {
			c.Env[i] = corev1.EnvVar{Name: name, Value: value}
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{Name: name, Value: value})
}

// Timing of the native gate's startup probe: `podgate gate wait` waits up
// to gateWaitSeconds-1 for the gate to serve and says why it does not; the
// kubelet gives it gateWaitSeconds, and restarts a gate that has not
// served for gateStartupFailures attempts (about a minute).
const (
	gateWaitSeconds     = 10
	gateStartupFailures = 6
)

// gateReadinessProbe is the kubelet's readiness probe of the gate.
//
// In a Pod or Deployment every container keeps its own readiness probe,
// so the gate's answers for the gate alone (contract.GateReadyPath on the
// admin port: it serves, is not draining, its status source has
// reported): a failing sidecar is then the unready container in the
// pod's status, not the gate, and the pod's Ready still waits for every
// container in the gate's view through the readiness gate on the gate's
// condition. Every second: the pod's Ready waits for the gate's first
// passing probe, which usually comes right after its start (the startup
// probe waited for it to serve) but may come before the status source's
// first report; failureThreshold 2: one answer slower than the timeout
// on a loaded node does not take the pod out, a stalled gate (which cannot
// pass traffic either) leaves within 2 to 3 s.
//
// In a Knative Service the containers' readiness probes moved into the
// gate, so its probe answers for all of them, as queue-proxy's: the
// traffic port's health check, as fast as the fastest container's, and one
// failed answer is the truth (the gate answers from state it keeps
// current), so failureThreshold 1 takes the pod out within one period.
func gateReadinessProbe(w *workload.Workload, r *rewriter) *corev1.Probe {
	if w.Knative != nil {
		return &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path:        "/",
				Port:        intstr.FromInt32(contract.GatePort),
				Scheme:      corev1.URISchemeHTTP,
				HTTPHeaders: []corev1.HTTPHeader{{Name: contract.NetworkProbeHeader, Value: contract.NetworkProbeQueue}},
			}},
			PeriodSeconds:    r.gatePeriod(),
			TimeoutSeconds:   prober.DefaultTimeoutSeconds,
			SuccessThreshold: 1,
			FailureThreshold: 1,
		}
	}
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path:   contract.GateReadyPath,
			Port:   intstr.FromInt32(contract.GateAdminPort),
			Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds:    1,
		TimeoutSeconds:   prober.DefaultTimeoutSeconds,
		SuccessThreshold: 1,
		FailureThreshold: 2,
	}
}

// gateContainer is the gate sidecar.
func gateContainer(cfg contract.Config, opts Options, readiness *corev1.Probe) corev1.Container {
	env := append(cfg.Encode(), contract.DownwardAPIEnv(opts.Local)...)
	if opts.NamespaceFromPod {
		env = setFieldEnv(env, contract.EnvServingNamespace, "metadata.namespace")
	}
	if !opts.Local {
		env = withHostIP(env)
	}
	c := corev1.Container{
		Name:  contract.GateContainerName,
		Image: opts.GateImage,
		// The image's entrypoint (/podgate, in the gate image and in
		// podgate's alike) with the subcommand: no command, so the
		// container runs what its image holds.
		Args: []string{"gate"},
		Ports: []corev1.ContainerPort{
			{Name: "queue-port", ContainerPort: contract.GatePort, Protocol: corev1.ProtocolTCP},
			{Name: contract.GateAdminPortName, ContainerPort: contract.GateAdminPort, Protocol: corev1.ProtocolTCP},
			{Name: "http-usermetric", ContainerPort: contract.GateMetricsPort, Protocol: corev1.ProtocolTCP},
			{Name: contract.GateAutoscalerPortName, ContainerPort: contract.GateAutoscalerPort, Protocol: corev1.ProtocolTCP},
		},
		Env:            env,
		ReadinessProbe: readiness,
	}
	if opts.GateAsContainer {
		return c
	}
	always := corev1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	// Started = serving, not ready: the other containers start once the
	// gate listens (their preStop hooks reach it). An httpGet probe's first attempt would usually
	// come before the gate listens and record a failure on every start;
	// `podgate gate wait` waits for it instead.
	c.StartupProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
			Command: []string{contract.ImageBinary, "gate", "wait", "--timeout", fmt.Sprintf("%ds", gateWaitSeconds-1)},
		}},
		TimeoutSeconds:   gateWaitSeconds,
		PeriodSeconds:    1,
		SuccessThreshold: 1,
		FailureThreshold: gateStartupFailures,
	}
	// The kubelet runs every container's preStop hook as the pod's
	// deletion begins, a native sidecar's too, though its SIGTERM waits
	// until the other containers have stopped: this hook is how the gate
	// learns of the deletion in time to drain while the others wait in
	// theirs. (Locally the node agent's status source tells it first.)
	c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{
		Path:        contract.StartDrainPath,
		Port:        intstr.FromInt32(contract.GateAdminPort),
		Scheme:      corev1.URISchemeHTTP,
		HTTPHeaders: adminTokenHeader(cfg.AdminToken),
	}}}
	return c
}

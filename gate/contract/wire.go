package contract

// The kubelet's probes (docs/facts.md §1).
const (
	// KubeletVersion is the major.minor of the kubelet podgate imitates. We
	// build against k8s.io/api v0.37, i.e. Kubernetes 1.37, so probes say
	// "kube-probe/1.37" like that kubelet would.
	KubeletVersion = "1.37"
	// KubeProbeUserAgentPrefix starts the User-Agent of the kubelet's HTTP
	// and gRPC probes: "kube-probe/<major>.<minor>".
	KubeProbeUserAgentPrefix = "kube-probe/"
	// KubeletProbeHeader marks a kubelet probe that a mesh rewrote (and
	// whose User-Agent it dropped); Knative's queue-proxy honours it.
	KubeletProbeHeader = "K-Kubelet-Probe"
)

// KubeProbeUserAgent is the kubelet's probe User-Agent for a "major.minor"
// version.
func KubeProbeUserAgent(version string) string { return KubeProbeUserAgentPrefix + version }

// Knative's health-check protocol, which the gate answers as queue-proxy
// does (docs/facts.md §4–5).
const (
	// NetworkProbeHeader: "queue" on a health check of the gate (from the
	// kubelet's readiness probe of the gate or the activator), "probe" on
	// the networking layer's check that a route reaches the pod.
	NetworkProbeHeader = "K-Network-Probe"
	// NetworkProbeQueue is NetworkProbeHeader's value on a health check,
	// and the body a healthy gate answers with.
	NetworkProbeQueue = "queue"
	// NetworkProbeIngress is NetworkProbeHeader's value on a route check.
	NetworkProbeIngress = "probe"
	// NetworkHashHeader carries the networking layer's route hash, echoed
	// back on a route check.
	NetworkHashHeader = "K-Network-Hash"
	// ActivatorProbeUserAgent is the activator's health check.
	ActivatorProbeUserAgent = "Knative-Activator-Probe"
	// AutoscalingProbeUserAgent is the autoscaler's health check.
	AutoscalingProbeUserAgent = "Knative-Autoscaling-Probe"
)

// podgate's own headers.
const (
	// ProbeMessageHeader carries a routed probe's original message,
	// Go-quoted (strconv.Quote), in the gate's answer to /probe/…: the
	// kubelet's own message for a failed HTTP probe leaves the body out,
	// podgate's node agent reads this header instead.
	ProbeMessageHeader = "Podgate-Probe-Message"
)

// The gate sidecar in a pod.
const (
	// GateContainerName is the gate container's name in an injected pod.
	GateContainerName = "podgate"
	// KnativeQueueContainerName is Knative's queue sidecar's name in a
	// revision's pod: podgate's webhook adopts that container when its
	// image is the gate (Knative started the gate as queue-proxy), instead
	// of adding a second gate beside it.
	KnativeQueueContainerName = "queue-proxy"
	// GatePort serves traffic and health checks (queue-proxy's 8012).
	GatePort = 8012
	// GateAdminPort serves /wait-for-drain and /probe/… (queue-proxy's 8022).
	GateAdminPort = 8022
	// GateAdminPortName is the name of the gate container's admin port.
	GateAdminPortName = "queueadm-port"
	// NodeStatusPort is podgate's node status service (package
	// node/gatestatus) on every node's address (a pod's status.hostIP):
	// where a gate on a cluster reads its own pod and writes its
	// condition, instead of holding a watch and a write right on the API
	// server itself.
	NodeStatusPort = 9026
	// GateMetricsPort serves Prometheus /metrics (queue-proxy's 9091).
	GateMetricsPort = 9091
	// GateAutoscalerPort serves the statistics Knative's autoscaler
	// scrapes, protobuf on /metrics (queue-proxy's 9090).
	GateAutoscalerPort = 9090
	// GateAutoscalerPortName is the name of the gate container's
	// autoscaler port (queue-proxy's).
	GateAutoscalerPortName = "http-autometric"
	// KnativeUserPort is Knative's port for a serving container that
	// declares none.
	KnativeUserPort = 8080
)

// `podgate run`'s defaults (docs/cli.md).
const (
	// APIAddr is where `podgate run` serves its local control API.
	APIAddr = "127.0.0.1:9700"
	// FrontDoorAddr is the front door's address: Knative's ingress answers
	// on port 80; locally 8080 needs no privileges.
	FrontDoorAddr = "127.0.0.1:8080"
	// Domain is Knative's default domain: a Service's URL is
	// http://NAME.NAMESPACE.Domain, and the front door routes that Host.
	Domain = "example.com"
)

// The gate's pod condition: the injector adds a readiness gate on it to
// every pod it injects, the gate writes it on its own pod (pods/status),
// and the node agent, like the kubelet, makes the pod Ready only once it
// is True. Its message names the containers that are not ready.
const (
	// ContainersReadyCondition is the condition's type (and the
	// readiness gate's conditionType).
	ContainersReadyCondition = "podgate.dev/containers-ready"
	// ReasonContainersNotReady: some container of the pod is not ready in
	// the gate's view; the message names each with its last probe message.
	ReasonContainersNotReady = "ContainersNotReady"
	// ReasonDraining: the pod is being deleted and the gate drains.
	ReasonDraining = "Draining"
)

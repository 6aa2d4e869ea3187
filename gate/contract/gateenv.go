package contract

// Knative queue-proxy variables.
const (
	// EnvServingReadinessProbe holds the readiness probes the gate runs
	// itself: one JSON corev1.Probe, or with EnvMultiContainerProbes=true a
	// JSON array (serving container first, then sidecars). Empty means
	// "always ready" as far as the gate's own probing goes.
	EnvServingReadinessProbe = "SERVING_READINESS_PROBE"
	// EnvMultiContainerProbes selects the array form of
	// SERVING_READINESS_PROBE ("true"/"false").
	EnvMultiContainerProbes = "ENABLE_MULTI_CONTAINER_PROBES"
	// EnvHTTP2AutoDetection ("true"/"false") makes HTTP readiness probes
	// try HTTP/2 with prior knowledge (h2c) before HTTP/1.1, so a
	// container that speaks only h2c can be ready.
	EnvHTTP2AutoDetection = "ENABLE_HTTP2_AUTO_DETECTION"
	// EnvQueueServingPort is the port the gate serves traffic and health
	// checks on.
	EnvQueueServingPort = "QUEUE_SERVING_PORT"
	// EnvUserPort is the serving container's port, where traffic goes.
	EnvUserPort = "USER_PORT"
	// EnvContainerConcurrency limits requests in flight to the serving
	// container; 0 means unlimited.
	EnvContainerConcurrency = "CONTAINER_CONCURRENCY"
	// EnvRevisionTimeoutSeconds is the request timeout in whole seconds:
	// the longest a request may take, its response's streaming included.
	EnvRevisionTimeoutSeconds = "REVISION_TIMEOUT_SECONDS"
	// EnvRevisionResponseStartTimeoutSeconds (optional, 0 = none) bounds
	// the time until the response starts.
	EnvRevisionResponseStartTimeoutSeconds = "REVISION_RESPONSE_START_TIMEOUT_SECONDS"
	// EnvRevisionIdleTimeoutSeconds (optional, 0 = none) bounds the time
	// without a byte of the response.
	EnvRevisionIdleTimeoutSeconds = "REVISION_IDLE_TIMEOUT_SECONDS"

	EnvServingNamespace     = "SERVING_NAMESPACE"
	EnvServingService       = "SERVING_SERVICE"
	EnvServingConfiguration = "SERVING_CONFIGURATION"
	EnvServingRevision      = "SERVING_REVISION"
	// EnvServingPod and EnvServingPodIP come from the downward API
	// (metadata.name, status.podIP), see DownwardAPIEnv.
	EnvServingPod   = "SERVING_POD"
	EnvServingPodIP = "SERVING_POD_IP"
)

// Required are the variables queue-proxy refuses to start without (its
// environment struct marks them required) among those the gate reads: a
// pod spec written for queue-proxy sets them all. A variable set to the
// empty string counts as set, as for queue-proxy; whether its value is
// valid is a separate check. queue-proxy also requires
// QUEUE_SERVING_TLS_PORT, SERVING_LOGGING_CONFIG and SERVING_LOGGING_LEVEL:
// the gate does not read the last two, and defaults the TLS port to
// GateTLSPort (a pod spec made for the gate needs no TLS port of its own),
// so it requires none of them.
var Required = []string{
	EnvQueueServingPort, EnvUserPort, EnvContainerConcurrency, EnvRevisionTimeoutSeconds,
	EnvServingNamespace, EnvServingConfiguration, EnvServingRevision, EnvServingPod, EnvServingPodIP,
}

// podgate additions.
const (
	// EnvReadinessContainers names, comma-separated, the container each
	// entry of SERVING_READINESS_PROBE belongs to, in the same order.
	EnvReadinessContainers = "PODGATE_READINESS_CONTAINERS"
	// EnvDelegatedReadiness names, comma-separated, the containers whose
	// readiness probe stays with the node agent or kubelet (exec probes,
	// which the gate cannot run); the gate learns their verdict from the
	// status source.
	EnvDelegatedReadiness = "PODGATE_DELEGATED_READINESS"
	// EnvWatchedProbes is a JSON object: container name → {"liveness":
	// probe, "startup": probe}, the network liveness and startup probes
	// that stay on their containers and of which the gate runs a copy of
	// each liveness probe itself (a watched probe): it takes a container
	// out of traffic as its liveness fails, before the kubelet's kill,
	// without being in the kubelet's liveness path.
	EnvWatchedProbes = "PODGATE_WATCHED_PROBES"
	// EnvRoutedProbes is EnvWatchedProbes' format as an older podgate
	// wrote it, when the kubelet reached those probes through the gate's
	// /probe/<container>/<kind>: still read, for pods injected then (the
	// gate answers /probe/… and counts those calls, as it did).
	EnvRoutedProbes = "PODGATE_ROUTED_PROBES"
	// EnvExcludedContainers names, comma-separated, the containers the
	// pod's ExcludeContainersAnnotation leaves out of the aggregation.
	EnvExcludedContainers = "PODGATE_EXCLUDED_CONTAINERS"
	// EnvDrainQuietPeriod is how long no request may arrive before a
	// draining gate exits (Go duration, e.g. "30s").
	EnvDrainQuietPeriod = "PODGATE_DRAIN_QUIET_PERIOD"
	// EnvStatusSource says where the gate reads container status from:
	// "kubernetes", "none", or the http:// URL of the local node agent's
	// control API.
	EnvStatusSource = "PODGATE_STATUS_SOURCE"
	// EnvHostIP is the node's address (the downward API's status.hostIP),
	// set by the injection before EnvStatusSource so that the status
	// source can name the node status service on it as
	// http://$(PODGATE_HOST_IP):9026 (NodeStatusPort).
	EnvHostIP = "PODGATE_HOST_IP"
	// EnvContainers names, comma-separated, every container of the pod the
	// gate answers for (all but the gate itself).
	EnvContainers = "PODGATE_CONTAINERS"
	// EnvUpstreamHost is the address the gate dials for the serving
	// container and for probes that name no host (and gRPC probes, which
	// cannot). Unset means 127.0.0.1, as queue-proxy does; in local mode,
	// where every pod has its own loopback address, it is the pod IP.
	EnvUpstreamHost = "PODGATE_UPSTREAM_HOST"
	// EnvAdminPort, EnvMetricsPort and EnvAutoscalerPort move the admin,
	// metrics and autoscaler statistics listeners (tests use 0 for a free
	// port).
	EnvAdminPort      = "PODGATE_ADMIN_PORT"
	EnvMetricsPort    = "PODGATE_METRICS_PORT"
	EnvAutoscalerPort = "PODGATE_AUTOSCALER_PORT"
)

// Ports, names and paths of the gate.
const (
	// DefaultImage is the gate image unless the injector is told otherwise:
	// GateImage.
	DefaultImage = GateImage
	// GateImage is the gate's own image: podgate-gate (cmd/podgate-gate),
	// the gate alone, which runs in every pod — about half the memory of
	// a gate of the one podgate binary, which links the node, the webhook
	// and the control plane besides.
	GateImage = "ghcr.io/podgate/podgate-gate"
	// PodgateImage is podgate's own image, the one binary with every
	// subcommand: the webhook and the activator run it, and it runs the
	// gate too (`podgate gate`), as older injections ask of it.
	PodgateImage = "ghcr.io/podgate/podgate"
	// ImageBinary is where both images hold their program, and their
	// entrypoint: a container of either runs `/podgate ARGS`, and the
	// gate's startup probe `/podgate gate wait`.
	ImageBinary = "/podgate"

	// DefaultRevisionTimeoutSeconds is Knative's default request timeout.
	DefaultRevisionTimeoutSeconds = 300
	// DefaultDrainQuietPeriodSeconds is queue-proxy's drain quiet period.
	DefaultDrainQuietPeriodSeconds = 30

	// DrainPath blocks a container's preStop until the gate has drained.
	DrainPath = "/wait-for-drain"
	// ProbePathPrefix starts /probe/<container>/<liveness|startup>, where
	// pods injected by an older podgate route their liveness and startup
	// probes (the injector no longer writes it; the gate still answers).
	ProbePathPrefix = "/probe/"
	// GateReadyPath (admin port) answers for the gate itself only: it
	// serves, it is not draining, its status source has reported. The
	// injected gate container's kubelet readiness probe calls it, so the
	// gate container is not marked unready for another container's
	// failure (that container's own probe and the gate's pod condition
	// say so).
	GateReadyPath = "/readyz/gate"

	// ExcludeContainersAnnotation on a pod (template) names,
	// comma-separated, containers the gate does not aggregate: it neither
	// probes nor counts them (their own readiness still counts for the
	// pod's Ready on a kubelet).
	ExcludeContainersAnnotation = "podgate.dev/exclude-containers"

	// Status sources other than a control API URL.
	StatusSourceKubernetes = "kubernetes"
	StatusSourceNone       = "none"
)

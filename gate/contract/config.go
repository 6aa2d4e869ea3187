package contract

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Config is the gate's configuration as the injector writes it and the
// gate reads it. Decode fills defaults for unset variables, so a decoded
// Config is complete.
type Config struct {
	// ServingPort serves traffic and health checks (QUEUE_SERVING_PORT).
	ServingPort int
	// AdminPort serves /wait-for-drain and /probe/… (PODGATE_ADMIN_PORT).
	AdminPort int
	// MetricsPort serves /metrics (PODGATE_METRICS_PORT).
	MetricsPort int
	// TLSPort serves traffic and health checks over TLS
	// (QUEUE_SERVING_TLS_PORT), when the serving certificate is mounted.
	TLSPort int
	// TLS are the TLS port's settings (QUEUE_PROXY_TLS_*).
	TLS TLSSettings
	// TLSCertDir holds the serving certificate, TLSCertFile and TLSKeyFile
	// (PODGATE_TLS_CERT_DIR, default KnativeCertDir).
	TLSCertDir string
	// AutoscalerPort serves the autoscaler's statistics on /metrics
	// (PODGATE_AUTOSCALER_PORT; queue-proxy's 9090).
	AutoscalerPort int
	// UserPort is the serving container's port (USER_PORT).
	UserPort int
	// UpstreamHost is where the serving container and host-less probes are
	// reached (PODGATE_UPSTREAM_HOST, default 127.0.0.1).
	UpstreamHost string

	// ContainerConcurrency caps requests in flight; 0 is unlimited.
	ContainerConcurrency int
	// RevisionTimeout bounds the whole request, the response's streaming
	// included (REVISION_TIMEOUT_SECONDS); 0 means none.
	RevisionTimeout time.Duration
	// ResponseStartTimeout bounds the time until the response starts
	// (REVISION_RESPONSE_START_TIMEOUT_SECONDS); 0 means none.
	ResponseStartTimeout time.Duration
	// IdleTimeout bounds the time without a byte of the response
	// (REVISION_IDLE_TIMEOUT_SECONDS); 0 means none.
	IdleTimeout time.Duration

	// Identity (SERVING_*). Pod and PodIP come from the downward API and
	// are never encoded; see DownwardAPIEnv.
	Namespace     string
	Service       string
	Configuration string
	Revision      string
	Pod           string
	PodIP         string

	// MultiContainerProbes selects the list form of SERVING_READINESS_PROBE.
	MultiContainerProbes bool
	// HTTP2AutoDetection: HTTP readiness probes try h2c (HTTP/2 with prior
	// knowledge) first (ENABLE_HTTP2_AUTO_DETECTION).
	HTTP2AutoDetection bool
	// ReadinessProbes are the probes the gate runs itself, serving
	// container first. Every one has an httpGet, tcpSocket or grpc handler
	// with a numeric port.
	ReadinessProbes []*corev1.Probe
	// ReadinessContainers[i] owns ReadinessProbes[i]; nil when the
	// variable is unset (a plain Knative queue-proxy configuration).
	ReadinessContainers []string
	// DelegatedReadiness are containers whose readiness the node agent or
	// kubelet decides (exec probes); the gate asks the status source.
	DelegatedReadiness []string
	// Containers is every container the gate answers for.
	Containers []string
	// WatchedProbes maps a container to its network liveness and startup
	// probes (PODGATE_WATCHED_PROBES). The probes stay on their containers,
	// where the kubelet runs them; the gate runs a copy of each liveness
	// probe with the same timing, so it sees a kill coming without being
	// in the kubelet's liveness path.
	WatchedProbes map[string]ContainerProbes
	// ProbesRouted: WatchedProbes came from PODGATE_ROUTED_PROBES, which an
	// older podgate wrote when it routed the kubelet's liveness and
	// startup probes through the gate's /probe/<container>/<kind>: the
	// gate then counts the kubelet's calls there instead of watching.
	ProbesRouted bool
	// ExcludedContainers are left out of the aggregation
	// (PODGATE_EXCLUDED_CONTAINERS, from the pod's
	// ExcludeContainersAnnotation): the gate neither probes nor counts
	// them, and lists them in /readyz?verbose.
	ExcludedContainers []string

	// DrainQuietPeriod: exit once no request arrived for this long.
	DrainQuietPeriod time.Duration
	// StatusSource is "kubernetes", "none" or the http:// URL of the local
	// node agent's control API.
	StatusSource string
	// OnlyRouter is "" or OnlyRouterActivator (PODGATE_ONLY_ROUTER): the
	// router whose confirmation may end the drain early.
	OnlyRouter string
	// AdminToken (PODGATE_ADMIN_TOKEN) lets a caller outside the pod (the
	// kubelet's preStop hooks, the activator) change the gate's state;
	// "" allows that only from the pod itself.
	AdminToken string
	// HandoffURL (PODGATE_HANDOFF_URL) is Knative's activator, where a
	// request held while the pod is not ready goes once the pod is out of
	// the endpoints; "" keeps held requests for this pod.
	HandoffURL string
}

// ContainerProbes are a container's liveness and startup probes, as the
// gate watches (or, for an older injection, routes) them. Named ports are
// already resolved to numbers.
type ContainerProbes struct {
	Liveness *corev1.Probe `json:"liveness,omitempty"`
	Startup  *corev1.Probe `json:"startup,omitempty"`
}

// Probe returns the probe of the given kind, or nil.
func (r ContainerProbes) Probe(kind ProbeKind) *corev1.Probe {
	switch kind {
	case Liveness:
		return r.Liveness
	case Startup:
		return r.Startup
	}
	return nil
}

// Defaults is the configuration of a gate whose environment sets nothing.
func Defaults() Config {
	return Config{
		ServingPort:      GatePort,
		AdminPort:        GateAdminPort,
		MetricsPort:      GateMetricsPort,
		TLSPort:          GateTLSPort,
		TLS:              DefaultTLSSettings(),
		TLSCertDir:       KnativeCertDir,
		AutoscalerPort:   GateAutoscalerPort,
		UserPort:         KnativeUserPort,
		UpstreamHost:     "127.0.0.1",
		RevisionTimeout:  DefaultRevisionTimeoutSeconds * time.Second,
		DrainQuietPeriod: DefaultDrainQuietPeriodSeconds * time.Second,
		StatusSource:     StatusSourceNone,
	}
}

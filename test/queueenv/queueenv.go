// Package queueenv is, for tests, the queue container exactly as Knative
// Serving v0.50.0's revision reconciler writes it: every environment
// variable in its order with the values of a default installation, the
// ports, and the security context. Facts read from Knative's reconciler
// (pkg/reconciler/revision/resources/queue.go) and its default config
// maps; a test starts podgate's gate with them to show that the gate is a
// drop-in queue sidecar.
package queueenv

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// The queue container's ports (knative.dev/networking's constants and
// knative.dev/pkg's profiling port).
const (
	ServingPort      = 8012 // QUEUE_SERVING_PORT for HTTP/1 revisions
	ServingH2CPort   = 8013 // QUEUE_SERVING_PORT when the revision's port is h2c
	ServingTLSPort   = 8112 // QUEUE_SERVING_TLS_PORT, with system-internal-tls
	AutoscalerPort   = 9090 // the autoscaler scrapes /metrics here
	UserMetricsPort  = 9091 // Prometheus metrics for users
	ProfilingPort    = 8008 // with runtime profiling enabled
	CertificatesPath = "/var/lib/knative/certs"
)

// DefaultObservabilityConfig is OBSERVABILITY_CONFIG as v0.50.0 writes it
// for a default config-observability: json.Marshal of its default config.
const DefaultObservabilityConfig = `{"tracing":{"protocol":"none"},"metrics":{"protocol":"none"},"runtime":{"profiling":"disabled","exportInterval":15000000000},"requestMetrics":{"protocol":"none"},"requestLogTemplate":"{\"httpRequest\": {\"requestMethod\": \"{{.Request.Method}}\", \"requestUrl\": \"{{js .Request.RequestURI}}\", \"requestSize\": \"{{.Request.ContentLength}}\", \"status\": {{.Response.Code}}, \"responseSize\": \"{{.Response.Size}}\", \"userAgent\": \"{{js .Request.UserAgent}}\", \"remoteIp\": \"{{js .Request.RemoteAddr}}\", \"serverIp\": \"{{.Revision.PodIP}}\", \"referer\": \"{{js .Request.Referer}}\", \"latency\": \"{{.Response.Latency}}s\", \"protocol\": \"{{.Request.Proto}}\"}, \"traceId\": \"{{.TraceID}}\"}"}`

// DefaultLoggingConfig is SERVING_LOGGING_CONFIG: config-logging's
// zap-logger-config as installed.
const DefaultLoggingConfig = `{
  "level": "info",
  "development": false,
  "outputPaths": ["stdout"],
  "errorOutputPaths": ["stderr"],
  "encoding": "json",
  "encoderConfig": {
    "timeKey": "timestamp",
    "levelKey": "severity",
    "nameKey": "logger",
    "callerKey": "caller",
    "messageKey": "message",
    "stacktraceKey": "stacktrace",
    "lineEnding": "",
    "levelEncoder": "",
    "timeEncoder": "iso8601",
    "durationEncoder": "",
    "callerEncoder": ""
  }
}
`

// Revision is what varies from one revision's pod to another. The zero
// value of a field takes the default of a Knative Service with nothing
// set (Knative's defaults: timeout 300 s, response start and idle 0, no
// readiness probe written by the user but the one Knative defaults to).
type Revision struct {
	Namespace, Service, Configuration, Revision string
	// Pod and PodIP come from the downward API (metadata.name,
	// status.podIP); HostIP from status.hostIP.
	Pod, PodIP, HostIP string
	// ServingPort, TLSPort and UserPort: 8012, 8112, 8080 by default.
	ServingPort, TLSPort, UserPort int
	ContainerConcurrency           int
	TimeoutSeconds                 int // default 300
	ResponseStartTimeoutSeconds    int
	IdleTimeoutSeconds             int
	// ReadinessProbe is SERVING_READINESS_PROBE as Knative encodes it
	// (one probe object, or an array with multi-container probing).
	ReadinessProbe string
	// MultiContainerProbes: config-features multi-container-probing.
	MultiContainerProbes bool
	HTTP2AutoDetection   bool
	HTTPFullDuplex       bool
	// ObservabilityConfig replaces DefaultObservabilityConfig when set.
	ObservabilityConfig string
	// TLS settings of config-deployment (queue-sidecar-tls-*), empty by
	// default, and its root CA.
	TLSMinVersion, TLSMaxVersion, TLSCipherSuites, TLSCurvePreferences, RootCA string
}

// DefaultReadinessProbe is SERVING_READINESS_PROBE for a Service whose
// container has no readiness probe: Knative's webhook defaults it to a
// TCP probe of the user port with period 0 (aggressive probing).
func DefaultReadinessProbe(userPort int) string {
	return `{"tcpSocket":{"port":` + strconv.Itoa(userPort) + `,"host":"127.0.0.1"},"successThreshold":1}`
}

// Env is every variable the queue container gets, in Knative's order,
// as NAME=VALUE (the downward API's values filled in).
func (r Revision) Env() []string {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&r.ServingPort, ServingPort)
	def(&r.TLSPort, ServingTLSPort)
	def(&r.UserPort, 8080)
	def(&r.TimeoutSeconds, 300)
	if r.ObservabilityConfig == "" {
		r.ObservabilityConfig = DefaultObservabilityConfig
	}
	if r.ReadinessProbe == "" {
		r.ReadinessProbe = DefaultReadinessProbe(r.UserPort)
		if r.MultiContainerProbes {
			r.ReadinessProbe = "[" + r.ReadinessProbe + "]"
		}
	}
	itoa := strconv.Itoa
	btoa := strconv.FormatBool
	kv := [][2]string{
		{"SERVING_NAMESPACE", r.Namespace},
		{"SERVING_SERVICE", r.Service},
		{"SERVING_CONFIGURATION", r.Configuration},
		{"SERVING_REVISION", r.Revision},
		{"QUEUE_SERVING_PORT", itoa(r.ServingPort)},
		{"QUEUE_SERVING_TLS_PORT", itoa(r.TLSPort)},
		{"CONTAINER_CONCURRENCY", itoa(r.ContainerConcurrency)},
		{"REVISION_TIMEOUT_SECONDS", itoa(r.TimeoutSeconds)},
		{"REVISION_RESPONSE_START_TIMEOUT_SECONDS", itoa(r.ResponseStartTimeoutSeconds)},
		{"REVISION_IDLE_TIMEOUT_SECONDS", itoa(r.IdleTimeoutSeconds)},
		{"SERVING_POD", r.Pod},
		{"SERVING_POD_IP", r.PodIP},
		{"SERVING_LOGGING_CONFIG", DefaultLoggingConfig},
		{"SERVING_LOGGING_LEVEL", "info"},
		{"USER_PORT", itoa(r.UserPort)},
		{"SYSTEM_NAMESPACE", "knative-serving"},
		{"SERVING_READINESS_PROBE", r.ReadinessProbe},
		{"HOST_IP", r.HostIP},
		{"ENABLE_HTTP2_AUTO_DETECTION", btoa(r.HTTP2AutoDetection)},
		{"ENABLE_HTTP_FULL_DUPLEX", btoa(r.HTTPFullDuplex)},
		{"ROOT_CA", r.RootCA},
		{"QUEUE_PROXY_TLS_MIN_VERSION", r.TLSMinVersion},
		{"QUEUE_PROXY_TLS_MAX_VERSION", r.TLSMaxVersion},
		{"QUEUE_PROXY_TLS_CIPHER_SUITES", r.TLSCipherSuites},
		{"QUEUE_PROXY_TLS_CURVE_PREFERENCES", r.TLSCurvePreferences},
		{"ENABLE_MULTI_CONTAINER_PROBES", btoa(r.MultiContainerProbes)},
		{"OBSERVABILITY_CONFIG", r.ObservabilityConfig},
	}
	out := make([]string, 0, len(kv))
	for _, v := range kv {
		out = append(out, v[0]+"="+v[1])
	}
	return out
}

// SecurityContext is the queue container's, whatever the revision.
func SecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

package contract

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/template"
	"time"
)

// EnvObservabilityConfig is Knative's observability settings for its queue
// sidecar (Knative 1.19 and later): config-observability as one JSON
// object. Older Knative versions set EnvEnableRequestLog instead.
const EnvObservabilityConfig = "OBSERVABILITY_CONFIG"

// EnvEnableRequestLog is the request log switch of Knative before 1.19
// ("true"/"false"); OBSERVABILITY_CONFIG's enableRequestLog replaced it.
const EnvEnableRequestLog = "SERVING_ENABLE_REQUEST_LOG"

// EnvProfilingPort moves the profiling listener (tests use 0 for a free
// port); queue-proxy's is fixed at ProfilingPort.
const EnvProfilingPort = "PODGATE_PROFILING_PORT"

// ProfilingPort serves Go's profiles (/debug/pprof/) when the runtime's
// profiling is enabled, as Knative's components do.
const ProfilingPort = 8008

// DefaultRequestLogTemplate is Knative's default request log template
// (config-observability's logging.request-log-template): a Cloud Logging
// httpRequest entry.
const DefaultRequestLogTemplate = `{"httpRequest": {"requestMethod": "{{.Request.Method}}", "requestUrl": "{{js .Request.RequestURI}}", "requestSize": "{{.Request.ContentLength}}", "status": {{.Response.Code}}, "responseSize": "{{.Response.Size}}", "userAgent": "{{js .Request.UserAgent}}", "remoteIp": "{{js .Request.RemoteAddr}}", "serverIp": "{{.Revision.PodIP}}", "referer": "{{js .Request.Referer}}", "latency": "{{.Response.Latency}}s", "protocol": "{{.Request.Proto}}"}, "traceId": "{{.TraceID}}"}`

// Protocols of Knative's metrics and tracing exporters.
const (
	ProtocolNone         = "none"
	ProtocolPrometheus   = "prometheus"
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolStdout       = "stdout"
)

// Observability is OBSERVABILITY_CONFIG: what Knative's queue sidecar
// logs, exports and serves besides traffic. Field names are Knative's.
type Observability struct {
	Tracing        Exporter `json:"tracing"`
	Metrics        Exporter `json:"metrics"`
	RequestMetrics Exporter `json:"requestMetrics"`
	Runtime        Runtime  `json:"runtime"`

	EnableRequestLog      bool   `json:"enableRequestLog,omitempty"`
	RequestLogTemplate    string `json:"requestLogTemplate,omitempty"`
	EnableProbeRequestLog bool   `json:"enableProbeRequestLog,omitempty"`
}

// Exporter is one metrics or tracing exporter's settings.
type Exporter struct {
	Protocol       string        `json:"protocol,omitempty"`
	Endpoint       string        `json:"endpoint,omitempty"`
	SamplingRate   float64       `json:"samplingRate,omitempty"`
	ExportInterval time.Duration `json:"exportInterval,omitempty"`
}

// Runtime is the runtime section: profiling "enabled" or "disabled".
type Runtime struct {
	Profiling      string        `json:"profiling,omitempty"`
	ExportInterval time.Duration `json:"exportInterval,omitempty"`
}

// ProfilingEnabled: only the exact word "enabled" turns it on, as in
// Knative.
func (r Runtime) ProfilingEnabled() bool { return r.Profiling == "enabled" }

// DefaultObservability is a default config-observability, as Knative
// writes it into every queue container.
func DefaultObservability() Observability {
	return Observability{
		Tracing:            Exporter{Protocol: ProtocolNone},
		Metrics:            Exporter{Protocol: ProtocolNone},
		RequestMetrics:     Exporter{Protocol: ProtocolNone},
		Runtime:            Runtime{Profiling: "disabled", ExportInterval: 15 * time.Second},
		RequestLogTemplate: DefaultRequestLogTemplate,
	}
}

// ParseObservability reads OBSERVABILITY_CONFIG's value: the defaults,
// overlaid with what the JSON sets, as queue-proxy reads it — so a field
// the JSON leaves out (Knative omits an empty request log template) keeps
// its default, and fields it does not know are ignored. An empty value is
// the defaults. Unlike queue-proxy, which starts and then logs that
// request logs are unavailable, a template that does not parse is an
// error here: the operator learns of it at once.
func ParseObservability(s string) (Observability, error) {
	o := DefaultObservability()
	if strings.TrimSpace(s) == "" {
		return o, nil
	}
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		return Observability{}, fmt.Errorf("%s: %w", EnvObservabilityConfig, err)
	}
	if o.RequestLogTemplate != "" {
		if _, err := template.New("requestLog").Parse(o.RequestLogTemplate); err != nil {
			return Observability{}, fmt.Errorf("%s: requestLogTemplate: %w", EnvObservabilityConfig, err)
		}
	}
	for _, e := range []struct {
		field, protocol string
		allowed         []string
	}{
		{"tracing.protocol", o.Tracing.Protocol, []string{"", ProtocolNone, ProtocolGRPC, ProtocolHTTPProtobuf, ProtocolStdout}},
		{"metrics.protocol", o.Metrics.Protocol, []string{"", ProtocolNone, ProtocolPrometheus, ProtocolGRPC, ProtocolHTTPProtobuf}},
		{"requestMetrics.protocol", o.RequestMetrics.Protocol, []string{"", ProtocolNone, ProtocolPrometheus, ProtocolGRPC, ProtocolHTTPProtobuf}},
	} {
		if !oneOf(e.protocol, e.allowed) {
			return Observability{}, fmt.Errorf("%s: %s: unsupported value %q (want one of %s)", EnvObservabilityConfig, e.field, e.protocol, strings.Join(e.allowed[1:], ", "))
		}
	}
	if r := o.Tracing.SamplingRate; r < 0 || r > 1 {
		return Observability{}, fmt.Errorf("%s: tracing.samplingRate: %v is not between 0 and 1", EnvObservabilityConfig, r)
	}
	return o, nil
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if s == v {
			return true
		}
	}
	return false
}

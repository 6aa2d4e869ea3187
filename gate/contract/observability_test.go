package contract

import (
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/test/queueenv"
)

func TestParseObservability(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		check   func(Observability) bool
		wantErr string
	}{
		{"empty is Knative's defaults", "", func(o Observability) bool { return o == DefaultObservability() }, ""},
		{"what Knative v0.50 writes for a default installation is its defaults", queueenv.DefaultObservabilityConfig,
			func(o Observability) bool { return o == DefaultObservability() }, ""},
		{"a field left out keeps its default: the template", `{"enableRequestLog":true}`,
			func(o Observability) bool {
				return o.EnableRequestLog && o.RequestLogTemplate == DefaultRequestLogTemplate
			}, ""},
		{"fields it does not know are ignored", `{"loggingURLTemplate":"x","somethingNew":{"a":1}}`,
			func(o Observability) bool { return o == DefaultObservability() }, ""},
		{"profiling is on only when enabled", `{"runtime":{"profiling":"Enabled"}}`,
			func(o Observability) bool { return !o.Runtime.ProfilingEnabled() }, ""},
		{"profiling enabled", `{"runtime":{"profiling":"enabled"}}`,
			func(o Observability) bool {
				return o.Runtime.ProfilingEnabled() && o.Runtime.ExportInterval == 15*time.Second
			}, ""},
		{"an OTLP tracer with its sampling rate", `{"tracing":{"protocol":"grpc","endpoint":"otel:4317","samplingRate":0.1}}`,
			func(o Observability) bool {
				return o.Tracing == Exporter{Protocol: ProtocolGRPC, Endpoint: "otel:4317", SamplingRate: 0.1}
			}, ""},
		{"not JSON names the variable", `{`, nil, "OBSERVABILITY_CONFIG: unexpected end of JSON input"},
		{"a wrong type names the variable", `{"enableRequestLog":"yes"}`, nil, "OBSERVABILITY_CONFIG: json: cannot unmarshal string"},
		{"an unknown protocol names the field", `{"requestMetrics":{"protocol":"statsd"}}`, nil, `OBSERVABILITY_CONFIG: requestMetrics.protocol: unsupported value "statsd"`},
		{"prometheus is no tracing protocol", `{"tracing":{"protocol":"prometheus"}}`, nil, `tracing.protocol: unsupported value "prometheus"`},
		{"a sampling rate above one", `{"tracing":{"samplingRate":2}}`, nil, "tracing.samplingRate: 2 is not between 0 and 1"},
		{"a template that does not parse", `{"requestLogTemplate":"{{"}`, nil, "OBSERVABILITY_CONFIG: requestLogTemplate: template: requestLog:1: unclosed action"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := ParseObservability(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(o) {
				t.Errorf("ParseObservability(%q) = %+v, %v", tc.in, o, err)
			}
		})
	}
}

// FuzzParseObservability: never panics; an error always names the
// variable; an accepted config has known protocols.
func FuzzParseObservability(f *testing.F) {
	f.Add(queueenv.DefaultObservabilityConfig)
	f.Add(`{"enableRequestLog":true,"requestLogTemplate":"{{.Request.Method}}"}`)
	f.Add(`{"tracing":{"protocol":"grpc","endpoint":"x","samplingRate":1},"runtime":{"profiling":"enabled"}}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, s string) {
		o, err := ParseObservability(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), EnvObservabilityConfig+": ") {
				t.Fatalf("error %q does not name %s", err, EnvObservabilityConfig)
			}
			return
		}
		for _, p := range []string{o.Tracing.Protocol, o.Metrics.Protocol, o.RequestMetrics.Protocol} {
			switch p {
			case "", ProtocolNone, ProtocolPrometheus, ProtocolGRPC, ProtocolHTTPProtobuf, ProtocolStdout:
			default:
				t.Fatalf("accepted protocol %q", p)
			}
		}
	})
}

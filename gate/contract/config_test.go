package contract

import (
	"crypto/tls"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func envMap(vars []corev1.EnvVar) map[string]string {
	m := map[string]string{}
	for _, v := range vars {
		m[v.Name] = v.Value
	}
	return m
}

func getter(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	grace := int64(7)
	c := Defaults()
	c.UserPort = 3000
	c.ContainerConcurrency = 5
	c.RevisionTimeout = 90 * time.Second
	c.ResponseStartTimeout = 30 * time.Second
	c.IdleTimeout = 20 * time.Second
	c.Namespace, c.Service, c.Configuration, c.Revision = "ns", "svc", "svc", "svc-00001"
	c.MultiContainerProbes = true
	c.HTTP2AutoDetection = true
	c.ReadinessProbes = []*corev1.Probe{
		{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(3000), Host: "127.0.0.1"}}, SuccessThreshold: 1},
		{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000}}, PeriodSeconds: 2},
	}
	c.ReadinessContainers = []string{"app", "side"}
	c.DelegatedReadiness = []string{"checker"}
	c.Containers = []string{"app", "side", "checker"}
	c.ExcludedContainers = []string{"log-shipper"}
	c.WatchedProbes = map[string]ContainerProbes{"app": {
		Liveness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/l", Port: intstr.FromInt32(3000), Scheme: "HTTP"}}, TerminationGracePeriodSeconds: &grace},
	}}
	c.DrainQuietPeriod = 12 * time.Second
	c.StatusSource = "http://127.0.0.1:9700"
	c.UpstreamHost = "127.0.1.4"
	c.AdminPort = 0
	c.AutoscalerPort = 0
	c.OnlyRouter = OnlyRouterActivator
	c.HandoffURL = "http://activator-service.knative-serving.svc.cluster.local:80"
	c.TLSPort = 0
	c.TLSCertDir = "/tmp/certs"
	c.TLS = TLSSettings{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12,
		CipherSuites:     []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384},
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256}}

	got, err := Decode(getter(envMap(c.Encode())))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip changed the config:\n got %+v\nwant %+v", got, c)
	}
}

// An older podgate wrote PODGATE_ROUTED_PROBES (and routed the kubelet's
// probes through /probe/…): the gate still reads it, knows it was routed,
// and encodes it back under the old name.
func TestDecodeReadsAnOlderInjectionsRoutedProbes(t *testing.T) {
	env := map[string]string{EnvRoutedProbes: `{"app":{"liveness":{"tcpSocket":{"port":3000}}}}`}
	c, err := Decode(getter(env))
	if err != nil {
		t.Fatal(err)
	}
	if !c.ProbesRouted || c.WatchedProbes["app"].Liveness == nil {
		t.Fatalf("got routed %v, probes %+v; want the old variable read as routed", c.ProbesRouted, c.WatchedProbes)
	}
	enc := envMap(c.Encode())
	if enc[EnvRoutedProbes] == "" || enc[EnvWatchedProbes] != "" {
		t.Errorf("encoded %v, want the old variable only", enc)
	}
	c.ProbesRouted = false
	if enc := envMap(c.Encode()); enc[EnvWatchedProbes] == "" || enc[EnvRoutedProbes] != "" {
		t.Errorf("encoded %v, want the new variable only", enc)
	}
}

func TestDecodeEmptyEnvironmentIsTheDefaults(t *testing.T) {
	got, err := Decode(getter(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, Defaults()) {
		t.Errorf("got %+v, want %+v", got, Defaults())
	}
	if got.ServingPort != 8012 || got.AdminPort != 8022 || got.MetricsPort != 9091 || got.AutoscalerPort != 9090 || got.UserPort != 8080 ||
		got.UpstreamHost != "127.0.0.1" || got.RevisionTimeout != 300*time.Second || got.DrainQuietPeriod != 30*time.Second {
		t.Errorf("defaults differ from queue-proxy's: %+v", got)
	}
}

func TestDecodeKnativeQueueProxyEnvironment(t *testing.T) {
	// What Knative's reconciler writes for a single-container revision.
	env := map[string]string{
		"SERVING_NAMESPACE": "default", "SERVING_SERVICE": "hello", "SERVING_CONFIGURATION": "hello",
		"SERVING_REVISION": "hello-00001", "QUEUE_SERVING_PORT": "8012", "USER_PORT": "8080",
		"CONTAINER_CONCURRENCY": "0", "REVISION_TIMEOUT_SECONDS": "300",
		"SERVING_POD": "hello-00001-deployment-abc", "SERVING_POD_IP": "10.42.0.7",
		"SERVING_READINESS_PROBE":       `{"tcpSocket":{"port":8080,"host":"127.0.0.1"},"successThreshold":1}`,
		"ENABLE_MULTI_CONTAINER_PROBES": "false",
		"SERVING_LOGGING_CONFIG":        "ignored",
	}
	c, err := Decode(getter(env))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ReadinessProbes) != 1 || c.ReadinessProbes[0].TCPSocket.Port != intstr.FromInt32(8080) || c.ReadinessContainers != nil {
		t.Errorf("probes %+v containers %v", c.ReadinessProbes, c.ReadinessContainers)
	}
	if c.PodIP != "10.42.0.7" || c.Revision != "hello-00001" || c.StatusSource != StatusSourceNone {
		t.Errorf("identity/status %+v", c)
	}
	// Knative's multi-container form.
	env["ENABLE_MULTI_CONTAINER_PROBES"] = "true"
	env["SERVING_READINESS_PROBE"] = `[{"httpGet":{"path":"/","port":8080,"host":"127.0.0.1","scheme":"HTTP"}},{"httpGet":{"path":"/","port":8090,"host":"127.0.0.1","scheme":"HTTP"}}]`
	c, err = Decode(getter(env))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.ReadinessProbes) != 2 || c.ReadinessProbes[1].HTTPGet.Port != intstr.FromInt32(8090) {
		t.Errorf("probes %+v", c.ReadinessProbes)
	}
}

func TestDecodeRejectsMalformedValues(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // substring of the error; the variable name leads
	}{
		{"port not a number", map[string]string{EnvQueueServingPort: "eighty"}, `QUEUE_SERVING_PORT: "eighty" is not a port number`},
		{"port out of range", map[string]string{EnvAdminPort: "70000"}, `PODGATE_ADMIN_PORT: "70000" is not a port number`},
		{"autoscaler port not a number", map[string]string{EnvAutoscalerPort: "stats"}, `PODGATE_AUTOSCALER_PORT: "stats" is not a port number`},
		{"user port 0", map[string]string{EnvUserPort: "0"}, `USER_PORT: "0" is not a port number (1-65535)`},
		{"negative concurrency", map[string]string{EnvContainerConcurrency: "-1"}, `CONTAINER_CONCURRENCY: "-1" is not a whole number >= 0`},
		{"timeout not a number", map[string]string{EnvRevisionTimeoutSeconds: "5m"}, `REVISION_TIMEOUT_SECONDS: "5m" is not a whole number`},
		{"response start timeout negative", map[string]string{EnvRevisionResponseStartTimeoutSeconds: "-1"}, `REVISION_RESPONSE_START_TIMEOUT_SECONDS: "-1" is not a whole number >= 0`},
		{"idle timeout not a number", map[string]string{EnvRevisionIdleTimeoutSeconds: "1.5"}, `REVISION_IDLE_TIMEOUT_SECONDS: "1.5" is not a whole number >= 0`},
		{"bool", map[string]string{EnvMultiContainerProbes: "yes please"}, `ENABLE_MULTI_CONTAINER_PROBES: "yes please" is not true or false`},
		{"probe JSON broken", map[string]string{EnvServingReadinessProbe: `{"tcpSocket":`}, `SERVING_READINESS_PROBE: not a JSON probe`},
		{"probe unknown field", map[string]string{EnvServingReadinessProbe: `{"tcpSockett":{"port":1}}`}, `SERVING_READINESS_PROBE: not a JSON probe: tcpSockett: Forbidden: unknown field`},
		{"probe duplicate field", map[string]string{EnvServingReadinessProbe: `{"tcpSocket":{"port":1},"tcpSocket":{"port":2}}`}, `SERVING_READINESS_PROBE: not a JSON probe: tcpSocket: Forbidden: duplicate field`},
		{"probe field names are case-sensitive", map[string]string{EnvServingReadinessProbe: `{"TCPSocket":{"port":1}}`}, `SERVING_READINESS_PROBE: not a JSON probe: TCPSocket: Forbidden: unknown field`},
		{"probe wrong type names field and value", map[string]string{EnvServingReadinessProbe: `{"tcpSocket":{"port":1},"periodSeconds":"soon"}`}, `SERVING_READINESS_PROBE: not a JSON probe: periodSeconds: Invalid value: "soon": must be a number, not a string`},
		{"probe array unknown field names its index", map[string]string{EnvMultiContainerProbes: "true", EnvServingReadinessProbe: `[{"tcpSocket":{"port":1}},{"tcpSocket":{"prot":1}}]`}, `SERVING_READINESS_PROBE: not a JSON array of probes: SERVING_READINESS_PROBE[1].tcpSocket.prot: Forbidden: unknown field`},
		{"routed probe unknown field names its path", map[string]string{EnvRoutedProbes: `{"a":{"liveness":{"tcpSocket":{"port":1},"periodSecond":1}}}`}, `PODGATE_ROUTED_PROBES: not a JSON object of container → {liveness, startup}: a.liveness.periodSecond: Forbidden: unknown field`},
		{"array without multi", map[string]string{EnvServingReadinessProbe: `[]`}, `SERVING_READINESS_PROBE: is a JSON array, which needs ENABLE_MULTI_CONTAINER_PROBES=true`},
		{"array with multi=false", map[string]string{EnvMultiContainerProbes: "false", EnvServingReadinessProbe: `[{"tcpSocket":{"port":1}}]`}, `SERVING_READINESS_PROBE: is a JSON array, which needs ENABLE_MULTI_CONTAINER_PROBES=true`},
		{"one object with multi", map[string]string{EnvMultiContainerProbes: "true", EnvServingReadinessProbe: `{"tcpSocket":{"port":1}}`}, `SERVING_READINESS_PROBE: is not a JSON array, which ENABLE_MULTI_CONTAINER_PROBES=true needs`},
		{"http2 detection bool", map[string]string{EnvHTTP2AutoDetection: "on"}, `ENABLE_HTTP2_AUTO_DETECTION: "on" is not true or false`},
		{"exec probe", map[string]string{EnvServingReadinessProbe: `{"exec":{"command":["x"]}}`}, `SERVING_READINESS_PROBE: the probe: exec probes run in their container`},
		{"named port", map[string]string{EnvMultiContainerProbes: "true", EnvServingReadinessProbe: `[{"tcpSocket":{"port":1}},{"tcpSocket":{"port":"http"}}]`}, `SERVING_READINESS_PROBE: probe 1: port "http" is a name`},
		{"no handler", map[string]string{EnvServingReadinessProbe: `{"periodSeconds":1}`}, `SERVING_READINESS_PROBE: the probe: has no httpGet, tcpSocket or grpc handler`},
		{"scheme", map[string]string{EnvServingReadinessProbe: `{"httpGet":{"port":1,"scheme":"FTP"}}`}, `httpGet scheme "FTP" is neither HTTP nor HTTPS`},
		{"containers count", map[string]string{EnvServingReadinessProbe: `{"tcpSocket":{"port":1}}`, EnvReadinessContainers: "a,b"}, `PODGATE_READINESS_CONTAINERS: names 2 containers but SERVING_READINESS_PROBE holds 1 probes`},
		{"empty name", map[string]string{EnvContainers: "a,,b"}, `PODGATE_CONTAINERS: entry 2 of "a,,b" is empty`},
		{"duplicate name", map[string]string{EnvContainers: "a,a"}, `PODGATE_CONTAINERS: "a" is listed twice`},
		{"watched probe unknown field names its path", map[string]string{EnvWatchedProbes: `{"a":{"liveness":{"tcpSocket":{"port":1},"periodSecond":1}}}`}, `PODGATE_WATCHED_PROBES: not a JSON object of container → {liveness, startup}: a.liveness.periodSecond: Forbidden: unknown field`},
		{"watched exec", map[string]string{EnvWatchedProbes: `{"a":{"liveness":{"exec":{"command":["x"]}}}}`}, `PODGATE_WATCHED_PROBES: a liveness probe: exec probes run in their container`},
		{"watched and routed both set", map[string]string{EnvWatchedProbes: `{"a":{"liveness":{"tcpSocket":{"port":1}}}}`, EnvRoutedProbes: `{"a":{"liveness":{"tcpSocket":{"port":1}}}}`}, `PODGATE_ROUTED_PROBES: is set together with PODGATE_WATCHED_PROBES`},
		{"excluded duplicate", map[string]string{EnvExcludedContainers: "a,a"}, `PODGATE_EXCLUDED_CONTAINERS: "a" is listed twice`},
		{"routed not JSON", map[string]string{EnvRoutedProbes: `[1]`}, `PODGATE_ROUTED_PROBES: not a JSON object of container`},
		{"routed unknown kind", map[string]string{EnvRoutedProbes: `{"a":{"readiness":{"tcpSocket":{"port":1}}}}`}, `PODGATE_ROUTED_PROBES: not a JSON object`},
		{"routed exec", map[string]string{EnvRoutedProbes: `{"a":{"liveness":{"exec":{"command":["x"]}}}}`}, `PODGATE_ROUTED_PROBES: a liveness probe: exec probes run in their container`},
		{"drain duration", map[string]string{EnvDrainQuietPeriod: "30"}, `PODGATE_DRAIN_QUIET_PERIOD: "30" is not a duration`},
		{"drain negative", map[string]string{EnvDrainQuietPeriod: "-1s"}, `PODGATE_DRAIN_QUIET_PERIOD: "-1s" is negative`},
		{"status source", map[string]string{EnvStatusSource: "etcd"}, `PODGATE_STATUS_SOURCE: "etcd" is neither`},
		{"delegated without source", map[string]string{EnvDelegatedReadiness: "side"}, `PODGATE_STATUS_SOURCE: is "none", but PODGATE_DELEGATED_READINESS lists containers`},
		{"upstream host", map[string]string{EnvUpstreamHost: "not a host"}, `PODGATE_UPSTREAM_HOST: "not a host" is not an IP address or host name`},
		{"pod IP", map[string]string{EnvServingPodIP: "10.0.0"}, `SERVING_POD_IP: "10.0.0" is not an IP address`},
		{"only router", map[string]string{EnvOnlyRouter: "ingress"}, `PODGATE_ONLY_ROUTER: "ingress" is not "activator"`},
		{"handoff scheme", map[string]string{EnvStatusSource: StatusSourceKubernetes, EnvHandoffURL: "https://activator"}, `PODGATE_HANDOFF_URL: "https://activator" is not the http:// URL of Knative's activator: scheme "https" is not http`},
		{"handoff path", map[string]string{EnvStatusSource: StatusSourceKubernetes, EnvHandoffURL: "http://activator/x"}, `PODGATE_HANDOFF_URL: "http://activator/x" is not the http:// URL of Knative's activator: has a path`},
		{"handoff no host", map[string]string{EnvStatusSource: StatusSourceKubernetes, EnvHandoffURL: "http:///"}, `PODGATE_HANDOFF_URL: "http:///" is not the http:// URL of Knative's activator: has no host`},
		{"handoff port", map[string]string{EnvStatusSource: StatusSourceKubernetes, EnvHandoffURL: "http://activator:0"}, `port "0" is not 1-65535`},
		{"handoff without status source", map[string]string{EnvHandoffURL: "http://activator:80"}, `PODGATE_HANDOFF_URL: is set, but PODGATE_STATUS_SOURCE is "none"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(getter(tt.env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestDecodeReportsEveryProblem(t *testing.T) {
	_, err := Decode(getter(map[string]string{EnvUserPort: "x", EnvDrainQuietPeriod: "y"}))
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{EnvUserPort, EnvDrainQuietPeriod} {
		if !strings.Contains(err.Error(), name+":") {
			t.Errorf("error %q does not report %s", err, name)
		}
	}
}

func TestEncodeUsesTheListFormForSeveralProbes(t *testing.T) {
	c := Defaults()
	tcp := func(p int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(p)}}}
	}
	c.ReadinessProbes = []*corev1.Probe{tcp(1), tcp(2)}
	env := envMap(c.Encode())
	if env[EnvMultiContainerProbes] != "true" || !strings.HasPrefix(env[EnvServingReadinessProbe], "[") {
		t.Errorf("two probes encoded as %s=%s %s", EnvMultiContainerProbes, env[EnvMultiContainerProbes], env[EnvServingReadinessProbe])
	}
	c.ReadinessProbes = []*corev1.Probe{tcp(1)}
	env = envMap(c.Encode())
	if env[EnvServingReadinessProbe] != `{"tcpSocket":{"port":1}}` {
		t.Errorf("one probe encoded as %s", env[EnvServingReadinessProbe])
	}
}

func TestDownwardAPIEnv(t *testing.T) {
	for _, local := range []bool{false, true} {
		env := DownwardAPIEnv(local)
		paths := map[string]string{}
		for _, e := range env {
			paths[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
		if paths[EnvServingPod] != "metadata.name" || paths[EnvServingPodIP] != "status.podIP" {
			t.Errorf("local=%v: %v", local, paths)
		}
		if _, ok := paths[EnvUpstreamHost]; ok != local {
			t.Errorf("local=%v: upstream host from the pod IP: %v", local, ok)
		}
	}
}

func TestProbePath(t *testing.T) {
	if p := ProbePath("app", Liveness); p != "/probe/app/liveness" {
		t.Errorf("ProbePath = %q", p)
	}
	tests := []struct {
		path      string
		container string
		kind      ProbeKind
		err       string
	}{
		{"/probe/app/liveness", "app", Liveness, ""},
		{"/probe/side-car/startup", "side-car", Startup, ""},
		{"/probe/app/readiness", "", "", `kind "readiness" is neither`},
		{"/probe//liveness", "", "", "want /probe/<container>"},
		{"/probe/app", "", "", "want /probe/<container>"},
		{"/wait-for-drain", "", "", "does not start with /probe/"},
	}
	for _, tt := range tests {
		c, k, err := ParseProbePath(tt.path)
		switch {
		case tt.err == "" && (err != nil || c != tt.container || k != tt.kind):
			t.Errorf("ParseProbePath(%q) = %q, %q, %v", tt.path, c, k, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseProbePath(%q) error %v, want %q", tt.path, err, tt.err)
		}
	}
}

// queueProxyEnv is a complete environment as Knative's reconciler writes
// it for queue-proxy (downward API values resolved).
func queueProxyEnv() map[string]string {
	return map[string]string{
		"SERVING_NAMESPACE": "default", "SERVING_SERVICE": "hello", "SERVING_CONFIGURATION": "hello",
		"SERVING_REVISION": "hello-00001", "QUEUE_SERVING_PORT": "8012", "QUEUE_SERVING_TLS_PORT": "8112",
		"USER_PORT": "8080", "CONTAINER_CONCURRENCY": "0", "REVISION_TIMEOUT_SECONDS": "300",
		"SERVING_POD": "hello-00001-deployment-abc", "SERVING_POD_IP": "10.42.0.7",
		"SERVING_LOGGING_CONFIG": "", "SERVING_LOGGING_LEVEL": "",
		"SERVING_READINESS_PROBE":       `{"tcpSocket":{"port":8080,"host":"127.0.0.1"},"successThreshold":1}`,
		"ENABLE_MULTI_CONTAINER_PROBES": "false",
		"ENABLE_HTTP2_AUTO_DETECTION":   "false",
	}
}

func lookuper(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestDecodeEnvAcceptsQueueProxysEnvironment(t *testing.T) {
	env := queueProxyEnv()
	strict, err := DecodeEnv(lookuper(env))
	if err != nil {
		t.Fatal(err)
	}
	lenient, err := Decode(getter(env))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(strict, lenient) {
		t.Errorf("DecodeEnv and Decode differ on a valid environment:\n%+v\n%+v", strict, lenient)
	}
	// Set but empty counts as set, as for queue-proxy: an identity variable
	// may be empty.
	for _, name := range []string{EnvServingNamespace, EnvServingConfiguration, EnvServingRevision, EnvServingPod, EnvServingPodIP} {
		env := queueProxyEnv()
		env[name] = ""
		if _, err := DecodeEnv(lookuper(env)); err != nil {
			t.Errorf("%s set to the empty string: %v", name, err)
		}
	}
	// An empty podgate variable still means unset.
	env[EnvAdminPort] = ""
	if c, err := DecodeEnv(lookuper(env)); err != nil || c.AdminPort != GateAdminPort {
		t.Errorf("empty %s: admin port %d, %v", EnvAdminPort, c.AdminPort, err)
	}
}

func TestDecodeEnvRejectsWhatQueueProxyRejects(t *testing.T) {
	tests := []struct {
		name  string
		unset string            // a variable to remove
		set   map[string]string // variables to change
		want  string
	}{
		{"QUEUE_SERVING_PORT missing", EnvQueueServingPort, nil, "QUEUE_SERVING_PORT: is required (queue-proxy's environment) but not set"},
		{"USER_PORT missing", EnvUserPort, nil, "USER_PORT: is required"},
		{"CONTAINER_CONCURRENCY missing", EnvContainerConcurrency, nil, "CONTAINER_CONCURRENCY: is required"},
		{"REVISION_TIMEOUT_SECONDS missing", EnvRevisionTimeoutSeconds, nil, "REVISION_TIMEOUT_SECONDS: is required"},
		{"SERVING_NAMESPACE missing", EnvServingNamespace, nil, "SERVING_NAMESPACE: is required"},
		{"SERVING_CONFIGURATION missing", EnvServingConfiguration, nil, "SERVING_CONFIGURATION: is required"},
		{"SERVING_REVISION missing", EnvServingRevision, nil, "SERVING_REVISION: is required"},
		{"SERVING_POD missing", EnvServingPod, nil, "SERVING_POD: is required"},
		{"SERVING_POD_IP missing", EnvServingPodIP, nil, "SERVING_POD_IP: is required"},
		{"USER_PORT empty", "", map[string]string{EnvUserPort: ""}, `USER_PORT: "" is not a port number (1-65535)`},
		{"USER_PORT a name", "", map[string]string{EnvUserPort: "http"}, `USER_PORT: "http" is not a port number (1-65535)`},
		{"QUEUE_SERVING_PORT empty", "", map[string]string{EnvQueueServingPort: ""}, `QUEUE_SERVING_PORT: "" is not a port number (0-65535)`},
		{"QUEUE_SERVING_TLS_PORT empty", "", map[string]string{EnvQueueServingTLSPort: ""}, `QUEUE_SERVING_TLS_PORT: "" is not a port number (0-65535)`},
		{"QUEUE_PROXY_TLS_MIN_VERSION not a version", "", map[string]string{EnvTLSMinVersion: "1.1"}, `QUEUE_PROXY_TLS_MIN_VERSION: "1.1" is not a TLS version`},
		{"CONTAINER_CONCURRENCY empty", "", map[string]string{EnvContainerConcurrency: ""}, `CONTAINER_CONCURRENCY: "" is not a whole number >= 0`},
		{"REVISION_TIMEOUT_SECONDS empty", "", map[string]string{EnvRevisionTimeoutSeconds: ""}, `REVISION_TIMEOUT_SECONDS: "" is not a whole number >= 0`},
		{"REVISION_IDLE_TIMEOUT_SECONDS empty", "", map[string]string{EnvRevisionIdleTimeoutSeconds: ""}, `REVISION_IDLE_TIMEOUT_SECONDS: "" is not a whole number >= 0`},
		{"ENABLE_MULTI_CONTAINER_PROBES empty", "", map[string]string{EnvMultiContainerProbes: ""}, `ENABLE_MULTI_CONTAINER_PROBES: "" is not true or false`},
		{"ENABLE_HTTP2_AUTO_DETECTION empty", "", map[string]string{EnvHTTP2AutoDetection: ""}, `ENABLE_HTTP2_AUTO_DETECTION: "" is not true or false`},
		{"one probe object with the multi-container flag", "", map[string]string{EnvMultiContainerProbes: "true"}, "SERVING_READINESS_PROBE: is not a JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := queueProxyEnv()
			delete(env, tt.unset)
			for k, v := range tt.set {
				env[k] = v
			}
			_, err := DecodeEnv(lookuper(env))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestEncodedEnvironmentPassesDecodeEnv: what the injector writes, with
// the downward API resolved, is a complete environment for the gate.
func TestEncodedEnvironmentPassesDecodeEnv(t *testing.T) {
	knative := Defaults()
	knative.Namespace, knative.Service, knative.Configuration, knative.Revision = "ns", "svc", "svc", "svc-00001"
	knative.MultiContainerProbes = true
	knative.ReadinessProbes = []*corev1.Probe{{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}}
	for name, c := range map[string]Config{"defaults (a Deployment: no Knative identity)": Defaults(), "a Knative revision": knative} {
		for _, local := range []bool{false, true} {
			env := envMap(c.Encode())
			for _, e := range DownwardAPIEnv(local) {
				env[e.Name] = map[string]string{"metadata.name": "p", "status.podIP": "127.0.1.3"}[e.ValueFrom.FieldRef.FieldPath]
			}
			if _, err := DecodeEnv(lookuper(env)); err != nil {
				t.Errorf("%s, local=%v: %v", name, local, err)
			}
		}
	}
}

func TestHandoffMarker(t *testing.T) {
	tests := []struct {
		name, value string
		pod         string
		n           int
		ok          bool
	}{
		{"what the gate writes", FormatHandoff("app-abc", 2), "app-abc", 2, true},
		{"a count above the bound is the bound", "app;n=77", "app", MaxHandoffs, true},
		{"no count counts as exhausted", "app", "", MaxHandoffs, false},
		{"a bad count counts as exhausted", "app;n=x", "", MaxHandoffs, false},
		{"a zero count counts as exhausted", "app;n=0", "", MaxHandoffs, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod, n, ok := ParseHandoff(tt.value)
			if pod != tt.pod || n != tt.n || ok != tt.ok {
				t.Errorf("ParseHandoff(%q) = %q, %d, %v; want %q, %d, %v", tt.value, pod, n, ok, tt.pod, tt.n, tt.ok)
			}
		})
	}
}

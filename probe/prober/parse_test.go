package prober

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podgate/podgate/probe"
)

func TestParseSnippetAppliesKubernetesDefaults(t *testing.T) {
	p, err := ParseSnippet([]byte("httpGet:\n  port: 8080\n"))
	if err != nil {
		t.Fatalf("ParseSnippet: %v", err)
	}
	want := corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP,
		}},
		TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
	}
	if p.HTTPGet.Path != want.HTTPGet.Path || p.HTTPGet.Scheme != want.HTTPGet.Scheme ||
		p.HTTPGet.Port != want.HTTPGet.Port || p.TimeoutSeconds != 1 || p.PeriodSeconds != 10 ||
		p.SuccessThreshold != 1 || p.FailureThreshold != 3 {
		t.Fatalf("defaults: got %+v (httpGet %+v), want %+v", p, p.HTTPGet, want)
	}
}

func TestParseSnippetAcceptsJSON(t *testing.T) {
	p, err := ParseSnippet([]byte(`{"grpc":{"port":9090,"service":"svc"},"periodSeconds":2}`))
	if err != nil {
		t.Fatalf("ParseSnippet: %v", err)
	}
	if p.GRPC == nil || p.GRPC.Port != 9090 || p.GRPC.Service == nil || *p.GRPC.Service != "svc" || p.PeriodSeconds != 2 {
		t.Fatalf("got %+v", p)
	}
}

func TestParseSnippetRejectsWithFieldPaths(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string // every line of the error, in order
	}{
		{"empty input is required", "", []string{`probe: Required value: the probe is empty`}},
		{"null document is required", "null", []string{`probe: Required value: the probe is empty`}},
		{"zero handlers", "periodSeconds: 5", []string{
			`probe: Required value: must specify a handler type (exec, httpGet, tcpSocket or grpc)`}},
		{"two handlers", "exec: {command: [cat]}\ntcpSocket: {port: 80}", []string{
			`probe.tcpSocket: Forbidden: may not specify more than 1 handler type`}},
		{"port out of range", "httpGet: {port: 70000}", []string{
			`probe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive`}},
		{"port zero", "tcpSocket: {port: 0}", []string{
			`probe.tcpSocket.port: Invalid value: 0: must be between 1 and 65535, inclusive`}},
		{"bad port name", "tcpSocket: {port: not_a_name}", []string{
			`probe.tcpSocket.port: Invalid value: "not_a_name": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`}},
		{"unknown scheme", "httpGet: {port: 80, scheme: FTP}", []string{
			`probe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`}},
		{"lower-case scheme is rejected as the API server does", "httpGet: {port: 80, scheme: http}", []string{
			`probe.httpGet.scheme: Unsupported value: "http": supported values: "HTTP", "HTTPS"`}},
		{"gRPC named port", "grpc: {port: grpc}", []string{
			`probe.grpc.port: Invalid value: "grpc": must be a number, not a string: gRPC probes take a port number, named ports are not supported`}},
		{"gRPC port out of range", "grpc: {port: 65536}", []string{
			`probe.grpc.port: Invalid value: 65536: must be between 1 and 65535, inclusive`}},
		{"empty exec command", "exec: {command: []}", []string{`probe.exec.command: Required value`}},
		{"negative threshold", "failureThreshold: -2\ntcpSocket: {port: 80}", []string{
			`probe.failureThreshold: Invalid value: -2: must be greater than or equal to 1`}},
		{"negative initial delay", "initialDelaySeconds: -1\ntcpSocket: {port: 80}", []string{
			`probe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0`}},
		{"zero probe grace period", "terminationGracePeriodSeconds: 0\ntcpSocket: {port: 80}", []string{
			`probe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0`}},
		{"invalid header name", "httpGet: {port: 80, httpHeaders: [{name: 'a b', value: x}]}", []string{
			`probe.httpGet.httpHeaders[0].name: Invalid value: "a b": a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`}},
		{"unknown field reported with every other error", "httpGet: {prot: 1, port: 70000}", []string{
			`probe.httpGet.prot: Forbidden: unknown field`,
			`probe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive`}},
		{"unknown field inside a list", "httpGet: {port: 80, httpHeaders: [{name: a, value: b, vaule: c}]}", []string{
			`probe.httpGet.httpHeaders[0].vaule: Forbidden: unknown field`}},
		{"wrong type names the field and value", "periodSeconds: soon\ntcpSocket: {port: 80}", []string{
			`probe.periodSeconds: Invalid value: "soon": must be a number, not a string`}},
		{"a list is not a probe", "[1, 2]", []string{
			`probe: Invalid value: [1,2]: must be a mapping, not a list`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ParseSnippet([]byte(tt.input))
			if err == nil {
				t.Fatalf("ParseSnippet(%q) = %+v, want an error", tt.input, p)
			}
			var inv *InvalidError
			if !errors.As(err, &inv) {
				t.Fatalf("error %v is %T, want *InvalidError", err, err)
			}
			got := strings.Split(err.Error(), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Fatalf("errors:\n got: %q\nwant: %q", got, tt.want)
			}
		})
	}
}

func TestParseSnippetDuplicateKeyIsAnError(t *testing.T) {
	_, err := ParseSnippet([]byte("tcpSocket: {port: 80}\ntcpSocket: {port: 81}\n"))
	if err == nil || !strings.Contains(err.Error(), `key "tcpSocket" already set`) {
		t.Fatalf("want a duplicate-key error, got %v", err)
	}
}

func TestParseSnippetMalformedYAMLIsAnError(t *testing.T) {
	_, err := ParseSnippet([]byte("httpGet: [port: 80"))
	if err == nil || !strings.Contains(err.Error(), "not valid YAML or JSON") {
		t.Fatalf("want a YAML error, got %v", err)
	}
}

// FuzzParseSnippet: whatever the input, the parser returns a probe that
// passes validation or an error — never a panic, never both.
func FuzzParseSnippet(f *testing.F) {
	for _, seed := range []string{
		"httpGet: {port: 8080, path: /healthz, httpHeaders: [{name: X, value: y}]}",
		"tcpSocket: {port: http}", "grpc: {port: 9090, service: s}",
		"exec: {command: [cat, /tmp/x]}\nperiodSeconds: 0", `{"httpGet":{"port":"web"}}`,
		"[", "null", "httpGet: {port: 70000}\nexec: {}", "terminationGracePeriodSeconds: -1",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseSnippet(data)
		if (p == nil) == (err == nil) {
			t.Fatalf("ParseSnippet(%q) = %v, %v: want exactly one of probe and error", data, p, err)
		}
		if err != nil && err.Error() == "" {
			t.Fatalf("ParseSnippet(%q): empty error message", data)
		}
		if p != nil {
			if errs := probe.Validate(p, snippetRoot); len(errs) > 0 {
				t.Fatalf("accepted probe fails validation: %v", errs)
			}
		}
	})
}

func TestReadSnippetNamesItsSource(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	for path, content := range map[string]string{good: "tcpSocket: {port: 80}\n", bad: "tcpSocket: {port: 70000}\n"} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, stdin, file, wantErr string
	}{
		{"a file", "", good, ""},
		{"standard input", "httpGet: {port: 8080}\n", "-", ""},
		{"a file's problem names the file", "", bad, bad + ": invalid probe:\nprobe.tcpSocket.port: Invalid value: 70000"},
		{"standard input's problem names it", "periodSeconds: 3\n", "-", "<stdin>: invalid probe:\nprobe: Required value"},
		{"a file that is not there", "", filepath.Join(dir, "absent.yaml"), "reading probe: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ReadSnippet(strings.NewReader(tc.stdin), tc.file)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReadSnippet: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || p == nil || p.PeriodSeconds != DefaultPeriodSeconds {
				t.Fatalf("ReadSnippet = %+v, %v; want a defaulted probe", p, err)
			}
		})
	}
}

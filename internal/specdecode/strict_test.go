package specdecode

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestProbeRejectsWithFieldPaths(t *testing.T) {
	root := field.NewPath("probe")
	for _, tt := range []struct {
		name   string
		input  string
		want   []string
		wantOK bool // a probe comes back (strict errors do not stop decoding)
	}{
		{"unknown field is reported with its path", "tcpSocket: {port: 1, hots: x}",
			[]string{`probe.tcpSocket.hots: Forbidden: unknown field`}, true},
		{"field names are case-sensitive", `{"TCPSocket": {"port": 1}}`,
			[]string{`probe.TCPSocket: Forbidden: unknown field`}, true},
		{"duplicate field in JSON is reported", `{"periodSeconds": 1, "periodSeconds": 2, "tcpSocket": {"port": 1}}`,
			[]string{`probe: Invalid value: null: is not valid YAML or JSON`}, false},
		{"wrong type names the field and value", "timeoutSeconds: soon",
			[]string{`probe.timeoutSeconds: Invalid value: "soon": must be a number, not a string`}, false},
		{"wrong type inside a list names the index", "httpGet: {port: 1, httpHeaders: [{name: a, value: b}, {name: 7, value: c}]}",
			[]string{`probe.httpGet.httpHeaders[1].name: Invalid value: 7: must be a string, not a number`}, false},
		{"empty input", "  \n", []string{`probe: Required value: the probe is empty`}, false},
		{"null", "null", []string{`probe: Required value: the probe is empty`}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := Probe([]byte(tt.input), root)
			if (p != nil) != tt.wantOK {
				t.Fatalf("probe = %+v, want one: %v", p, tt.wantOK)
			}
			if len(errs) != len(tt.want) {
				t.Fatalf("errors = %v, want %q", errs, tt.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tt.want[i]) {
					t.Errorf("error %d = %q, want it to start with %q", i, e.Error(), tt.want[i])
				}
			}
		})
	}
}

func TestStrictPathsStartAtTheRoot(t *testing.T) {
	var probes []*corev1.Probe
	errs, ok := Strict([]byte(`[{"exec":{"command":["true"]}},{"exec":{"comand":["x"]}}]`), &probes, field.NewPath("PROBES"))
	if !ok || len(errs) != 1 || errs[0].Error() != `PROBES[1].exec.comand: Forbidden: unknown field` {
		t.Fatalf("Strict = %v, ok %v", errs, ok)
	}
	errs, _ = Strict([]byte(`{"exec":{"comand":["x"]}}`), &corev1.Probe{}, nil)
	if len(errs) != 1 || errs[0].Error() != `exec.comand: Forbidden: unknown field` {
		t.Fatalf("Strict without a root = %v", errs)
	}
	errs, ok = Strict([]byte(`{"exec":`), &corev1.Probe{}, nil)
	if ok || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), "<document>: ") {
		t.Fatalf("Strict on broken JSON = %v, ok %v", errs, ok)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Helpers here carry a validate prefix: the package's other test files
// belong to other subcommands.

func validateRun(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func validateWrite(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const validatePod = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    ports: [{containerPort: 8080}]
`

func TestValidateExitCodes(t *testing.T) {
	good := validateWrite(t, "good.yaml", validatePod)
	bad := validateWrite(t, "bad.yaml", strings.Replace(validatePod, "ports:", "livenessProbe: {tcpSocket: {port: 8080}, successThreshold: 2}\n    ports:", 1))
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"valid manifests exit 0", []string{"validate", "-f", good}, exitOK},
		{"examples exit 0", []string{"validate", "-f", "../../examples/hello.yaml", "-f", "../../examples/sidecar-exec-readiness.yaml"}, exitOK},
		{"an invalid manifest exits 1", []string{"validate", "-f", good, "-f", bad}, exitInvalid},
		{"a missing file exits 1", []string{"validate", "-f", filepath.Join(t.TempDir(), "none.yaml")}, exitInvalid},
		{"no -f is a usage error", []string{"validate"}, exitUsage},
		{"an unknown output format is a usage error", []string{"validate", "-f", good, "-o", "xml"}, exitUsage},
		{"an unknown flag is a usage error", []string{"validate", "--strictly", "-f", good}, exitUsage},
		{"files after -f are files too, as a shell glob expands them", []string{"validate", "-f", good, good}, exitOK},
		{"a missing extra file is invalid input", []string{"validate", "-f", good, good + ".missing"}, exitInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := validateRun(tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout, stderr)
			}
		})
	}
}

func TestValidatePrintsOneLinePerError(t *testing.T) {
	bad := validateWrite(t, "bad.yaml", validatePod+"---\n"+`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: svc}
spec:
  template:
    spec:
      containers:
      - image: img
        readinessProbe: {httpGet: {port: 70000, scheme: FTP}}
        colour: blue
`)
	code, stdout, _ := validateRun("validate", "-f", bad)
	if code != exitInvalid {
		t.Fatalf("exit code %d, want 1", code)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	want := []string{
		bad + `: doc 2: Service/svc: spec.template.spec.containers[0].colour: Forbidden: unknown field`,
		bad + `: doc 2: Service/svc: spec.template.spec.containers[0].readinessProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive`,
		bad + `: doc 2: Service/svc: spec.template.spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, strings.Join(want, "\n"))
	}
	line := regexp.MustCompile(`^.+: doc \d+: \w+/[^:]+: [^:]+: .+$`)
	for _, l := range lines {
		if !line.MatchString(l) {
			t.Errorf("line %q is not `file: doc N: Kind/name: path: message`", l)
		}
	}
}

func TestValidateReportsValidWorkloadsSkippedObjectsAndWarnings(t *testing.T) {
	f := validateWrite(t, "app.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\n---\n"+
		strings.Replace(validatePod, "ports:", "lifecycle: {preStop: {exec: {command: [sleep, '1']}}}\n    ports:", 1))
	code, stdout, stderr := validateRun("validate", "-f", f)
	if code != exitOK {
		t.Fatalf("exit code %d\n%s%s", code, stdout, stderr)
	}
	if want := f + ": doc 2: Pod/web: valid (serving container app, port 8080)\n"; stdout != want {
		t.Errorf("stdout %q, want %q", stdout, want)
	}
	for _, want := range []string{
		"note: " + f + ": doc 1: v1 ConfigMap/settings: skipped",
		"warning: " + f + ": doc 2: Pod/web: spec.containers[0].lifecycle.preStop: kept as written",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
}

func TestValidateJSONOutput(t *testing.T) {
	bad := validateWrite(t, "bad.yaml", strings.Replace(validatePod, "ports:", "livenessProbe: {httpGet: {port: web}}\n    ports:", 1))
	code, stdout, _ := validateRun("validate", "-o", "json", "-f", bad)
	if code != exitInvalid {
		t.Fatalf("exit code %d, want 1", code)
	}
	var report struct {
		Valid    bool `json:"valid"`
		Problems []struct {
			File, Kind, Name, Field, Type, Detail, Message string
			Doc                                            int
			Value                                          any
		} `json:"problems"`
		Workloads []struct {
			Kind, Name, ServingContainer string
			ServingPort                  int
		} `json:"workloads"`
	}
	if err := json.Unmarshal([]byte(stdout), &report); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if report.Valid || len(report.Problems) != 1 {
		t.Fatalf("report %+v", report)
	}
	p := report.Problems[0]
	if p.File != bad || p.Doc != 1 || p.Kind != "Pod" || p.Name != "web" || p.Field != "spec.containers[0].livenessProbe.httpGet.port" ||
		p.Type != "FieldValueInvalid" || p.Value != "web" || !strings.Contains(p.Detail, "no such named port") {
		t.Errorf("problem %+v", p)
	}
	if len(report.Workloads) != 1 || report.Workloads[0].ServingContainer != "app" || report.Workloads[0].ServingPort != 8080 {
		t.Errorf("workloads %+v", report.Workloads)
	}

	good := validateWrite(t, "good.yaml", validatePod)
	code, stdout, _ = validateRun("validate", "-o", "json", "-f", good)
	if code != exitOK || !strings.Contains(stdout, `"valid": true`) || !strings.Contains(stdout, `"problems": []`) {
		t.Errorf("valid report (exit %d):\n%s", code, stdout)
	}
}

func TestValidateCorpus(t *testing.T) {
	invalid, _ := filepath.Glob("../../admission/testdata/invalid/*.yaml")
	valid, _ := filepath.Glob("../../admission/testdata/valid/*.yaml")
	if len(invalid) < 30 || len(valid) < 7 {
		t.Fatalf("corpus: %d invalid, %d valid", len(invalid), len(valid))
	}
	for _, f := range invalid {
		if code, stdout, _ := validateRun("validate", "-f", f); code != exitInvalid || stdout == "" {
			t.Errorf("%s: exit %d, output %q", f, code, stdout)
		}
	}
	args := []string{"validate"}
	for _, f := range valid {
		args = append(args, "-f", f)
	}
	if code, stdout, stderr := validateRun(args...); code != exitOK {
		t.Errorf("valid corpus: exit %d\n%s%s", code, stdout, stderr)
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/podgate/podgate/probe"
)

// probeCLI runs `podgate probe` in-process with stdin and returns the exit
// code and both outputs.
func probeCLI(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runIO(append([]string{"probe"}, args...), strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestProbeCommandExitCodesFollowTheKubeletsConclusion(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/moved":
			w.WriteHeader(http.StatusNotModified)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())

	tests := []struct {
		name     string
		probe    string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{"2xx is success, exit 0", "httpGet: {port: " + portStr + ", path: /ok}", nil, 0,
			[]string{"Result:    success", "Kubelet:   counts as success"}},
		{"3xx is a warning, exit 0", "httpGet: {port: " + portStr + ", path: /moved}", nil, 0,
			[]string{"Result:    warning", "Message:   Probe terminated redirects, Response body: ", "ProbeWarning"}},
		{"5xx is a failure, exit 1", "httpGet: {port: " + portStr + ", path: /boom}", nil, 1,
			[]string{"Result:    failure", "Message:   HTTP probe failed with statuscode: 500"}},
		{"named port resolved from --port", "httpGet: {port: web, path: /ok}", []string{"--port", "web=" + portStr}, 0,
			[]string{"Result:    success"}},
		{"unknown named port errors after three attempts, exit 3", "httpGet: {port: web}", nil, 3,
			[]string{"Result:    error", `strconv.Atoi: parsing "web": invalid syntax`, "(3 attempts)", "dropped"}},
		{"tcp to the server is success", "tcpSocket: {port: " + portStr + "}", nil, 0, []string{"Result:    success"}},
		{"exec expands $(VAR) from --env", "exec: {command: [sh, -c, 'test \"$(WANT)\" = yes']}", []string{"--env", "WANT=yes"}, 0,
			[]string{"Result:    success"}},
		{"exec non-zero exit is a failure with output", "exec: {command: [sh, -c, 'echo nope; exit 4']}", nil, 1,
			[]string{"Result:    failure", "Message:   nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := probeCLI(t, tt.probe, append([]string{"-f", "-", "--host", "127.0.0.1"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestProbeCommandReadsAFileAndPrintsJSON(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	file := filepath.Join(t.TempDir(), "probe.json")
	if err := os.WriteFile(file, []byte(`{"httpGet":{"port":`+strconv.Itoa(port)+`}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := probeCLI(t, "", "-f", file, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep probe.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if rep.Result != "success" || rep.Attempts != 1 || rep.DurationMS <= 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestProbeCommandBadInput(t *testing.T) {
	tests := []struct {
		name     string
		stdin    string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"missing -f is a usage error", "", nil, 2, "-f is required"},
		{"unknown flag is a usage error", "", []string{"-f", "-", "--bogus"}, 2, "unknown flag: --bogus"},
		{"host must be an IP", "", []string{"-f", "-", "--host", "pod.local"}, 2, `--host "pod.local" is not an IP address`},
		{"bad --port is a usage error", "", []string{"-f", "-", "--port", "web"}, 2, "want NAME=NUMBER"},
		{"bad output format", "", []string{"-f", "-", "-o", "xml"}, 2, `-o "xml"`},
		{"missing file is invalid input", "", []string{"-f", "/nonexistent/probe.yaml"}, 1, "no such file"},
		{"two handlers name the field", "exec: {command: [cat]}\nhttpGet: {port: 80}", []string{"-f", "-"}, 1,
			"probe.httpGet: Forbidden: may not specify more than 1 handler type"},
		{"port out of range names the field", "tcpSocket: {port: 70000}", []string{"-f", "-"}, 1,
			"probe.tcpSocket.port: Invalid value: 70000: must be between 1 and 65535, inclusive"},
		{"unknown scheme names the field", "httpGet: {port: 80, scheme: FTP}", []string{"-f", "-"}, 1,
			`probe.httpGet.scheme: Unsupported value: "FTP"`},
		{"gRPC named port names the field", "grpc: {port: grpc}", []string{"-f", "-"}, 1,
			`probe.grpc.port: Invalid value: "grpc"`},
		{"zero handlers", "periodSeconds: 3", []string{"-f", "-"}, 1, "probe: Required value: must specify a handler type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := probeCLI(t, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			if !strings.Contains(errOut, tt.wantErr) {
				t.Fatalf("stderr lacks %q:\n%s", tt.wantErr, errOut)
			}
			if out != "" {
				t.Fatalf("nothing should be printed on stdout, got:\n%s", out)
			}
		})
	}
}

func TestVersionAndHelp(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"version"}, &out, &errOut); code != 0 || !strings.HasPrefix(out.String(), "podgate ") {
		t.Fatalf("version: exit %d, out %q, err %q", code, out.String(), errOut.String())
	}
	for _, sub := range []string{"probe", "version"} {
		out.Reset()
		if code := run([]string{sub, "--help"}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("%s --help: exit %d, out %q", sub, code, out.String())
		}
	}
	if code := run([]string{"no-such-command"}, &out, &errOut); code != 2 {
		t.Errorf("unknown command: exit %d, want 2", code)
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Tests of what every subcommand shares — exit codes, where manifests come
// from, checking before starting — through the real binary, as a user
// meets them.

// cliWait bounds one command that should end by itself.
const cliWait = 60 * time.Second

// podgateExec runs the podgate binary with stdin to its end and returns
// its exit code and output.
func podgateExec(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	// Built first: the bound is for podgate's run, not for the build
	// of the first test that needs it.
	bin := podgateBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), cliWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("podgate %s did not end within %s; stderr:\n%s", strings.Join(args, " "), cliWait, errOut.String())
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("podgate %s: %v", strings.Join(args, " "), err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
}

// cliFile writes a file into dir and returns its path.
func cliFile(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const cliSleeper = `apiVersion: v1
kind: Pod
metadata: {name: sleeper}
spec:
  containers:
  - {name: c, image: busybox, command: ["sleep", "600"]}
`

// cliTaken is a loopback address something listens on for the test.
func cliTaken(t *testing.T) (addr, port string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), portOf(ln)
}

// One rule for every flag of every subcommand: a value that is wrong as
// written is a usage error (2), like an unknown flag; a well-formed value
// the world refuses — a port in use, a file that is not there, a name the
// manifests do not have — is invalid input (1).
func TestFlagValuesExitCodes(t *testing.T) {
	dir := t.TempDir()
	sleeper := cliFile(t, dir, "sleeper.yaml", cliSleeper)
	probeFile := cliFile(t, dir, "probe.yaml", "tcpSocket: {port: 1}\n")
	taken, takenPort := cliTaken(t)
	down := closedAddr(t)
	// run gets free ports and a range of its own unless a case names them.
	runArgs := func(args ...string) []string {
		return append([]string{"run", "-f", sleeper, "--api", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--pod-cidr", "127.0.68.0/24"}, args...)
	}
	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		// podgate run: usage errors.
		{"run: no file", []string{"run"}, exitUsage, "at least one -f FILE is required"},
		{"run: an unknown flag", runArgs("--nope"), exitUsage, "unknown flag: --nope"},
		{"run: a negative replica count", runArgs("--replicas", "-1"), exitUsage, "--replicas -1"},
		{"run: a replica count that is no number", runArgs("--replicas", "two"), exitUsage, `invalid argument "two" for "--replicas"`},
		{"run: a pod range outside loopback", runArgs("--pod-cidr", "10.0.0.0/24"), exitUsage, "inside 127.0.0.0/8"},
		{"run: a pod range without a prefix length", runArgs("--pod-cidr", "127.0.1.0"), exitUsage, `--pod-cidr "127.0.1.0"`},
		{"run: a pod range too small", runArgs("--pod-cidr", "127.0.1.0/31"), exitUsage, "too small"},
		{"run: a control API off loopback", runArgs("--api", "0.0.0.0:0"), exitUsage, `--api "0.0.0.0:0": 0.0.0.0 is not a loopback address`},
		{"run: a control API without a port", runArgs("--api", "127.0.0.1"), exitUsage, `--api "127.0.0.1": want HOST:PORT`},
		{"run: a control API port that is no number", runArgs("--api", "127.0.0.1:http"), exitUsage, `port "http" must be a number`},
		{"run: a front door off loopback", runArgs("--listen", "0.0.0.0:0"), exitUsage, `--listen "0.0.0.0:0": 0.0.0.0 is not a loopback address`},
		{"run: a front door without a port", runArgs("--listen", "127.0.0.1"), exitUsage, `--listen "127.0.0.1": want HOST:PORT`},
		{"run: a front door port out of range", runArgs("--listen", "127.0.0.1:70000"), exitUsage, `port "70000" must be a number from 0`},
		{"run: a domain that is no DNS name", runArgs("--domain", "Not A Domain"), exitUsage, `--domain "Not A Domain"`},
		{"run: a node name that is no DNS name", runArgs("--node-name", "my_laptop"), exitUsage, `--node-name "my_laptop"`},
		{"run: an --image without a path", runArgs("--image", "nginx"), exitUsage, `--image "nginx": want NAME=PATH`},
		{"run: an --image without a name", runArgs("--image", "=./bin/api"), exitUsage, `--image "=./bin/api": want NAME=PATH`},
		{"run: a zero gate probe interval", runArgs("--gate-probe-interval", "0s"), exitUsage, "--gate-probe-interval and --gate-probe-timeout must be positive"},
		{"run: a negative gate probe timeout", runArgs("--gate-probe-timeout", "-1s"), exitUsage, "--gate-probe-interval and --gate-probe-timeout must be positive"},
		{"run: a gate probe interval that is no duration", runArgs("--gate-probe-interval", "often"), exitUsage, `invalid argument "often"`},
		{"run: a service port without a port", runArgs("--service-port", "sleeper"), exitUsage, `--service-port "sleeper": want [NAMESPACE/]NAME=PORT`},
		{"run: a service port out of range", runArgs("--service-port", "sleeper=70000"), exitUsage, `port "70000": must be a number from 0`},
		{"run: a service port with a bad namespace", runArgs("--service-port", "Shop/sleeper=0"), exitUsage, `namespace "Shop"`},
		{"run: a boolean that is no boolean", runArgs("--no-gate=maybe"), exitUsage, `invalid argument "maybe"`},
		{"run: standard input twice", runArgs("-f", "-", "-f", "-"), exitUsage, "-f - is given twice"},
		{"run: metrics off loopback", runArgs("--metrics-listen", "0.0.0.0:0"), exitUsage, `--metrics-listen "0.0.0.0:0": 0.0.0.0 is not a loopback address`},
		// podgate run: invalid input, including what the world refuses.
		{"run: a control API address in use", runArgs("--api", taken), exitInvalid, "is another 'podgate run' using it? Choose another address with --api"},
		{"run: a front door address in use", runArgs("--listen", taken), exitInvalid, "Choose another address with --listen"},
		{"run: a service port in use", runArgs("--service-port", "sleeper="+takenPort), exitInvalid, "--service-port sleeper=" + takenPort + ": listen tcp"},
		{"run: a metrics address in use", runArgs("--metrics-listen", taken), exitInvalid, "--metrics-listen"},
		{"run: a service port for no workload", runArgs("--service-port", "nope=0"), exitInvalid, "--service-port nope=0: no workload named nope"},
		{"run: a service port in another namespace", runArgs("--service-port", "shop/sleeper=0"), exitInvalid, "--service-port shop/sleeper=0: no workload named sleeper"},
		{"run: a service port for a workload without the gate", runArgs("--no-gate", "--service-port", "sleeper=0"), exitInvalid, "no workload named sleeper reachable through the front door"},
		{"run: an --image path that does not exist", runArgs("--image", "nginx="+filepath.Join(dir, "nope")), exitInvalid, "no such file"},
		{"run: an --image path that is not executable", runArgs("--image", "nginx="+sleeper), exitInvalid, "is not an executable file"},
		{"run: a missing file", runArgs("-f", filepath.Join(dir, "missing.yaml")), exitInvalid, "missing.yaml"},
		{"run: an --image-layout that is no OCI image layout", runArgs("--image-layout", dir), exitInvalid, "--image-layout " + dir + ": not an OCI image layout"},

		// podgate validate and inject.
		{"validate: no file", []string{"validate"}, exitUsage, "at least one -f FILE is required"},
		{"validate: an unknown output format", []string{"validate", "-f", sleeper, "-o", "xml"}, exitUsage, `-o "xml"`},
		{"validate: a missing file", []string{"validate", "-f", filepath.Join(dir, "missing.yaml")}, exitInvalid, "missing.yaml"},
		{"inject: an empty gate image", []string{"inject", "-f", sleeper, "--gate-image", ""}, exitUsage, "--gate-image must not be empty"},
		{"inject: a control API off loopback", []string{"inject", "--local", "-f", sleeper, "--api", "10.0.0.1:9700"}, exitUsage, `--api "10.0.0.1:9700": 10.0.0.1 is not a loopback address`},
		{"inject: a control API without a port", []string{"inject", "--local", "-f", sleeper, "--api", "localhost"}, exitUsage, `--api "localhost": want HOST:PORT`},
		{"inject: a missing file", []string{"inject", "-f", filepath.Join(dir, "missing.yaml")}, exitInvalid, "missing.yaml"},

		// podgate probe.
		{"probe: no file", []string{"probe"}, exitUsage, "-f is required"},
		{"probe: a host that is no IP", []string{"probe", "-f", probeFile, "--host", "localhost"}, exitUsage, `--host "localhost" is not an IP address`},
		{"probe: a named port without a number", []string{"probe", "-f", probeFile, "--port", "http"}, exitUsage, `--port "http": want NAME=NUMBER`},
		{"probe: a named port out of range", []string{"probe", "-f", probeFile, "--port", "http=0"}, exitUsage, `--port "http=0"`},
		{"probe: an env var without a name", []string{"probe", "-f", probeFile, "--env", "=x"}, exitUsage, `--env "=x": want NAME=VALUE`},
		{"probe: an unknown output format", []string{"probe", "-f", probeFile, "-o", "xml"}, exitUsage, `-o "xml"`},
		{"probe: a missing file", []string{"probe", "-f", filepath.Join(dir, "missing.yaml")}, exitInvalid, "missing.yaml"},

		// podgate get, logs, delete: checked before the control API is
		// asked, so these answer the same whether podgate runs or not.
		{"get: an unknown output format", []string{"get", "pods", "--api", down, "-o", "xml"}, exitUsage, `-o "xml"`},
		{"get: a control API address that is no address", []string{"get", "pods", "--api", "https://127.0.0.1:1"}, exitUsage, "--api: control API address"},
		{"get: a label selector that does not parse", []string{"get", "pods", "--api", down, "-l", "app in (a"}, exitUsage, `-l "app in (a"`},
		{"get: a field selector that does not parse", []string{"get", "pods", "--api", down, "--field-selector", "status.phase"}, exitUsage, `--field-selector "status.phase"`},
		{"get: a namespace that is no DNS label", []string{"get", "pods", "--api", down, "-n", "My_NS"}, exitUsage, `-n "My_NS"`},
		{"get: podgate not running", []string{"get", "pods", "--api", down}, exitInvalid, "cannot reach podgate at " + down},
		{"logs: a tail below -1", []string{"logs", "p", "--api", down, "--tail", "-2"}, exitUsage, "--tail -2"},
		{"logs: a namespace that is no DNS label", []string{"logs", "p", "--api", down, "-n", "My_NS"}, exitUsage, `-n "My_NS"`},
		{"logs: a control API address that is no address", []string{"logs", "p", "--api", "http://127.0.0.1:1/x"}, exitUsage, "--api: control API address"},
		{"delete: a grace period below -1", []string{"delete", "pod", "p", "--api", down, "--grace-period", "-2"}, exitUsage, "--grace-period -2"},
		{"delete: --now with --grace-period", []string{"delete", "pod", "p", "--api", down, "--now", "--grace-period", "3"}, exitUsage, "--now and --grace-period cannot be specified together"},
		{"delete: a namespace that is no DNS label", []string{"delete", "pod", "p", "--api", down, "-n", "My_NS"}, exitUsage, `-n "My_NS"`},

		// podgate testapp and gate.
		{"testapp: a port that is no number", []string{"testapp", "--port", "web"}, exitUsage, `invalid --port "web"`},
		{"testapp: a port out of range", []string{"testapp", "--port", "70000"}, exitUsage, `invalid --port "70000"`},
		{"testapp: a gRPC port that is no number", []string{"testapp", "--port", "0", "--grpc-port", "x"}, exitUsage, `invalid --grpc-port "x"`},
		{"testapp: a negative duration", []string{"testapp", "--port", "0", "--ready-after", "-1s"}, exitUsage, "invalid --ready-after -1s"},
		{"testapp: a port in use", []string{"testapp", "--port", takenPort}, exitInvalid, "address already in use"},
		{"gate: an unknown log format", []string{"gate", "--log-format", "xml"}, exitUsage, `--log-format "xml"`},
		{"gate: a boolean that is no boolean", []string{"gate", "--request-log=maybe"}, exitUsage, `invalid argument "maybe"`},
		{"version: an argument", []string{"version", "extra"}, exitUsage, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := podgateExec(t, "", tc.args...)
			if code != tc.wantCode {
				t.Errorf("podgate %s: exit code = %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.wantCode, stderr)
			}
			if !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tc.wantErr)
			}
			if tc.args[0] == "run" && (stdout != "" || strings.Contains(stderr, "Started container")) {
				t.Errorf("a refused run started something:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
		})
	}
}

// -f reads what kubectl's -f reads: a file, standard input, a directory's
// manifests (with -R its subdirectories' too), for run, validate and
// inject alike.
func TestManifestSources(t *testing.T) {
	dir := t.TempDir()
	hello, err := os.ReadFile("../../examples/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tree := filepath.Join(dir, "tree")
	cliFile(t, tree, "b.yml", strings.ReplaceAll(cliSleeper, "sleeper", "b"))
	cliFile(t, tree, "a.yaml", strings.ReplaceAll(cliSleeper, "sleeper", "a"))
	cliFile(t, tree, "c.json", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "c"}, "spec": {"containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}}`)
	cliFile(t, tree, "notes.txt", "not a manifest")
	cliFile(t, tree, "sub/d.yaml", strings.ReplaceAll(cliSleeper, "sleeper", "d"))
	empty := filepath.Join(dir, "empty")
	cliFile(t, empty, "README.md", "nothing here")
	cliFile(t, empty, "deeper/e.yaml", strings.ReplaceAll(cliSleeper, "sleeper", "e"))
	valid := func(file, name string) string {
		return file + ": doc 1: Pod/" + name + ": valid"
	}

	for _, tc := range []struct {
		name      string
		stdin     string
		args      []string
		wantCode  int
		wantOut   []string // in this order
		absent    []string
		wantError string
	}{
		{"validate reads standard input with -f -", string(hello), []string{"validate", "-f", "-"}, 0,
			[]string{"<stdin>: doc 1: Service/hello: valid"}, nil, ""},
		{"validate names standard input in problems", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: []}\n", []string{"validate", "-f", "-"}, 1,
			[]string{"<stdin>: doc 1: Pod/x: spec.containers: Required value"}, nil, ""},
		{"a directory is its yaml, yml and json files in name order, not its subdirectories", "", []string{"validate", "-f", tree}, 0,
			[]string{valid(filepath.Join(tree, "a.yaml"), "a"), valid(filepath.Join(tree, "b.yml"), "b"), valid(filepath.Join(tree, "c.json"), "c")},
			[]string{"notes.txt", "Pod/d"}, ""},
		{"-R reads subdirectories too", "", []string{"validate", "-R", "-f", tree}, 0,
			[]string{valid(filepath.Join(tree, "a.yaml"), "a"), valid(filepath.Join(tree, "sub", "d.yaml"), "d")}, nil, ""},
		{"files, directories and standard input mix in order", string(hello), []string{"validate", "-f", filepath.Join(tree, "c.json"), "-f", "-", "-f", tree}, 0,
			[]string{valid(filepath.Join(tree, "c.json"), "c"), "<stdin>: doc 1: Service/hello: valid", valid(filepath.Join(tree, "a.yaml"), "a")}, nil, ""},
		{"a directory without manifests is invalid and points at -R", "", []string{"validate", "-f", empty}, 1,
			nil, nil, empty + ": no .yaml, .yml or .json file in the directory (subdirectories are read with -R)"},
		{"inject reads standard input", string(hello), []string{"inject", "-f", "-"}, 0,
			// The gate is a native sidecar: initContainers print after containers.
			[]string{"name: user-container", "initContainers:", "name: podgate"}, nil, ""},
		{"inject reads a directory", "", []string{"inject", "-f", tree}, 0,
			[]string{"name: a", "name: b", "name: c"}, nil, ""},
		{"run reads standard input and names it", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: nginx}]}\n",
			[]string{"run", "-f", "-", "--api", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--pod-cidr", "127.0.69.0/24"}, 1,
			nil, nil, `<stdin>: doc 1: Pod/x: spec.containers[0].command: Required value: image "nginx" has no local entrypoint`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := podgateExec(t, tc.stdin, tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tc.wantCode, stderr)
			}
			rest := stdout
			for _, want := range tc.wantOut {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Errorf("stdout lacks %q (or it is out of order):\n%s", want, stdout)
					break
				}
				rest = rest[i+len(want):]
			}
			for _, no := range tc.absent {
				if strings.Contains(stdout+stderr, no) {
					t.Errorf("output mentions %q:\n%s%s", no, stdout, stderr)
				}
			}
			if !strings.Contains(stderr, tc.wantError) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tc.wantError)
			}
		})
	}
}

// Nothing starts unless every workload can run, whatever the flags: every
// problem is found before the first pod, and each names the file, the
// document and the field as the user wrote them.
func TestRunChecksEverythingBeforeStarting(t *testing.T) {
	dir := t.TempDir()
	twin1 := cliFile(t, dir, "one/twin.yaml", strings.ReplaceAll(cliSleeper, "sleeper", "twin"))
	twin2 := cliFile(t, dir, "two/twin.yaml", strings.ReplaceAll(cliSleeper, "sleeper", "twin"))
	deployment := cliFile(t, dir, "web-deployment.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: twin}
spec:
  replicas: 2
  selector: {matchLabels: {app: twin}}
  template:
    metadata: {labels: {app: twin}}
    spec:
      containers:
      - {name: c, image: busybox, command: ["sleep", "600"]}
`)
	nginx := cliFile(t, dir, "nginx.yaml", `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  initContainers:
  - {name: init, image: busybox, command: ["true"]}
  containers:
  - {name: app, image: ghcr.io/podgate/testapp}
  - {name: proxy, image: nginx:1.27}
`)
	badProbe := cliFile(t, dir, "bad.yaml", `apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  containers:
  - name: c
    image: busybox
    command: ["true"]
    livenessProbe:
      httpGet: {path: /, port: web}
`)
	configMap := cliFile(t, dir, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n")
	free := []string{"--api", "127.0.0.1:0", "--listen", "127.0.0.1:0", "--pod-cidr", "127.0.70.0/24"}
	dupPods := twin2 + `: doc 1: Pod/twin: metadata.name: Duplicate value: "twin": ` + twin1 + ": doc 1 defines Pod/twin in namespace default too"
	dupSlice := deployment + `: doc 1: Deployment/twin: metadata.name: Duplicate value: "twin": ` + twin1 + ": doc 1: Pod/twin makes EndpointSlice default/twin too"
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr []string
	}{
		{"two Pods of one name, with the gate", []string{"-f", twin1, "-f", twin2}, []string{dupPods}},
		{"two Pods of one name, without the gate", []string{"--no-gate", "-f", twin1, "-f", twin2}, []string{dupPods}},
		{"two Pods of one name, with replicas and a service port", []string{"--replicas", "3", "--service-port", "twin=0", "-f", twin1, "-f", twin2}, []string{dupPods}},
		{"a Pod and a Deployment of one name, without the gate", []string{"--no-gate", "-f", twin1, "-f", deployment}, []string{dupSlice}},
		{"a Pod and a Deployment of one name, with the gate", []string{"-f", twin1, "-f", deployment}, []string{dupSlice}},
		{"the same file twice", []string{"-f", twin1, "-f", twin1}, []string{twin1 + `: doc 1: Pod/twin: metadata.name: Duplicate value: "twin": ` + twin1 + ": doc 1 defines Pod/twin"}},
		{"an image without a local entrypoint, with the gate: the user's container index",
			[]string{"-f", nginx}, []string{nginx + `: doc 1: Pod/web: spec.containers[1].command: Required value: image "nginx:1.27" has no local entrypoint`, "--image nginx=/path/to/program"}},
		{"an image without a local entrypoint, without the gate",
			[]string{"--no-gate", "-f", nginx}, []string{nginx + `: doc 1: Pod/web: spec.containers[1].command: Required value`}},
		{"more pods than the pod range has addresses", []string{"--pod-cidr", "127.0.70.0/30", "-f", deployment, "--replicas", "3"},
			[]string{"--pod-cidr 127.0.70.0/30: room for 2 pod(s), the workloads start 3"}},
		{"every problem at once", []string{"--pod-cidr", "127.0.70.0/30", "--no-gate", "--replicas", "3", "-f", twin1, "-f", twin2, "-f", nginx, "-f", "../../examples/hello.yaml"},
			[]string{dupPods, nginx + ": doc 1: Pod/web: spec.containers[1].command", "room for 2 pod(s), the workloads start 5"}},
		{"an invalid manifest names the field", []string{"-f", badProbe}, []string{bad(badProbe)}},
		{"a file without workloads", []string{"-f", configMap}, []string{"no Pod, Deployment or Knative Service in " + configMap}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := podgateExec(t, "", append(append([]string{"run"}, free...), tc.args...)...)
			if code != exitInvalid {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, exitInvalid, stderr)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			// Nothing was started, nothing was even listened on: no
			// container output, no event, no control API.
			for _, started := range []string{"Successfully assigned", "Started container", "control API on"} {
				if strings.Contains(stderr, started) {
					t.Errorf("stderr says %q: something started before the refusal:\n%s", started, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("containers wrote output:\n%s", stdout)
			}
		})
	}
}

func bad(file string) string {
	return file + ": doc 1: Pod/bad: spec.containers[0].livenessProbe.httpGet.port"
}

// Kubernetes runs any image; podgate run needs a program for it. validate
// says so as a warning — the manifest is valid — naming the container as
// written.
func TestValidateWarnsOfImagesWithoutLocalEntrypoint(t *testing.T) {
	dir := t.TempDir()
	file := cliFile(t, dir, "web.yaml", `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - {name: migrate, image: "registry.test/migrate@sha256:0123"}
      containers:
      - {name: app, image: ghcr.io/podgate/testapp:v1}
      - {name: sh, image: busybox, command: ["sleep", "600"]}
      - {name: proxy, image: "nginx:1.27"}
`)
	code, stdout, stderr := podgateExec(t, "", "validate", "-f", file)
	if code != exitOK {
		t.Errorf("exit code = %d, want 0 (a warning); stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, file+": doc 1: Deployment/web: valid") {
		t.Errorf("stdout = %q, want the workload valid", stdout)
	}
	for _, want := range []string{
		"warning: " + file + `: doc 1: Deployment/web: spec.template.spec.initContainers[0].command: image "registry.test/migrate@sha256:0123" has no local entrypoint: Kubernetes runs the image, but 'podgate run' runs containers as local processes and needs a command, or --image registry.test/migrate=/path/to/program`,
		"warning: " + file + `: doc 1: Deployment/web: spec.template.spec.containers[2].command: image "nginx:1.27" has no local entrypoint`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if n := strings.Count(stderr, "no local entrypoint"); n != 2 {
		t.Errorf("%d warnings about entrypoints, want 2 (the test app's image and a command need none):\n%s", n, stderr)
	}
	code, stdout, _ = podgateExec(t, "", "validate", "-o", "json", "-f", file)
	if code != exitOK || !strings.Contains(stdout, `"message": "spec.template.spec.containers[2].command: image \"nginx:1.27\" has no local entrypoint`) {
		t.Errorf("-o json: exit %d, want 0 and the warning in warnings:\n%s", code, stdout)
	}
}

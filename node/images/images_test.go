package images

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/probe"
)

func TestImageEntrypoints(t *testing.T) {
	t.Parallel()
	im := Map{Self: "/opt/podgate"}
	im.Set("ghcr.io/podgate/testapp", "/bin/testapp", "testapp")
	im.Set("registry:5000/api", "/bin/api")
	path := field.NewPath("spec", "containers").Index(0)
	for _, tc := range []struct {
		name    string
		image   string
		command []string
		args    []string
		want    string
		wantErr string
	}{
		{"a command replaces the entrypoint", "ghcr.io/podgate/testapp", []string{"sh", "-c"}, []string{"true"}, "sh -c true", ""},
		{"an image without a command runs its entrypoint with args", "ghcr.io/podgate/testapp", nil, []string{"--port", "1"}, "/bin/testapp testapp --port 1", ""},
		{"the command podgate is this binary", "ghcr.io/podgate/podgate", []string{"podgate"}, []string{"gate"}, "/opt/podgate gate", ""},
		{"a tag is ignored", "ghcr.io/podgate/testapp:v1.2", nil, nil, "/bin/testapp testapp", ""},
		{"a digest is ignored", "ghcr.io/podgate/testapp@sha256:abc", nil, nil, "/bin/testapp testapp", ""},
		{"a registry port is not a tag", "registry:5000/api:latest", nil, nil, "/bin/api", ""},
		{"an unknown image without a command is an error naming the flag", "nginx:1.27", nil, nil, "",
			`spec.containers[0].command: Required value: image "nginx:1.27" has no local entrypoint`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv, err := im.Argv(tc.image, tc.command, tc.args, path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "--image nginx=") {
					t.Fatalf("err = %v, want %q and a --image hint", err, tc.wantErr)
				}
				return
			}
			if err != nil || strings.Join(argv, " ") != tc.want {
				t.Errorf("argv = %q, %v; want %q", argv, err, tc.want)
			}
		})
	}
}

func TestLookPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, mode := range map[string]os.FileMode{"tool": 0o755, "data": 0o644} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, arg, pathEnv string
		want               string // "" for ErrNotFound-like failure
	}{
		{"a bare name is found in the container's PATH", "tool", "/nonexistent:" + bin, filepath.Join(bin, "tool")},
		{"a file that is not executable is skipped", "data", bin, ""},
		{"a relative PATH entry is ignored", "tool", "bin", ""},
		{"a name with a slash is relative to the working directory", "bin/data", "", filepath.Join(dir, "bin/data")},
		{"an absolute path is taken as is", filepath.Join(bin, "tool"), "", filepath.Join(bin, "tool")},
		{"a missing path fails", "bin/missing", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := LookPath(tc.arg, dir, tc.pathEnv)
			if tc.want == "" {
				var ee *exec.Error
				if !errors.As(err, &ee) || ee.Name != tc.arg {
					t.Fatalf("LookPath(%q) = %q, %v; want an exec.Error naming it", tc.arg, got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("LookPath(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
			}
		})
	}
}

func TestFromFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	prog := filepath.Join(dir, "api")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := FromFlags([]string{"registry.example/api=" + prog})
	if err != nil {
		t.Fatal(err)
	}
	if ep := m.Entrypoints["registry.example/api"]; len(ep) != 1 || ep[0] != prog {
		t.Errorf("mapped entrypoint = %q, want [%s]", ep, prog)
	}
	if _, ok := m.Entrypoints[TestappImage]; !ok || m.Self == "" {
		t.Errorf("the defaults are gone: %+v", m)
	}
	for _, bad := range []struct{ flag, want string }{
		{"x=" + plain, "is not an executable file"},
		{"x=" + dir, "is not an executable file"},
		{"x=" + filepath.Join(dir, "missing"), "no such file"},
	} {
		if _, err := FromFlags([]string{bad.flag}); err == nil || !strings.Contains(err.Error(), bad.want) || !strings.Contains(err.Error(), "--image "+bad.flag) {
			t.Errorf("FromFlags(%q) = %v, want an error naming the flag and %q", bad.flag, err, bad.want)
		}
	}
}

// An exec probe or hook runs, in a container runtime, in the container's
// filesystem: its image's. Here the one file of an image podgate knows is
// its program.
func TestExecutorFindsTheImagesProgramAsTheContainerWould(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+name+" \"$@\" in \"$PWD\" as $WHO\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	self, stored, app, mapped := script("self"), script("stored-gate"), script("stored-app"), script("mapped-gate")
	store := mapStore{
		"registry.test/gate@sha256:1": {entrypoint: []string{stored}, program: "/podgate"},
		"registry.test/app:v1":        {cmd: []string{app, "serve"}, program: "/usr/local/bin/app"},
		"registry.test/tampered":      {err: errors.New("digest mismatch")},
	}
	defaults := Map{Self: self, Entrypoints: map[string][]string{contract.GateImage: {self}, contract.PodgateImage: {self}}}
	withStore := defaults
	withStore.Store = store
	mappedGate := Map{Self: self}
	mappedGate.Set(contract.GateImage, mapped)
	for _, tc := range []struct {
		name  string
		m     Map
		image string
		argv  []string
		want  string // the output, or "error" when nothing ran
	}{
		{"the command podgate is this binary, whatever the image", defaults, "busybox", []string{"podgate", "gate", "wait"}, "self gate wait"},
		{"/podgate in the gate image without a layout is this binary", defaults, contract.GateImage + ":v1", []string{"/podgate", "gate", "wait"}, "self gate wait"},
		{"/podgate in podgate's image by digest is this binary", defaults, contract.PodgateImage + "@sha256:2", []string{"/podgate", "gate", "wait"}, "self gate wait"},
		{"/podgate in the gate image of the store is the image's program", withStore, "registry.test/gate@sha256:1", []string{"/podgate", "gate", "wait"}, "stored-gate gate wait"},
		{"an image's program with only a cmd, by its path in the image", withStore, "registry.test/app:v1", []string{"/usr/local/bin/app", "check"}, "stored-app check"},
		{"the gate image mapped with --image is the mapped program", mappedGate, contract.GateImage, []string{"/podgate", "gate", "wait"}, "mapped-gate gate wait"},
		{"the gate image not in the store falls back to the defaults", withStore, contract.GateImage, []string{"/podgate", "gate", "wait"}, "self gate wait"},
		{"/podgate in another image is a path on this machine", defaults, "busybox", []string{"/podgate", "gate"}, "error"},
		{"an image the store cannot run maps nothing", withStore, "registry.test/tampered", []string{"/podgate"}, "error"},
		{"other commands in podgate's image run as written", defaults, contract.GateImage, []string{"/bin/echo", "hi"}, "hi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := tc.m.Executor(tc.image, probe.HostExecutor{Dir: dir, Env: []string{"WHO=container", "PATH=/usr/bin:/bin"}})
			out, code, err := e.Exec(context.Background(), tc.argv)
			if tc.want == "error" {
				if err == nil {
					t.Errorf("ran: %q, exit %d; want an error (no such program here)", out, code)
				}
				return
			}
			want := tc.want
			if strings.HasPrefix(want, "self") || strings.HasPrefix(want, "stored") || strings.HasPrefix(want, "mapped") {
				want += " in " + dir + " as container"
			}
			if err != nil || code != 0 || strings.TrimSpace(string(out)) != want {
				t.Errorf("ran: %q, exit %d, %v; want %q", out, code, err, want)
			}
		})
	}
}

func TestDefaultRunsTheGateOfEitherImageAsThisBinary(t *testing.T) {
	t.Parallel()
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := field.NewPath("spec", "initContainers").Index(0)
	// The injected gate: no command, args [gate].
	for _, image := range []string{contract.DefaultImage, contract.GateImage + ":v1", contract.PodgateImage + "@sha256:abc"} {
		argv, ferr := m.Argv(image, nil, []string{"gate"}, path)
		if ferr != nil || strings.Join(argv, " ") != exe+" gate" {
			t.Errorf("%s: argv %q, %v; want %s gate", image, argv, ferr, exe)
		}
	}
}

// userStore holds images whose config names a user.
type userStore map[string]string

func (s userStore) Entrypoint(image string) ([]string, []string, string, bool, error) {
	_, ok := s[image]
	return []string{"/bin/true"}, nil, "/bin/true", ok, nil
}

func (s userStore) User(image string) (string, bool, error) {
	u, ok := s[image]
	return u, ok, nil
}

func TestUserIsWhatTheImageRunsAs(t *testing.T) {
	m := Map{Store: userStore{"example.test/root:v1": "", "example.test/named:v1": "app"}}
	for _, tc := range []struct {
		image     string
		wantUser  string
		wantKnown bool
	}{
		{"ghcr.io/podgate/podgate-gate:v1", "65532:65532", true},
		{"ghcr.io/podgate/podgate@sha256:" + strings.Repeat("a", 64), "65532:65532", true},
		{TestappImage, "65532:65532", true},
		{"example.test/root:v1", "", true},
		{"example.test/named:v1", "app", true},
		{"busybox", "", false},
	} {
		if u, known := m.User(tc.image); u != tc.wantUser || known != tc.wantKnown {
			t.Errorf("User(%s) = %q, %v; want %q, %v", tc.image, u, known, tc.wantUser, tc.wantKnown)
		}
	}
}

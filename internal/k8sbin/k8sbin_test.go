package k8sbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDirHoldsEveryBinaryAtThePinnedVersions(t *testing.T) {
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		bin  string
		args []string
		want string
	}{
		{KubeAPIServer, []string{"--version"}, "Kubernetes v1.37.2"},
		{KubeControllerManager, []string{"--version"}, "Kubernetes v1.37.2"},
		{KubeScheduler, []string{"--version"}, "Kubernetes v1.37.2"},
		{Kubectl, []string{"version", "--client"}, "v1.37.2"},
		{Etcd, []string{"--version"}, "etcd Version: 3.7.3"},
	}
	for _, tt := range tests {
		t.Run(tt.bin, func(t *testing.T) {
			path, err := Path(tt.bin)
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(path) != d {
				t.Errorf("Path(%s) = %s, not in %s", tt.bin, path, d)
			}
			out, err := exec.Command(path, tt.args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%s %v: %v\n%s", path, tt.args, err, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("%s %v says %q, want %q in it", tt.bin, tt.args, out, tt.want)
			}
		})
	}
}

func TestDirIsFoundOncePerProcess(t *testing.T) {
	first, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	// The script is not run again: even a cache hit forks bash and
	// hashes the pins, which takes milliseconds, not microseconds.
	begin := time.Now()
	for range 1000 {
		if d, err := Dir(); d != first || err != nil {
			t.Fatalf("Dir() = %q, %v; first %q", d, err, first)
		}
	}
	if took := time.Since(begin); took > 500*time.Millisecond {
		t.Errorf("1000 calls took %s: the answer is not cached", took)
	}
}

// script writes a stand-in build script (a real bash process) to a
// temporary directory.
func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "build.sh")
	if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBuildErrors(t *testing.T) {
	empty := t.TempDir()
	tests := []struct {
		name   string
		script string
		want   []string
		absent []string
	}{
		{
			name:   "a failed build quotes the end of its stderr",
			script: "for i in $(seq 1 50); do echo \"step $i\" >&2; done; exit 3",
			want:   []string{"exit status 3", "step 50", "step 21"},
			absent: []string{"step 20\n"},
		},
		{
			name:   "no directory printed",
			script: "echo building >&2",
			want:   []string{"printed no directory", "building"},
		},
		{
			name:   "a directory without the binaries",
			script: "echo " + empty,
			want:   []string{empty, "no executable etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(script(t, tt.script))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(err.Error()+"\n", a) {
					t.Errorf("error has %q, beyond the tail:\n%v", a, err)
				}
			}
		})
	}
}

func TestEnvDirIsUsedAsIs(t *testing.T) {
	// Dir first: its answer is cached for the process, and must not be
	// the one for the empty directory below.
	built, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvDir, t.TempDir())
	if _, err := find(); err == nil || !strings.Contains(err.Error(), "$"+EnvDir) {
		t.Errorf("an empty $%s: got %v, want an error naming it", EnvDir, err)
	}
	t.Setenv(EnvDir, built)
	if got, err := find(); got != built || err != nil {
		t.Errorf("find() = %q, %v; want %q", got, err, built)
	}
}

func TestBuildToCopiesTheProgressLines(t *testing.T) {
	var progress strings.Builder
	bin := t.TempDir()
	for _, n := range Names {
		if err := os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	got, err := BuildTo(script(t, "echo 'k8s-build: building etcd (0s)' >&2; echo "+bin), &progress)
	if err != nil || got != bin {
		t.Fatalf("BuildTo = %q, %v; want %q", got, err, bin)
	}
	if progress.String() != "k8s-build: building etcd (0s)\n" {
		t.Errorf("progress = %q, want the script's stderr line", progress.String())
	}
}

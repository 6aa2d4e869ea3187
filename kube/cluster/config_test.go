package cluster

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/kube/install"
)

func TestConfigRefusesWhatUpCannotRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no directory", Config{}, "--dir: required"},
		{"a loopback pod CIDR", Config{Dir: "d", PodCIDR: "127.5.0.0/16"}, `pod CIDR "127.5.0.0/16" overlaps 127.0.0.0/8`},
		{"a pod CIDR with host bits", Config{Dir: "d", PodCIDR: "10.250.0.1/24"}, "did you mean 10.250.0.0/24?"},
		{"a pod CIDR over the Service range", Config{Dir: "d", PodCIDR: "10.96.0.0/12"}, "overlaps the Service range 10.96.0.0/16"},
		{"an API address off loopback", Config{Dir: "d", Listen: "0.0.0.0:6443"}, "host loopback only"},
		{"an API address without a port", Config{Dir: "d", Listen: "127.0.0.1"}, "want 127.0.0.1:PORT"},
		{"a node name that is no DNS subdomain", Config{Dir: "d", NodeName: "Node_1"}, `--name "Node_1"`},
		{"a front door off loopback", Config{Dir: "d", FrontDoor: ":8080"}, `--front-door ":8080": the cluster is forwarded to host loopback only`},
		{"a negative install timeout", Config{Dir: "d", InstallTimeout: -time.Second}, "--install-timeout -1s: must not be negative"},
		{"an image mapping without a path", Config{Dir: "d", Images: []string{"ghcr.io/x"}}, `--image "ghcr.io/x": want NAME=PATH`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Check()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Check() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	t.Run("the defaults", func(t *testing.T) {
		cfg, err := Config{Dir: "d"}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.PodCIDR != DefaultPodCIDR || cfg.Listen != DefaultListen || cfg.NodeName != DefaultNodeName || !strings.HasSuffix(cfg.Dir, "/d") ||
			cfg.FrontDoor != DefaultFrontDoor || cfg.InstallTimeout != install.DefaultTimeout || cfg.NoInstall {
			t.Errorf("defaults: %+v", cfg)
		}
	})
}

func TestBuildProgressShowsABuildButNotACacheHit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script, want string
	}{
		{"a cache hit says nothing", "k8s-build: cache hit /c/bin\n", ""},
		{"a build says what it does, then the script's steps",
			"k8s-build: building etcd (0s)\nk8s-build: building kube-apiserver v1.37.2 (cold: minutes) (61s)\n",
			"podgate: building the Kubernetes binaries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			p := &buildProgress{w: &out, what: k8sBuildHeader}
			// In pieces, as a pipe delivers it.
			for _, chunk := range []string{tt.script[:5], tt.script[5:]} {
				if _, err := p.Write([]byte(chunk)); err != nil {
					t.Fatal(err)
				}
			}
			got := out.String()
			if tt.want == "" && got != "" {
				t.Errorf("progress %q, want nothing", got)
			}
			if tt.want != "" && (!strings.HasPrefix(got, tt.want) || !strings.HasSuffix(got, tt.script)) {
				t.Errorf("progress %q, want %q first and then the script's lines", got, tt.want)
			}
		})
	}
}

func TestCommandLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"cluster up refuses an API address off loopback as a usage error", []string{"cluster", "up", "--dir", t.TempDir(), "--listen", "0.0.0.0:0"}, 2, "host loopback only"},
		{"cluster up refuses a loopback pod CIDR as a usage error", []string{"cluster", "up", "--dir", t.TempDir(), "--pod-cidr", "127.0.0.0/24"}, 2, "overlaps 127.0.0.0/8"},
		{"cluster up refuses a node without pod capacity as a usage error", []string{"cluster", "up", "--dir", t.TempDir(), "--max-pods", "0"}, 2, "--max-pods 0: want 1 or more"},
		{"cluster up refuses a front door off loopback as a usage error", []string{"cluster", "up", "--dir", t.TempDir(), "--front-door", "0.0.0.0:8080"}, 2, "--front-door"},
		{"cluster down with no cluster says so and succeeds", []string{"cluster", "down", "--dir", t.TempDir()}, 0, "no cluster runs there"},
		{"the cluster process refuses to run by hand", []string{"cluster", "child", "--dir", "/x", "--config", "{}"}, 1, "started by podgate cluster up only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := exec.Command(podgateBin, tt.args...).CombinedOutput()
			if code := exitCode(err); code != tt.code || !strings.Contains(string(out), tt.want) {
				t.Errorf("podgate %v: exit %d, %q; want %d and %q", tt.args, code, out, tt.code, tt.want)
			}
		})
	}
}

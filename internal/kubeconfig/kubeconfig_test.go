package kubeconfig

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeKubeconfig writes a kubeconfig whose one cluster is at server.
func writeKubeconfig(t *testing.T, dir, name, server string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	content := `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: ` + server + `
users:
- name: u
  user:
    token: secret-token
contexts:
- name: ctx
  context:
    cluster: c
    user: u
current-context: ctx
`
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadTakesTheFirstSourceThatIsThere(t *testing.T) {
	dir := t.TempDir()
	flagFile := writeKubeconfig(t, dir, "flag", "https://127.0.0.1:1001")
	envFile := writeKubeconfig(t, dir, "env", "https://127.0.0.1:1002")
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeKubeconfig(t, filepath.Join(home, ".kube"), "config", "https://127.0.0.1:1004")
	saDir := filepath.Join(dir, "sa")
	if err := os.MkdirAll(saDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"token": "sa-token", "ca.crt": "not used until a request"} {
		if err := os.WriteFile(filepath.Join(saDir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	inCluster := map[string]string{"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "1003"}
	withEnv := func(extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range inCluster {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}

	tests := []struct {
		name       string
		flag       string
		env        map[string]string
		wantHost   string
		wantSource Source
		wantToken  string
	}{
		{"the flag wins over everything", flagFile, withEnv(map[string]string{"KUBECONFIG": envFile}), "https://127.0.0.1:1001", FromFlag, "secret-token"},
		{"then $KUBECONFIG", "", withEnv(map[string]string{"KUBECONFIG": envFile}), "https://127.0.0.1:1002", FromEnv, "secret-token"},
		{"$KUBECONFIG is a list; missing files in it are skipped", "", map[string]string{"KUBECONFIG": filepath.Join(dir, "absent") + string(filepath.ListSeparator) + envFile}, "https://127.0.0.1:1002", FromEnv, "secret-token"},
		{"then the pod's service account", "", inCluster, "https://127.0.0.1:1003", FromInCluster, "sa-token"},
		{"then ~/.kube/config", "", nil, "https://127.0.0.1:1004", FromHome, "secret-token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Loader{Getenv: func(k string) string { return tt.env[k] }, ServiceAccountDir: saDir, Home: home}
			cfg, src, err := l.Load(tt.flag)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tt.wantHost || src != tt.wantSource || cfg.BearerToken != tt.wantToken {
				t.Errorf("got host %q from %q with token %q, want %q from %q with %q", cfg.Host, src, cfg.BearerToken, tt.wantHost, tt.wantSource, tt.wantToken)
			}
		})
	}
}

func TestLoadNamesWhatIsMissingOrBroken(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken")
	if err := os.WriteFile(broken, []byte("clusters: [oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		flag string
		env  map[string]string
		want []string
	}{
		{"a --kubeconfig that does not exist does not fall through", filepath.Join(dir, "absent"), map[string]string{"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "1"}, []string{"kubeconfig " + filepath.Join(dir, "absent")}},
		{"a broken --kubeconfig", broken, nil, []string{"kubeconfig " + broken}},
		{"$KUBECONFIG naming only absent files", "", map[string]string{"KUBECONFIG": filepath.Join(dir, "absent")}, []string{"$KUBECONFIG", "no cluster or context"}},
		{"in a cluster without a mounted token", "", map[string]string{"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": "1"}, []string{"in-cluster: service-account token", "automountServiceAccountToken"}},
		{"nothing at all", "", nil, []string{"no kubeconfig", "--kubeconfig not given", filepath.Join(dir, "home", ".kube", "config")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := Loader{Getenv: func(k string) string { return tt.env[k] }, ServiceAccountDir: filepath.Join(dir, "no-sa"), Home: filepath.Join(dir, "home")}
			_, _, err := l.Load(tt.flag)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

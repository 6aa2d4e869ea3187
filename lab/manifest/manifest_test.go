package manifest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podgate/podgate/lab/manifest"
)

func TestManifestEdits(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "in.yaml")
	if err := os.WriteFile(src, []byte(`apiVersion: v1
kind: Pod
metadata: {name: solo}
spec:
  containers:
  - name: app
    image: ghcr.io/podgate/testapp
    args: ["--exec-file", "/tmp/shared"]
    readinessProbe:
      exec: {command: ["cat", "/tmp/shared"]}
---
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: svc}
spec:
  template:
    spec:
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Read(src, "/tmp/shared", "/tmp/mine")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetPodSpec("terminationGracePeriodSeconds", 4); err != nil {
		t.Fatal(err)
	}
	if err := m.AppendArgs("app", "--ready-after", "1h"); err != nil {
		t.Fatal(err)
	}
	out, err := m.Write(dir, "out.yaml")
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(out)
	text := string(data)
	for _, want := range []string{
		"- --exec-file\n    - /tmp/mine\n    - --ready-after\n    - 1h",        // the Pod's args, extended
		"- cat\n        - /tmp/mine",                                           // the probe, replaced
		"  terminationGracePeriodSeconds: 4\n---",                              // the Pod's spec
		"    spec:\n      containers:\n      - args:\n        - --ready-after", // the Service's template
		"      terminationGracePeriodSeconds: 4\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "/tmp/shared") {
		t.Errorf("a shared path is left:\n%s", text)
	}
	back, err := manifest.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := back.Bytes()
	if string(again) != text {
		t.Errorf("not stable through a round trip:\n%s\n---- vs ----\n%s", again, text)
	}

	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"a replacement that is not in the file is an error", func() error { _, err := manifest.Read(src, "/tmp/other", "x"); return err }, `does not contain "/tmp/other"`},
		{"replacements come in pairs", func() error { _, err := manifest.Read(src, "/tmp/shared"); return err }, "pairs"},
		{"a missing file is an error", func() error { _, err := manifest.Read(filepath.Join(dir, "nope.yaml")); return err }, "nope.yaml"},
		{"an unknown container is an error", func() error { return m.AppendArgs("sidecar", "x") }, `no container "sidecar"`},
		{"no documents is an error", func() error { _, err := manifest.Parse([]byte("# nothing\n")); return err }, "no documents"},
		{"a document without a pod spec is an error", func() error {
			cm, err := manifest.Parse([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"))
			if err != nil {
				return err
			}
			return cm.SetPodSpec("x", 1)
		}, "ConfigMap: no spec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Knative's defaults a pod spec lacks come with: a probe's port is its
// container's, or Knative's 8080.
func TestForClusterMakesKnativeServicesDeploymentsThatOptIn(t *testing.T) {
	m, err := manifest.Parse([]byte(`apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: web}
spec:
  template:
    spec:
      timeoutSeconds: 4
      containerConcurrency: 2
      terminationGracePeriodSeconds: 4
      containers:
      - name: app
        image: ghcr.io/podgate/testapp
        ports: [{containerPort: 8081}]
        readinessProbe: {httpGet: {path: /readyz}}
      - name: side
        image: ghcr.io/podgate/testapp
        livenessProbe: {tcpSocket: {}}
---
apiVersion: v1
kind: Pod
metadata: {name: solo, labels: {team: a}}
spec:
  containers:
  - {name: app, image: ghcr.io/podgate/testapp}
`))
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.ForCluster(2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	want := `apiVersion: apps/v1
kind: Deployment
metadata:
  labels:
    app: web
    podgate.dev/inject: enabled
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
        podgate.dev/inject: enabled
    spec:
      containers:
      - image: ghcr.io/podgate/testapp
        name: app
        ports:
        - containerPort: 8081
        readinessProbe:
          httpGet:
            path: /readyz
            port: 8081
      - image: ghcr.io/podgate/testapp
        livenessProbe:
          tcpSocket:
            port: 8080
        name: side
      terminationGracePeriodSeconds: 4
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - name: http
    port: 80
    targetPort: 8012
  selector:
    app: web
---
apiVersion: v1
kind: Pod
metadata:
  labels:
    podgate.dev/inject: enabled
    team: a
  name: solo
spec:
  containers:
  - image: ghcr.io/podgate/testapp
    name: app
`
	if string(got) != want {
		t.Errorf("ForCluster:\n%s\nwant:\n%s", got, want)
	}
	if s := c.Services(); len(s) != 1 || s[0] != "web" {
		t.Errorf("Services() = %v, want [web]", s)
	}
	// The original is untouched.
	if orig, _ := m.Bytes(); !strings.Contains(string(orig), "timeoutSeconds: 4") || strings.Contains(string(orig), "podgate.dev/inject") {
		t.Errorf("ForCluster changed the manifest:\n%s", orig)
	}
}

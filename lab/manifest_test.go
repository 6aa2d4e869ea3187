package lab_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podgate/podgate/lab"
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
	m, err := lab.ReadManifest(src, "/tmp/shared", "/tmp/mine")
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
	back, err := lab.ParseManifest(data)
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
		{"a replacement that is not in the file is an error", func() error { _, err := lab.ReadManifest(src, "/tmp/other", "x"); return err }, `does not contain "/tmp/other"`},
		{"replacements come in pairs", func() error { _, err := lab.ReadManifest(src, "/tmp/shared"); return err }, "pairs"},
		{"a missing file is an error", func() error { _, err := lab.ReadManifest(filepath.Join(dir, "nope.yaml")); return err }, "nope.yaml"},
		{"an unknown container is an error", func() error { return m.AppendArgs("sidecar", "x") }, `no container "sidecar"`},
		{"no documents is an error", func() error { _, err := lab.ParseManifest([]byte("# nothing\n")); return err }, "no documents"},
		{"a document without a pod spec is an error", func() error {
			cm, err := lab.ParseManifest([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"))
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

// Every seed example, copied the way the scenarios copy it, is still a
// manifest podgate accepts.
func TestExampleCopiesValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil || len(files) < 7 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := lab.ReadManifest(f)
			if err != nil {
				t.Fatal(err)
			}
			for field, v := range map[string]any{"terminationGracePeriodSeconds": 4, "timeoutSeconds": 3} {
				if err := m.SetPodSpec(field, v); err != nil {
					t.Fatal(err)
				}
			}
			p, err := m.Write(t.TempDir(), filepath.Base(f))
			if err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command(podgateBin, "validate", "-f", p).CombinedOutput(); err != nil {
				t.Errorf("podgate validate: %v\n%s", err, out)
			}
		})
	}
}

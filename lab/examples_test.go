package lab_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/podgate/podgate/lab/manifest"
)

// Every seed example, copied the way the scenarios copy it, is still a
// manifest podgate accepts.
func TestExampleCopiesValidate(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil || len(files) < 7 {
		t.Fatalf("examples: %v, %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			m, err := manifest.Read(f)
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

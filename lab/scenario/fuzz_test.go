package scenario

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse: whatever the bytes, Parse returns a scenario or an
// *InvalidError whose every line names the file and a field path — never
// a panic, never both — and a scenario it accepts is accepted again after
// a round trip through JSON (YAML's superset), as the same scenario.
func FuzzParse(f *testing.F) {
	f.Add([]byte(valid))
	files, _ := filepath.Glob(filepath.Join("..", "..", "examples", "scenarios", "*.yaml"))
	for _, file := range files {
		if data, err := os.ReadFile(file); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("apiVersion: podgate.dev/v1alpha1\nkind: Scenario\nsteps: [{wait: {as: [a, a]}}]"))
	f.Add([]byte("{}"))
	f.Add([]byte("null"))
	f.Add([]byte("steps: [{at: 1h, mark: x}, {wait: {servedAfter: x}}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "f.yaml")
		if err != nil {
			var invalid *InvalidError
			if s != nil || !errors.As(err, &invalid) || len(invalid.Errs) == 0 {
				t.Fatalf("Parse = %v, %v: want no scenario and an *InvalidError with its errors", s, err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "f.yaml: ") {
					t.Fatalf("error line %q does not name the file", line)
				}
			}
			return
		}
		if s.Name == "" || len(s.Steps) == 0 || len(s.Expect) == 0 || len(s.timing) != len(s.Steps) {
			t.Fatalf("accepted %+v", s)
		}
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(js, "f.yaml")
		if err != nil {
			t.Fatalf("the accepted scenario, as JSON, is refused: %v\n%s", err, js)
		}
		js2, _ := json.Marshal(again)
		if string(js) != string(js2) {
			t.Fatalf("round trip changed it:\n%s\n%s", js, js2)
		}
	})
}

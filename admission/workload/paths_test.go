package workload

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestPathInputsReadsAsKubectl(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"b.yml", "a.yaml", "c.JSON", "notes.txt", "sub/d.yaml"} {
		path := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, path, "{}")
	}
	empty := t.TempDir()
	in := func(names ...string) []string {
		var out []string
		for _, n := range names {
			out = append(out, filepath.Join(dir, n))
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		path      string
		recursive bool
		want      []string
		wantErr   string
	}{
		{"a file is itself, whatever its extension", filepath.Join(dir, "notes.txt"), false, in("notes.txt"), ""},
		{"a directory is its manifests in name order, not its subdirectories", dir, false, in("a.yaml", "b.yml", "c.JSON"), ""},
		{"recursive reads the subdirectories too", dir, true, in("a.yaml", "b.yml", "c.JSON", "sub/d.yaml"), ""},
		{"a directory without manifests points at -R", empty, false, nil, "no .yaml, .yml or .json file in the directory (subdirectories are read with -R)"},
		{"recursive, the same without the hint", empty, true, nil, "no .yaml, .yml or .json file in the directory"},
		{"a path that does not exist", filepath.Join(dir, "absent.yaml"), false, nil, "read manifest: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inputs, err := PathInputs(tc.path, tc.recursive)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want it to contain %q", err, tc.wantErr)
				}
				if strings.HasSuffix(tc.wantErr, "directory") && strings.Contains(err.Error(), "-R") {
					t.Errorf("err %v: hints at -R, which was given", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, i := range inputs {
				got = append(got, i.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("inputs %q, want %q", got, tc.want)
			}
			if names := InputNames(inputs); names != strings.Join(tc.want, ", ") {
				t.Errorf("InputNames = %q", names)
			}
		})
	}
}

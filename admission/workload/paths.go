package workload

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// manifestExts are the files kubectl reads from a directory.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// PathInputs is what kubectl's -f PATH reads: the file at path, or, for a
// directory, its *.yaml, *.yml and *.json files in lexical order (those of
// its subdirectories too when recursive). A path that does not exist and
// a directory without manifests are errors.
func PathInputs(path string, recursive bool) ([]Input, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}
	if !st.IsDir() {
		return []Input{FileInput(path)}, nil
	}
	found, err := manifestFiles(path, recursive)
	if err != nil {
		return nil, fmt.Errorf("read manifests in %s: %w", path, err)
	}
	if len(found) == 0 {
		hint := ""
		if !recursive {
			hint = " (subdirectories are read with -R)"
		}
		return nil, fmt.Errorf("%s: no .yaml, .yml or .json file in the directory%s", path, hint)
	}
	out := make([]Input, len(found))
	for i, f := range found {
		out[i] = FileInput(f)
	}
	return out, nil
}

// manifestFiles lists dir's manifest files in lexical order, descending
// into subdirectories only when recursive.
func manifestFiles(dir string, recursive bool) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && !recursive {
				return filepath.SkipDir
			}
			return nil
		}
		if manifestExts[strings.ToLower(filepath.Ext(path))] {
			found = append(found, path)
		}
		return nil
	})
	return found, err
}

// InputNames are the sources' names, in order, joined for a message:
// "a.yaml, b.yaml".
func InputNames(inputs []Input) string {
	names := make([]string, len(inputs))
	for i, in := range inputs {
		names[i] = in.Name
	}
	return strings.Join(names, ", ")
}

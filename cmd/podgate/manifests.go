package main

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/podgate/podgate/podspec"
)

// stdinName names standard input (-f -) in messages.
const stdinName = "<stdin>"

// manifestFlags are -f and -R, taken as kubectl takes them: a file, - for
// standard input, or a directory, whose *.yaml, *.yml and *.json files are
// read in name order (its subdirectories too with -R).
type manifestFlags struct {
	files     []string
	recursive bool
}

func (m *manifestFlags) bind(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&m.files, "filename", "f", nil, "manifest file (YAML or JSON), directory of them, or - for standard input; repeat for more")
	fs.BoolVarP(&m.recursive, "recursive", "R", false, "read the directories given with -f recursively")
}

// manifestExts are the files kubectl reads from a directory.
var manifestExts = map[string]bool{".yaml": true, ".yml": true, ".json": true}

// inputs expands the flags (and extra arguments, which are more files) into
// sources, in order. A path that does not exist or a directory without
// manifests is invalid input; - given twice is a usage error.
func (m *manifestFlags) inputs(args []string, stdin io.Reader) ([]podspec.Input, error) {
	paths := append(append([]string{}, m.files...), args...)
	if len(paths) == 0 {
		return nil, usageErrorf("at least one -f FILE is required (a file, a directory, or - for standard input)")
	}
	var out []podspec.Input
	stdinUsed := false
	for _, p := range paths {
		if p == "-" {
			if stdinUsed {
				return nil, usageErrorf("-f - is given twice: standard input can be read once")
			}
			stdinUsed = true
			out = append(out, podspec.Input{Name: stdinName, Open: func() (io.ReadCloser, error) {
				return io.NopCloser(stdin), nil
			}})
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, invalidf("read manifest: %v", err)
		}
		if !st.IsDir() {
			out = append(out, podspec.FileInput(p))
			continue
		}
		found, err := m.walk(p)
		if err != nil {
			return nil, invalidf("read manifests in %s: %v", p, err)
		}
		if len(found) == 0 {
			hint := ""
			if !m.recursive {
				hint = " (subdirectories are read with -R)"
			}
			return nil, invalidf("%s: no .yaml, .yml or .json file in the directory%s", p, hint)
		}
		for _, f := range found {
			out = append(out, podspec.FileInput(f))
		}
	}
	return out, nil
}

// walk lists dir's manifest files in lexical order, descending into
// subdirectories only with -R.
func (m *manifestFlags) walk(dir string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != dir && !m.recursive {
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

// inputNames are the sources' names, in order (problems sort by them).
func inputNames(inputs []podspec.Input) []string {
	names := make([]string, len(inputs))
	for i, in := range inputs {
		names[i] = in.Name
	}
	return names
}

// describeInputs names the sources for a message: "a.yaml, b.yaml".
func describeInputs(inputs []podspec.Input) string {
	return strings.Join(inputNames(inputs), ", ")
}

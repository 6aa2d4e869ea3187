package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/podgate/podgate/admission/workload"
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

// inputs expands the flags (and extra arguments, which are more files) into
// sources, in order (workload.PathInputs). A path that does not exist or a
// directory without manifests is invalid input; - given twice is a usage
// error.
func (m *manifestFlags) inputs(args []string, stdin io.Reader) ([]workload.Input, error) {
	paths := append(append([]string{}, m.files...), args...)
	if len(paths) == 0 {
		return nil, usageErrorf("at least one -f FILE is required (a file, a directory, or - for standard input)")
	}
	var out []workload.Input
	stdinUsed := false
	for _, p := range paths {
		if p != "-" {
			in, err := workload.PathInputs(p, m.recursive)
			if err != nil {
				return nil, invalidf("%v", err)
			}
			out = append(out, in...)
			continue
		}
		if stdinUsed {
			return nil, usageErrorf("-f - is given twice: standard input can be read once")
		}
		stdinUsed = true
		out = append(out, workload.Input{Name: stdinName, Open: func() (io.ReadCloser, error) {
			return io.NopCloser(stdin), nil
		}})
	}
	return out, nil
}

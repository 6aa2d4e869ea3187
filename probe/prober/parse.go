package prober

import (
	"fmt"
	"io"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/internal/specdecode"
	"github.com/podgate/podgate/probe"
)

// InvalidError lists everything wrong with a probe, each with its field path.
type InvalidError struct {
	Errs field.ErrorList
}

func (e *InvalidError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "\n")
}

// snippetRoot is the root of field paths in errors about a probe snippet.
var snippetRoot = field.NewPath("probe")

// ParseSnippet decodes one corev1.Probe written as YAML or JSON, strictly
// (unknown or duplicate fields are errors, like `kubectl --validate=strict`),
// applies the API server's defaults and validates it. Every problem found is
// returned at once in an *InvalidError whose entries carry field paths.
func ParseSnippet(data []byte) (*corev1.Probe, error) {
	p, errs := specdecode.Probe(data, snippetRoot)
	if p == nil {
		return nil, &InvalidError{Errs: errs}
	}
	// Strict checks do not stop decoding, so report them together with
	// every validation error: the author fixes everything in one go.
	SetDefaults(p)
	errs = append(errs, probe.Validate(p, snippetRoot)...)
	if len(errs) > 0 {
		return nil, &InvalidError{Errs: errs}
	}
	return p, nil
}

// ReadSnippet reads a probe snippet from file, "-" meaning in (standard
// input), and parses it (ParseSnippet); a problem in it is reported with
// the file's name, "<stdin>" for standard input.
func ReadSnippet(in io.Reader, file string) (*corev1.Probe, error) {
	name := file
	var data []byte
	var err error
	if file == "-" {
		name = "<stdin>"
		if data, err = io.ReadAll(in); err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
	} else if data, err = os.ReadFile(file); err != nil {
		return nil, fmt.Errorf("reading probe: %w", err)
	}
	p, err := ParseSnippet(data)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid probe:\n%w", name, err)
	}
	return p, nil
}

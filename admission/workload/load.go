package workload

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Manifests is what a set of files holds: the workloads podgate runs, and
// the other objects it passed over.
type Manifests struct {
	Workloads []*Workload
	Skipped   []Skipped
}

// Skipped is an object of a kind podgate does not run (a ConfigMap, a
// Kubernetes Service next to a Deployment, …). It is not an error: users
// bring whole manifests.
type Skipped struct {
	Source     Source
	APIVersion string
	Kind       string
	Name       string
	// Raw is the object as JSON, to pass it through unchanged.
	Raw json.RawMessage
	seq int
}

// InOrder lists the workloads and skipped objects in the order the files
// hold them (List items in turn): each element is a *Workload or a
// Skipped.
func (m *Manifests) InOrder() []any {
	out := make([]any, 0, len(m.Workloads)+len(m.Skipped))
	wi, si := 0, 0
	for wi < len(m.Workloads) || si < len(m.Skipped) {
		if si == len(m.Skipped) || (wi < len(m.Workloads) && m.Workloads[wi].seq < m.Skipped[si].seq) {
			out = append(out, m.Workloads[wi])
			wi++
		} else {
			out = append(out, m.Skipped[si])
			si++
		}
	}
	return out
}

// maxManifestBytes bounds one file: manifests are small, and a bound keeps
// a stray multi-gigabyte file from being read into memory.
const maxManifestBytes = 16 << 20

// Input is one source of manifests: a file, or a stream such as standard
// input. Name is how messages name it.
type Input struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// FileInput reads the file at path.
func FileInput(path string) Input {
	return Input{Name: path, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
}

// LoadFiles loads every file in order. Problems in one file do not stop the
// others: the error, if any, is Problems listing everything found. A file
// that cannot be read is a plain error.
func LoadFiles(paths ...string) (*Manifests, error) {
	inputs := make([]Input, len(paths))
	for i, p := range paths {
		inputs[i] = FileInput(p)
	}
	return LoadInputs(inputs...)
}

// LoadInputs is LoadFiles for any sources.
func LoadInputs(inputs ...Input) (*Manifests, error) {
	all := &Manifests{}
	var problems Problems
	for _, in := range inputs {
		f, err := in.Open()
		if err != nil {
			return all, fmt.Errorf("read manifest: %w", err)
		}
		m, err := Load(f, in.Name)
		f.Close()
		// Sequence numbers continue across files, so InOrder keeps the
		// files' order.
		base := len(all.Workloads) + len(all.Skipped)
		for _, w := range m.Workloads {
			w.seq += base
		}
		for i := range m.Skipped {
			m.Skipped[i].seq += base
		}
		all.Workloads = append(all.Workloads, m.Workloads...)
		all.Skipped = append(all.Skipped, m.Skipped...)
		var ps Problems
		switch {
		case errors.As(err, &ps):
			problems = append(problems, ps...)
		case err != nil:
			return all, err
		}
	}
	if len(problems) > 0 {
		return all, problems
	}
	return all, nil
}

// Load reads YAML or JSON manifests from r (file names them in messages):
// several documents, `v1 List`s, Pods, Deployments and Knative Services.
// Decoding is strict, like `kubectl --validate=strict`: unknown and
// duplicate fields are problems with their path. Defaults are applied as
// the API server and Knative's webhook would (see defaults.go). Workloads
// whose documents had only field problems are still returned, so that
// validation can report everything at once; the error is then Problems.
func Load(r io.Reader, file string) (*Manifests, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return &Manifests{}, fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > maxManifestBytes {
		return &Manifests{}, fmt.Errorf("read %s: larger than %d MiB", file, maxManifestBytes>>20)
	}
	l := &loader{file: file, out: &Manifests{}}
	docs, err := splitDocuments(data)
	if err != nil {
		l.problems = append(l.problems, documentProblem(Source{File: file, Doc: 1}, "", "",
			"cannot split into documents: %v", err))
	}
	doc := 0
	for _, d := range docs {
		js, err := yaml.YAMLToJSONStrict(d)
		var dupErr error
		if err != nil {
			// The strict converter also rejects keys given twice; the
			// plain one keeps the last. A document that only has
			// duplicates is reported and still validated.
			if lenient, lerr := yaml.YAMLToJSON(d); lerr == nil {
				js, dupErr, err = lenient, err, nil
			}
		}
		if err == nil && dupErr == nil && isNull(js) {
			continue // empty document: only comments or separators
		}
		doc++
		src := Source{File: file, Doc: doc}
		if err != nil {
			l.problems = append(l.problems, documentProblem(src, "", "", "not valid YAML: %s", yamlMessage(err)))
			continue
		}
		if dupErr != nil {
			var h header
			_ = kjson.UnmarshalCaseSensitivePreserveInts(js, &h)
			l.problems = append(l.problems, documentProblem(src, h.Kind, h.Metadata.Name, "duplicate key: %s", yamlMessage(dupErr)))
		}
		l.object(src, js, false)
	}
	if len(l.problems) > 0 {
		return l.out, l.problems
	}
	return l.out, nil
}

type loader struct {
	file     string
	out      *Manifests
	problems Problems
	seq      int // objects seen so far, for InOrder
}

// splitDocuments cuts a stream into documents: a JSON stream when it starts
// with '{', YAML documents separated by "---" otherwise.
func splitDocuments(data []byte) ([][]byte, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var docs [][]byte
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		var end int64
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			if err != nil {
				// The rest is one broken document: the YAML converter
				// reports it with its own message.
				return append(docs, trimmed[end:]), nil
			}
			end = dec.InputOffset()
			docs = append(docs, raw)
		}
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		d, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, d)
	}
}

func isNull(js []byte) bool {
	t := bytes.TrimSpace(js)
	return len(t) == 0 || bytes.Equal(t, []byte("null"))
}

// yamlLine finds "line N:" in the YAML parser's messages.
var yamlLine = regexp.MustCompile(`line (\d+):`)

// yamlMessage makes the YAML parser's message one line and says that its
// line numbers count from the start of the document, not of the file.
func yamlMessage(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:")
	msg = strings.Join(strings.Fields(msg), " ")
	return yamlLine.ReplaceAllString(msg, "line $1 of the document:")
}

package podspec

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
}

// maxManifestBytes bounds one file: manifests are small, and a bound keeps
// a stray multi-gigabyte file from being read into memory.
const maxManifestBytes = 16 << 20

// LoadFiles loads every file in order. Problems in one file do not stop the
// others: the error, if any, is Problems listing everything found. A file
// that cannot be read is a plain error.
func LoadFiles(paths ...string) (*Manifests, error) {
	all := &Manifests{}
	var problems Problems
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return all, fmt.Errorf("read manifest: %w", err)
		}
		m, err := Load(f, p)
		f.Close()
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
		if err == nil && isNull(js) {
			continue // empty document: only comments or separators
		}
		doc++
		src := Source{File: file, Doc: doc}
		if err != nil {
			l.problems = append(l.problems, documentProblem(src, "", "", "not valid YAML or JSON: %v", err))
			continue
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
}

// splitDocuments cuts a stream into documents: a JSON stream when it starts
// with '{', YAML documents separated by "---" otherwise.
func splitDocuments(data []byte) ([][]byte, error) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) > 0 && trimmed[0] == '{' {
		var docs [][]byte
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			if err != nil {
				// Let the YAML reader report the broken document with
				// its own message; what came before still counts.
				rest := trimmed[dec.InputOffset():]
				return append(docs, rest), nil
			}
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

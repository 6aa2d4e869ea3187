package workload

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Problem is one thing wrong with a manifest, located by file, document,
// object and field path.
type Problem struct {
	File string `json:"file"`
	Doc  int    `json:"doc"`
	Kind string `json:"kind,omitempty"`
	Name string `json:"name,omitempty"`
	// Field is the path inside the object ("spec.containers[0].image"),
	// empty for a document that could not be read at all.
	Field string `json:"field,omitempty"`
	// Type is apimachinery's field.ErrorType ("FieldValueInvalid"), or
	// "DocumentInvalid" for a document that is not a readable object.
	Type     string `json:"type"`
	BadValue any    `json:"value,omitempty"`
	Detail   string `json:"detail,omitempty"`
	// Message is the human text after the field path, as apimachinery
	// prints it (`Invalid value: 2: must be 1`).
	Message string `json:"message"`
}

// TypeDocumentInvalid marks a document that is not a readable object
// (YAML syntax, missing kind, unsupported apiVersion).
const TypeDocumentInvalid = "DocumentInvalid"

// Error renders the problem as one line:
// `file: doc N: Kind/name: path: message`.
func (p Problem) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: doc %d: ", p.File, p.Doc)
	if p.Kind != "" {
		name := p.Name
		if name == "" {
			name = "<no name>"
		}
		fmt.Fprintf(&b, "%s/%s: ", p.Kind, name)
	}
	if p.Field != "" {
		b.WriteString(p.Field)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Problems is every problem found, in the order found; it is an error.
type Problems []Problem

func (ps Problems) Error() string {
	lines := make([]string, len(ps))
	for i, p := range ps {
		lines[i] = p.Error()
	}
	return strings.Join(lines, "\n")
}

// Problems locates a validation error list on the workload's manifest.
func (w *Workload) Problems(errs field.ErrorList) Problems {
	out := make(Problems, 0, len(errs))
	for _, e := range errs {
		out = append(out, fieldProblem(w.Source, w.Kind, w.Name, e))
	}
	return out
}

func fieldProblem(src Source, kind, name string, e *field.Error) Problem {
	p := Problem{
		File: src.File, Doc: src.Doc, Kind: kind, Name: name,
		Field: e.Field, Type: string(e.Type), Detail: e.Detail,
		Message: e.ErrorBody(),
	}
	if hasValue(e.Type) {
		p.BadValue = e.BadValue
	}
	return p
}

// hasValue tells the error types whose BadValue apimachinery prints.
func hasValue(t field.ErrorType) bool {
	switch t {
	case field.ErrorTypeRequired, field.ErrorTypeForbidden, field.ErrorTypeTooLong,
		field.ErrorTypeTooShort, field.ErrorTypeInternal:
		return false
	}
	return true
}

func documentProblem(src Source, kind, name, format string, args ...any) Problem {
	return Problem{
		File: src.File, Doc: src.Doc, Kind: kind, Name: name,
		Type: TypeDocumentInvalid, Message: fmt.Sprintf(format, args...),
	}
}

// SortProblems orders problems by file and document, keeping the order
// found within a document, so loading and validation problems of one
// document end up together. Files come in the order given (the order they
// were loaded in), others after them in order of first appearance.
func SortProblems(ps Problems, files ...string) {
	rank := map[string]int{}
	for i, f := range files {
		if _, ok := rank[f]; !ok {
			rank[f] = i
		}
	}
	for _, p := range ps {
		if _, ok := rank[p.File]; !ok {
			rank[p.File] = len(rank)
		}
	}
	sort.SliceStable(ps, func(i, j int) bool {
		fi, fj := rank[ps[i].File], rank[ps[j].File]
		if fi != fj {
			return fi < fj
		}
		return ps[i].Doc < ps[j].Doc
	})
}

package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
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
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &InvalidError{Errs: field.ErrorList{field.Required(snippetRoot, "the probe is empty")}}
	}
	// The strict converter rejects duplicate keys, which the plain one
	// would silently resolve to the last value.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("probe is not valid YAML or JSON: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, &InvalidError{Errs: field.ErrorList{field.Required(snippetRoot, "the probe is empty")}}
	}
	p := &corev1.Probe{}
	strictErrs, err := kjson.UnmarshalStrict(js, p)
	if err != nil {
		return nil, &InvalidError{Errs: field.ErrorList{decodeError(snippetRoot, js, err)}}
	}
	// Strict checks do not stop decoding, so report them together with
	// every validation error: the author fixes everything in one go.
	var errs field.ErrorList
	for _, se := range strictErrs {
		errs = append(errs, strictError(snippetRoot, se))
	}
	SetDefaults(p)
	errs = append(errs, Validate(p, snippetRoot)...)
	if len(errs) > 0 {
		return nil, &InvalidError{Errs: errs}
	}
	return p, nil
}

// strictError turns an unknown or duplicate field report into a field error.
func strictError(root *field.Path, err error) *field.Error {
	var fe kjson.FieldError
	if !errors.As(err, &fe) {
		return field.Invalid(root, nil, err.Error())
	}
	what := "unknown field"
	if strings.HasPrefix(err.Error(), "duplicate field") {
		what = "duplicate field"
	}
	return field.Forbidden(childPath(root, fe.FieldPath()), what)
}

// typeErrorPattern picks the field path and Go type out of a JSON type error
// ("json: cannot unmarshal string into Go struct field GRPCAction.grpc.port
// of type int32"); the decoder's error type is internal to its module.
var typeErrorPattern = regexp.MustCompile(`cannot unmarshal (.+) into Go (?:struct field [^.\s]+\.(\S+)|value) of type (\S+)`)

// decodeError turns a decoding error into a field error naming the field.
func decodeError(root *field.Path, js []byte, err error) *field.Error {
	m := typeErrorPattern.FindStringSubmatch(err.Error())
	if m == nil {
		return field.Invalid(root, nil, err.Error())
	}
	got, path, want := m[1], jsonPath(m[2]), m[3]
	msg := fmt.Sprintf("must be of type %s, not %s", jsonTypeName(want), got)
	if strings.HasSuffix(path, "grpc.port") && got == "string" {
		msg += ": gRPC probes take a port number, named ports are not supported"
	}
	var doc any
	var value any = got
	if json.Unmarshal(js, &doc) == nil {
		if v, ok := lookup(doc, path); ok {
			value = v
		}
	}
	return field.Invalid(childPath(root, path), value, msg)
}

// jsonPath drops the Go names of embedded structs ("ProbeHandler.grpc.port"
// → "grpc.port"): Kubernetes JSON names never start with an upper-case letter.
func jsonPath(goPath string) string {
	var kept []string
	for _, part := range strings.Split(goPath, ".") {
		if part != "" && part[0] >= 'A' && part[0] <= 'Z' {
			continue
		}
		kept = append(kept, part)
	}
	return strings.Join(kept, ".")
}

// lookup finds the value at a dotted path (no indices) in decoded JSON.
func lookup(doc any, dotted string) (any, bool) {
	cur := doc
	for _, part := range strings.Split(dotted, ".") {
		if part == "" {
			continue
		}
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// jsonTypeName names a Go type the way a manifest author thinks of it.
func jsonTypeName(goType string) string {
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "integer"
	case goType == "string":
		return "string"
	case goType == "bool":
		return "boolean"
	case strings.HasPrefix(goType, "[]"):
		return "array"
	default:
		return "object"
	}
}

// childPath appends a dotted JSON path ("httpGet.httpHeaders[0].name") to root.
func childPath(root *field.Path, dotted string) *field.Path {
	p := root
	for _, part := range strings.Split(dotted, ".") {
		if part == "" {
			continue
		}
		name, rest, _ := strings.Cut(part, "[")
		p = p.Child(name)
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			var n int
			if _, err := fmt.Sscanf(idx, "%d", &n); err == nil {
				p = p.Index(n)
			} else {
				p = p.Key(idx)
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return p
}

// Package specdecode is podgate's one strict decoder of Kubernetes-shaped
// JSON and YAML into API types: unknown and duplicate fields are errors
// (as with `kubectl --validate=strict`), each with its field path, and a
// value of the wrong type names its field and value. Manifests (admission/workload),
// probe snippets (prober.ParseSnippet) and the gate's probe variables
// (gate/contract) all decode through it, so they reject the same mistakes with
// the same words.
package specdecode

import (
	"errors"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// Strict decodes a JSON value into obj the way the API server does for
// `kubectl --validate=strict`: field names are case-sensitive, unknown and
// duplicate fields are errors (one per field, with its path under root; a
// nil root means paths from the document's top). A value of the wrong
// type stops decoding; ok is false then. Strict errors do not stop
// decoding, so callers can report them together with validation errors.
func Strict(js []byte, obj any, root *field.Path) (errs field.ErrorList, ok bool) {
	strictErrs, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return field.ErrorList{typeError(js, reflect.TypeOf(obj), err, root)}, false
	}
	for _, se := range strictErrs {
		errs = append(errs, strictFieldError(se, root))
	}
	return errs, true
}

func strictFieldError(err error, root *field.Path) *field.Error {
	var fe kjson.FieldError
	if !errors.As(err, &fe) {
		return field.Invalid(orDocument(root), nil, err.Error())
	}
	what := "unknown field"
	if strings.HasPrefix(err.Error(), "duplicate field") {
		what = "duplicate field"
	}
	return field.Forbidden(ParsePath(root, fe.FieldPath()), what)
}

// orDocument names the whole document when there is no root to name.
func orDocument(root *field.Path) *field.Path {
	if root == nil {
		return field.NewPath("<document>")
	}
	return root
}

// ParsePath turns a dotted path with indices ("spec.containers[0].foo")
// into a field.Path under root (which may be nil).
func ParsePath(root *field.Path, dotted string) *field.Path {
	p := root
	for _, part := range strings.Split(dotted, ".") {
		if part == "" {
			continue
		}
		name, rest, _ := strings.Cut(part, "[")
		if name != "" || p == nil {
			p = childPath(p, name)
		}
		for rest != "" {
			idx, after, _ := strings.Cut(rest, "]")
			if n, err := strconv.Atoi(idx); err == nil {
				p = p.Index(n)
			} else {
				p = p.Key(idx)
			}
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return orDocument(p)
}

// ShortJSONError is a JSON decoding error without the decoder's "json: "
// prefix, for messages that already say what was decoded.
func ShortJSONError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

package podspec

import (
	"errors"
	"reflect"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// decodeStrict decodes a JSON object into obj the way the API server does
// for `kubectl --validate=strict`: field names are case-sensitive, unknown
// and duplicate fields are errors (one per field, with its path). A value
// of the wrong type stops decoding; ok is false then.
func decodeStrict(js []byte, obj any) (errs field.ErrorList, ok bool) {
	strictErrs, err := kjson.UnmarshalStrict(js, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return field.ErrorList{typeError(js, reflect.TypeOf(obj), err)}, false
	}
	for _, se := range strictErrs {
		errs = append(errs, strictFieldError(se))
	}
	return errs, true
}

func strictFieldError(err error) *field.Error {
	var fe kjson.FieldError
	if !errors.As(err, &fe) {
		return field.Invalid(field.NewPath("<document>"), nil, err.Error())
	}
	what := "unknown field"
	if strings.HasPrefix(err.Error(), "duplicate field") {
		what = "duplicate field"
	}
	return field.Forbidden(parsePath(fe.FieldPath()), what)
}

// parsePath turns a dotted path with indices ("spec.containers[0].foo")
// into a field.Path.
func parsePath(dotted string) *field.Path {
	var p *field.Path
	for _, part := range strings.Split(dotted, ".") {
		if part == "" {
			continue
		}
		name, rest, _ := strings.Cut(part, "[")
		p = childPath(p, name)
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
	if p == nil {
		return field.NewPath("<document>")
	}
	return p
}

func shortJSONError(err error) string {
	return strings.TrimPrefix(err.Error(), "json: ")
}

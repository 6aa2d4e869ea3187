package specdecode

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// typeMismatch picks the JSON kind, the Go field path and the Go type out
// of the decoder's message ("json: cannot unmarshal string into Go struct
// field ContainerPort.spec.containers.ports.containerPort of type int32");
// the error type itself is internal to the decoder's module.
var typeMismatch = regexp.MustCompile(`cannot unmarshal (\w+) into Go (?:struct field \S+?\.((?:[a-z]\S*)?)|value) of type (\S+)`)

// typeError turns a decoding error into a field error. The decoder's path
// has no list indices; the document is searched for the offending value so
// the path points at it ("spec.containers[1].ports[0].containerPort").
func typeError(js []byte, rootType reflect.Type, err error, root *field.Path) *field.Error {
	m := typeMismatch.FindStringSubmatch(err.Error())
	if m == nil {
		return field.Invalid(orDocument(root), nil, ShortJSONError(err))
	}
	got, dotted, goType := m[1], jsonFieldPath(m[2]), m[3]
	want := expectedKind(rootType, dotted, goType)
	msg := fmt.Sprintf("must be %s, not %s", want, article(got))
	if want == "a number" && got == "string" && strings.HasSuffix(dotted, "grpc.port") {
		msg += ": gRPC probes take a port number, named ports are not supported"
	}
	var doc any
	if json.Unmarshal(js, &doc) == nil {
		if dotted == "" {
			// The document itself has the wrong kind: show it whole.
			return field.TypeInvalid(orDocument(root), doc, msg)
		}
		if path, value, found := findKind(doc, strings.Split(dotted, "."), got, root); found {
			return field.TypeInvalid(orDocument(path), value, msg)
		}
	}
	return field.TypeInvalid(ParsePath(root, dotted), nil, msg)
}

// jsonFieldPath drops the Go names of embedded structs ("PodSpec" in
// "spec.template.PodSpec.containers"): JSON names start lower-case.
func jsonFieldPath(goPath string) string {
	var kept []string
	for _, part := range strings.Split(goPath, ".") {
		if part != "" && part[0] >= 'a' && part[0] <= 'z' {
			kept = append(kept, part)
		}
	}
	return strings.Join(kept, ".")
}

// findKind walks names through doc, descending into every list element
// on the way, to the first value of the given JSON kind.
func findKind(doc any, names []string, kind string, at *field.Path) (*field.Path, any, bool) {
	if list, ok := doc.([]any); ok {
		for i, el := range list {
			if p, v, ok := findKind(el, names, kind, indexPath(at, i)); ok {
				return p, v, true
			}
		}
		if len(names) == 0 && kind == "array" {
			return at, nil, true
		}
		return nil, nil, false
	}
	if len(names) == 0 || (len(names) == 1 && names[0] == "") {
		if jsonKind(doc) == kind {
			return at, scalar(doc), true
		}
		return nil, nil, false
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, false
	}
	child, ok := obj[names[0]]
	if !ok {
		return nil, nil, false
	}
	return findKind(child, names[1:], kind, childPath(at, names[0]))
}

func indexPath(p *field.Path, i int) *field.Path {
	if p == nil {
		return field.NewPath("").Index(i)
	}
	return p.Index(i)
}

func childPath(p *field.Path, name string) *field.Path {
	if p == nil {
		return field.NewPath(name)
	}
	return p.Child(name)
}

// scalar keeps printable values for the error and drops containers.
func scalar(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		return nil
	}
	return v
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// expectedKind names what the Go field at the dotted JSON path expects,
// the way a manifest author thinks of it. It walks the decoded type by its
// json tags; goType from the message is the fallback.
func expectedKind(root reflect.Type, dotted, goType string) string {
	if t := fieldType(root, strings.Split(dotted, ".")); t != nil {
		return describeType(t)
	}
	switch {
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"), strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	}
	return "of type " + goType
}

var (
	intOrStringType = reflect.TypeOf(intstr.IntOrString{})
	quantityType    = reflect.TypeOf(resource.Quantity{})
	timeType        = reflect.TypeOf(metav1.Time{})
)

func describeType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case intOrStringType:
		return "a number or a name"
	case quantityType:
		return "a quantity (like 100m or 1Gi)"
	case timeType:
		return "a timestamp"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "a mapping"
}

// fieldType follows JSON names through struct fields (inline embedded
// structs included), pointers, slices and maps.
func fieldType(t reflect.Type, names []string) reflect.Type {
	for len(names) > 0 {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		name := names[0]
		names = names[1:]
		if name == "" {
			continue
		}
		switch t.Kind() {
		case reflect.Map:
			t = t.Elem()
		case reflect.Struct:
			f, ok := jsonField(t, name)
			if !ok {
				return nil
			}
			t = f
		default:
			return nil
		}
	}
	return t
}

func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				if inner, ok := jsonField(ft, name); ok {
					return inner, true
				}
			}
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// KindOf names the kind of a decoded JSON value the way a manifest author
// thinks of it ("a mapping", "a list", "a string", …).
func KindOf(v any) string { return article(jsonKind(v)) }

func article(jsonKind string) string {
	switch jsonKind {
	case "array":
		return "a list"
	case "object":
		return "a mapping"
	case "bool":
		return "true or false"
	case "number":
		return "a number"
	case "string":
		return "a string"
	}
	return jsonKind
}

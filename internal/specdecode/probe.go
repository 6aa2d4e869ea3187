package specdecode

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Probe decodes one corev1.Probe written as YAML or JSON, strictly. It
// returns every unknown or duplicate field with its path under root, or
// the one wrong-typed value that stopped decoding; p is nil only then, or
// when the input is empty, null or not YAML at all. Defaults and
// validation are the caller's.
func Probe(data []byte, root *field.Path) (p *corev1.Probe, errs field.ErrorList) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, field.ErrorList{field.Required(orDocument(root), "the probe is empty")}
	}
	// The strict converter rejects duplicate keys, which the plain one
	// would silently resolve to the last value.
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, field.ErrorList{field.Invalid(orDocument(root), nil, "is not valid YAML or JSON: "+err.Error())}
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, field.ErrorList{field.Required(orDocument(root), "the probe is empty")}
	}
	p = &corev1.Probe{}
	errs, ok := Strict(js, p, root)
	if !ok {
		return nil, errs
	}
	return p, errs
}

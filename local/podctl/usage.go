package podctl

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// UsageError is a request that breaks the command's rules, whatever the
// server holds: the command exits 2 on it.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// checkNamespace refuses a -n that can be no namespace (a DNS label).
func checkNamespace(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return usagef("-n %q: %s", ns, strings.Join(errs, "; "))
	}
	return nil
}

// isPod reports a name kubectl takes for the pods resource.
func isPod(s string) bool { return s == "pod" || s == "pods" || s == "po" }

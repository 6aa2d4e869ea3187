package contract

import (
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/podgate/podgate/internal/specdecode"
)

// strictJSON decodes one JSON value with the strict decoder every probe
// goes through (unknown and duplicate fields rejected, field names
// case-sensitive, trailing data refused), so a typo in a hand-written
// variable does not pass silently. Errors name the field path inside the
// value, under root when given (a list needs one: field paths cannot start
// with an index).
func strictJSON(s string, v any, root *field.Path) error {
	errs, _ := specdecode.Strict([]byte(s), v, root)
	return errs.ToAggregate()
}

// runnable checks that the gate can run p itself: one network handler with
// a numeric port (the gate cannot resolve a container's port names).
func runnable(p *corev1.Probe) error {
	if p == nil {
		return errors.New("is null")
	}
	n := 0
	var err error
	if h := p.HTTPGet; h != nil {
		n++
		err = numericPort(h.Port)
		if s := h.Scheme; s != "" && !strings.EqualFold(string(s), "http") && !strings.EqualFold(string(s), "https") {
			err = fmt.Errorf("httpGet scheme %q is neither HTTP nor HTTPS", s)
		}
	}
	if t := p.TCPSocket; t != nil {
		n++
		err = numericPort(t.Port)
	}
	if g := p.GRPC; g != nil {
		n++
		if g.Port < 1 || g.Port > 65535 {
			err = fmt.Errorf("grpc port %d is not in 1-65535", g.Port)
		}
	}
	if p.Exec != nil {
		return errors.New("exec probes run in their container, not in the gate: list the container in " + EnvDelegatedReadiness)
	}
	switch {
	case n == 0:
		return errors.New("has no httpGet, tcpSocket or grpc handler")
	case n > 1:
		return errors.New("has more than one handler")
	}
	return err
}

func numericPort(p intstr.IntOrString) error {
	if p.Type == intstr.String {
		return fmt.Errorf("port %q is a name; the gate needs a number", p.StrVal)
	}
	if p.IntVal < 1 || p.IntVal > 65535 {
		return fmt.Errorf("port %d is not in 1-65535", p.IntVal)
	}
	return nil
}

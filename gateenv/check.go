package gateenv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// strictJSON decodes one JSON value, rejecting unknown fields and trailing
// data, so a typo in a hand-written variable does not pass silently.
func strictJSON(s string, v any) error {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the JSON value")
	}
	return nil
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

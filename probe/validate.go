package probe

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks the rules every probe must satisfy whatever its kind and
// container, as the API server does, and returns every violation with its
// field path. Rules that depend on the probe kind (successThreshold 1 for
// liveness/startup, no grace period on readiness) or on the container
// (a named port must exist) belong to the caller.
//
// Defaults are expected to be applied first (prober.SetDefaults): a zero
// period or threshold is then an error, as it would be after the API
// server's defaulting.
func Validate(p *corev1.Probe, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if p == nil {
		return errs
	}
	errs = append(errs, validateHandler(&p.ProbeHandler, fldPath)...)

	errs = append(errs, nonNegative(int64(p.InitialDelaySeconds), fldPath.Child("initialDelaySeconds"))...)
	errs = append(errs, atLeastOne(int64(p.TimeoutSeconds), fldPath.Child("timeoutSeconds"))...)
	errs = append(errs, atLeastOne(int64(p.PeriodSeconds), fldPath.Child("periodSeconds"))...)
	errs = append(errs, atLeastOne(int64(p.SuccessThreshold), fldPath.Child("successThreshold"))...)
	errs = append(errs, atLeastOne(int64(p.FailureThreshold), fldPath.Child("failureThreshold"))...)
	if g := p.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

func nonNegative(v int64, fldPath *field.Path) field.ErrorList {
	if v < 0 {
		return field.ErrorList{field.Invalid(fldPath, v, "must be greater than or equal to 0")}
	}
	return nil
}

func atLeastOne(v int64, fldPath *field.Path) field.ErrorList {
	if v < 1 {
		return field.ErrorList{field.Invalid(fldPath, v, "must be greater than or equal to 1")}
	}
	return nil
}

// validateHandler requires exactly one of exec, httpGet, tcpSocket and grpc.
func validateHandler(h *corev1.ProbeHandler, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if h.Exec != nil {
		n++
		errs = append(errs, validateExec(h.Exec, fldPath.Child("exec"))...)
	}
	if h.HTTPGet != nil {
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("httpGet"), "may not specify more than 1 handler type"))
		} else {
			errs = append(errs, validateHTTPGet(h.HTTPGet, fldPath.Child("httpGet"))...)
		}
		n++
	}
	if h.TCPSocket != nil {
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("tcpSocket"), "may not specify more than 1 handler type"))
		} else {
			errs = append(errs, validatePortNumOrName(h.TCPSocket.Port, fldPath.Child("tcpSocket", "port"))...)
		}
		n++
	}
	if h.GRPC != nil {
		if n > 0 {
			errs = append(errs, field.Forbidden(fldPath.Child("grpc"), "may not specify more than 1 handler type"))
		} else {
			for _, msg := range validation.IsValidPortNum(int(h.GRPC.Port)) {
				errs = append(errs, field.Invalid(fldPath.Child("grpc", "port"), h.GRPC.Port, msg))
			}
		}
		n++
	}
	if n == 0 {
		errs = append(errs, field.Required(fldPath, "must specify a handler type (exec, httpGet, tcpSocket or grpc)"))
	}
	return errs
}

func validateExec(e *corev1.ExecAction, fldPath *field.Path) field.ErrorList {
	if len(e.Command) == 0 {
		return field.ErrorList{field.Required(fldPath.Child("command"), "")}
	}
	return nil
}

func validateHTTPGet(h *corev1.HTTPGetAction, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(fldPath.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, fldPath.Child("port"))...)
	// The kubelet lower-cases the scheme before use, but the API server only
	// accepts the two upper-case spellings; podgate rejects what it would.
	switch h.Scheme {
	case corev1.URISchemeHTTP, corev1.URISchemeHTTPS:
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("scheme"), h.Scheme,
			[]string{string(corev1.URISchemeHTTP), string(corev1.URISchemeHTTPS)}))
	}
	for i, hdr := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
			errs = append(errs, field.Invalid(fldPath.Child("httpHeaders").Index(i).Child("name"), hdr.Name, msg))
		}
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fldPath, port.IntValue(), msg))
		}
	case intstr.String:
		if port.StrVal == "" {
			return field.ErrorList{field.Required(fldPath, "")}
		}
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(fldPath, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.Invalid(fldPath, port, "unknown port type"))
	}
	return errs
}

// HandlerKind names the probe's handler ("exec", "httpGet", "tcpSocket",
// "grpc"), or "" when none is set.
func HandlerKind(p *corev1.Probe) string {
	switch {
	case p == nil:
		return ""
	case p.Exec != nil:
		return "exec"
	case p.HTTPGet != nil:
		return "httpGet"
	case p.TCPSocket != nil:
		return "tcpSocket"
	case p.GRPC != nil:
		return "grpc"
	}
	return ""
}

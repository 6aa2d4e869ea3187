package prober

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Config is a probe's timing with the defaults applied.
type Config struct {
	InitialDelay     time.Duration
	Period           time.Duration
	Timeout          time.Duration
	SuccessThreshold int
	FailureThreshold int
	// TerminationGracePeriodSeconds is the probe-level override of the pod's
	// grace period for a kill caused by this probe (liveness/startup only);
	// nil means use the pod's.
	TerminationGracePeriodSeconds *int64
}

// NewConfig applies the defaults to p and checks it the way the API server
// does. Errors name the field, e.g.
// `livenessProbe.successThreshold: Invalid value: 2: must be 1 for liveness and startup probes`.
func NewConfig(kind Kind, p *corev1.Probe) (Config, error) {
	if !kind.valid() {
		return Config{}, fmt.Errorf("unknown probe kind %d", int(kind))
	}
	path := field.NewPath(kind.field())
	if p == nil {
		return Config{}, field.Required(path, "probe spec is nil")
	}
	var errs field.ErrorList
	for _, f := range []struct {
		name string
		v    int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds},
		{"periodSeconds", p.PeriodSeconds},
		{"timeoutSeconds", p.TimeoutSeconds},
		{"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold},
	} {
		if f.v < 0 {
			errs = append(errs, field.Invalid(path.Child(f.name), f.v, "must be greater than or equal to 0"))
		}
	}
	c, _ := Timing(p, false)
	if kind != Readiness && c.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1 for liveness and startup probes"))
	}
	if g := p.TerminationGracePeriodSeconds; g != nil {
		switch {
		case kind == Readiness:
			errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must not be set for readiness probes"))
		case *g <= 0:
			// The API server rejects 0 here, unlike the pod-level field
			// (docs/facts.md §4b).
			errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
		default:
			v := *g
			c.TerminationGracePeriodSeconds = &v
		}
	}
	if len(errs) > 0 {
		return Config{}, errs.ToAggregate()
	}
	return c, nil
}

package prober

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults the API server fills in when a probe field is left at 0.
const (
	DefaultPeriod           = 10 * time.Second
	DefaultTimeout          = 1 * time.Second
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
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
	orDefault := func(name string, v, def int32) int32 {
		if v < 0 {
			errs = append(errs, field.Invalid(path.Child(name), v, "must be greater than or equal to 0"))
		}
		if v <= 0 {
			return def
		}
		return v
	}
	c := Config{
		InitialDelay:     time.Duration(orDefault("initialDelaySeconds", p.InitialDelaySeconds, 0)) * time.Second,
		Period:           time.Duration(orDefault("periodSeconds", p.PeriodSeconds, int32(DefaultPeriod/time.Second))) * time.Second,
		Timeout:          time.Duration(orDefault("timeoutSeconds", p.TimeoutSeconds, int32(DefaultTimeout/time.Second))) * time.Second,
		SuccessThreshold: int(orDefault("successThreshold", p.SuccessThreshold, DefaultSuccessThreshold)),
		FailureThreshold: int(orDefault("failureThreshold", p.FailureThreshold, DefaultFailureThreshold)),
	}
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

package prober

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// FuzzNewConfig: any probe timing either is rejected with an error or
// yields a configuration the workers can run (positive period, thresholds
// of at least one); it never panics.
func FuzzNewConfig(f *testing.F) {
	f.Add(uint8(0), int32(0), int32(0), int32(0), int32(0), int32(0), int64(-1))
	f.Add(uint8(1), int32(5), int32(10), int32(1), int32(1), int32(3), int64(30))
	f.Add(uint8(2), int32(-1), int32(-1), int32(-1), int32(2), int32(-1), int64(0))
	f.Fuzz(func(t *testing.T, kind uint8, delay, period, timeout, succ, fail int32, grace int64) {
		p := &corev1.Probe{InitialDelaySeconds: delay, PeriodSeconds: period, TimeoutSeconds: timeout, SuccessThreshold: succ, FailureThreshold: fail}
		if grace >= 0 {
			p.TerminationGracePeriodSeconds = &grace
		}
		k := Kind(kind % 4)
		c, err := NewConfig(k, p)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if !k.valid() || c.Period < time.Second || c.Timeout < time.Second || c.InitialDelay < 0 ||
			c.SuccessThreshold < 1 || c.FailureThreshold < 1 || (k != Readiness && c.SuccessThreshold != 1) {
			t.Fatalf("accepted %v %+v as %+v", k, p, c)
		}
		if c.TerminationGracePeriodSeconds != nil && (k == Readiness || *c.TerminationGracePeriodSeconds < 1) {
			t.Fatalf("accepted grace %d for %v", *c.TerminationGracePeriodSeconds, k)
		}
	})
}

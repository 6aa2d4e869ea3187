package contract

import (
	"errors"
	"fmt"
	"time"
)

// AnnotationDrainQuietPeriod on a pod (a Deployment's or Knative
// Service's pod template) sets the gate's drain quiet period
// (EnvDrainQuietPeriod) for that workload, a Go duration such as "5s".
// The injector writes it into the gate's environment; validation refuses
// a value that is no duration, is negative, or does not fit the pod's
// terminationGracePeriodSeconds (QuietPeriodFits).
const AnnotationDrainQuietPeriod = "podgate.dev/drain-quiet-period"

// ParseDrainQuietPeriod reads AnnotationDrainQuietPeriod's value: a
// non-negative Go duration ("5s", "1m30s", "0s"). A number without a unit
// is refused: "30" could mean seconds or, to a Go reader, nanoseconds.
func ParseDrainQuietPeriod(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("not a duration such as 5s or 1m30s: %w", err)
	}
	if d < 0 {
		return 0, errors.New("must not be negative")
	}
	return d, nil
}

// QuietPeriodFits says whether a quiet period leaves room in a grace
// period of grace seconds: it must be shorter than the grace period, since
// the drain runs inside it (the preStop hooks wait for the drain) and the
// containers' own stop and the requests still in flight need time too.
// At or past the grace period the kubelet's SIGKILL would end the drain.
// A quiet period of 0 always fits.
func QuietPeriodFits(quiet time.Duration, grace int64) bool {
	return quiet == 0 || quiet < time.Duration(grace)*time.Second
}

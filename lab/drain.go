package lab

import (
	"fmt"
	"strings"
	"time"

	"github.com/podgate/podgate/gate/contract"
)

// LoggedAt is the time= stamp of the first line of output that starts
// with prefix and contains substr: each process stamps its own lines
// (slog's time=, one clock), while the order of lines in podgate's output
// is only the order two pipes were relayed in, which a loaded machine
// may swap.
func LoggedAt(output, prefix, substr string) (time.Time, error) {
	for _, l := range strings.Split(output, "\n") {
		if !strings.HasPrefix(l, prefix) || !strings.Contains(l, substr) {
			continue
		}
		_, rest, ok := strings.Cut(l, "time=")
		stamp, _, _ := strings.Cut(rest, " ")
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if !ok || err != nil {
			return time.Time{}, fmt.Errorf("line %q has no time= stamp", l)
		}
		return at, nil
	}
	return time.Time{}, fmt.Errorf("no line %q from %q", substr, strings.TrimSuffix(prefix, " | "))
}

// DrainedFirst checks, in the containers' output (World.Output), that
// each of the pod's containers was asked to stop only after the pod's
// gate had drained: the gate's (or, in a Knative revision's pod, its
// queue container's) "drained: " line before each container's
// "termination requested" (the test app's line on SIGTERM). That is what
// the gate's wait-for-drain preStop hook holds.
func DrainedFirst(output, pod string, containers []string) error {
	drained, err := LoggedAt(output, pod+"/"+contract.GateContainerName+" | ", "drained: ")
	if err != nil {
		// A Knative revision's pod: the gate is its queue container.
		var errQueue error
		if drained, errQueue = LoggedAt(output, pod+"/"+contract.KnativeQueueContainerName+" | ", "drained: "); errQueue != nil {
			return err
		}
	}
	for _, c := range containers {
		term, err := LoggedAt(output, pod+"/"+c+" | ", "termination requested")
		if err != nil {
			return err
		}
		if term.Before(drained) {
			return fmt.Errorf("%s of %s: SIGTERM logged at %s, the gate's drain at %s: want the drain first",
				c, pod, term.Format(time.StampMilli), drained.Format(time.StampMilli))
		}
	}
	return nil
}

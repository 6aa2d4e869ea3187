package lab

import (
	"context"
	"fmt"
	"time"
)

// PollInterval is how often the Wait helpers ask the control API.
const PollInterval = 25 * time.Millisecond

// Poll calls check at once and then every interval until it reports done
// or ctx ends. check's error describes the state seen when not done (it
// does not stop the polling); the last one is part of the timeout error,
// so a failed wait says what it saw instead.
func Poll(ctx context.Context, interval time.Duration, what string, check func(context.Context) (done bool, state error)) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	var last error
	for {
		done, state := check(ctx)
		if done {
			return nil
		}
		if state != nil && ctx.Err() == nil {
			// A state seen as ctx ended is only ctx's error again.
			last = state
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			if last == nil {
				return fmt.Errorf("lab: waiting for %s: %w", what, ctx.Err())
			}
			return fmt.Errorf("lab: waiting for %s: %w; last seen: %v", what, ctx.Err(), last)
		}
	}
}

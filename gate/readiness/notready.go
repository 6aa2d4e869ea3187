package readiness

import (
	"fmt"
	"unicode/utf8"

	"github.com/podgate/podgate/probe"
)

// phraseMax bounds what one container adds to NotReady's words (a
// redirect's probe message carries a response body).
const phraseMax = 256

// NotReady names each container that is not ready, with why, in the words
// of the gate's pod condition: "sidecar (readiness probe failed: HTTP
// probe failed with statuscode: 503)". The words change only when a
// verdict or a probe's result does, never with counts or times, so that
// the condition is written no more often than it changes.
func (a *Aggregator) NotReady() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, c := range a.containers {
		ok, reason := c.ready(a.opts.HaveStatusSource)
		if ok {
			continue
		}
		if c.Probe != nil && !c.verdict {
			reason = c.probePhrase()
		}
		out = append(out, c.Name+" ("+truncate(reason, phraseMax)+")")
	}
	return out
}

// probePhrase says why the gate's readiness probe of c does not pass, in
// the kubelet's event words ("readiness probe failed: <probe message>").
// It leaves out counts and times, so that it changes only when the probe's
// result does.
func (c *state) probePhrase() string {
	switch {
	case c.attempts == 0:
		return "readiness probe not run yet"
	case c.last.Result == probe.Error:
		return "readiness probe errored: " + c.last.Message
	case c.last.Result.Passed():
		return fmt.Sprintf("readiness probe passed, not yet %d times in a row", c.timing.SuccessThreshold)
	case c.last.Message != "":
		return "readiness probe failed: " + c.last.Message
	}
	return "readiness probe failed"
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

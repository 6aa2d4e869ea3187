package load

import (
	"fmt"
	"time"
)

// Request is one request the load sent and what became of it.
type Request struct {
	// Worker is the load worker that sent it (0-based).
	Worker int
	// Start is when the request was sent.
	Start time.Time
	// Duration is the time until the body was read (or the error came);
	// zero while in flight.
	Duration time.Duration
	// Status is the HTTP status code, 0 when the request got no response.
	Status int
	// Err is the transport error (refused, reset, timeout, …), "" if a
	// response was read in full.
	Err string
	// Body is the first bytes of the response body.
	Body string
}

// End is when the request completed.
func (r Request) End() time.Time { return r.Start.Add(r.Duration) }

// OK reports a complete 2xx response.
func (r Request) OK() bool { return r.Err == "" && r.Status >= 200 && r.Status <= 299 }

// Outcome is the status code as text, or "error".
func (r Request) Outcome() string {
	if r.Err != "" {
		return "error"
	}
	return fmt.Sprint(r.Status)
}

// String is one line for failure logs, with the wall-clock start.
func (r Request) String() string { return r.Format(time.Time{}) }

// Format is one line for failure logs; with a non-zero origin, times are
// given relative to it.
func (r Request) Format(origin time.Time) string {
	start := r.Start.Format("15:04:05.000")
	if !origin.IsZero() {
		start = "+" + r.Start.Sub(origin).Round(time.Millisecond).String()
	}
	what := r.Outcome()
	if r.Err != "" {
		what += " " + r.Err
	} else if r.Body != "" {
		what += fmt.Sprintf(" %q", r.Body)
	}
	return fmt.Sprintf("worker %d at %s for %s: %s", r.Worker, start, r.Duration.Round(time.Millisecond), what)
}

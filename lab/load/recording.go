package load

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Recording is what a load saw: every completed request, ordered by start,
// and the requests still in flight when it was taken.
type Recording struct {
	Requests []Request
	InFlight []Request
}

// Counts are the completed requests by outcome: "200", "504", …, "error".
func (r *Recording) Counts() map[string]int {
	c := map[string]int{}
	for _, q := range r.Requests {
		c[q.Outcome()]++
	}
	return c
}

// Failures are the completed requests that were not a complete 2xx
// response: other statuses and transport errors.
func (r *Recording) Failures() []Request {
	return r.filter(func(q Request) bool { return !q.OK() })
}

// StartedBetween are the completed requests sent in [from, to).
func (r *Recording) StartedBetween(from, to time.Time) []Request {
	return r.filter(func(q Request) bool { return !q.Start.Before(from) && q.Start.Before(to) })
}

// SucceededAfter reports whether a request sent at or after t got a 2xx:
// traffic flows again after t, not merely a request held across it.
func (r *Recording) SucceededAfter(t time.Time) bool {
	return slices.ContainsFunc(r.Requests, func(q Request) bool { return q.OK() && !q.Start.Before(t) })
}

// ServedBetween are the requests sent at or after from that completed
// with 2xx before to. While no pod may serve — from the moment the
// service was seen not ready until it may be again — this must be empty.
func (r *Recording) ServedBetween(from, to time.Time) []Request {
	return r.filter(func(q Request) bool { return q.OK() && !q.Start.Before(from) && q.End().Before(to) })
}

// Released are the requests sent in [from, at) that completed with 2xx at
// or after at: held while nothing could serve them, then answered.
func (r *Recording) Released(from, at time.Time) []Request {
	return r.filter(func(q Request) bool {
		return q.OK() && !q.Start.Before(from) && q.Start.Before(at) && !q.End().Before(at)
	})
}

// ServedSince counts the requests sent at or after t that were served.
func (r *Recording) ServedSince(t time.Time) int {
	return len(r.filter(func(q Request) bool { return q.OK() && !q.Start.Before(t) }))
}

// InFlightSince are the requests still in flight that were sent at or
// after t: once nothing may serve them, the requests being held.
func (r *Recording) InFlightSince(t time.Time) []Request {
	var out []Request
	for _, q := range r.InFlight {
		if !q.Start.Before(t) {
			out = append(out, q)
		}
	}
	return out
}

// WithStatus are the completed requests answered with code whose body
// starts with bodyPrefix.
func (r *Recording) WithStatus(code int, bodyPrefix string) []Request {
	return r.filter(func(q Request) bool {
		return q.Err == "" && q.Status == code && strings.HasPrefix(q.Body, bodyPrefix)
	})
}

func (r *Recording) filter(keep func(Request) bool) []Request {
	var out []Request
	for _, q := range r.Requests {
		if keep(q) {
			out = append(out, q)
		}
	}
	return out
}

// Summary is a few lines for failure logs: counts, in flight, and the
// first failures, times relative to origin (zero: wall clock).
func (r *Recording) Summary(origin time.Time) string {
	var b strings.Builder
	c := r.Counts()
	fmt.Fprintf(&b, "%d requests:", len(r.Requests))
	for _, k := range slices.Sorted(maps.Keys(c)) {
		fmt.Fprintf(&b, " %s×%d", k, c[k])
	}
	fmt.Fprintf(&b, "; %d in flight\n", len(r.InFlight))
	fails := r.Failures()
	for i, q := range fails {
		if i == 20 {
			fmt.Fprintf(&b, "  … %d more failures\n", len(fails)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", q.Format(origin))
	}
	return b.String()
}

// FormatRequests lists requests one per line, at most limit of them.
func FormatRequests(qs []Request, origin time.Time, limit int) string {
	var b strings.Builder
	for i, q := range qs {
		if i == limit {
			fmt.Fprintf(&b, "  … %d more\n", len(qs)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", q.Format(origin))
	}
	return b.String()
}

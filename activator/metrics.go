package activator

// Metrics receives the activator's measurements; activator/prommetrics
// exports them to Prometheus. Calls are made under the target's lock, in
// the order the changes happened, so an implementation must be quick and
// must not call back into the activator.
type Metrics interface {
	// Request counts one finished request by the status code the client
	// got (499 when the client went away before an answer).
	Request(target string, code int)
	// QueueDepth reports how many requests wait for a backend.
	QueueDepth(target string, depth int)
	// Backends reports how many backends may take traffic, and how many
	// pods the target has.
	Backends(target string, ready, total int)
}

type nopMetrics struct{}

func (nopMetrics) Request(string, int)       {}
func (nopMetrics) QueueDepth(string, int)    {}
func (nopMetrics) Backends(string, int, int) {}

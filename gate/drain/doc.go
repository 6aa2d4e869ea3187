// Package drain decides when a terminating gate may exit, as queue-proxy's
// drain does: once no request arrived for the quiet period and none is in
// flight — or, when the pod's only router confirmed it sends nothing
// more, as soon as none is in flight. It counts requests on the hot path
// with a few atomic operations and times the quiet period on an injected
// clock.
package drain

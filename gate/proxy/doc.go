// Package proxy is the gate's data path to the serving container, as
// queue-proxy's: HTTP/1.1 (upgrades included) and h2c through a reverse
// proxy that rewrites the request as queue-proxy does (Host,
// X-Forwarded-*, Forwarded, the activator's headers); the ride-through,
// which holds a request whose connection the restarting container refused
// and sends it once the container is back, and sends an idempotent request
// that died in the container unanswered again once; CONTAINER_CONCURRENCY
// with queue-proxy's queue; queue-proxy's three time limits (the whole
// request, the response start, the idle time; timeout.go); and the
// response recorder and request log of the serving port.
//
// An idempotent HTTP/1.x request without a body, the most common one,
// goes its own way (direct.go, internal/h1): written to a kept-alive
// connection and answered in the request's goroutine, with
// ReverseProxy's rules but neither its copies nor the Transport's
// goroutines; every other request goes through httputil.ReverseProxy
// and http.Transport.
package proxy

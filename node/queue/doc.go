// Package queue is a pod worker's mailbox: an unbounded FIFO with a
// wake-up channel, so the producers (process waiters, the prober's
// callback, timers, API calls) never block on the one goroutine that
// consumes it.
package queue

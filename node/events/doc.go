// Package events records events the way the kubelet's event recorder
// does: a repeat of the same event (same object, field, type, reason,
// message and source) bumps the count and lastTimestamp of the one already
// stored instead of adding another; events are named POD.<hex
// nanoseconds>, unique even when a fake clock gives two the same time; and
// only the newest Limit are kept. Where they are stored is the caller's
// Writer: the events API. The reasons the node agent's events carry are
// the kubelet's (reasons.go).
package events

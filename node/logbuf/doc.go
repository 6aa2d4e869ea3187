// Package logbuf keeps a container instance's output as the kubelet's
// container runtime does for `kubectl logs`: whole lines with their time,
// bounded in bytes (the oldest dropped first), readable from any point —
// the last N lines, lines since a time, with timestamps — and followed
// until the instance ends. LineWriter splits a process's stream into those
// lines and copies each, prefixed, to podgate's own output; Kept holds a
// container's current and previous instance's output.
package logbuf

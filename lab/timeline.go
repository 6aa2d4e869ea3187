package lab

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Timeline marks the instants of a scenario (toggled, seen not ready,
// toggled back, …), against which a Recording is judged and by which a
// failure log is read.
type Timeline struct {
	mu     sync.Mutex
	origin time.Time
	marks  []mark
}

type mark struct {
	name string
	at   time.Time
}

// NewTimeline starts a timeline now.
func NewTimeline() *Timeline { return &Timeline{origin: time.Now()} }

// Origin is when the timeline started; failure logs count from it.
func (tl *Timeline) Origin() time.Time { return tl.origin }

// Mark records name at the current instant and returns the instant.
func (tl *Timeline) Mark(name string) time.Time {
	now := time.Now()
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.marks = append(tl.marks, mark{name, now})
	return now
}

// String lists the marks relative to the origin.
func (tl *Timeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	for _, m := range tl.marks {
		fmt.Fprintf(&b, "  +%s %s\n", m.at.Sub(tl.origin).Round(time.Millisecond), m.name)
	}
	return b.String()
}

package lab

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Timeline marks the instants of a scenario (toggled, seen not ready,
// toggled back, …), against which a load.Recording is judged and by which
// a failure log is read.
type Timeline struct {
	mu     sync.Mutex
	origin time.Time
	marks  []Mark
}

// Mark is a named instant of a scenario.
type Mark struct {
	Name string
	At   time.Time
}

// NewTimeline starts a timeline now.
func NewTimeline() *Timeline { return &Timeline{origin: time.Now()} }

// Origin is when the timeline started; failure logs count from it.
func (tl *Timeline) Origin() time.Time { return tl.origin }

// Mark records name at the current instant and returns the instant.
func (tl *Timeline) Mark(name string) time.Time { return tl.MarkAt(name, time.Now()) }

// MarkAt records name at instant at (a judge's test places its marks).
func (tl *Timeline) MarkAt(name string, at time.Time) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.marks = append(tl.marks, Mark{name, at})
	return at
}

// Marks are the marks so far, in the order they were made.
func (tl *Timeline) Marks() []Mark {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return slices.Clone(tl.marks)
}

// String lists the marks relative to the origin.
func (tl *Timeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	var b strings.Builder
	for _, m := range tl.marks {
		fmt.Fprintf(&b, "  +%s %s\n", m.At.Sub(tl.origin).Round(time.Millisecond), m.Name)
	}
	return b.String()
}

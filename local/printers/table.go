package printers

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// writeTable pads each cell but the last to its column's width plus three
// spaces, at least six: the layout of kubectl's tabwriter. widths persists
// across calls and only grows.
func writeTable(w *bytes.Buffer, rows [][]string, widths *[]int) {
	const padding, minWidth = 3, 6
	for _, r := range rows {
		for i, c := range r {
			if i >= len(*widths) {
				*widths = append(*widths, 0)
			}
			(*widths)[i] = max((*widths)[i], len([]rune(c))+padding, minWidth)
		}
	}
	for _, r := range rows {
		for i, c := range r {
			if i == len(r)-1 {
				w.WriteString(c)
				break
			}
			w.WriteString(c)
			w.WriteString(strings.Repeat(" ", (*widths)[i]-len([]rune(c))))
		}
		w.WriteByte('\n')
	}
}

// escapeCell keeps one cell on one line, as kubectl does: a multi-line
// value (an exec probe's output in an event message) is cut at the first
// line break with "...", and control characters are shown, not obeyed.
func escapeCell(s string) string {
	if i := strings.IndexAny(s, "\f\n\r"); i >= 0 {
		s = s[:i] + "..."
	}
	if strings.IndexFunc(s, isControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case isControl(r):
			fmt.Fprintf(&b, "^%c", r^0x40)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// age is kubectl's AGE: a human duration since t, "<unknown>" when unset.
func age(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func microAge(t metav1.MicroTime, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

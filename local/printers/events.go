package printers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Events print as `kubectl events`, and with -o wide as `kubectl get
// events -o wide`.
var Events = Resource{
	NameKind:    "event",
	Columns:     []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"},
	WideColumns: []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "SUBOBJECT", "SOURCE", "MESSAGE", "FIRST SEEN", "COUNT", "NAME"},
}

// EventRow is `kubectl events`' row: LAST SEEN folds repeats as
// "2m (x3 over 5m)", OBJECT is Kind/name. Wide adds `kubectl get events -o
// wide`'s columns, with the count in its own column.
func EventRow(e *corev1.Event, wide bool, now time.Time) []string {
	object := e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name
	msg := strings.TrimSpace(e.Message)
	first := age(e.FirstTimestamp, now)
	if !e.EventTime.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last, count := first, e.Count
	switch {
	case e.Series != nil:
		last, count = microAge(e.Series.LastObservedTime, now), e.Series.Count
	case !e.LastTimestamp.IsZero():
		last = age(e.LastTimestamp, now)
	}
	if !wide {
		seen := first
		if count > 1 {
			seen = fmt.Sprintf("%s (x%d over %s)", last, count, first)
		}
		return []string{seen, e.Type, e.Reason, object, msg}
	}
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	if e.Source.Host != "" {
		source += ", " + e.Source.Host
	}
	return []string{last, e.Type, e.Reason, object, e.InvolvedObject.FieldPath, source, msg, first, strconv.Itoa(int(max(count, 1))), e.Name}
}

// SortEvents orders events by when they were last seen, oldest first, as
// `kubectl events` does.
func SortEvents(events []corev1.Event) {
	slices.SortStableFunc(events, func(a, b corev1.Event) int {
		return eventTime(a).Compare(eventTime(b))
	})
}

func eventTime(e corev1.Event) time.Time {
	switch {
	case e.Series != nil:
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

package printers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EventTable is the API server's event table, `kubectl get events`: LAST
// SEEN TYPE REASON OBJECT MESSAGE, and for -o wide SUBOBJECT SOURCE FIRST
// SEEN COUNT NAME. OBJECT is kind/name with the kind in lower case.
var EventTable = TableOf[*corev1.Event]{
	Columns: []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: corev1.Event{}.SwaggerDoc()["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: corev1.Event{}.SwaggerDoc()["type"]},
		{Name: "Reason", Type: "string", Description: corev1.Event{}.SwaggerDoc()["reason"]},
		{Name: "Object", Type: "string", Description: corev1.Event{}.SwaggerDoc()["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["source"]},
		{Name: "Message", Type: "string", Description: corev1.Event{}.SwaggerDoc()["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: corev1.Event{}.SwaggerDoc()["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	},
	Cells: eventCells,
}

// Events print as `kubectl events`, and with -o wide as `kubectl get
// events -o wide`: the API server's columns either way.
var Events = Resource{NameKind: "event", Columns: EventTable.Columns}

// eventCells are an event's cells as the API server fills them: FIRST SEEN
// from firstTimestamp, else eventTime; LAST SEEN from the series, else
// lastTimestamp, else FIRST SEEN; COUNT from the series, else count, at
// least 1 (events of the events.k8s.io API leave it 0).
func eventCells(e *corev1.Event, now time.Time) []any {
	first := age(e.FirstTimestamp, now)
	if e.FirstTimestamp.IsZero() {
		first = microAge(e.EventTime, now)
	}
	last, count := first, e.Count
	if !e.LastTimestamp.IsZero() {
		last = age(e.LastTimestamp, now)
	}
	switch {
	case e.Series != nil:
		last, count = microAge(e.Series.LastObservedTime, now), e.Series.Count
	case count == 0:
		count = 1
	}
	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object += "/" + e.InvolvedObject.Name
	}
	source := firstSet(e.Source.Component, e.ReportingController)
	if host := firstSet(e.Source.Host, e.ReportingInstance); host != "" {
		source += ", " + host
	}
	return []any{last, e.Type, e.Reason, object, e.InvolvedObject.FieldPath, source, strings.TrimSpace(e.Message), first, int64(count), e.Name}
}

func firstSet(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// EventRow is, with wide, the API server's row (`kubectl get events -o
// wide`); without, `kubectl events`' row, which `podgate get events`
// prints: LAST SEEN folds repeats as "2m (x3 over 5m)" and OBJECT is
// Kind/name as the event names it.
func EventRow(e *corev1.Event, wide bool, now time.Time) []string {
	if wide {
		return EventTable.Row(e, true, now)
	}
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
	seen := first
	if count > 1 {
		seen = fmt.Sprintf("%s (x%d over %s)", last, count, first)
	}
	return []string{seen, e.Type, e.Reason, object, msg}
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

package kubewatch

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/podgate/podgate/record"
)

// eventLocked records e when it is new or its count grew. An event of the
// initial list is history from before the recording: its count is kept
// as the baseline, not recorded.
func (w *Watcher) eventLocked(e *corev1.Event, initial bool, now time.Time) {
	k := key(&e.ObjectMeta)
	count := e.Count
	if e.Series != nil && e.Series.Count > count {
		count = e.Series.Count // events.k8s.io's repeats, seen through core/v1
	}
	if count < 1 {
		count = 1
	}
	prev, seen := w.events[k]
	w.events[k] = max(prev, count)
	if initial || (seen && count <= prev) {
		return
	}
	obj := e.InvolvedObject
	f := record.Fact{
		Time: eventTime(e, now), Kind: record.KindEvent, Namespace: obj.Namespace, Container: containerOf(obj.FieldPath),
		Event: &record.Event{Type: e.Type, Reason: e.Reason, Message: e.Message, Object: obj.Kind + "/" + obj.Name, Count: count},
	}
	if f.Namespace == "" {
		f.Namespace = e.Namespace
	}
	if obj.Kind == "Pod" {
		f.Pod = obj.Name
	}
	w.cfg.Sink.Record(f)
	if w.cfg.ProbesFromEvents && obj.Kind == "Pod" {
		if p, ok := probeOf(e.Reason, e.Message); ok {
			pf := f
			pf.Kind, pf.Event, pf.Probe = record.KindProbe, nil, &p
			w.cfg.Sink.Record(pf)
		}
	}
}

// eventTime is the event's own time when it is precise: the last
// occurrence of an events.k8s.io series, or the eventTime of a first
// occurrence (both microseconds on the wire). lastTimestamp has whole
// seconds, and eventTime of a repeated core/v1 event is its first
// occurrence: for those the observation time is closer.
func eventTime(e *corev1.Event, now time.Time) time.Time {
	if e.Series != nil && !e.Series.LastObservedTime.IsZero() {
		return e.Series.LastObservedTime.Time
	}
	if e.Series == nil && e.Count <= 1 && !e.EventTime.IsZero() {
		return e.EventTime.Time
	}
	return now
}

// containerOf is the container a field path names:
// spec.containers{NAME}, spec.initContainers{NAME} or
// spec.ephemeralContainers{NAME}, as the kubelet writes it.
func containerOf(fieldPath string) string {
	for _, prefix := range []string{"spec.containers{", "spec.initContainers{", "spec.ephemeralContainers{"} {
		if rest, ok := strings.CutPrefix(fieldPath, prefix); ok {
			if name, ok := strings.CutSuffix(rest, "}"); ok && !strings.ContainsAny(name, "{}") {
				return name
			}
		}
	}
	return ""
}

// probeOf reads a probe attempt out of the kubelet's probe events:
// Unhealthy "Liveness probe failed: MESSAGE" or "… probe errored …:
// MESSAGE", ProbeWarning "Readiness probe warning: MESSAGE".
func probeOf(reason, message string) (record.Probe, bool) {
	if reason != "Unhealthy" && reason != "ProbeWarning" {
		return record.Probe{}, false
	}
	kind, rest, ok := strings.Cut(message, " probe ")
	switch kind {
	case "Liveness", "Readiness", "Startup":
	default:
		return record.Probe{}, false
	}
	if !ok {
		return record.Probe{}, false
	}
	p := record.Probe{Probe: strings.ToLower(kind)}
	verb, text, _ := strings.Cut(rest, ": ")
	switch {
	case strings.HasPrefix(verb, "failed"):
		p.Result = "failure"
	case strings.HasPrefix(verb, "errored"):
		p.Result = "error"
	case strings.HasPrefix(verb, "warning"):
		p.Result = "warning"
	default:
		return record.Probe{}, false
	}
	p.Message = text
	return p, true
}

package events

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Event sources.
const (
	ComponentKubelet   = "kubelet"
	ComponentScheduler = "default-scheduler"
)

// ReminderEvery is how often a repeating event is logged again: its
// first occurrence is logged at once, its repeats are counted in the
// event (as the kubelet's recorder does) and logged once a ReminderEvery
// with how many there were, so an unready pod probed every second does
// not write a line a second for as long as it stays so.
const ReminderEvery = time.Minute

// DefaultLimit bounds how many events a Recorder keeps; the oldest go
// first (the API server expires events after an hour instead).
const DefaultLimit = 2000

// Writer is where events go: the events API.
type Writer interface {
	// CreateEvent stores ev; an AlreadyExists error when its name is
	// taken.
	CreateEvent(ev *corev1.Event) error
	// UpdateEvent changes a stored event (a repeat bumps its count); a
	// NotFound error when it is gone.
	UpdateEvent(namespace, name string, change func(*corev1.Event)) error
	// DeleteEvent removes an event (the oldest, past the limit).
	DeleteEvent(namespace, name string) error
}

// Object is the pod an event is about.
type Object struct {
	Namespace, Name string
	UID             types.UID
}

// Event is one occurrence to record.
type Event struct {
	// FieldPath is the involved object's field, "spec.containers{app}";
	// empty for the pod as a whole.
	FieldPath string
	Type      string // corev1.EventTypeNormal or EventTypeWarning
	Reason    string
	Message   string
	// Component is the source: ComponentKubelet or ComponentScheduler.
	Component string
}

// key is what makes two events "the same" for aggregation, as the
// kubelet's event recorder compares them.
type key struct {
	obj Object
	Event
}

type nsName struct{ namespace, name string }

// Recorder writes events to a Writer, aggregating repeats. It is safe for
// concurrent use.
type Recorder struct {
	store Writer
	clock clock.PassiveClock
	node  string
	limit int
	log   *slog.Logger

	mu    sync.Mutex
	byKey map[key]string // → event name
	names map[nsName]key // event → key, for the limit
	// others are names another writer (the scheduler) took.
	others map[nsName]bool
	fifo   []nsName
	// logged is when each event was last logged and how many repeats
	// were counted since.
	logged map[key]*logLine
}

type logLine struct {
	at      time.Time
	repeats int
}

// New returns a Recorder writing to store, stamping events with clk's
// time and node as the kubelet's source host, keeping at most limit
// events (DefaultLimit when limit <= 0). Events are logged on log at
// Info, or Warn for a Warning: the first occurrence, then a reminder once
// a ReminderEvery while it repeats.
func New(store Writer, clk clock.PassiveClock, node string, limit int, log *slog.Logger) *Recorder {
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Recorder{store: store, clock: clk, node: node, limit: limit, log: log,
		byKey: map[key]string{}, names: map[nsName]key{}, others: map[nsName]bool{}, logged: map[key]*logLine{}}
}

// Record writes the event synchronously: when it returns, watchers can see
// it (the node agent's ordering relies on that). Its first occurrence is
// logged, its repeats once a ReminderEvery.
func (r *Recorder) Record(obj Object, ev Event) { r.write(obj, ev, true) }

// RecordQuietly is Record, but a repeat of an event already recorded is
// only counted, not logged again.
func (r *Recorder) RecordQuietly(obj Object, ev Event) { r.write(obj, ev, false) }

func (r *Recorder) write(obj Object, ev Event, logRepeat bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := metav1.NewTime(r.clock.Now())
	k := key{obj, ev}
	_, repeat := r.byKey[k]
	if !repeat || logRepeat {
		r.logOccurrence(k, now.Time, repeat)
	}
	if repeat && r.bump(k, now) {
		return
	}
	name, ok := r.create(obj, ev, now)
	if !ok {
		return
	}
	r.byKey[k] = name
	at := nsName{obj.Namespace, name}
	r.names[at] = k
	r.fifo = append(r.fifo, at)
	r.evictPastLimit()
}

// logOccurrence logs a first occurrence at once, and a repeat only when
// ReminderEvery has passed since the event's last line, with the repeats
// counted since.
func (r *Recorder) logOccurrence(k key, now time.Time, repeat bool) {
	attrs := []any{"pod", k.obj.Namespace + "/" + k.obj.Name, "reason", k.Reason, "field", k.FieldPath}
	if st := r.logged[k]; repeat && st != nil {
		st.repeats++
		if now.Sub(st.at) < ReminderEvery {
			return
		}
		attrs = append(attrs, "repeated", st.repeats, "in", now.Sub(st.at).Round(time.Second).String())
	}
	r.logged[k] = &logLine{at: now}
	level := slog.LevelInfo
	if k.Type == corev1.EventTypeWarning {
		level = slog.LevelWarn
	}
	r.log.Log(context.Background(), level, k.Message, attrs...)
}

// bump counts a repeat on the stored event; false when that event is
// gone (expired), so the repeat is written anew.
func (r *Recorder) bump(k key, now metav1.Time) bool {
	err := r.store.UpdateEvent(k.obj.Namespace, r.byKey[k], func(e *corev1.Event) {
		e.Count++
		e.LastTimestamp = now
	})
	switch {
	case err == nil:
		return true
	case !apierrors.IsNotFound(err):
		r.log.Warn("update event", "err", err)
		return true
	}
	delete(r.byKey, k)
	delete(r.logged, k)
	return false
}

// create stores a new event under a free name and returns the name.
func (r *Recorder) create(obj Object, ev Event, now metav1.Time) (string, bool) {
	name := r.freeName(obj, now)
	host := r.hostFor(ev.Component)
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: obj.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID, FieldPath: ev.FieldPath,
		},
		Reason:              ev.Reason,
		Message:             ev.Message,
		Source:              corev1.EventSource{Component: ev.Component, Host: host},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                ev.Type,
		ReportingController: ev.Component,
		ReportingInstance:   host,
	}
	err := r.store.CreateEvent(e)
	for apierrors.IsAlreadyExists(err) {
		// Another writer used the name (a fake clock gives everyone the
		// same timestamp): take the next.
		r.others[nsName{obj.Namespace, name}] = true
		name = r.freeName(obj, now)
		e.Name = name
		err = r.store.CreateEvent(e)
	}
	if err != nil {
		r.log.Warn("record event", "err", err)
		return "", false
	}
	return name, true
}

// evictPastLimit deletes the oldest events beyond the limit.
func (r *Recorder) evictPastLimit() {
	for len(r.fifo) > r.limit {
		old := r.fifo[0]
		r.fifo = r.fifo[1:]
		_ = r.store.DeleteEvent(old.namespace, old.name)
		if k, ok := r.names[old]; ok {
			delete(r.byKey, k)
			delete(r.logged, k)
			delete(r.names, old)
		}
	}
}

// hostFor: the scheduler reports no host; the kubelet its node.
func (r *Recorder) hostFor(component string) string {
	if component == ComponentScheduler {
		return ""
	}
	return r.node
}

// freeName is the kubelet's event name, POD.<hex nanoseconds>, made unique
// when two events share a timestamp (a fake clock does that).
func (r *Recorder) freeName(obj Object, now metav1.Time) string {
	ns := now.UnixNano()
	for {
		name := fmt.Sprintf("%s.%x", obj.Name, ns)
		at := nsName{obj.Namespace, name}
		if _, taken := r.names[at]; !taken && !r.others[at] {
			return name
		}
		ns++
	}
}

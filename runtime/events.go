package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Event reasons the node agent records, as the kubelet names them.
const (
	ReasonScheduled    = "Scheduled"
	ReasonPulled       = "Pulled"
	ReasonCreated      = "Created"
	ReasonStarted      = "Started"
	ReasonKilling      = "Killing"
	ReasonUnhealthy    = "Unhealthy"
	ReasonProbeWarning = "ProbeWarning"
	ReasonBackOff      = "BackOff"
	ReasonFailed       = "Failed"
)

// Event sources.
const (
	componentKubelet   = "kubelet"
	componentScheduler = "default-scheduler"
)

// DefaultEventLimit bounds how many events the agent keeps; the oldest go
// first (the API server expires events after an hour instead).
const DefaultEventLimit = 2000

// objectRef is the pod an event is about.
type objectRef struct {
	namespace, name string
	uid             types.UID
}

// eventKey is what makes two events "the same" for aggregation, as the
// kubelet's event recorder compares them: same object and field, type,
// reason, message and source.
type eventKey struct {
	ref       objectRef
	fieldPath string
	eventType string
	reason    string
	message   string
	component string
}

// recorder writes events the way the kubelet's recorder
// does: a repeat of the same event bumps count and lastTimestamp of the
// existing one instead of adding another.
type recorder struct {
	store EventWriter
	clock clock.PassiveClock
	node  string
	limit int
	log   *slog.Logger

	mu    sync.Mutex
	byKey map[eventKey]string // → event name
	names map[string]eventKey // namespace/name → key, for the limit
	// others are names another writer (the scheduler) took.
	others map[string]bool
	fifo   []nsName
}

type nsName struct{ namespace, name string }

func newRecorder(store EventWriter, clk clock.PassiveClock, node string, limit int, log *slog.Logger) *recorder {
	if limit <= 0 {
		limit = DefaultEventLimit
	}
	return &recorder{store: store, clock: clk, node: node, limit: limit, log: log,
		byKey: map[eventKey]string{}, names: map[string]eventKey{}, others: map[string]bool{}}
}

// record writes the event synchronously: when it returns, watchers can see
// it (the ordering tests rely on that). Every occurrence is logged.
func (r *recorder) record(ref objectRef, fieldPath, eventType, reason, message, component string) {
	r.write(ref, fieldPath, eventType, reason, message, component, true)
}

// recordQuietly is record, but a repeat of an event already recorded is
// only counted, not logged again.
func (r *recorder) recordQuietly(ref objectRef, fieldPath, eventType, reason, message, component string) {
	r.write(ref, fieldPath, eventType, reason, message, component, false)
}

func (r *recorder) write(ref objectRef, fieldPath, eventType, reason, message, component string, logRepeat bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := metav1.NewTime(r.clock.Now())
	key := eventKey{ref, fieldPath, eventType, reason, message, component}
	level := slog.LevelInfo
	if eventType == corev1.EventTypeWarning {
		level = slog.LevelWarn
	}
	if _, repeat := r.byKey[key]; logRepeat || !repeat {
		r.log.Log(context.Background(), level, message, "pod", ref.namespace+"/"+ref.name, "reason", reason, "field", fieldPath)
	}

	if name, ok := r.byKey[key]; ok {
		err := r.store.UpdateEvent(ref.namespace, name, func(e *corev1.Event) {
			e.Count++
			e.LastTimestamp = now
		})
		if err == nil {
			return
		}
		if !apierrors.IsNotFound(err) {
			r.log.Warn("update event", "err", err)
			return
		}
		delete(r.byKey, key) // expired: write it anew
	}
	name := r.freeName(ref, now)
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ref.namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "Pod", APIVersion: "v1", Namespace: ref.namespace, Name: ref.name, UID: ref.uid, FieldPath: fieldPath,
		},
		Reason:              reason,
		Message:             message,
		Source:              corev1.EventSource{Component: component, Host: r.hostFor(component)},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		Type:                eventType,
		ReportingController: component,
		ReportingInstance:   r.hostFor(component),
	}
	err := r.store.CreateEvent(ev)
	for apierrors.IsAlreadyExists(err) {
		// Another writer used the name (a fake clock gives everyone the
		// same timestamp): take the next.
		r.others[ref.namespace+"/"+name] = true
		name = r.freeName(ref, now)
		ev.Name = name
		err = r.store.CreateEvent(ev)
	}
	if err != nil {
		r.log.Warn("record event", "err", err)
		return
	}
	r.byKey[key] = name
	r.names[ref.namespace+"/"+name] = key
	r.fifo = append(r.fifo, nsName{ref.namespace, name})
	for len(r.fifo) > r.limit {
		old := r.fifo[0]
		r.fifo = r.fifo[1:]
		_ = r.store.DeleteEvent(old.namespace, old.name)
		if k, ok := r.names[old.namespace+"/"+old.name]; ok {
			delete(r.byKey, k)
			delete(r.names, old.namespace+"/"+old.name)
		}
	}
}

// hostFor: the scheduler reports no host; the kubelet its node.
func (r *recorder) hostFor(component string) string {
	if component == componentScheduler {
		return ""
	}
	return r.node
}

// freeName is the kubelet's event name, POD.<hex nanoseconds>, made unique
// when two events share a timestamp (a fake clock does that).
func (r *recorder) freeName(ref objectRef, now metav1.Time) string {
	ns := now.UnixNano()
	for {
		name := fmt.Sprintf("%s.%x", ref.name, ns)
		if _, taken := r.names[ref.namespace+"/"+name]; !taken && !r.others[ref.namespace+"/"+name] {
			return name
		}
		ns++
	}
}

package podwatch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func pod(phase corev1.PodPhase, deleted bool, grace *int64) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u-1"}}
	p.Status.Phase = phase
	if deleted {
		ts := metav1.Now()
		p.DeletionTimestamp = &ts
		p.DeletionGracePeriodSeconds = grace
	}
	return p
}

func i64(v int64) *int64 { return &v }

func TestAdmitRunsNewPodsAndOnlyRemovesFinishedOrDeletedOnes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		phase   corev1.PodPhase
		deleted bool
		want    Admission
	}{
		{"a new pod runs", "", false, Run},
		{"a pending pod runs", corev1.PodPending, false, Run},
		{"a pod deleted before it ran here is removed", corev1.PodPending, true, Remove},
		{"a running pod deleted while the agent was away is removed", corev1.PodRunning, true, Remove},
		{"a pod that succeeded is left until deleted", corev1.PodSucceeded, false, Leave},
		{"a pod that failed is left until deleted", corev1.PodFailed, false, Leave},
		{"a pod that succeeded and was deleted is removed", corev1.PodSucceeded, true, Remove},
		{"a pod that failed and was deleted is removed", corev1.PodFailed, true, Remove},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Admit(pod(tc.phase, tc.deleted, nil)); got != tc.want {
				t.Fatalf("Admit = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDeletionIsNewsOnlyWhenNewOrShorter(t *testing.T) {
	t.Parallel()
	type seen struct {
		deleted   bool
		grace     *int64
		wantGrace int64
		wantNews  bool
	}
	for _, tc := range []struct {
		name   string
		seen   []seen
		goneAt int // Gone before this change (0: never)
	}{
		{"no deletion is no news", []seen{{false, nil, 0, false}}, 0},
		{"the first deletion is news", []seen{{true, i64(10), 10, true}}, 0},
		{"a deletion without a grace period is 30s", []seen{{true, nil, 30, true}}, 0},
		{"the same deletion coming back is no news", []seen{{true, i64(10), 10, true}, {true, i64(10), 0, false}}, 0},
		{"a longer one is no news", []seen{{true, i64(10), 10, true}, {true, i64(60), 0, false}}, 0},
		{"a shorter one is news", []seen{{true, i64(10), 10, true}, {true, i64(0), 0, true}}, 0},
		{"after Gone the same deletion is news again", []seen{{true, i64(10), 10, true}, {true, i64(10), 10, true}}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			for i, c := range tc.seen {
				if tc.goneAt == i+1 {
					s.Gone("u-1")
				}
				grace, news := s.Deletion(pod(corev1.PodRunning, c.deleted, c.grace))
				if grace != c.wantGrace || news != c.wantNews {
					t.Fatalf("change %d: Deletion = %d, %v; want %d, %v", i+1, grace, news, c.wantGrace, c.wantNews)
				}
			}
		})
	}
}

func TestGateConditionsAreNewsOnlyWhenTheyChange(t *testing.T) {
	t.Parallel()
	const gate corev1.PodConditionType = "example.com/lb"
	withGate := func(status corev1.ConditionStatus) *corev1.Pod {
		p := pod(corev1.PodRunning, false, nil)
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: gate}}
		if status != "" {
			p.Status.Conditions = []corev1.PodCondition{{Type: gate, Status: status}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}}
		}
		return p
	}
	type change struct {
		pod      *corev1.Pod
		wantNews bool
		wantLen  int // conditions passed on
	}
	for _, tc := range []struct {
		name     string
		admitted *corev1.Pod
		changes  []change
	}{
		{"a pod without readiness gates has no such news", nil,
			[]change{{pod(corev1.PodRunning, false, nil), false, 0}}},
		{"what the worker started from is no news", withGate(corev1.ConditionFalse),
			[]change{{withGate(corev1.ConditionFalse), false, 0}}},
		{"a gate's condition turning True is news, with only the gates' conditions", withGate(corev1.ConditionFalse),
			[]change{{withGate(corev1.ConditionTrue), true, 1}, {withGate(corev1.ConditionTrue), false, 0}}},
		{"a gate's condition going away is news, with none", withGate(corev1.ConditionTrue),
			[]change{{withGate(""), true, 0}}},
		{"without an admission the first look is news", nil,
			[]change{{withGate(""), true, 0}, {withGate(""), false, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			if tc.admitted != nil {
				s.Admitted(tc.admitted)
			}
			for i, c := range tc.changes {
				conds, news := s.GateConditions(c.pod)
				if news != c.wantNews || len(conds) != c.wantLen {
					t.Fatalf("change %d: GateConditions = %v, %v; want news %v with %d conditions", i+1, conds, news, c.wantNews, c.wantLen)
				}
				for _, cond := range conds {
					if cond.Type != gate {
						t.Fatalf("change %d: passed on %s, which no readiness gate names", i+1, cond.Type)
					}
				}
			}
		})
	}
}

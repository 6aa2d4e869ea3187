package podstatus

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestReadyWithReadinessGatesInTheKubeletsWords pins the kubelet's Ready
// condition for a pod with readiness gates (pkg/kubelet/status's
// GeneratePodReadyCondition): ContainersReady first, then every gate's
// condition, message for message.
func TestReadyWithReadinessGatesInTheKubeletsWords(t *testing.T) {
	gates := func(types ...corev1.PodConditionType) []corev1.PodReadinessGate {
		var out []corev1.PodReadinessGate
		for _, t := range types {
			out = append(out, corev1.PodReadinessGate{ConditionType: t})
		}
		return out
	}
	c := func(t corev1.PodConditionType, s corev1.ConditionStatus) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: s, Reason: "Whatever", Message: "ignored"}
	}
	containersReady := cond(corev1.ContainersReady, true, "", "")
	unreadyContainers := cond(corev1.ContainersReady, false, ReasonContainersNotReady, "containers with unready status: [podgate]")
	for _, tc := range []struct {
		name            string
		containersReady podCond
		gates           []corev1.PodReadinessGate
		conds           []corev1.PodCondition
		want            podCond
	}{
		{"no gates: Ready is ContainersReady", containersReady, nil, nil, cond(corev1.PodReady, true, "", "")},
		{"containers not ready: ContainersReady's reason and message, whatever the gates say",
			unreadyContainers, gates("a"), []corev1.PodCondition{c("a", corev1.ConditionTrue)},
			cond(corev1.PodReady, false, ReasonContainersNotReady, "containers with unready status: [podgate]")},
		{"the gate's condition does not exist yet", containersReady, gates("podgate.dev/containers-ready"), nil,
			cond(corev1.PodReady, false, ReasonReadinessGatesNotReady,
				`corresponding condition of pod readiness gate "podgate.dev/containers-ready" does not exist.`)},
		{"the gate's condition is False", containersReady, gates("podgate.dev/containers-ready"),
			[]corev1.PodCondition{c("podgate.dev/containers-ready", corev1.ConditionFalse)},
			cond(corev1.PodReady, false, ReasonReadinessGatesNotReady,
				`the status of pod readiness gate "podgate.dev/containers-ready" is not "True", but False`)},
		{"Unknown is not True either", containersReady, gates("x"), []corev1.PodCondition{c("x", corev1.ConditionUnknown)},
			cond(corev1.PodReady, false, ReasonReadinessGatesNotReady, `the status of pod readiness gate "x" is not "True", but Unknown`)},
		{"every gate not met is named, in the spec's order, joined by a comma", containersReady, gates("a", "b", "c"),
			[]corev1.PodCondition{c("c", corev1.ConditionFalse), c("b", corev1.ConditionTrue)},
			cond(corev1.PodReady, false, ReasonReadinessGatesNotReady,
				`corresponding condition of pod readiness gate "a" does not exist., the status of pod readiness gate "c" is not "True", but False`)},
		{"every gate True: Ready", containersReady, gates("a", "b"),
			[]corev1.PodCondition{c("b", corev1.ConditionTrue), c("a", corev1.ConditionTrue)}, cond(corev1.PodReady, true, "", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readyCondition(tc.containersReady, tc.gates, tc.conds); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestGatesKeyChangesWithStatusNotMessage(t *testing.T) {
	pod := func(conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{
			Spec:   corev1.PodSpec{ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "g"}}},
			Status: corev1.PodStatus{Conditions: conds},
		}
	}
	absent := GatesKey(pod(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}))
	falseA := GatesKey(pod(corev1.PodCondition{Type: "g", Status: corev1.ConditionFalse, Message: "a"}))
	falseB := GatesKey(pod(corev1.PodCondition{Type: "g", Status: corev1.ConditionFalse, Message: "b"}))
	isTrue := GatesKey(pod(corev1.PodCondition{Type: "g", Status: corev1.ConditionTrue}))
	if absent == falseA || falseA == isTrue || absent == isTrue {
		t.Errorf("keys do not tell absent, False and True apart: %q %q %q", absent, falseA, isTrue)
	}
	if falseA != falseB {
		t.Errorf("a new message alone changed the key: %q vs %q", falseA, falseB)
	}
}

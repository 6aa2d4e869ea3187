package podstatus

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	running   = Container{Name: "app", Running: true, Started: true, Ready: true, Created: true, ID: "podgate://1"}
	waiting   = Container{Name: "app"}
	exited0   = Container{Name: "app", Created: true, Done: true, Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	exited1   = Container{Name: "app", Created: true, Done: true, Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}
	restarted = Container{Name: "app", Created: true, RestartCount: 1,
		LastState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}},
		Waiting:   &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
)

func TestPhaseIsTheKubeletsGetPhase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		pod  Pod
		want corev1.PodPhase
	}{
		{"an init container failed for good: Failed", Pod{FailedInit: true, Mains: []Container{waiting}}, corev1.PodFailed},
		{"not initialized: Pending", Pod{Mains: []Container{running}}, corev1.PodPending},
		{"a container waiting to start for the first time: Pending", Pod{Initialized: true, Mains: []Container{running, waiting}}, corev1.PodPending},
		{"a container running: Running", Pod{Initialized: true, Mains: []Container{running, exited1}}, corev1.PodRunning},
		{"waiting to be restarted counts as having run", Pod{Initialized: true, RestartPolicy: corev1.RestartPolicyAlways, Mains: []Container{restarted}}, corev1.PodRunning},
		{"restartPolicy Always and all stopped: Running", Pod{Initialized: true, RestartPolicy: corev1.RestartPolicyAlways, Mains: []Container{exited0}}, corev1.PodRunning},
		{"all exited 0 and done: Succeeded", Pod{Initialized: true, RestartPolicy: corev1.RestartPolicyOnFailure, Mains: []Container{exited0}}, corev1.PodSucceeded},
		{"restartPolicy Never and one failed: Failed", Pod{Initialized: true, RestartPolicy: corev1.RestartPolicyNever, Mains: []Container{exited0, exited1}}, corev1.PodFailed},
		{"restartPolicy OnFailure and one failed: Running (it restarts)", Pod{Initialized: true, RestartPolicy: corev1.RestartPolicyOnFailure, Mains: []Container{exited1}}, corev1.PodRunning},
		{"a deleted pod all of whose containers exited 0: Succeeded, whatever the policy", Pod{Initialized: true, Terminating: true, RestartPolicy: corev1.RestartPolicyAlways, Mains: []Container{exited0}}, corev1.PodSucceeded},
		{"a deleted pod with a container that failed: Failed", Pod{Initialized: true, Terminating: true, RestartPolicy: corev1.RestartPolicyAlways, Mains: []Container{exited0, exited1}}, corev1.PodFailed},
		{"a deleted pod whose sidecar still runs is not terminal yet", Pod{Initialized: true, Terminating: true, RestartPolicy: corev1.RestartPolicyAlways,
			Inits: []Container{{Name: "side", Sidecar: true, Running: true}}, Mains: []Container{exited0}}, corev1.PodRunning},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Phase(&tc.pod); got != tc.want {
				t.Errorf("Phase = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestContainerStatusState(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name        string
		pod         Pod
		c           Container
		wantState   string // running, terminated, or the waiting reason
		wantReady   bool
		wantStarted bool
		wantID      string
	}{
		{"running, started and ready", Pod{Initialized: true}, Container{Name: "a", Running: true, Started: true, Ready: true, StartedAt: at, Created: true, ID: "podgate://1"}, "running", true, true, "podgate://1"},
		{"running but not started is not ready", Pod{Initialized: true}, Container{Name: "a", Running: true, Ready: true, Created: true, ID: "podgate://1"}, "running", false, false, "podgate://1"},
		{"backing off waits as CrashLoopBackOff", Pod{Initialized: true}, restarted, "CrashLoopBackOff", false, false, ""},
		{"a completed init container counts as ready", Pod{}, Container{Name: "i", Init: true, Created: true, Succeeded: true, Terminated: &corev1.ContainerStateTerminated{}}, "terminated", true, false, ""},
		{"a container that cannot be set up waits as CreateContainerConfigError", Pod{Initialized: true}, Container{Name: "a", SetupError: "spec.containers[0].env[0]: boom"}, "CreateContainerConfigError", false, false, ""},
		{"a main container waits as PodInitializing behind init containers", Pod{Inits: []Container{waiting}}, Container{Name: "a"}, "PodInitializing", false, false, ""},
		{"an init container waits as PodInitializing", Pod{}, Container{Name: "i", Init: true}, "PodInitializing", false, false, ""},
		{"without init containers a container waits as ContainerCreating", Pod{}, Container{Name: "a"}, "ContainerCreating", false, false, ""},
		{"no containerID before an instance was created", Pod{Initialized: true}, Container{Name: "a", ID: "podgate://9"}, "ContainerCreating", false, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := ContainerStatus(&tc.pod, &tc.c)
			var state string
			switch {
			case cs.State.Running != nil:
				state = "running"
				if !cs.State.Running.StartedAt.Time.Equal(tc.c.StartedAt) {
					t.Errorf("startedAt %v, want %v", cs.State.Running.StartedAt, tc.c.StartedAt)
				}
			case cs.State.Terminated != nil:
				state = "terminated"
			case cs.State.Waiting != nil:
				state = cs.State.Waiting.Reason
				if state == "CreateContainerConfigError" && cs.State.Waiting.Message != tc.c.SetupError {
					t.Errorf("message %q, want %q", cs.State.Waiting.Message, tc.c.SetupError)
				}
			}
			if state != tc.wantState || cs.Ready != tc.wantReady || *cs.Started != tc.wantStarted || cs.ContainerID != tc.wantID {
				t.Errorf("state %s ready %v started %v id %q, want %s %v %v %q", state, cs.Ready, *cs.Started, cs.ContainerID, tc.wantState, tc.wantReady, tc.wantStarted, tc.wantID)
			}
			if cs.Name != tc.c.Name || cs.RestartCount != tc.c.RestartCount {
				t.Errorf("name %q restarts %d, want %q %d", cs.Name, cs.RestartCount, tc.c.Name, tc.c.RestartCount)
			}
		})
	}
}

// condition is one expected condition: status, reason and message.
type condition struct {
	status          corev1.ConditionStatus
	reason, message string
}

func TestConditionsInTheKubeletsOrderAndWords(t *testing.T) {
	t.Parallel()
	T, F := corev1.ConditionTrue, corev1.ConditionFalse
	sidecar := Container{Name: "side", Init: true, Sidecar: true, Running: true, Started: true, Ready: true}
	setup := Container{Name: "setup", Init: true}
	for _, tc := range []struct {
		name  string
		pod   Pod
		phase corev1.PodPhase
		want  map[corev1.PodConditionType]condition
	}{
		{"all ready", Pod{Initialized: true, Mains: []Container{running}}, corev1.PodRunning, map[corev1.PodConditionType]condition{
			corev1.PodReadyToStartContainers: {T, "", ""}, corev1.PodInitialized: {T, "", ""},
			corev1.PodReady: {T, "", ""}, corev1.ContainersReady: {T, "", ""}, corev1.PodScheduled: {T, "", ""}}},
		{"init containers still to complete", Pod{Inits: []Container{sidecar, setup}, Mains: []Container{waiting}}, corev1.PodPending, map[corev1.PodConditionType]condition{
			corev1.PodInitialized:  {F, ReasonContainersNotInitialized, "containers with incomplete status: [setup]"},
			corev1.ContainersReady: {F, ReasonContainersNotReady, "containers with unready status: [app]"},
			corev1.PodReady:        {F, ReasonContainersNotReady, "containers with unready status: [app]"}}},
		{"an unready sidecar keeps ContainersReady False", Pod{Initialized: true, Inits: []Container{{Name: "side", Init: true, Sidecar: true, Running: true, Started: true}}, Mains: []Container{running}},
			corev1.PodRunning, map[corev1.PodConditionType]condition{
				corev1.PodInitialized:  {T, "", ""},
				corev1.ContainersReady: {F, ReasonContainersNotReady, "containers with unready status: [side]"}}},
		{"a succeeded pod: ContainersReady and Ready False as PodCompleted", Pod{Initialized: true, Mains: []Container{exited0}}, corev1.PodSucceeded, map[corev1.PodConditionType]condition{
			corev1.ContainersReady: {F, ReasonPodCompleted, ""}, corev1.PodReady: {F, ReasonPodCompleted, ""}}},
		{"a terminating pod with nothing running has no sandbox", Pod{Initialized: true, Terminating: true, Mains: []Container{exited1}}, corev1.PodFailed, map[corev1.PodConditionType]condition{
			corev1.PodReadyToStartContainers: {F, "", ""}}},
		{"a readiness gate not met keeps Ready False", Pod{Initialized: true, Mains: []Container{running}, ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "g"}}},
			corev1.PodRunning, map[corev1.PodConditionType]condition{
				corev1.ContainersReady: {T, "", ""},
				corev1.PodReady:        {F, ReasonReadinessGatesNotReady, `corresponding condition of pod readiness gate "g" does not exist.`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Conditions(&tc.pod, tc.phase, nil, metav1.Now())
			order := []corev1.PodConditionType{corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady, corev1.PodScheduled}
			if len(got) != len(order) {
				t.Fatalf("%d conditions, want %d: %+v", len(got), len(order), got)
			}
			for i, c := range got {
				if c.Type != order[i] {
					t.Errorf("condition %d is %s, want %s", i, c.Type, order[i])
				}
				if w, ok := tc.want[c.Type]; ok && (c.Status != w.status || c.Reason != w.reason || c.Message != w.message) {
					t.Errorf("%s = %s %q %q, want %s %q %q", c.Type, c.Status, c.Reason, c.Message, w.status, w.reason, w.message)
				}
			}
		})
	}
}

func TestConditionsKeepTheirTransitionTimeUntilTheirStatusChanges(t *testing.T) {
	t.Parallel()
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	t2 := metav1.NewTime(t0.Add(2 * time.Minute))
	byType := func(cs []corev1.PodCondition) map[corev1.PodConditionType]corev1.PodCondition {
		m := map[corev1.PodConditionType]corev1.PodCondition{}
		for _, c := range cs {
			m[c.Type] = c
		}
		return m
	}
	unready := Pod{Initialized: true, Mains: []Container{{Name: "app", Running: true, Started: true}}}
	ready := Pod{Initialized: true, Mains: []Container{running}}

	first := byType(Conditions(&unready, corev1.PodRunning, nil, t0))
	second := byType(Conditions(&unready, corev1.PodRunning, first, t1))
	if got := second[corev1.PodReady].LastTransitionTime; !got.Equal(&t0) {
		t.Errorf("Ready unchanged: lastTransitionTime %v, want %v", got, t0)
	}
	third := byType(Conditions(&ready, corev1.PodRunning, second, t2))
	if got := third[corev1.PodReady]; got.Status != corev1.ConditionTrue || !got.LastTransitionTime.Equal(&t2) {
		t.Errorf("Ready became True: %s at %v, want True at %v", got.Status, got.LastTransitionTime, t2)
	}
	if got := third[corev1.PodInitialized].LastTransitionTime; !got.Equal(&t0) {
		t.Errorf("Initialized unchanged: lastTransitionTime %v, want %v", got, t0)
	}
	// The scheduler's PodScheduled is kept as it is; without one, True
	// from when the pod was first seen.
	sched := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: t0, Reason: "Scheduled"}
	got := byType(Conditions(&ready, corev1.PodRunning, map[corev1.PodConditionType]corev1.PodCondition{corev1.PodScheduled: sched}, t2))
	if got[corev1.PodScheduled] != sched {
		t.Errorf("PodScheduled = %+v, want the scheduler's %+v", got[corev1.PodScheduled], sched)
	}
	if s := first[corev1.PodScheduled]; s.Status != corev1.ConditionTrue || !s.LastTransitionTime.Equal(&t0) {
		t.Errorf("PodScheduled without a scheduler = %+v, want True at %v", s, t0)
	}
}

func TestStatusPutsThePodsPlaceContainersAndConditionsTogether(t *testing.T) {
	t.Parallel()
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sidecar := Container{Name: "gate", Init: true, Sidecar: true, Running: true, Started: true, Ready: true, Created: true}
	for _, tc := range []struct {
		name      string
		pod       Pod
		wantPhase corev1.PodPhase
		wantInits int
		wantMains int
		wantReady corev1.ConditionStatus
	}{
		{"a running pod with a sidecar", Pod{Initialized: true, Inits: []Container{sidecar}, Mains: []Container{running}},
			corev1.PodRunning, 1, 1, corev1.ConditionTrue},
		{"a pod still initializing", Pod{Inits: []Container{{Name: "setup", Init: true}}, Mains: []Container{waiting}},
			corev1.PodPending, 1, 1, corev1.ConditionFalse},
		{"a pod whose only container succeeded", Pod{Initialized: true, RestartPolicy: corev1.RestartPolicyNever, Mains: []Container{exited0}},
			corev1.PodSucceeded, 0, 1, corev1.ConditionFalse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod
			p.HostIP, p.PodIP, p.StartTime, p.QOSClass = "127.0.0.1", "127.0.0.5", t0, corev1.PodQOSBestEffort
			st := Status(&p, nil, t0)
			if st.Phase != tc.wantPhase {
				t.Errorf("phase %s, want %s", st.Phase, tc.wantPhase)
			}
			if st.HostIP != "127.0.0.1" || len(st.HostIPs) != 1 || st.HostIPs[0].IP != "127.0.0.1" ||
				st.PodIP != "127.0.0.5" || len(st.PodIPs) != 1 || st.PodIPs[0].IP != "127.0.0.5" {
				t.Errorf("addresses host %s %v pod %s %v, want 127.0.0.1 and 127.0.0.5", st.HostIP, st.HostIPs, st.PodIP, st.PodIPs)
			}
			if st.StartTime == nil || !st.StartTime.Equal(&t0) || st.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("start time %v, QoS %s; want %v, BestEffort", st.StartTime, st.QOSClass, t0)
			}
			if len(st.InitContainerStatuses) != tc.wantInits || len(st.ContainerStatuses) != tc.wantMains {
				t.Errorf("%d init and %d container statuses, want %d and %d", len(st.InitContainerStatuses), len(st.ContainerStatuses), tc.wantInits, tc.wantMains)
			}
			var ready corev1.ConditionStatus
			for _, c := range st.Conditions {
				if c.Type == corev1.PodReady {
					ready = c.Status
				}
			}
			if ready != tc.wantReady {
				t.Errorf("Ready %q, want %q", ready, tc.wantReady)
			}
		})
	}
}

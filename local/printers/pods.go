package printers

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodTable is the API server's pod table: NAME READY STATUS RESTARTS AGE,
// and for -o wide IP NODE NOMINATED NODE READINESS GATES.
var PodTable = TableOf[*corev1.Pod]{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "The aggregate readiness state of this pod for accepting traffic."},
		{Name: "Status", Type: "string", Description: "The aggregate status of the containers in this pod."},
		{Name: "Restarts", Type: "string", Description: "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."},
		ageColumn,
		{Name: "IP", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["podIP"]},
		{Name: "Node", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["nodeName"]},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"]},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: corev1.PodSpec{}.SwaggerDoc()["readinessGates"]},
	},
	Cells:      podCells,
	Conditions: podRowConditions,
}

// Pods print as `kubectl get pods`.
var Pods = Resource{NameKind: "pod", Columns: PodTable.Columns}

// PodRow is kubectl's pod row: NAME READY STATUS RESTARTS AGE, and with
// wide IP NODE NOMINATED NODE READINESS GATES.
func PodRow(p *corev1.Pod, wide bool, now time.Time) []string { return PodTable.Row(p, wide, now) }

// podCells are a pod's cells: RESTARTS counts with the time since the
// latest restart ("3 (12s ago)"); the wide cells show "<none>" for what
// is unset and READINESS GATES as met/declared.
func podCells(p *corev1.Pod, now time.Time) []any {
	s := summarizePod(p)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, age(metav1.NewTime(s.lastRestart), now))
	}
	// podIPs[0]; status.podIP is the same address whenever both are set
	// (the API server keeps them in step), and podgate's node may set only
	// the older field.
	ip := p.Status.PodIP
	if len(p.Status.PodIPs) > 0 {
		ip = p.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if n := len(p.Spec.ReadinessGates); n > 0 {
		met := 0
		for _, g := range p.Spec.ReadinessGates {
			if c := podCondition(p, g.ConditionType); c != nil && c.Status == corev1.ConditionTrue {
				met++
			}
		}
		gates = fmt.Sprintf("%d/%d", met, n)
	}
	return []any{p.Name, fmt.Sprintf("%d/%d", s.ready, s.total), s.status, restarts, age(p.CreationTimestamp, now),
		orNone(ip), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), gates}
}

// podRowConditions mark a pod that finished as Completed, which is how the
// API server tells clients the row is of a pod that will not run again.
func podRowConditions(p *corev1.Pod) []metav1.TableRowCondition {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}
	return nil
}

// podSummary is what kubectl makes of a pod's status.
type podSummary struct {
	ready, total int
	status       string
	restarts     int
	lastRestart  time.Time
}

// summarizePod follows kubectl's printPod (pkg/printers/internalversion)
// rule by rule, as of v1.35 (checked against upstream v1.29 and v1.35-era
// copies; the "Completed turns into the failure" and "no Terminating once
// Succeeded/Failed" rules are the newer ones):
//   - STATUS starts as the phase, or status.reason when set; a PodScheduled
//     condition with reason SchedulingGated shows SchedulingGated.
//   - Init containers are walked in order: completed ones (exit 0) and
//     started native sidecars are passed (a ready sidecar counts in READY);
//     the first other one decides "Init:<reason>" (terminated reason, else
//     Signal:N or ExitCode:N; a waiting reason other than PodInitializing)
//     or "Init:i/n".
//   - Once initialized, main containers are walked last to first, so the
//     first container's state wins: a waiting reason (ContainerCreating,
//     CrashLoopBackOff), a terminated reason (Completed, Error, OOMKilled,
//     else Signal:N / ExitCode:N); running and ready ones count in READY.
//     "Completed" turns back into Running (another container runs and the
//     pod is Ready), the failing container's reason, or NotReady.
//   - A deletion timestamp shows Terminating unless the pod already
//     Succeeded or Failed (Unknown for a lost node).
//   - READY's total counts native sidecars; RESTARTS counts main containers
//     and sidecars (all init containers while initializing), with the time
//     since the latest restart.
func summarizePod(p *corev1.Pod) podSummary {
	s := podSummary{total: len(p.Spec.Containers), status: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		s.status = p.Status.Reason
	}
	if c := podCondition(p, corev1.PodScheduled); c != nil && c.Reason == corev1.PodReasonSchedulingGated {
		s.status = corev1.PodReasonSchedulingGated
	}
	sidecar := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecar[c.Name] = true
			s.total++
		}
	}

	initializing, sidecarRestarts, lastSidecarRestart := s.addInitContainers(p, sidecar)
	if !initializing || podConditionTrue(p, corev1.PodInitialized) {
		s.restarts, s.lastRestart = sidecarRestarts, lastSidecarRestart
		s.addContainers(p)
	}

	if p.DeletionTimestamp != nil {
		switch {
		case p.Status.Reason == "NodeLost":
			s.status = "Unknown"
		case p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed:
			s.status = "Terminating"
		}
	}
	return s
}

// addInitContainers counts the init containers and native sidecars, and
// reports whether the pod is still initializing (the status is then
// Init:…) and the sidecars' own restarts.
func (s *podSummary) addInitContainers(p *corev1.Pod, sidecar map[string]bool) (initializing bool, sidecarRestarts int, lastSidecarRestart time.Time) {
	for i, cs := range p.Status.InitContainerStatuses {
		s.restarts += int(cs.RestartCount)
		s.lastRestart = later(s.lastRestart, cs.LastTerminationState)
		if sidecar[cs.Name] {
			sidecarRestarts += int(cs.RestartCount)
			lastSidecarRestart = later(lastSidecarRestart, cs.LastTerminationState)
		}
		term, wait := cs.State.Terminated, cs.State.Waiting
		if term != nil && term.ExitCode == 0 {
			continue
		}
		if sidecar[cs.Name] && cs.Started != nil && *cs.Started {
			if cs.Ready {
				s.ready++
			}
			continue
		}
		switch {
		case term != nil:
			s.status = "Init:" + terminatedReason(term)
		case wait != nil && wait.Reason != "" && wait.Reason != "PodInitializing":
			s.status = "Init:" + wait.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(p.Spec.InitContainers))
		}
		return true, sidecarRestarts, lastSidecarRestart
	}
	return false, sidecarRestarts, lastSidecarRestart
}

// addContainers counts the main containers, last to first as kubectl
// does, so the first container's state names the status.
func (s *podSummary) addContainers(p *corev1.Pod) {
	running, failure := false, ""
	for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := p.Status.ContainerStatuses[i]
		s.restarts += int(cs.RestartCount)
		s.lastRestart = later(s.lastRestart, cs.LastTerminationState)
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			s.status = cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			s.status = terminatedReason(cs.State.Terminated)
			if cs.State.Terminated.ExitCode != 0 {
				failure = s.status
			}
		case cs.Ready && cs.State.Running != nil:
			running = true
			s.ready++
		}
	}
	if s.status == "Completed" {
		switch {
		case running && podConditionTrue(p, corev1.PodReady):
			s.status = "Running"
		case failure != "":
			s.status = failure
		case running:
			s.status = "NotReady"
		}
	}
}

func terminatedReason(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

func later(t time.Time, last corev1.ContainerState) time.Time {
	if last.Terminated != nil && last.Terminated.FinishedAt.Time.After(t) {
		return last.Terminated.FinishedAt.Time
	}
	return t
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podConditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	c := podCondition(p, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

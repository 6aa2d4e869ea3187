package controllers

import (
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/gate/contract"
	"github.com/podgate/podgate/local/servingv1"
)

// DefaultDomain is Knative's default domain: a Service's URL is
// http://NAME.NAMESPACE.example.com.
const DefaultDomain = contract.Domain

// Knative Service condition types and the reasons podgate writes.
const (
	condReady               = "Ready"
	condConfigurationsReady = "ConfigurationsReady"
	condRoutesReady         = "RoutesReady"
	// condContainerHealthy is a Revision's condition in Knative; podgate
	// has no Revision object, so it is shown on the Service.
	condContainerHealthy = "ContainerHealthy"

	reasonRevisionMissing   = "RevisionMissing"
	reasonNoHealthyBackends = "NoHealthyBackends"
	reasonRevisionFailed    = "RevisionFailed"
	severityWarning         = "Warning"
)

// containerFailure is a container that exited with an error and is not
// running now: waiting to restart (CrashLoopBackOff) or terminated for good.
type containerFailure struct {
	container string
	exitCode  int32
	reason    string // the termination's reason: Error, OOMKilled, …
	waiting   string // the waiting reason, e.g. CrashLoopBackOff
}

// conditionReason is Knative's reason for a terminated container:
// ExitCode<N> (docs/facts.md §5).
func (f *containerFailure) conditionReason() string {
	return fmt.Sprintf("ExitCode%d", f.exitCode)
}

// message is Knative's "Container failed with: …", naming the container.
func (f *containerFailure) message() string {
	m := fmt.Sprintf("Container failed with: container %q exited with code %d", f.container, f.exitCode)
	if f.reason != "" {
		m += " (" + f.reason + ")"
	}
	if f.waiting != "" {
		m += "; " + f.waiting
	}
	return m
}

// containerFailed finds the first container that failed and is not
// running: its last run ended with a non-zero exit code and it waits to
// restart, or it terminated with one and will not restart.
func containerFailed(statuses []corev1.ContainerStatus) *containerFailure {
	for _, cs := range statuses {
		switch {
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0:
			t := cs.LastTerminationState.Terminated
			return &containerFailure{container: cs.Name, exitCode: t.ExitCode, reason: t.Reason, waiting: cs.State.Waiting.Reason}
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			t := cs.State.Terminated
			return &containerFailure{container: cs.Name, exitCode: t.ExitCode, reason: t.Reason}
		}
	}
	return nil
}

// notReadyContainers names the containers whose Ready is false.
func notReadyContainers(statuses []corev1.ContainerStatus) []string {
	var out []string
	for _, cs := range statuses {
		if !cs.Ready {
			out = append(out, cs.Name)
		}
	}
	return out
}

// syncServiceLocked writes a Knative Service's object: its URL, revision,
// and conditions that say what traffic does. Ready is True exactly when at
// least one pod takes traffic — in the front door's view when there is
// one (endpoint ready and gate ready), else by ready endpoints — so that
// the status can never claim a service works while every request is held,
// which is what Knative's does in seed 001's exec-readiness experiment.
// Callers hold e.mu.
func (e *Endpoints) syncServiceLocked(s *service, eps []endpoint) {
	w, k := s.w, s.w.Knative
	if k == nil {
		return
	}
	serving := 0
	for _, ep := range eps {
		if ep.ready() {
			serving++
		}
	}
	if v := e.cfg.Serving; v != nil {
		if n, ok := v.ServingPods(w.Namespace, w.Name); ok {
			serving = n
		}
	}
	svc := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace, Labels: maps.Clone(w.Labels), Generation: 1},
	}
	if obj, ok := w.Object().(*workload.Service); ok {
		if spec, err := json.Marshal(obj.Spec); err == nil {
			svc.Spec = spec
		}
	}
	st := &svc.Status
	st.ObservedGeneration = 1
	st.URL = fmt.Sprintf("http://%s.%s.%s", w.Name, w.Namespace, e.cfg.Domain)
	st.Address = &servingv1.Addressable{URL: fmt.Sprintf("http://%s.%s.svc.cluster.local", w.Name, w.Namespace)}
	st.LatestCreatedRevisionName = k.RevisionName
	if serving > 0 {
		s.everReady = true
	}
	if s.everReady {
		// As Knative: once the revision was ready it stays the latest
		// ready one, and traffic keeps pointing at it.
		st.LatestReadyRevisionName = k.RevisionName
		pct, latest := int64(100), true
		st.Traffic = []servingv1.TrafficTarget{{RevisionName: k.RevisionName, LatestRevision: &latest, Percent: &pct}}
	}
	for _, c := range e.serviceConditions(s, eps, serving) {
		if prev, ok := s.conds[c.Type]; ok && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
		s.conds[c.Type] = c
		st.Conditions = append(st.Conditions, c)
	}
	if _, err := e.cfg.Store.Services.Put(svc); err != nil {
		e.cfg.Logger.Warn("publish service", "workload", w.ID(), "err", err)
	}
}

// serviceConditions derives the conditions, sorted by type as
// Knative sorts them, from the pods' states and the serving count.
//
//   - Some pod takes traffic: all True. A failing container in another
//     pod shows as ContainerHealthy False with severity Warning, which
//     does not make the service unready (traffic flows).
//   - No pod takes traffic and a container failed: ContainerHealthy False
//     ExitCode<N>, ConfigurationsReady and Ready False RevisionFailed.
//   - No pod ever took traffic: Unknown RevisionMissing.
//   - No pod takes traffic any more: RoutesReady and Ready Unknown
//     NoHealthyBackends, naming the containers that are not ready.
func (e *Endpoints) serviceConditions(s *service, eps []endpoint, serving int) []servingv1.Condition {
	now := metav1.NewTime(e.cfg.Clock.Now())
	w := s.w
	rev := w.Knative.RevisionName
	cond := func(t string, s corev1.ConditionStatus, reason, msg string) servingv1.Condition {
		return servingv1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
	}
	var failure *containerFailure
	for _, ep := range eps {
		if ep.failure != nil && !ep.terminating {
			failure = ep.failure
			break
		}
	}
	var health servingv1.Condition
	switch {
	case failure != nil:
		health = cond(condContainerHealthy, corev1.ConditionFalse, failure.conditionReason(), failure.message())
	case s.everReady || serving > 0:
		health = cond(condContainerHealthy, corev1.ConditionTrue, "", "")
	default:
		health = cond(condContainerHealthy, corev1.ConditionUnknown, "Deploying", "")
	}
	if serving > 0 {
		if failure != nil {
			health.Severity = severityWarning
		}
		return []servingv1.Condition{
			cond(condConfigurationsReady, corev1.ConditionTrue, "", ""),
			health,
			cond(condReady, corev1.ConditionTrue, "", ""),
			cond(condRoutesReady, corev1.ConditionTrue, "", ""),
		}
	}
	routes := cond(condRoutesReady, corev1.ConditionUnknown, reasonRevisionMissing,
		fmt.Sprintf("Configuration %q does not have any ready Revision: %s.", w.Name, notServing(w, eps)))
	if s.everReady {
		routes = cond(condRoutesReady, corev1.ConditionUnknown, reasonNoHealthyBackends,
			fmt.Sprintf("Revision %q has no pod that takes traffic: %s.", rev, notServing(w, eps)))
	}
	config := cond(condConfigurationsReady, corev1.ConditionUnknown, reasonRevisionMissing,
		fmt.Sprintf("Configuration %q is waiting for a Revision to become ready.", w.Name))
	if s.everReady {
		config = cond(condConfigurationsReady, corev1.ConditionTrue, "", "")
	}
	ready := routes
	if failure != nil {
		msg := fmt.Sprintf("Revision %q failed with message: %s.", rev, failure.message())
		config = cond(condConfigurationsReady, corev1.ConditionFalse, reasonRevisionFailed, msg)
		ready = config
	}
	ready.Type = condReady
	return []servingv1.Condition{config, health, ready, routes}
}

// gateReadyzURL is where the gate of the pod at ip says which container
// is not ready, for a pod without the gate's condition (injected before
// the gate wrote one, or whose gate has not written it yet).
func gateReadyzURL(w *workload.Workload, ip string) string {
	port := contract.GateAdminPort
	if g := w.Container(contract.GateContainerName); g != nil {
		env := map[string]string{}
		for _, e := range g.Env {
			env[e.Name] = e.Value
		}
		if cfg, err := contract.Decode(func(k string) string { return env[k] }); err == nil {
			port = cfg.AdminPort
		}
	}
	return fmt.Sprintf("http://%s/readyz?verbose", net.JoinHostPort(ip, strconv.Itoa(port)))
}

// notServing explains, pod by pod, why none takes traffic.
func notServing(w *workload.Workload, eps []endpoint) string {
	var parts []string
	for _, st := range eps {
		name := st.pod.Name
		switch {
		case st.terminating:
			parts = append(parts, fmt.Sprintf("pod %s is terminating", name))
		case gateConditionMessage(st.pod) != "":
			// The gate names the containers that are not ready, with
			// their probes' messages, in its condition on the pod.
			parts = append(parts, fmt.Sprintf("pod %s: %s", name, gateConditionMessage(st.pod)))
		case len(st.notReady) == 1 && st.notReady[0] == contract.GateContainerName:
			// The gate is first to know: it probes the containers itself
			// (aggressively while starting) before the kubelet-paced
			// probes mark them.
			parts = append(parts, fmt.Sprintf("pod %s: its gate reports a container not ready (%s names it)", name, gateReadyzURL(w, st.pod.Status.PodIP)))
		case len(st.notReady) > 0:
			// The gate is unready because of the others: name those.
			others := slices.DeleteFunc(slices.Clone(st.notReady), func(c string) bool { return c == contract.GateContainerName })
			parts = append(parts, fmt.Sprintf("pod %s has containers not ready: [%s]", name, strings.Join(others, " ")))
		case st.serving:
			// Ready endpoint, yet not in the front door's view: its gate
			// has not answered ready (yet).
			parts = append(parts, fmt.Sprintf("pod %s is ready but its gate does not answer ready", name))
		default:
			parts = append(parts, fmt.Sprintf("pod %s is not ready", name))
		}
	}
	if len(parts) == 0 {
		return "no pod is running"
	}
	return strings.Join(parts, "; ")
}

package printers

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podgate/podgate/local/servingv1"
)

var (
	now    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	always = corev1.ContainerRestartPolicyAlways
)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

func running() corev1.ContainerState {
	return corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Hour)}}
}

func waiting(reason string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}
}

func terminated(reason string, code, signal int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code, Signal: signal, FinishedAt: ago(time.Minute)}}
}

func lastTerminated(d time.Duration) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, FinishedAt: ago(d)}}
}

func status(name string, ready bool, state corev1.ContainerState) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, Ready: ready, State: state, Started: &ready}
}

// podWith builds a pod with main containers named after its statuses.
func podWith(phase corev1.PodPhase, statuses ...corev1.ContainerStatus) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", CreationTimestamp: ago(5 * time.Minute)},
		Status:     corev1.PodStatus{Phase: phase, ContainerStatuses: statuses},
	}
	for _, s := range statuses {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: s.Name})
	}
	if len(statuses) == 0 {
		p.Spec.Containers = []corev1.Container{{Name: "app"}}
	}
	return p
}

func withInit(p *corev1.Pod, initialized bool, statuses ...corev1.ContainerStatus) *corev1.Pod {
	for _, s := range statuses {
		c := corev1.Container{Name: s.Name}
		if strings.HasPrefix(s.Name, "sidecar") {
			c.RestartPolicy = &always
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	p.Status.InitContainerStatuses = statuses
	cond := corev1.ConditionFalse
	if initialized {
		cond = corev1.ConditionTrue
	}
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodInitialized, Status: cond})
	return p
}

func withCondition(p *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, reason string) *corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason})
	return p
}

func restarted(s corev1.ContainerStatus, n int32, d time.Duration) corev1.ContainerStatus {
	s.RestartCount = n
	s.LastTerminationState = lastTerminated(d)
	return s
}

// --- the printing rules ---

func TestPodRowsFollowKubectlsStatusRules(t *testing.T) {
	deleting := func(p *corev1.Pod) *corev1.Pod {
		ts := ago(time.Second)
		p.DeletionTimestamp = &ts
		return p
	}
	withReason := func(p *corev1.Pod, r string) *corev1.Pod { p.Status.Reason = r; return p }

	tests := []struct {
		name                    string
		pod                     *corev1.Pod
		ready, status, restarts string
	}{
		{"a running ready container is Running", podWith(corev1.PodRunning, status("app", true, running())), "1/1", "Running", "0"},
		{"a pod without statuses shows its phase", podWith(corev1.PodPending), "0/1", "Pending", "0"},
		{"running but not ready counts 0 in READY", podWith(corev1.PodRunning, status("app", false, running())), "0/1", "Running", "0"},
		{"a waiting reason shows: ContainerCreating", podWith(corev1.PodPending, status("app", false, waiting("ContainerCreating"))), "0/1", "ContainerCreating", "0"},
		{"CrashLoopBackOff shows with restarts and the time since the last",
			podWith(corev1.PodRunning, restarted(status("app", false, waiting("CrashLoopBackOff")), 3, 12*time.Second)), "0/1", "CrashLoopBackOff", "3 (12s ago)"},
		{"a terminated reason shows: Error", podWith(corev1.PodRunning, status("app", false, terminated("Error", 1, 0))), "0/1", "Error", "0"},
		{"a terminated reason shows: OOMKilled", podWith(corev1.PodRunning, status("app", false, terminated("OOMKilled", 137, 0))), "0/1", "OOMKilled", "0"},
		{"no terminated reason shows the signal", podWith(corev1.PodRunning, status("app", false, terminated("", 0, 9))), "0/1", "Signal:9", "0"},
		{"no terminated reason or signal shows the exit code", podWith(corev1.PodRunning, status("app", false, terminated("", 3, 0))), "0/1", "ExitCode:3", "0"},
		{"a finished pod is Completed", podWith(corev1.PodSucceeded, status("app", false, terminated("Completed", 0, 0))), "0/1", "Completed", "0"},
		{"Completed turns Running when another container runs and the pod is Ready",
			withCondition(podWith(corev1.PodRunning, status("job", false, terminated("Completed", 0, 0)), status("app", true, running())), corev1.PodReady, corev1.ConditionTrue, ""),
			"1/2", "Running", "0"},
		{"Completed turns NotReady when another container runs but the pod is not Ready",
			podWith(corev1.PodRunning, status("job", false, terminated("Completed", 0, 0)), status("app", true, running())), "1/2", "NotReady", "0"},
		{"Completed turns into the failing container's reason",
			podWith(corev1.PodFailed, status("a", false, terminated("Completed", 0, 0)), status("b", false, terminated("Error", 2, 0))), "0/2", "Error", "0"},
		{"the first container's state wins",
			podWith(corev1.PodRunning, restarted(status("app", false, waiting("CrashLoopBackOff")), 1, time.Minute), status("gate", true, running())), "1/2", "CrashLoopBackOff", "1 (60s ago)"},
		{"restarts add up over containers and show the latest",
			podWith(corev1.PodRunning, restarted(status("a", true, running()), 2, 3*time.Minute), restarted(status("b", true, running()), 1, 5*time.Second)), "2/2", "Running", "3 (5s ago)"},
		{"status.reason replaces the phase", withReason(podWith(corev1.PodFailed), "Evicted"), "0/1", "Evicted", "0"},
		{"a scheduling gate shows SchedulingGated",
			withCondition(podWith(corev1.PodPending), corev1.PodScheduled, corev1.ConditionFalse, corev1.PodReasonSchedulingGated), "0/1", "SchedulingGated", "0"},
		{"init containers starting show Init:0/2",
			withInit(podWith(corev1.PodPending, status("app", false, waiting("PodInitializing"))), false,
				status("init-a", false, waiting("PodInitializing")), status("init-b", false, waiting("PodInitializing"))), "0/1", "Init:0/2", "0"},
		{"a completed init container moves on to Init:1/2",
			withInit(podWith(corev1.PodPending, status("app", false, waiting("PodInitializing"))), false,
				status("init-a", false, terminated("Completed", 0, 0)), status("init-b", false, running())), "0/1", "Init:1/2", "0"},
		{"a crashing init container shows Init:CrashLoopBackOff and its restarts",
			withInit(podWith(corev1.PodPending, status("app", false, waiting("PodInitializing"))), false,
				restarted(status("init-a", false, waiting("CrashLoopBackOff")), 4, 30*time.Second)), "0/1", "Init:CrashLoopBackOff", "4 (30s ago)"},
		{"a failed init container shows Init:Error",
			withInit(podWith(corev1.PodPending, status("app", false, waiting("PodInitializing"))), false,
				status("init-a", false, terminated("Error", 1, 0))), "0/1", "Init:Error", "0"},
		{"a failed init container without a reason shows Init:ExitCode:N",
			withInit(podWith(corev1.PodPending, status("app", false, waiting("PodInitializing"))), false,
				status("init-a", false, terminated("", 2, 0))), "0/1", "Init:ExitCode:2", "0"},
		{"a started native sidecar counts in READY and its total",
			withInit(podWith(corev1.PodRunning, status("app", true, running())), true,
				status("init-a", false, terminated("Completed", 0, 0)), status("sidecar-gate", true, running())), "2/2", "Running", "0"},
		{"a sidecar not started yet holds initialization",
			withInit(podWith(corev1.PodPending, status("app", false, waiting("PodInitializing"))), false,
				status("sidecar-gate", false, running())), "0/2", "Init:0/1", "0"},
		{"once initialized, sidecar restarts count and init restarts do not",
			withInit(podWith(corev1.PodRunning, restarted(status("app", true, running()), 1, 2*time.Minute)), true,
				restarted(status("init-a", false, terminated("Completed", 0, 0)), 5, time.Hour), restarted(status("sidecar-gate", true, running()), 2, 20*time.Second)),
			"2/2", "Running", "3 (20s ago)"},
		{"a deletion timestamp shows Terminating", deleting(podWith(corev1.PodRunning, status("app", true, running()))), "1/1", "Terminating", "0"},
		{"a finished pod being deleted keeps its status", deleting(podWith(corev1.PodSucceeded, status("app", false, terminated("Completed", 0, 0)))), "0/1", "Completed", "0"},
		{"a deleted pod on a lost node is Unknown", deleting(withReason(podWith(corev1.PodRunning, status("app", true, running())), "NodeLost")), "1/1", "Unknown", "0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row := PodRow(tt.pod, false, now)
			want := []string{"web", tt.ready, tt.status, tt.restarts, "5m"}
			if strings.Join(row, "|") != strings.Join(want, "|") {
				t.Errorf("row = %q, want %q", row, want)
			}
		})
	}
}

func TestWidePodRowsAddIPNodeNominatedNodeAndReadinessGates(t *testing.T) {
	p := podWith(corev1.PodRunning, status("app", true, running()))
	if got := strings.Join(PodRow(p, true, now)[5:], "|"); got != "<none>|<none>|<none>|<none>" {
		t.Errorf("empty wide cells = %s", got)
	}
	p.Status.PodIP = "127.0.1.7"
	p.Spec.NodeName = "podgate"
	p.Status.NominatedNodeName = "other"
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}, {ConditionType: "example.com/dns"}}
	withCondition(p, "example.com/lb", corev1.ConditionTrue, "")
	withCondition(p, "example.com/dns", corev1.ConditionFalse, "")
	if got := strings.Join(PodRow(p, true, now)[5:], "|"); got != "127.0.1.7|podgate|other|1/2" {
		t.Errorf("wide cells = %s", got)
	}
	p.Status.PodIPs = []corev1.PodIP{{IP: "127.0.1.8"}}
	if got := PodRow(p, true, now)[5]; got != "127.0.1.8" {
		t.Errorf("IP = %s, want podIPs[0]", got)
	}
}

func TestAgeIsKubectlsHumanDuration(t *testing.T) {
	tests := []struct {
		name string
		ts   metav1.Time
		want string
	}{
		{"seconds", ago(5 * time.Second), "5s"},
		{"under two minutes stays in seconds", ago(119 * time.Second), "119s"},
		{"minutes and seconds under ten minutes", ago(3*time.Minute + 2*time.Second), "3m2s"},
		{"whole minutes", ago(42 * time.Minute), "42m"},
		{"hours and minutes under eight hours", ago(5*time.Hour + 10*time.Minute), "5h10m"},
		{"days", ago(49 * time.Hour), "2d1h"},
		{"whole days past a week", ago(10 * 24 * time.Hour), "10d"},
		{"unset", metav1.Time{}, "<unknown>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := age(tt.ts, now); got != tt.want {
				t.Errorf("age = %q, want %q", got, tt.want)
			}
		})
	}
}

func event(name, reason, msg string, count int32, first, last time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", FieldPath: "spec.containers{app}"},
		Reason:         reason, Message: msg, Type: "Warning", Count: count,
		FirstTimestamp: ago(first), LastTimestamp: ago(last),
		Source: corev1.EventSource{Component: "kubelet", Host: "podgate"},
	}
}

func TestEventRowsFoldRepeatsLikeKubectlEvents(t *testing.T) {
	series := event("s", "Unhealthy", "Readiness probe failed", 0, 10*time.Minute, 10*time.Minute)
	series.EventTime = metav1.NewMicroTime(now.Add(-10 * time.Minute))
	series.FirstTimestamp = metav1.Time{}
	series.Series = &corev1.EventSeries{Count: 7, LastObservedTime: metav1.NewMicroTime(now.Add(-3 * time.Second))}

	tests := []struct {
		name string
		ev   *corev1.Event
		want string
	}{
		{"a single event shows its age", event("a", "Started", "Started container app", 1, 5*time.Second, 5*time.Second),
			"5s|Warning|Started|Pod/web|Started container app"},
		{"repeats fold as last (xN over first)", event("b", "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500", 3, 2*time.Minute, 12*time.Second),
			"12s (x3 over 2m)|Warning|Unhealthy|Pod/web|Liveness probe failed: HTTP probe failed with statuscode: 500"},
		{"a series folds with its own count", series, "3s (x7 over 10m)|Warning|Unhealthy|Pod/web|Readiness probe failed"},
		{"the message is trimmed", event("c", "Killing", "  Stopping container app\n", 1, time.Second, time.Second),
			"1s|Warning|Killing|Pod/web|Stopping container app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(EventRow(tt.ev, false, now), "|"); got != tt.want {
				t.Errorf("row = %q, want %q", got, tt.want)
			}
		})
	}
	wide := EventRow(event("b", "Unhealthy", "x", 3, 2*time.Minute, 12*time.Second), true, now)
	if got := strings.Join(wide, "|"); got != "12s|Warning|Unhealthy|pod/web|spec.containers{app}|kubelet, podgate|x|2m|3|b" {
		t.Errorf("wide row = %q", got)
	}
}

func TestCellsStayOnOneLine(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"a multi-line message is cut with ...", "exec probe output:\nline two", "exec probe output:..."},
		{"a carriage return cuts too", "a\rb", "a..."},
		{"an escape sequence is shown, not obeyed", "red \x1b[31mtext", "red ^[[31mtext"},
		{"a tab becomes a space", "a\tb", "a b"},
		{"plain text is unchanged", "Started container app", "Started container app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := escapeCell(tt.in); got != tt.want {
				t.Errorf("escapeCell(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestEndpointSliceRowsShowThreeThenMore(t *testing.T) {
	port := func(n int32) discoveryv1.EndpointPort { return discoveryv1.EndpointPort{Port: &n} }
	named := "http"
	ep := func(addrs ...string) discoveryv1.Endpoint { return discoveryv1.Endpoint{Addresses: addrs} }
	tests := []struct {
		name  string
		slice discoveryv1.EndpointSlice
		want  string
	}{
		{"nothing yet is <unset>", discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4}, "web|IPv4|<unset>|<unset>|5m"},
		{"ports and addresses are listed", discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{port(8012), port(8022)}, Endpoints: []discoveryv1.Endpoint{ep("127.0.1.1"), ep("127.0.1.2")}},
			"web|IPv4|8012,8022|127.0.1.1,127.0.1.2|5m"},
		{"past three comes + N more...", discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: &named}, {}, port(1), port(2), port(3)}, Endpoints: []discoveryv1.Endpoint{ep("127.0.1.1", "127.0.1.2"), ep("127.0.1.3", "127.0.1.4")}},
			"web|IPv4|http,*,1 + 2 more...|127.0.1.1,127.0.1.2,127.0.1.3 + 1 more...|5m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.slice.Name, tt.slice.CreationTimestamp = "web", ago(5*time.Minute)
			if got := strings.Join(EndpointSliceRow(&tt.slice, false, now), "|"); got != tt.want {
				t.Errorf("row = %q, want %q", got, tt.want)
			}
		})
	}
}

func ksvc(name string, ready corev1.ConditionStatus, reason string) *servingv1.Service {
	s := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	s.Status.URL = "http://" + name + ".default.example.com"
	s.Status.LatestCreatedRevisionName = name + "-00001"
	if ready == corev1.ConditionTrue {
		s.Status.LatestReadyRevisionName = name + "-00001"
	}
	if ready != "" {
		s.Status.Conditions = []servingv1.Condition{{Type: "ConfigurationsReady", Status: corev1.ConditionTrue}, {Type: "Ready", Status: ready, Reason: reason}}
	}
	return s
}

func TestServiceRowsAreKubectlGetKsvc(t *testing.T) {
	tests := []struct {
		name string
		svc  *servingv1.Service
		want string
	}{
		{"a ready service", ksvc("hello", corev1.ConditionTrue, ""), "hello|http://hello.default.example.com|hello-00001|hello-00001|True|"},
		{"a failing service shows its reason", ksvc("bad", corev1.ConditionFalse, "RevisionMissing"), "bad|http://bad.default.example.com|bad-00001||False|RevisionMissing"},
		{"no Ready condition yet leaves the cells empty", ksvc("new", "", ""), "new|http://new.default.example.com|new-00001|||"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(ServiceRow(tt.svc, false, now), "|"); got != tt.want {
				t.Errorf("row = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTablesAreLaidOutLikeKubectls(t *testing.T) {
	var buf bytes.Buffer
	var widths []int
	writeTable(&buf, [][]string{
		{"NAME", "READY", "STATUS", "RESTARTS", "AGE"},
		{"hello-00001-deployment-7d9c4-x2x4q", "2/2", "Running", "0", "5s"},
		{"db", "0/1", "CrashLoopBackOff", "3 (12s ago)", "3m2s"},
	}, &widths)
	want := "" +
		"NAME                                 READY   STATUS             RESTARTS      AGE\n" +
		"hello-00001-deployment-7d9c4-x2x4q   2/2     Running            0             5s\n" +
		"db                                   0/1     CrashLoopBackOff   3 (12s ago)   3m2s\n"
	if buf.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", buf.String(), want)
	}
	// A later (watch) row keeps the widths and widens only what overflows.
	buf.Reset()
	writeTable(&buf, [][]string{{"x", "1/1", "Running", "12 (1s ago)", "1s"}}, &widths)
	if want := "x                                    1/1     Running            12 (1s ago)   1s\n"; buf.String() != want {
		t.Errorf("watch row:\n%q\nwant\n%q", buf.String(), want)
	}
	buf.Reset()
	writeTable(&buf, [][]string{{"A", "B"}}, new([]int))
	if want := "A     B\n"; buf.String() != want {
		t.Errorf("narrow columns are six wide: %q", buf.String())
	}
}

// --- the command against a real control API ---

// The columns are the API server's (names, types, formats, priority 1
// for -o wide); local/apiserver's TestKubectlGetPrintsWhatKubeAPIServerPrints
// holds them against a real kube-apiserver, descriptions included.
func TestTablesHaveTheAPIServersColumns(t *testing.T) {
	tests := []struct {
		name    string
		columns []metav1.TableColumnDefinition
		want    string // name:type[:format][:priority] per column
	}{
		{"pods", PodTable.Columns,
			"Name:string:name Ready:string Status:string Restarts:string Age:string IP:string:1 Node:string:1 Nominated Node:string:1 Readiness Gates:string:1"},
		{"events", EventTable.Columns,
			"Last Seen:string Type:string Reason:string Object:string Subobject:string:1 Source:string:1 Message:string First Seen:string:1 Count:string:1 Name:string:name:1"},
		{"endpointslices", EndpointSliceTable.Columns, "Name:string:name AddressType:string Ports:string Endpoints:string Age:string"},
		{"knative services: the CRD's printer columns, no Age", ServiceTable.Columns,
			"Name:string:name URL:string LatestCreated:string LatestReady:string Ready:string Reason:string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range tt.columns {
				s := c.Name + ":" + c.Type
				if c.Format != "" {
					s += ":" + c.Format
				}
				if c.Priority != 0 {
					s += ":" + strconv.Itoa(int(c.Priority))
				}
				if c.Description == "" {
					t.Errorf("column %s has no description", c.Name)
				}
				got = append(got, s)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("columns\n%s\nwant\n%s", strings.Join(got, " "), tt.want)
			}
		})
	}
}

// The cells the API server fills: strings, the event count an integer,
// a custom resource's missing field nil (printed empty), every wide cell
// there whether or not the client prints it.
func TestTableCellsAreTheAPIServersValues(t *testing.T) {
	p := podWith(corev1.PodRunning, restarted(status("app", false, waiting("CrashLoopBackOff")), 3, 12*time.Second))
	p.Status.PodIPs = []corev1.PodIP{{IP: "127.0.1.7"}}
	p.Spec.NodeName = "vm"
	e := event("b", "Unhealthy", "x", 3, 2*time.Minute, 12*time.Second)
	e.InvolvedObject.Kind, e.Source = "Pod", corev1.EventSource{}
	e.ReportingController, e.ReportingInstance = "podgate.dev/node", "vm"
	noName := event("n", "Registered", "y", 0, time.Minute, 0)
	noName.InvolvedObject = corev1.ObjectReference{Kind: "Node"}
	noName.LastTimestamp = metav1.Time{}
	tests := []struct {
		name  string
		cells []any
		want  []any
	}{
		{"a crash-looping pod", PodTable.Cells(p, now), []any{"web", "0/1", "CrashLoopBackOff", "3 (12s ago)", "5m", "127.0.1.7", "vm", "<none>", "<none>"}},
		{"an event: the object's kind in lower case, the reporting controller as source, the count an integer",
			EventTable.Cells(e, now), []any{"12s", "Warning", "Unhealthy", "pod/web", "spec.containers{app}", "podgate.dev/node, vm", "x", "2m", int64(3), "b"}},
		{"an event about a nameless object, seen once: count 1, last seen when first seen",
			EventTable.Cells(noName, now), []any{"60s", "Warning", "Registered", "node", "", "kubelet, podgate", "y", "60s", int64(1), "n"}},
		{"a Knative Service not reconciled yet: nil cells", ServiceTable.Cells(ksvc("new", "", ""), now),
			[]any{"new", "http://new.default.example.com", "new-00001", nil, nil, nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if fmt.Sprintf("%#v", tt.cells) != fmt.Sprintf("%#v", tt.want) {
				t.Errorf("cells\n%#v\nwant\n%#v", tt.cells, tt.want)
			}
		})
	}
	// A finished pod's row says so.
	done := podWith(corev1.PodSucceeded, status("app", false, terminated("Completed", 0, 0)))
	if c := PodTable.Table([]*corev1.Pod{done}, now, false).Rows[0].Conditions; len(c) != 1 || c[0].Type != metav1.RowCompleted || c[0].Reason != "Succeeded" {
		t.Errorf("succeeded pod's row conditions %+v, want Completed (Succeeded)", c)
	}
}

package scenario

// APIVersion and Kind head every scenario file.
const (
	APIVersion = "podgate.dev/v1alpha1"
	Kind       = "Scenario"
)

// Scenario is one scenario file: the manifests to run, the load through
// the front door, the steps in order and the expectations the run is
// judged by. Field names are the file's; docs/timeline.md#scenarios
// documents them for users.
type Scenario struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Name names the recording and the picture (NAME.jsonl, NAME.svg):
	// lower-case letters, digits and '-'.
	Name string `json:"name"`
	// Description says what the scenario reproduces (its seed).
	Description string `json:"description,omitempty"`
	// Manifests are run together, as `podgate run -f A -f B`.
	Manifests []Manifest `json:"manifests"`
	// Replicas, when set, runs that many pods of every Deployment and
	// Knative Service (podgate run --replicas).
	Replicas int           `json:"replicas,omitempty"`
	Load     Load          `json:"load"`
	Steps    []Step        `json:"steps"`
	Expect   []Expectation `json:"expect"`

	// File is the path the scenario was read from; Dir its directory,
	// which manifest paths are relative to.
	File string `json:"-"`
	Dir  string `json:"-"`
	// parsed durations, by step index.
	timing []stepTiming
	load   loadTiming
}

// Manifest is one manifest file (a path relative to the scenario file)
// or one written inline, with the few changes a scenario makes to it.
type Manifest struct {
	File   string `json:"file,omitempty"`
	Inline string `json:"inline,omitempty"`
	// Replace replaces text before the manifest is read: an exec
	// probe's file, shared by every run of the example, becomes one of
	// this run's own ($(WORKDIR) is the run's directory).
	Replace []Replace `json:"replace,omitempty"`
	// Set sets fields of every pod spec of the manifest.
	Set *PodSpecFields `json:"set,omitempty"`
	// Args appends arguments to a container's args.
	Args []ContainerArgs `json:"args,omitempty"`
}

// Replace is one text replacement.
type Replace struct {
	Old string `json:"old"`
	New string `json:"new"`
}

// PodSpecFields are the pod spec fields a scenario may set.
type PodSpecFields struct {
	// TerminationGracePeriodSeconds: a short grace period stops the
	// scenario's pods in seconds instead of Knative's 30.
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// TimeoutSeconds is a Knative Service's request timeout: how long
	// the front door holds a request before its 504.
	TimeoutSeconds *int64 `json:"timeoutSeconds,omitempty"`
}

// ContainerArgs are arguments appended to a container's args.
type ContainerArgs struct {
	Container string   `json:"container"`
	Append    []string `json:"append"`
}

// Load is the load sent through the front door from the step `load:
// start` until `load: stop` (or the last step).
type Load struct {
	// Service is the workload the requests are for; its host
	// (NAME.NAMESPACE.DOMAIN) routes them.
	Service string `json:"service"`
	// Host, when set, is sent instead of the service's host.
	Host string `json:"host,omitempty"`
	// Rate is the requests per second of all workers together
	// (default 100); Workers send concurrently (default 4), each on its
	// own kept-alive connection.
	Rate    float64 `json:"rate,omitempty"`
	Workers int     `json:"workers,omitempty"`
	// Duration, when set, keeps the load running at least this long
	// after it started, whatever the steps.
	Duration string `json:"duration,omitempty"`
}

// Step is one step. Exactly one of Wait, Load, Toggle and Delete is set,
// or none: a step that only marks its instant (Mark) or waits for its
// time (At).
type Step struct {
	// At holds the step until this long after the scenario started
	// ("10s"): a timed step. Waits for states are better where a state
	// is meant: they hold on a slow machine.
	At string `json:"at,omitempty"`
	// Mark names the step's instant (when it was done); expectations
	// and other steps refer to it, and the picture shows it.
	Mark string `json:"mark,omitempty"`
	// Timeout bounds the step (default 90s).
	Timeout string `json:"timeout,omitempty"`

	Wait *Wait `json:"wait,omitempty"`
	// Load is "start" or "stop".
	Load   string  `json:"load,omitempty"`
	Toggle *Toggle `json:"toggle,omitempty"`
	// Delete deletes a pod (a name bound by a wait's `as`) with its
	// grace period, as `podgate delete pod` does.
	Delete string `json:"delete,omitempty"`
}

// Wait waits for one condition.
type Wait struct {
	// Service waits for the load's service to be "serving" (a pod takes
	// traffic), "not-serving" (none does any more) or "never-served".
	Service string `json:"service,omitempty"`
	// StatusSays waits until what the service's status says of its pods
	// that take no traffic contains every word.
	StatusSays []string `json:"statusSays,omitempty"`
	// PodsReady waits for that many ready pods and binds them, by name,
	// to the names in As.
	PodsReady int `json:"podsReady,omitempty"`
	// PodsRunning waits for that many running pods with an address,
	// ready or not, and binds them to As.
	PodsRunning int      `json:"podsRunning,omitempty"`
	As          []string `json:"as,omitempty"`
	// Replacement waits for a ready pod that is none of the pods bound
	// so far and binds it to this name.
	Replacement string `json:"replacement,omitempty"`
	// PodReady waits until the bound pod is ready (again).
	PodReady string `json:"podReady,omitempty"`
	// Restarted waits until a container of a bound pod restarted since
	// the pod was bound or last toggled, and runs again.
	Restarted *ContainerRef `json:"restarted,omitempty"`
	// Gone waits until the bound pod is no longer listed.
	Gone string `json:"gone,omitempty"`
	// Gate waits until the gate of a bound pod says these containers
	// are ready and those not (its /readyz?verbose).
	Gate *GateState `json:"gate,omitempty"`
	// Served waits for that many requests served, sent since the step
	// began.
	Served int `json:"served,omitempty"`
	// ServedAfter waits for a request sent at or after the mark to be
	// served.
	ServedAfter string `json:"servedAfter,omitempty"`
	// ServedBy waits until each bound pod answered a request (the test
	// app answers its pod's name), sent at or after SentAfter if set.
	ServedBy []string `json:"servedBy,omitempty"`
	// Held waits until every worker of the load has a request in flight
	// sent at or after SentAfter: held, once nothing may serve.
	Held bool `json:"held,omitempty"`
	// Answered waits for a request answered with this status (and body
	// prefix), sent at or after SentAfter if set.
	Answered  *Answer `json:"answered,omitempty"`
	SentAfter string  `json:"sentAfter,omitempty"`
	// For waits this long ("2s"): a hold inside a window, so that the
	// load sends requests the window's rule can judge (a window between
	// two states reached at once judges nothing; see MinWindow).
	For string `json:"for,omitempty"`
}

// ContainerRef is a container of a bound pod.
type ContainerRef struct {
	Pod       string `json:"pod"`
	Container string `json:"container"`
}

// GateState is what a pod's gate should say of its containers.
type GateState struct {
	Pod      string   `json:"pod"`
	Ready    []string `json:"ready,omitempty"`
	NotReady []string `json:"notReady,omitempty"`
}

// Toggle sets one of the test app's toggles in a bound pod.
type Toggle struct {
	Pod  string `json:"pod"`
	Port int    `json:"port"`
	// Toggle is "ready" (/readyz), "live" (/livez and /healthz) or
	// "exec" (the file an exec probe cats).
	Toggle string `json:"toggle"`
	// Set is the toggle's new value (the test app's ?set=): false fails
	// the probe, true passes it again.
	Set *bool `json:"set"`
}

// Answer is a response: its status and the start of its body.
type Answer struct {
	Status    int    `json:"status"`
	Body      string `json:"body,omitempty"`
	SentAfter string `json:"sentAfter,omitempty"`
}

// Window is a stretch between two marks; an empty From is the start, an
// empty To the end.
type Window struct {
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
	// By narrows noneServed to the requests a bound pod answered (the
	// test app answers its pod's name): with two pods, the other one
	// serves while this one must not.
	By string `json:"by,omitempty"`
}

// NoTraffic names a pod (bound) that no request may reach while it is
// not ready (as the recording says), or at all.
type NoTraffic struct {
	Pod string `json:"pod"`
	// Always: no request at all; else none while the pod was not ready.
	Always bool `json:"always,omitempty"`
}

// EventRule is an event the recording must hold.
type EventRule struct {
	Reason    string `json:"reason"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`
	// Message is a part of the event's message.
	Message string `json:"message,omitempty"`
}

// Expectation is one rule the run is judged by; exactly one field is
// set. The rules on requests judge what the load saw (the clients'
// view); noTrafficTo, requestsSentToKilledPod and event judge the
// recording.
type Expectation struct {
	// Failed: at most this many requests failed (not a complete 2xx).
	Failed *int `json:"failed,omitempty"`
	// FailedOnly: every failed request was this answer.
	FailedOnly *Answer `json:"failedOnly,omitempty"`
	// Answered: at least one request got this answer.
	Answered *Answer `json:"answered,omitempty"`
	// NoneServed: no request sent at or after From was served before To.
	NoneServed *Window `json:"noneServed,omitempty"`
	// Released: a request sent in [From, To) was held across To and then
	// served.
	Released *Window `json:"released,omitempty"`
	// ServedAfter: a request sent at or after the mark was served.
	ServedAfter string `json:"servedAfter,omitempty"`
	// StatusSays: the service's status, as the steps read it, said every
	// word at once.
	StatusSays []string `json:"statusSays,omitempty"`
	// NoTrafficTo: the front door sent the pod no request while it was
	// not ready (or none at all).
	NoTrafficTo *NoTraffic `json:"noTrafficTo,omitempty"`
	// RequestsSentToKilledPod: at most this many requests were sent to a
	// pod in a kill's window (from when it stopped being ready, or the
	// kill, until it was ready again); the recording must hold a kill.
	RequestsSentToKilledPod *int `json:"requestsSentToKilledPod,omitempty"`
	// Event: the recording holds such an event.
	Event *EventRule `json:"event,omitempty"`
	// DrainedFirst: each container of the bound pod got SIGTERM only
	// after the pod's gate had drained.
	DrainedFirst string `json:"drainedFirst,omitempty"`
}

// Package record is podgate's recording format: one ordered stream of
// timestamped facts about a run — probe attempts, container states, events,
// pod conditions, EndpointSlice endpoints, the gate's verdict, the front
// door's routing decisions and every request — written as JSON lines that
// other tools can read. docs/timeline.md documents it for users.
//
// The first line is a header naming the format and its version; every
// later line is one Fact. A reader refuses a format or a major version it
// does not know instead of guessing. Facts are written in the order
// podgate learned them; their times come from where they happened (a
// request is written when it ends, with its start in Request.Start), so a
// reader that wants one time axis sorts by Time, stably.
package record

import (
	"time"
)

// FormatName is the header's format field.
const FormatName = "podgate.dev/recording"

// Version is the format version this package writes. A reader accepts
// any file whose version it knows (1 only, so far).
const Version = 1

// Kind says which payload a Fact carries.
type Kind string

// The kinds of facts. A Fact of kind K carries the payload field named K
// and no other.
const (
	KindHeader    Kind = "header"
	KindProbe     Kind = "probe"
	KindContainer Kind = "container"
	KindEvent     Kind = "event"
	KindCondition Kind = "condition"
	KindEndpoint  Kind = "endpoint"
	KindGate      Kind = "gate"
	KindRoute     Kind = "route"
	KindRequest   Kind = "request"
	KindMark      Kind = "mark"
	KindTruncated Kind = "truncated"
)

// Fact is one line of a recording.
type Fact struct {
	Time time.Time `json:"t"`
	Kind Kind      `json:"kind"`
	// Namespace, Pod and Container say whom the fact is about, when it is
	// about a pod or one of its containers.
	Namespace string `json:"namespace,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Container string `json:"container,omitempty"`

	Header    *Header    `json:"header,omitempty"`
	Probe     *Probe     `json:"probe,omitempty"`
	State     *State     `json:"container_state,omitempty"`
	Event     *Event     `json:"event,omitempty"`
	Condition *Condition `json:"condition,omitempty"`
	Endpoint  *Endpoint  `json:"endpoint,omitempty"`
	Gate      *Gate      `json:"gate,omitempty"`
	Route     *Route     `json:"route,omitempty"`
	Request   *Request   `json:"request,omitempty"`
	Mark      *Mark      `json:"mark,omitempty"`
	Truncated *Truncated `json:"truncated,omitempty"`
}

// Header is the first line.
type Header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Source is who recorded: "podgate run", or "cluster" for `podgate
	// record` against a kube-apiserver.
	Source string `json:"source"`
	// Started is when recording began.
	Started time.Time `json:"started"`
	// Limit is the size bound in bytes the writer kept to (0: none).
	Limit int64 `json:"limit,omitempty"`
	// Detail is free text: the command line, the cluster, the scenario.
	Detail string `json:"detail,omitempty"`
}

// Probe is one probe attempt of one container: a tick of a kubelet probe
// worker (podgate run), or on a cluster only the failures the kubelet
// reports as Unhealthy events.
type Probe struct {
	// Probe is "readiness", "liveness" or "startup".
	Probe string `json:"probe"`
	// Result is "success", "warning", "failure" or "error".
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
	// State is the probe's published state after this attempt: "unknown",
	// "success" or "failure" (thresholds applied).
	State string `json:"state,omitempty"`
	// Restart is set on the attempt after which the container is killed
	// (liveness or startup reached its failure threshold).
	Restart     bool   `json:"restart,omitempty"`
	ContainerID string `json:"container_id,omitempty"`
}

// State is a container's status as the pod's status says it, recorded
// when any of it changes.
type State struct {
	// State is "waiting", "running" or "terminated".
	State        string `json:"state"`
	Reason       string `json:"reason,omitempty"`
	Message      string `json:"message,omitempty"`
	ExitCode     *int32 `json:"exit_code,omitempty"`
	RestartCount int32  `json:"restart_count"`
	Ready        bool   `json:"ready"`
	Started      *bool  `json:"started,omitempty"`
	ContainerID  string `json:"container_id,omitempty"`
	// Sidecar marks a native sidecar (an init container that always
	// restarts).
	Sidecar bool `json:"sidecar,omitempty"`
}

// Event is a Kubernetes event (core/v1 or events.k8s.io), recorded each
// time it is created or its count grows.
type Event struct {
	Type    string `json:"type"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Object is KIND/NAME of what the event is about.
	Object string `json:"object"`
	Count  int32  `json:"count,omitempty"`
}

// Condition is a pod condition (Ready, ContainersReady, the readiness
// gate's podgate.dev/containers-ready, …), recorded when its status,
// reason or message changes.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Endpoint is one endpoint of an EndpointSlice, recorded when it appears,
// when its conditions change and when it goes (Removed).
type Endpoint struct {
	// Service is the Service (or workload) the slice belongs to.
	Service string `json:"service"`
	Slice   string `json:"slice"`
	Address string `json:"address"`
	// Ready, Serving and Terminating are the endpoint's conditions; nil
	// means unset (which Kubernetes reads as ready/serving, not
	// terminating).
	Ready       *bool `json:"ready,omitempty"`
	Serving     *bool `json:"serving,omitempty"`
	Terminating *bool `json:"terminating,omitempty"`
	Removed     bool  `json:"removed,omitempty"`
}

// Gate is the gate's aggregated verdict on its pod: every container
// counted.
type Gate struct {
	Ready bool `json:"ready"`
	// Message names the containers that are not ready and why.
	Message string `json:"message,omitempty"`
}

// The front door's routing decisions.
const (
	// DecisionRouted: a request was sent to Pod.
	DecisionRouted = "routed"
	// DecisionHeld: no pod was ready; the request waits.
	DecisionHeld = "held"
	// DecisionReleased: a held request got a pod after waiting Held.
	DecisionReleased = "released"
	// DecisionTimedOut: a held request gave up.
	DecisionTimedOut = "timed-out"
	// DecisionPodIn: the front door may send Pod requests from now on
	// (its endpoint and its gate both say ready). Not about one request:
	// Request is 0.
	DecisionPodIn = "pod-in"
	// DecisionPodOut: the front door sends Pod no new request from now
	// on (its endpoint or its gate said not ready, it is terminating, or
	// it left). Request is 0. With pod-in, this is when the front door
	// learnt, which a recorder's own watch of the API sees earlier or
	// later.
	DecisionPodOut = "pod-out"
)

// Route is one routing decision of the front door for one request.
type Route struct {
	// Target is the Service (NAMESPACE/NAME) the request's host named.
	Target string `json:"target"`
	// Decision is one of the Decision constants.
	Decision string `json:"decision"`
	// Request is the request's ID (see Request.ID).
	Request uint64 `json:"request"`
	// Held is how long the request waited, on released and timed-out.
	Held time.Duration `json:"held_ns,omitempty"`
}

// Request is one request through the front door, recorded when it ends
// (Fact.Time is its end); Fact.Pod is the pod that served it, empty when
// none did.
type Request struct {
	ID     uint64    `json:"id"`
	Target string    `json:"target"`
	Method string    `json:"method,omitempty"`
	Path   string    `json:"path,omitempty"`
	Start  time.Time `json:"start"`
	// Status is the HTTP status sent to the client; 499 when the client
	// went away before any answer.
	Status  int           `json:"status"`
	Latency time.Duration `json:"latency_ns"`
	Error   string        `json:"error,omitempty"`
}

// Mark is an instant of a scenario ("toggled the sidecar unready").
type Mark struct {
	Name string `json:"name"`
}

// Truncated is the last line of a recording that hit its size bound:
// everything after Time was dropped.
type Truncated struct {
	Limit   int64  `json:"limit"`
	Message string `json:"message"`
}

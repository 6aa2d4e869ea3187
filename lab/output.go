package lab

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
)

// maxOutput bounds what a Process keeps of each of its streams: container
// output of a long scenario (probe logs every second per container) must
// not grow without limit. The newest output is kept; failure logs need
// the end more than the beginning.
const maxOutput = 8 << 20

// Output is a concurrency-safe, size-capped copy of a process's stream
// (a Process's, a cluster's). It is an io.Writer so exec.Cmd copies into
// it itself.
type Output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	dropped int
	changed chan struct{} // closed and replaced on every write
}

// NewOutput is an empty Output.
func NewOutput() *Output { return &Output{changed: make(chan struct{})} }

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf.Write(p)
	if o.buf.Len() > maxOutput {
		// Drop the older half at once, so trimming is rare.
		n := o.buf.Len() - maxOutput/2
		o.buf.Next(n)
		o.dropped += n
		// Next leaves the bytes in place; copy so the buffer can shrink.
		rest := append([]byte(nil), o.buf.Bytes()...)
		o.buf.Reset()
		o.buf.Write(rest)
	}
	close(o.changed)
	o.changed = make(chan struct{})
	return len(p), nil
}

// String is everything kept so far, noting how much was dropped.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dropped > 0 {
		return "[… " + strconv.Itoa(o.dropped) + " earlier bytes dropped …]\n" + o.buf.String()
	}
	return o.buf.String()
}

// Snapshot returns the text kept and a channel closed on the next write.
func (o *Output) Snapshot() (string, <-chan struct{}) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String(), o.changed
}

// PodOutput is a cluster's container output ("POD/CONTAINER | line"), kept
// per pod: each pod's lines are capped as an Output is, so one chatty pod
// (Knative's activator logs every failed probe, with a stack trace)
// cannot push out the lines a scenario's verdicts read (a gate's
// "drained: "). Lines without a pod prefix are kept together.
type PodOutput struct {
	mu      sync.Mutex
	partial []byte
	pods    map[string]*Output
	order   []string
}

// NewPodOutput is an empty PodOutput.
func NewPodOutput() *PodOutput { return &PodOutput{pods: map[string]*Output{}} }

func (o *PodOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.partial = append(o.partial, p...)
	for {
		i := bytes.IndexByte(o.partial, '\n')
		if i < 0 {
			break
		}
		o.line(o.partial[:i+1])
		o.partial = o.partial[i+1:]
	}
	// Keep the unfinished line in a buffer of its own size.
	o.partial = append([]byte(nil), o.partial...)
	return len(p), nil
}

// line files one whole line under its pod.
func (o *PodOutput) line(l []byte) {
	pod := ""
	if prefix, _, ok := bytes.Cut(l, []byte(" | ")); ok {
		if name, _, ok := bytes.Cut(prefix, []byte("/")); ok {
			pod = string(name)
		}
	}
	out, ok := o.pods[pod]
	if !ok {
		out = NewOutput()
		o.pods[pod] = out
		o.order = append(o.order, pod)
	}
	_, _ = out.Write(l)
}

// String is every pod's lines, pod by pod in the order they first wrote
// (each pod's own in order), then any unfinished line.
func (o *PodOutput) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var b strings.Builder
	for _, pod := range o.order {
		b.WriteString(o.pods[pod].String())
	}
	b.Write(o.partial)
	return b.String()
}

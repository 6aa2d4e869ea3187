package local

import (
	"context"
	"strings"
	"time"

	"github.com/podgate/podgate/probe/prober"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/record/kubewatch"
)

// recordSyncTimeout bounds the recording watch's first lists of the
// control API, which answers at once: only a broken API takes longer.
const recordSyncTimeout = 30 * time.Second

// watchForRecording records what the control API says of pods, events
// and EndpointSlices, when a recording is asked for. Its stop takes a
// last look, so the pods' last changes are in.
func (r *run) watchForRecording(ctx context.Context, stack *closers) error {
	if r.cfg.Recorder == nil {
		return nil
	}
	syncCtx, cancel := context.WithTimeout(ctx, recordSyncTimeout)
	defer cancel()
	w, err := kubewatch.Start(syncCtx, kubewatch.Config{Client: r.client, Sink: r.cfg.Recorder})
	if err != nil {
		return err
	}
	stack.push(func() error {
		stopCtx, cancel := context.WithTimeout(context.Background(), recordSyncTimeout)
		defer cancel()
		return w.Stop(stopCtx)
	})
	return nil
}

// probeRecorder is the node agent's probe hook for a recording: a probe
// fact for every attempt (the agent's other probe Updates are its own
// business: their effects show in the pods' status and events). Nil
// without a recording.
func probeRecorder(sink record.Sink) func(namespace, pod string, u prober.Update) {
	if sink == nil {
		return nil
	}
	return func(namespace, pod string, u prober.Update) {
		if f, ok := probeFact(namespace, pod, u); ok {
			sink.Record(f)
		}
	}
}

// probeFact is an Attempted Update as a probe fact: its time is the
// prober's, when the attempt's result was counted.
func probeFact(namespace, pod string, u prober.Update) (record.Fact, bool) {
	if u.Type != prober.Attempted {
		return record.Fact{}, false
	}
	msg := u.Outcome.Message
	if msg == "" && u.Outcome.Err != nil {
		msg = u.Outcome.Err.Error()
	}
	return record.Fact{
		Time: u.At, Kind: record.KindProbe, Namespace: namespace, Pod: pod, Container: u.Container,
		Probe: &record.Probe{
			Probe: strings.ToLower(u.Kind.String()), Result: u.Outcome.Result.String(), Message: msg,
			State: strings.ToLower(u.State.String()), Restart: u.Restart, ContainerID: u.ContainerID,
		},
	}, true
}

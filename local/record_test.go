package local

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/record"
	"github.com/podgate/podgate/test/syncbuf"
)

// TestRunRecordsEveryProbeAttemptAndWhatTheAPISays: with Config.Recorder
// the agent's every probe attempt (successes too) and the control API's
// pods and endpoints reach the sink, from before the pod starts until
// Run returns, and nothing after.
func TestRunRecordsEveryProbeAttemptAndWhatTheAPISays(t *testing.T) {
	m, err := workload.Load(strings.NewReader(`apiVersion: v1
kind: Pod
metadata: {name: probed}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: c
    image: busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
`), "probed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncbuf.Buffer{}
	cfg := config(t, "127.0.98.0/24", stderr)
	cfg.Workloads = m.Workloads
	log := record.NewLog(10000)
	cfg.Recorder = log
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()

	count := func(match func(record.Fact) bool) int {
		all, _, _ := log.Since(0)
		n := 0
		for _, f := range all {
			if match(f) {
				n++
			}
		}
		return n
	}
	success := func(f record.Fact) bool {
		return f.Kind == record.KindProbe && f.Pod == "probed" && f.Container == "c" && f.Probe.Probe == "readiness" &&
			f.Probe.Result == "success" && f.Probe.State == "success" && f.Probe.ContainerID != ""
	}
	deadline := time.Now().Add(30 * time.Second)
	for count(success) < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 3 successful readiness attempts recorded in 30s; stderr:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of ctx ending")
	}
	for _, want := range []struct {
		what  string
		match func(record.Fact) bool
	}{
		{"the container running", func(f record.Fact) bool {
			return f.Kind == record.KindContainer && f.Container == "c" && f.State.State == "running"
		}},
		{"Ready True", func(f record.Fact) bool {
			return f.Kind == record.KindCondition && f.Pod == "probed" && f.Condition.Type == "Ready" && f.Condition.Status == "True"
		}},
		{"the endpoint ready", func(f record.Fact) bool {
			return f.Kind == record.KindEndpoint && f.Pod == "probed" && f.Endpoint.Ready != nil && *f.Endpoint.Ready
		}},
		{"the Killing event of the stop", func(f record.Fact) bool {
			return f.Kind == record.KindEvent && f.Pod == "probed" && f.Event.Reason == "Killing"
		}},
	} {
		if count(want.match) == 0 {
			all, _, _ := log.Since(0)
			t.Errorf("no fact for %s among %d", want.what, len(all))
		}
	}
	n := count(func(record.Fact) bool { return true })
	time.Sleep(1500 * time.Millisecond) // a probe period and more: nothing may come
	if got := count(func(record.Fact) bool { return true }); got != n {
		t.Errorf("%d facts after Run returned", got-n)
	}
}

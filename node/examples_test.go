package node

import (
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Every example loads, validates and can run locally; the lifecycle one is
// run until it is ready.
func TestLocalExamples(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../examples/local/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	files = append(files, "../examples/hello.yaml")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t)
			ws := load(t, string(data))
			if err := h.check(ws); err != nil {
				t.Fatal(err)
			}
			switch filepath.Base(f) {
			case "lifecycle.yaml":
				h.start(string(data))
				p := h.waitPod("lifecycle", "ready", podReady)
				if cs := containerStatus(p, "setup"); cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
					t.Errorf("setup = %+v, want completed", cs.State)
				}
				h.waitOutputCount("lifecycle", "preparing lifecycle on "+p.Status.PodIP, 1)
			case "replicas.yaml":
				h.start(string(data))
				h.waitSlice("web", "three ready endpoints", func(s *discoveryv1.EndpointSlice) bool {
					n := 0
					for _, ep := range s.Endpoints {
						if *ep.Conditions.Ready {
							n++
						}
					}
					return n == 3
				})
			case "crashloop.yaml":
				h.start(string(data))
				h.waitPod("crashloop", "crash looping", func(p *corev1.Pod) bool {
					w := containerStatus(p, "crash").State.Waiting
					return w != nil && w.Reason == "CrashLoopBackOff"
				})
			}
		})
	}
}

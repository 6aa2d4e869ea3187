package conformance_test

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/podgate/podgate/admission/validation"
	"github.com/podgate/podgate/admission/workload"
	"github.com/podgate/podgate/local"
	"github.com/podgate/podgate/test/conformance"
	"github.com/podgate/podgate/test/syncbuf"
)

// localCIDR is this test's pod range: its own, so it runs beside `podgate
// run` and the other packages' tests.
const localCIDR = "127.4.1.0/24"

var apiLine = regexp.MustCompile(`control API on http://(127\.0\.0\.1:\d+)`)

// TestProbeBehavioursOnPodgateRun runs the table against `podgate run`
// (local.Run, without the gate: the behaviours are the node agent's):
// the pods are its manifests, observed and deleted through its control
// API with client-go, reached at their loopback addresses.
func TestProbeBehavioursOnPodgateRun(t *testing.T) {
	conformance.Run(t, func(t *testing.T, pods []*corev1.Pod) *conformance.World {
		var manifest bytes.Buffer
		for _, p := range pods {
			b, err := yaml.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			manifest.WriteString("---\n")
			manifest.Write(b)
		}
		m, err := workload.Load(&manifest, "table.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range m.Workloads {
			if errs := validation.Validate(w); len(errs) > 0 {
				t.Fatalf("%s: %v", w.ID(), errs.ToAggregate())
			}
		}
		var stdout, stderr syncbuf.Buffer
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- local.Run(ctx, local.Config{
				Workloads: m.Workloads, PodCIDR: localCIDR, APIAddr: "127.0.0.1:0", NoGate: true,
				Listen: "127.0.0.1:0", Domain: "example.com", NodeName: "local",
				ProbeInterval: 200 * time.Millisecond, ProbeTimeout: time.Second,
				Stdout: &stdout, Stderr: &stderr,
			})
		}()
		t.Cleanup(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("podgate run: %v", err)
				}
			case <-time.After(conformance.WaitLimit):
				t.Errorf("podgate run did not stop within %s", conformance.WaitLimit)
			}
			if t.Failed() {
				t.Logf("podgate run's stderr:\n%s\ncontainers' output:\n%s", stderr.String(), stdout.String())
			}
		})
		var addr string
		deadline := time.Now().Add(conformance.WaitLimit)
		for addr == "" {
			select {
			case err := <-done:
				t.Fatalf("podgate run ended before its API served: %v\n%s", err, stderr.String())
			default:
			}
			if m := apiLine.FindStringSubmatch(stderr.String()); m != nil {
				addr = m[1]
			} else if time.Now().After(deadline) {
				t.Fatalf("no control API within %s:\n%s", conformance.WaitLimit, stderr.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		client, err := kubernetes.NewForConfig(&rest.Config{Host: "http://" + addr})
		if err != nil {
			t.Fatal(err)
		}
		return &conformance.World{Client: client, Namespace: "default", HTTP: &http.Client{Timeout: 10 * time.Second}}
	})
}

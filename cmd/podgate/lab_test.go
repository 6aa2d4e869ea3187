package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// `podgate lab run` refuses what cannot run before anything starts:
// usage errors exit 2, invalid files 1 with each problem's field path.
func TestLabRunRefusesBeforeRunning(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	seed := filepath.Join("..", "..", "examples", "scenarios", "seed-004-liveness-restart.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: podgate.dev/v1alpha1\nkind: Scenario\nname: Bad\nmanifests: [{file: x.yaml}]\nload: {service: x}\nsteps: [{load: go}]\nexpect: [{failed: 0}]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no file", []string{"lab", "run"}, exitUsage, []string{"requires at least 1 arg"}},
		{"another world", []string{"lab", "run", "--world", "cluster", bad}, exitUsage, []string{`--world "cluster": only local`}},
		{"an invalid file", []string{"lab", "run", bad}, exitInvalid, []string{
			bad + `: name: Invalid value: "Bad"`, bad + `: steps[0].load: Unsupported value: "go"`}},
		{"a missing file", []string{"lab", "run", filepath.Join(dir, "none.yaml")}, exitInvalid, []string{"none.yaml: no such file"}},
		{"knative flags without --knative", []string{"lab", "run", "--path", "ingress", seed}, exitUsage, []string{"--queue-proxy, --path and --replicas go with --knative"}},
		{"an unknown queue sidecar", []string{"lab", "run", "--knative", "--queue-proxy", "envoy", seed}, exitInvalid, []string{`queue sidecar "envoy": want gate or knative`}},
		{"an unknown path", []string{"lab", "run", "--knative", "--path", "direct", seed}, exitInvalid, []string{`path "direct": want activator or ingress`}},
		{"no pods", []string{"lab", "run", "--knative", "--replicas", "0", seed}, exitInvalid, []string{"replicas 0: want at least 1"}},
		{"a knative pod range on loopback", []string{"lab", "run", "--knative", "--knative-pod-cidr", "127.0.5.0/24", seed}, exitInvalid, []string{"outside 127.0.0.0/8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != tt.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr %q\nwant %q", stderr.String(), w)
				}
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout %q: nothing may run", stdout.String())
			}
		})
	}
}

// The one command of docs/timeline.md: the liveness-restart scenario
// prints seed 004's table — with the answer to its question, the
// requests sent to the pod while it was not ready or being killed — and
// writes the recording and the picture; every rule passes, exit 0.
func TestLabRunTheLivenessRestartPrintsTheTableAndWritesThePicture(t *testing.T) {
	bin := podgateBinary(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "lab", "run", filepath.Join("..", "..", "examples", "scenarios", "seed-004-liveness-restart.yaml"),
		"--record-dir", dir, "--pod-cidr", "127.0.117.0/24")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("podgate lab run: %v\n%s", err, out)
	}
	for _, want := range []string{
		"=== seed-004-liveness-restart: ",
		"+TIME", "KIND", "ENDPOINTS AFTER",
		"Killing: Container user-container failed liveness probe, will be restarted",
		"while not ready or being killed (from ",
		"requests sent to a pod while it was not ready or being killed: ",
		"picture:   " + filepath.Join(dir, "seed-004-liveness-restart.svg"),
		"PASS  failed: 0: 0 of ",
		"PASS  requestsSentToKilledPod: 0: ",
		"PASS seed-004-liveness-restart",
		"1 of 1 scenarios passed",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output has no %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"seed-004-liveness-restart.jsonl", "seed-004-liveness-restart.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// The recording is podgate's: podgate timeline reads it.
	if out, err := exec.Command(bin, "timeline", filepath.Join(dir, "seed-004-liveness-restart.jsonl")).CombinedOutput(); err != nil || !strings.Contains(string(out), "▶ user-container restarted") {
		t.Errorf("podgate timeline of the recording: %v, no mark of the restart:\n%s", err, out)
	}
}

// A scenario that fails says which step, and exits 1; podgate's output
// is kept beside the recording.
func TestLabRunAFailingScenarioExits1(t *testing.T) {
	bin := podgateBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "never.yaml")
	hello, err := filepath.Abs(filepath.Join("..", "..", "examples", "hello.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	scenario := `apiVersion: podgate.dev/v1alpha1
kind: Scenario
name: never
manifests:
  - file: ` + hello + `
    set: {terminationGracePeriodSeconds: 2}
load: {service: hello}
steps:
  - wait: {podsReady: 1, as: [pod]}
  - load: start
  - wait: {service: not-serving}
    timeout: 1s
expect:
  - failed: 0
`
	if err := os.WriteFile(file, []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "lab", "run", file, "--record-dir", dir, "--pod-cidr", "127.0.118.0/24", "-q")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitInvalid {
		t.Fatalf("podgate lab run: %v, want exit 1\n%s", err, out)
	}
	for _, want := range []string{`FAIL  step 3 (wait {"service":"not-serving"}): `, "context deadline exceeded", "PASS  podgate stopped cleanly", "FAIL never", "0 of 1 scenarios passed", "failed: never"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "+TIME") {
		t.Errorf("-q printed the table:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "never.log")); err != nil {
		t.Errorf("podgate's output not kept: %v", err)
	}
}

package proc

import (
	"fmt"
	"os"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary act as a stand-in for podgate: it starts
// a shell with a background child under a Supervisor, prints both pids and
// waits to be killed. Its value says whether to start the guardian.
const helperEnv = "PODGATE_PROC_TEST_HELPER"

// init keeps the main goroutine on the main thread: Go parks (never ends)
// the main thread when a goroutine exits locked to it, so a stranded
// spawner there would stay in its namespace for good.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	// The helper's guardian is this binary too.
	RunReaperIfAsked()
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}

// helperEnters are the helper's modes that start the shell through a
// Spec.Enter (set by the platform's test files), without the guardian.
var helperEnters = map[string]func(start func() error) error{}

func runHelper(mode string) int {
	enter := helperEnters[mode]
	s, err := NewSupervisor(Options{NoGuardian: mode == "no-guardian" || enter != nil})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = s.Start(Spec{
		Path:   "/bin/sh",
		Args:   []string{"sh", "-c", `sleep 600 & echo "$!"; echo "$$"; wait`},
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Enter:  enter,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {} // until the test kills us
}

package proc

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary act as a stand-in for podgate: it starts
// a shell with a background child under a Supervisor, prints both pids and
// waits to be killed. Its value says whether to start the guardian.
const helperEnv = "PODGATE_PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}

func runHelper(mode string) int {
	s, err := NewSupervisor(Options{NoGuardian: mode == "no-guardian"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	_, err = s.Start(Spec{
		Path:   "/bin/sh",
		Args:   []string{"sh", "-c", `sleep 600 & echo "$!"; echo "$$"; wait`},
		Stdout: os.Stdout,
		Stderr: os.Stderr,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	select {} // until the test kills us
}

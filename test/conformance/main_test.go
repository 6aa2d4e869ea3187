package conformance_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/testapp"
)

// The test binary doubles as the containers' program: the default image
// resolution runs os.Executable() with "testapp", as podgate runs its own
// subcommand.
func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	if len(os.Args) > 1 && os.Args[1] == "testapp" {
		os.Exit(testapp.Main(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

package local

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/internal/leftovers"
	"github.com/podgate/podgate/node/proc"
)

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	goleak.VerifyTestMain(m, goleak.Cleanup(leftovers.Isolate()))
}

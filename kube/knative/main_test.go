package knative

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/node/proc"
)

func TestMain(m *testing.M) {
	// The control plane's Supervisor re-executes this test binary as its
	// guardian.
	proc.RunReaperIfAsked()
	goleak.VerifyTestMain(m)
}

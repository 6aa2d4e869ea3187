package apiserver

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/node/proc"
)

func TestMain(m *testing.M) {
	// Before anything else: the guardian of the real control plane's
	// processes (kubectl_test.go) is this test binary, re-executed.
	proc.RunReaperIfAsked()
	goleak.VerifyTestMain(m)
}

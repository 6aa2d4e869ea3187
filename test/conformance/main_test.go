package conformance_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/test/testapp"
)

// The test binary doubles as the containers' program: the default image
// resolution runs os.Executable() with "testapp", as podgate runs its own
// subcommand.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "testapp" {
		os.Exit(testapp.Main(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

package testapp_test

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/test/testapp"
)

// The test binary doubles as the test app's program, as the binaries of
// other packages' tests do for their pods: TestMainAsTheTestBinarysProgram
// runs it with "testapp".
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "testapp" {
		os.Exit(testapp.Main(os.Args[2:]))
	}
	goleak.VerifyTestMain(m)
}

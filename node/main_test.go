package node

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/podgate/podgate/internal/leftovers"
	"github.com/podgate/podgate/node/proc"
	"github.com/podgate/podgate/test/testapp"
)

// The test binary doubles as the containers' programs: the default image
// resolution runs os.Executable() with "testapp" (as podgate runs its own
// subcommand), and "term-reporter" is a helper for the ordering test.
func TestMain(m *testing.M) {
	// Before anything else: the guardian of the Supervisors these tests
	// start is this test binary, re-executed.
	proc.RunReaperIfAsked()
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "testapp":
			os.Exit(testapp.Main(os.Args[2:]))
		case "term-reporter":
			os.Exit(runTermReporter())
		}
	}
	check := leftovers.Isolate()
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if podgatePath != "" {
			_ = os.RemoveAll(filepath.Dir(podgatePath))
		}
		check(code)
		os.Exit(code)
	}))
}

// runTermReporter waits for SIGTERM, then connects to $REPORT_ADDR (the
// test's listener, which looks at the store at that moment) and exits.
func runTermReporter() int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Println("term-reporter running")
	<-term
	if c, err := net.DialTimeout("tcp", os.Getenv("REPORT_ADDR"), 10*time.Second); err == nil {
		buf := make([]byte, 1)
		_, _ = c.Read(buf) // the test answers once it has looked
		c.Close()
	}
	return 0
}

package probe

import (
	"os"
	"runtime"
	"testing"

	"go.uber.org/goleak"
)

// init keeps the main goroutine on the main thread: Go parks (never ends)
// the main thread when a goroutine exits locked to it, so a thread an
// Enter stranded there would stay in its namespace for good.
func init() { runtime.LockOSThread() }

func TestMain(m *testing.M) {
	// The benchmarks re-run this binary as their server, so the CPU they
	// measure is the prober's alone.
	if os.Getenv(benchServerEnv) != "" {
		os.Exit(serveBenchTargets())
	}
	goleak.VerifyTestMain(m)
}

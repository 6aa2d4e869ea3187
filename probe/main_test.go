package probe

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The benchmarks re-run this binary as their server, so the CPU they
	// measure is the prober's alone.
	if os.Getenv(benchServerEnv) != "" {
		os.Exit(serveBenchTargets())
	}
	goleak.VerifyTestMain(m)
}

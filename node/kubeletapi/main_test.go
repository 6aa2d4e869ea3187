package kubeletapi

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// leakWait is how long the goroutines still running after the tests may
// take to end: a closed SPDY connection keeps a goroutine of spdystream's
// for up to a second after a close error (its shutdown's timer). Waited
// for, not ignored.
const leakWait = 5 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(leakWait)
		for {
			err := goleak.Find()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goleak: goroutines left %s after the tests: %v\n", leakWait, err)
				code = 1
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	os.Exit(code)
}

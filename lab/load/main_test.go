package load_test

import (
	"testing"

	"go.uber.org/goleak"
)

// The load's workers and Stop's waiter are goroutines: none may outlive
// its test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

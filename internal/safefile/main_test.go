package safefile_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: a Read that blocked (on a FIFO without a writer) would stay behind as one.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

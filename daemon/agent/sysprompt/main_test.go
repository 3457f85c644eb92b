package sysprompt

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: git and uname run with a context, which exec watches from a goroutine until the process is waited for.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

package oauthserver

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: the server's connections end with Close.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

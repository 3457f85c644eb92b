package mcp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// An interrupted login says so once, not gRPC's "context canceled:
// context canceled"; other errors keep what the daemon said.
func TestLoginError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	msg := loginError(ctx, "gh", status.Error(codes.Canceled, context.Canceled.Error())).Error()
	if !strings.Contains(msg, `login of MCP server "gh" interrupted`) || strings.Contains(msg, "context canceled") {
		t.Errorf("interrupted login: %q", msg)
	}
	err := loginError(context.Background(), "gh", status.Error(codes.FailedPrecondition, `MCP server "gh" has failed: connection refused`))
	if msg := err.Error(); !strings.HasPrefix(msg, `authorising MCP server "gh": `) || !strings.Contains(msg, "has failed: connection refused") {
		t.Errorf("failed server: %q", msg)
	}
	if errors.Is(err, context.Canceled) {
		t.Errorf("a failure that is no interruption wraps context.Canceled")
	}
}

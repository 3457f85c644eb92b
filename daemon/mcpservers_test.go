package daemon_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// waitConnected waits until the session's MCP server name is connected
// with its tools listed, re-checking at every tools_changed event.
func (s *stream) waitConnected(d *daemontest.Daemon, name string) {
	s.t.Helper()
	for {
		res, err := d.Client().ListMcpServers(context.Background(), &tacklev1.ListMcpServersRequest{SessionId: s.session})
		if err != nil {
			s.t.Fatal(err)
		}
		for _, srv := range res.GetServers() {
			if srv.GetName() != name {
				continue
			}
			switch srv.GetState() {
			case "connected":
				if srv.GetTools() > 0 {
					return
				}
			case "failed", "needs-approval", "needs-trust", "needs-auth", "disabled":
				s.t.Fatalf("MCP server %s: %s %s", name, srv.GetState(), srv.GetError())
			}
		}
		for s.recv().GetEvent().GetType() != "tools_changed" {
		}
	}
}

// TestMCPToolOptionsFollowSettings checks that an MCP tool's options
// (mcp.maxOutputTokens here), which the daemon keeps between calls, follow
// an edit of the settings.
func TestMCPToolOptionsFollowSettings(t *testing.T) {
	bin := testpeers.Bin(t, "mcp-server-everything")
	d := daemontest.Start(t)
	settings := filepath.Join(d.Options().ConfigHome, "tackle", "settings.json")
	write := func(maxTokens int) {
		b, err := json.Marshal(map[string]any{
			"mcpServers": map[string]any{"ev": map[string]any{"command": bin, "args": []string{"stdio"}}},
			"mcp":        map[string]any{"maxOutputTokens": maxTokens},
		})
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, settings, string(b))
	}
	write(10) // 40 characters
	id := newSession(t, d, t.TempDir(), "")
	s := attach(t, d, id)
	s.waitConnected(d, "ev")

	msg := strings.Repeat("echo me ", 25)
	input := `{"message":"` + msg + `"}`
	tr := s.call("mcp__ev__echo", input, "bypassPermissions")
	if tr.result.GetStatus() != "completed" || !strings.Contains(resultText(tr.result), "<persisted-output>") {
		t.Fatalf("echo of %d characters with maxOutputTokens 10: %v; want a persisted output", len(msg), tr.result)
	}
	tr = s.call("mcp__ev__echo", input, "bypassPermissions")
	if !strings.Contains(resultText(tr.result), "<persisted-output>") {
		t.Fatalf("second echo with maxOutputTokens 10: %v; want a persisted output", tr.result)
	}

	// The daemon's settings watcher tells it of the edit; calls until then
	// may still use the old limit.
	write(25000)
	deadline := time.Now().Add(30 * time.Second)
	for {
		tr = s.call("mcp__ev__echo", input, "bypassPermissions")
		text := resultText(tr.result)
		if tr.result.GetStatus() == "completed" && strings.Contains(text, msg) && !strings.Contains(text, "<persisted-output>") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("echo 30 s after raising maxOutputTokens to 25000: %v; want the whole message", tr.result)
		}
	}
}

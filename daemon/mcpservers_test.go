package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
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

// Two servers whose tools get the same model-facing names: the first
// server's are offered, and ListMcpServers says which of the second's are
// not, and why; a name holding "__" is warned about; each server's tool
// names are its own.
func TestMCPToolNameCollisionsAreListed(t *testing.T) {
	bin := testpeers.Bin(t, "mcp-server-everything")
	d := daemontest.Start(t)
	entry := map[string]any{"command": bin, "args": []string{"stdio"}}
	b, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"ev.x": entry, "ev_x": entry, "a__b": entry}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), string(b))
	id := newSession(t, d, t.TempDir(), "")
	s := attach(t, d, id)
	for _, name := range []string{"ev.x", "ev_x", "a__b"} {
		s.waitConnected(d, name)
	}
	res, err := d.Client().ListMcpServers(context.Background(), &tacklev1.ListMcpServersRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*tacklev1.McpServer{}
	for _, srv := range res.GetServers() {
		byName[srv.GetName()] = srv
	}
	first, second := byName["ev.x"], byName["ev_x"]
	if first.GetScope() == second.GetScope() && first.GetSource() == second.GetSource() && len(first.GetToolNames()) == 0 {
		t.Fatalf("servers: %v", res.GetServers())
	}
	// Which one is first follows the configuration's order; one of the two
	// offers every tool, the other none, with a warning for each.
	kept, dropped := first, second
	if len(kept.GetToolNames()) == 0 {
		kept, dropped = second, first
	}
	if len(kept.GetToolNames()) != int(kept.GetTools()) || len(dropped.GetToolNames()) != 0 {
		t.Fatalf("tool names: %s %d of %d, %s %d", kept.GetName(), len(kept.GetToolNames()), kept.GetTools(), dropped.GetName(), len(dropped.GetToolNames()))
	}
	want := fmt.Sprintf("%d tools (echo, ", dropped.GetTools())
	if ws := dropped.GetWarnings(); len(ws) != 1 || !strings.HasPrefix(ws[0], want) || !strings.Contains(ws[0], fmt.Sprintf(`are not offered: server %q has tools of the same names`, kept.GetName())) {
		t.Errorf("the warnings of the server whose tools are left out: %q", ws)
	}
	for _, w := range kept.GetWarnings() {
		t.Errorf("a warning on the server that is kept: %s", w)
	}
	ab := byName["a__b"]
	if !slices.ContainsFunc(ab.GetWarnings(), func(w string) bool { return strings.Contains(w, `the name holds "__"`) }) {
		t.Errorf("no warning about a__b's name: %q", ab.GetWarnings())
	}
	for _, n := range ab.GetToolNames() {
		if !strings.HasPrefix(n, "mcp__a__b__") {
			t.Errorf("a__b lists %s", n)
		}
	}
}

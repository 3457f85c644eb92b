package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// tackle hooks list shows every configured hook, with the ones tackle
// ignores and an untrusted project's, and why.
func TestHooksList(t *testing.T) {
	d := daemontest.Start(t)
	user := filepath.Join(d.Options().ConfigHome, "tackle", "settings.json")
	os.MkdirAll(filepath.Dir(user), 0o755)
	os.WriteFile(user, []byte(`{"hooks": {
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo pre"}]}],
		"TeammateIdle": [{"hooks": [{"type": "command", "command": "echo idle"}]}],
		"PostToolUse": [{"hooks": [{"type": "command"}]}]
	}}`), 0o644)
	dir, _ := project(t)
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	os.WriteFile(filepath.Join(dir, ".claude", "settings.json"), []byte(`{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo project"}]}]}}`), 0o644)
	r := tackle(t, d, "", "hooks", "list", "--cwd", dir, "--json").mustCode(t, 0)
	var hooks []map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &hooks); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	states := map[string]string{}
	for _, h := range hooks {
		states[h["event"]+"|"+h["state"]] = h["reason"] + h["what"]
	}
	if _, ok := states["PreToolUse|active"]; !ok {
		t.Errorf("the active PreToolUse hook is missing: %v", hooks)
	}
	if why, ok := states["TeammateIdle|ignored"]; !ok || !strings.Contains(why, "does not run this hook event") {
		t.Errorf("the unsupported event: %v", hooks)
	}
	if _, ok := states["PostToolUse|ignored"]; !ok {
		t.Errorf("the entry without a command: %v", hooks)
	}
	if why, ok := states["|untrusted"]; !ok || !strings.Contains(why, "tackle trust") {
		t.Errorf("the untrusted project's hook: %v", hooks)
	}
	r = tackle(t, d, "", "hooks", "list", "--cwd", dir).mustCode(t, 0)
	for _, want := range []string{"STATE", "active", "PreToolUse", "echo pre", "ignored", "untrusted"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the table lacks %q:\n%s", want, r.stdout)
		}
	}
}

package integration

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSettingsDefaultModeAppliesToCall: a trusted project's
// .tackle/settings.json sets the mode of the directory's default session, with no flag.
func TestSettingsDefaultModeAppliesToCall(t *testing.T) {
	e := newEnv(t)
	e.write(".tackle/settings.json", `{"permissions":{"defaultMode":"acceptEdits"}}`)
	if r := e.tackle("", "trust"); r.code != 0 { // an untrusted project may not widen the mode
		t.Fatalf("trust: %s", r.stderr)
	}
	path := filepath.Join(e.project, "new.txt")
	var res resultJSON
	r := e.json(&res, "", "call", "Write", mustJSON(map[string]any{"file_path": path, "content": "hello\n"}), "--permission-timeout", "5")
	if r.code != 0 || res.Status != "completed" {
		t.Fatalf("Write with defaultMode acceptEdits: code %d, %+v, stderr %s", r.code, res, r.stderr)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello\n" {
		t.Fatalf("after Write: %q, %v", b, err)
	}
	var sessions []struct {
		PermissionMode string `json:"permission_mode"`
		Cwd            string `json:"cwd"`
	}
	e.json(&sessions, "", "sessions", "list")
	if len(sessions) != 1 || sessions[0].PermissionMode != "acceptEdits" {
		t.Errorf("sessions list: %+v; want the default session in acceptEdits (from the settings)", sessions)
	}
}

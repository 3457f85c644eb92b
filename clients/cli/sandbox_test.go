package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon"
	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// tackle sandbox status tells what is in force and what a sandboxed
// command gets; where bubblewrap cannot run, what is missing.
func TestSandboxStatus(t *testing.T) {
	d := daemontest.Start(t)
	cfg := filepath.Join(d.Options().ConfigHome, "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(`{"sandbox": {"enabled": true, "excludedCommands": ["docker"], "network": {"allowedDomains": ["example.com"]}}, "permissions": {"deny": ["Read(./.env)"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, _ := project(t)
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("SECRET=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := tackle(t, d, "", "sandbox", "status", "--cwd", dir).mustCode(t, 0)
	for _, want := range []string{"sandbox: on, enforced by ", "writable:", dir, "hidden:", filepath.Join(dir, ".env"), "excluded commands: docker", "allowed domains:   example.com", "read-only:", filepath.Join(dir, ".claude")} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	r = tackle(t, d, "", "sandbox", "status", "--cwd", dir, "--json").mustCode(t, 0)
	var st map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st["enabled"] != true || st["available"] != true {
		t.Errorf("--json: %v %v\n%s", st, err, r.stdout)
	}

	d2 := daemontest.Start(t, daemontest.WithOptions(func(o *daemon.Options) { o.Bwrap = "/nonexistent/bwrap" }))
	cfg2 := filepath.Join(d2.Options().ConfigHome, "tackle", "settings.json")
	os.MkdirAll(filepath.Dir(cfg2), 0o755)
	os.WriteFile(cfg2, []byte(`{"sandbox": {"enabled": true}}`), 0o644)
	r = tackle(t, d2, "", "sandbox", "status", "--cwd", dir).mustCode(t, 0)
	if !strings.Contains(r.stdout, "sandbox: on, but it cannot run here:") || !strings.Contains(r.stdout, "normal permission flow") {
		t.Errorf("status where bubblewrap cannot run:\n%s", r.stdout)
	}
}

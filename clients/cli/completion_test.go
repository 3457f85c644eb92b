package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// complete runs cobra's hidden __complete command, as a shell's completion
// script does, and returns the offered words.
func complete(t *testing.T, environ []string, args ...string) []string {
	t.Helper()
	r := tackleEnv(t, environ, "", append([]string{"__complete"}, args...)...).mustCode(t, 0)
	var out []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if l == "" || strings.HasPrefix(l, ":") {
			continue
		}
		out = append(out, strings.SplitN(l, "\t", 2)[0])
	}
	return out
}

func TestCompletion(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	mcpConfig := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcpConfig, []byte(`{"mcpServers":{"github-tools":{"command":"true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sid := strings.TrimSpace(tackle(t, d, "", "sessions", "new", "--cwd", dir, "--mcp-config", mcpConfig).mustCode(t, 0).stdout)
	environ := env(d, "TACKLE_SESSION="+sid)

	has := func(got []string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !cmdutil.Contains(got, w) {
				t.Errorf("completions %v lack %q", got, w)
			}
		}
	}
	t.Run("help lists completion", func(t *testing.T) {
		r := tackleEnv(t, environ, "", "--help").mustCode(t, 0)
		if !strings.Contains(r.stdout, "completion") {
			t.Errorf("--help does not list completion:\n%s", r.stdout)
		}
		for _, sh := range []string{"bash", "zsh", "fish"} {
			r := tackleEnv(t, environ, "", "completion", sh).mustCode(t, 0)
			if !strings.Contains(r.stdout, "tackle") || !strings.Contains(r.stdout, "__complete") {
				t.Errorf("completion %s does not print a script for tackle:\n%.300s", sh, r.stdout)
			}
		}
	})
	t.Run("subcommands and flags", func(t *testing.T) {
		has(complete(t, environ, "s"), "sessions", "sandbox", "status", "skill")
		has(complete(t, environ, "sessions", ""), "list", "show", "new", "rm")
		has(complete(t, environ, "call", "Read", "--"), "--session", "--permission-mode", "--json")
	})
	t.Run("from the daemon", func(t *testing.T) {
		got := complete(t, environ, "call", "Re")
		has(got, "Read", "ReplaceLines")
		for _, g := range got {
			if !strings.HasPrefix(g, "Re") {
				t.Errorf("completion %q does not start with the word typed", g)
			}
		}
		has(complete(t, environ, "call", "--session", ""), sid)
		has(complete(t, environ, "sessions", "show", ""), sid)
		has(complete(t, environ, "mcp", "get", ""), "github-tools")
		has(complete(t, environ, "call", "Read", "--permission-mode", ""), cmdutil.PermissionModes...)
		has(complete(t, environ, "agents", "show", ""), "general-purpose")
	})
	t.Run("no daemon: nothing, at once, none started", func(t *testing.T) {
		sock := filepath.Join(t.TempDir(), "none.sock")
		start := time.Now()
		got := complete(t, []string{"TACKLE_SOCKET=" + sock, "HOME=" + d.Home(), "PATH="}, "call", "Re")
		if len(got) != 0 {
			t.Errorf("completions without a daemon: %v", got)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("completion without a daemon took %v", el)
		}
		if _, err := os.Stat(sock); err == nil {
			t.Errorf("completion started a daemon on %s", sock)
		}
	})
	t.Run("skill flags render", func(t *testing.T) {
		r := tackleEnv(t, environ, "", "skill", "--help").mustCode(t, 0)
		if !strings.Contains(r.stdout, "--permission-mode string") || !strings.Contains(r.stdout, "--permission-timeout uint32") {
			t.Errorf("skill --help flags:\n%s", r.stdout)
		}
	})
}

// TestSessionsDefault: without an id, sessions show shows the session the
// other commands use here; sessions list marks it.
func TestSessionsDefault(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	other := strings.TrimSpace(tackle(t, d, "", "sessions", "new", "--cwd", t.TempDir()).mustCode(t, 0).stdout)
	// The directory's default session, as call creates it.
	tackle(t, d, "", "call", "Glob", `{"pattern":"*.txt"}`, "--cwd", dir).mustCode(t, 0)
	r := tackle(t, d, "", "sessions", "show", "--cwd", dir, "--json").mustCode(t, 0)
	var s render.SessionJSON
	decodeJSON(t, r.stdout, &s)
	if s.Cwd != dir || !s.DefaultForCwd || s.LastSeq == 0 {
		t.Errorf("sessions show --cwd %s = %+v, want the directory's default session with the Glob's events", dir, s)
	}
	r = tackle(t, d, "", "sessions", "show", "--cwd", dir).mustCode(t, 0)
	if !strings.Contains(r.stdout, "session     "+s.ID) {
		t.Errorf("sessions show --cwd:\n%s", r.stdout)
	}

	// TACKLE_SESSION chooses it, as for every command.
	environ := env(d, "TACKLE_SESSION="+other)
	r = tackleEnv(t, environ, "", "sessions", "show").mustCode(t, 0)
	if !strings.Contains(r.stdout, "session     "+other) {
		t.Errorf("sessions show with TACKLE_SESSION:\n%s", r.stdout)
	}
	r = tackleEnv(t, environ, "", "sessions", "list").mustCode(t, 0)
	var marked []string
	for _, l := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[1] == "*" {
			marked = append(marked, f[0])
		}
	}
	if len(marked) != 1 || marked[0] != other || !strings.Contains(r.stdout, "$TACKLE_SESSION") {
		t.Errorf("sessions list marks %v, want only %s:\n%s", marked, other, r.stdout)
	}
	r = tackleEnv(t, environ, "", "sessions", "list", "--json").mustCode(t, 0)
	var list []render.SessionJSON
	decodeJSON(t, r.stdout, &list)
	for _, x := range list {
		if x.DefaultForCwd != (x.ID == s.ID) {
			t.Errorf("sessions list --json: %s default_for_cwd %v", x.ID, x.DefaultForCwd)
		}
	}
}

func decodeJSON(t *testing.T, text string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, text)
	}
}

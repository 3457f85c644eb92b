package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// TestSettingsProblemsInPlainSight: a settings file that does not parse is
// listed with file:line:col by permissions rules, counted by status and
// shown at the top of attach; an untrusted project's .mcp.json server is
// needs-trust, and approving it says that trust is missing and how to give
// it. The outputs are golden.
func TestSettingsProblemsInPlainSight(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	if err := os.MkdirAll(filepath.Join(dir, ".tackle"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".tackle", "settings.json"), []byte("{\n  \"permissions\": {\n    \"allow\": [\"Bash(ls)\",]\n  }\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers":{"proj":{"command":"true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sid := newSession(t, d, dir, "default")
	var b strings.Builder
	for _, args := range [][]string{
		{"permissions", "rules", "--session", sid},
		{"status", "--cwd", dir},
		{"attach", "--session", sid},
		{"mcp", "list", "--session", sid},
		{"mcp", "approve", "proj", "--cwd", dir},
		{"mcp", "list", "--session", sid},
	} {
		var r result
		if args[0] == "attach" {
			out, errb := newLineBuffer(), newLineBuffer()
			stop := attachBackground(t, d, out, errb, args[1:]...)
			out.waitFor(t, "is not trusted")
			r = result{code: stop(), stdout: out.String(), stderr: errb.String()}
		} else {
			r = tackle(t, d, "", args...)
		}
		stdout := r.stdout
		if args[0] == "status" { // the rest changes from run to run
			_, stdout, _ = strings.Cut(stdout, "memory")
			_, stdout, _ = strings.Cut(stdout, "\n")
		}
		fmt.Fprintf(&b, "$ tackle %s\n[exit %d]\n%s%s\n", strings.Join(args, " "), r.code, stdout, r.stderr)
	}
	got := strings.NewReplacer(dir, "$DIR", sid, "$SID").Replace(b.String())
	golden(t, "settings_problems", got)

	r := tackle(t, d, "", "status", "--cwd", dir, "--json").mustCode(t, 0)
	if !strings.Contains(r.stdout, `"settings_problems": 1`) {
		t.Errorf("status --json does not count the problem:\n%s", r.stdout)
	}
	// Without a problem the JSON shapes are today's.
	if err := os.WriteFile(filepath.Join(dir, ".tackle", "settings.json"), []byte(`{}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"status", "--cwd", dir, "--json"}, {"permissions", "rules", "--session", sid, "--json"}} {
		if r := tackle(t, d, "", args...).mustCode(t, 0); strings.Contains(r.stdout, "settings_problems") {
			t.Errorf("tackle %v without a problem:\n%s", args, r.stdout)
		}
	}
}

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// TestAlwaysSaysWhatAndWhere: an "always" answer on the terminal says the
// rule it saved, its scope and its file; the rule is as narrow as Claude
// Code's (a command's prefix with its word boundary, one file at the top
// of the project, else the file's directory); permissions rules lists it
// at once.
func TestAlwaysSaysWhatAndWhere(t *testing.T) {
	d := daemontest.Start(t)
	dir, file := project(t)
	if r := tackle(t, d, "", "trust", dir).mustCode(t, 0); !strings.Contains(r.stdout, "trusted") {
		t.Fatalf("trust: %s", r.stdout)
	}
	sid := newSession(t, d, dir, "default")
	sub := filepath.Join(dir, "src", "app.go")
	if err := os.MkdirAll(filepath.Dir(sub), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sub, []byte("package app\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{file, sub} {
		tackle(t, d, "", "call", "Read", `{"file_path":"`+f+`"}`, "--session", sid).mustCode(t, 0)
	}
	cases := []struct {
		tool, input, rule, scope, saved string
	}{
		{"Bash", `{"command":"npm test --watch"}`, "Bash(npm test:*)", "p", "for the project in " + filepath.Join(dir, ".tackle", "settings.local.json")},
		{"Edit", `{"file_path":"` + file + `","old_string":"world","new_string":"there"}`, "Edit(/" + file + ")", "s", "for this session"},
		{"Edit", `{"file_path":"` + sub + `","old_string":"app","new_string":"main"}`, "Edit(/" + filepath.Dir(sub) + "/**)", "u", "for you, in every project, in " + filepath.Join(d.Options().ConfigHome, "tackle", "settings.json")},
	}
	for _, c := range cases {
		tc := startTermChat(t, env(d), "call", c.tool, c.input, "--session", sid)
		tc.out.waitFor(t, "[a] yes, always allow "+c.rule+" ")
		tc.keys("a\r")
		tc.out.waitFor(t, "[s]ession, [p]roject or [u]ser?")
		tc.keys(c.scope + "\r")
		tc.out.waitFor(t, "saved "+c.rule+" "+c.saved)
		_ = tc.wait() // Bash fails: no npm here
		r := tackle(t, d, "", "permissions", "rules", "--session", sid).mustCode(t, 0)
		if !strings.Contains(r.stdout, c.rule) {
			t.Errorf("permissions rules right after saving %s:\n%s", c.rule, r.stdout)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".tackle", "settings.local.json")); err != nil || !strings.Contains(string(b), `"Bash(npm test:*)"`) {
		t.Errorf("the project's file: %s, %v", b, err)
	}
}

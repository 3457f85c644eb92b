package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
)

func TestTidyError(t *testing.T) {
	for in, want := range map[string]string{
		"showing x: not found: session not found: x": "showing x: session not found: x",
		"invalid argument: no skill \"y\"":           "no skill \"y\"",
		"invalid argument: bad field":                "invalid argument: bad field",
	} {
		if got := tidyError(in); got != want {
			t.Errorf("tidyError(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestTypos: every kind of misspelt name gets the nearest names (at most
// three) and exit 2; malformed JSON says where. The messages are golden.
func TestTypos(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	skill := filepath.Join(dir, ".claude", "skills", "release-notes")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: release-notes\ndescription: Write release notes\n---\nWrite them.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mcpConfig := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(mcpConfig, []byte(`{"mcpServers":{"github-tools":{"command":"true"},"gitlab":{"command":"true"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sid := strings.TrimSpace(tackle(t, d, "", "sessions", "new", "--cwd", dir, "--mcp-config", mcpConfig).mustCode(t, 0).stdout)
	cases := []struct {
		code int
		args []string
	}{
		{2, []string{"sesions", "list"}},
		{2, []string{"sessions", "lst"}},
		{2, []string{"mcp", "gte", "x"}},
		{2, []string{"call", "Reed", "{}", "--session", sid}},
		{2, []string{"call", "NoSuchTool", "{}", "--session", sid}},
		{2, []string{"call", "Read", "{}", "--session", sid[:len(sid)-1]}},
		{2, []string{"sessions", "show", sid[:len(sid)-2]}},
		{2, []string{"skill", "release-note", "--session", sid}},
		{2, []string{"skills", "show", "relase-notes", "--session", sid}},
		{2, []string{"mcp", "get", "github", "--session", sid}},
		{2, []string{"mcp", "get", "nothing-like-it", "--session", sid}},
		{1, []string{"call", "Read", "{\"file_path\": \"/x\",\n  \"limit\": 3,}", "--session", sid}},
		{2, []string{"batch", "--session", sid}},
	}
	var b strings.Builder
	for _, c := range cases {
		stdin := ""
		if c.args[0] == "batch" {
			stdin = "[\n {\"id\": \"1\", \"name\": \"Read\" \"input\": {}}\n]"
		}
		r := tackle(t, d, stdin, c.args...).mustCode(t, c.code)
		args := strings.Join(c.args, " ")
		fmt.Fprintf(&b, "$ tackle %s\n[exit %d]\n%s\n", args, r.code, r.stderr)
		if strings.Contains(r.stderr, "not found: ") && strings.Contains(r.stderr, "not found: session not found") {
			t.Errorf("doubled message: %s", r.stderr)
		}
	}
	got := strings.NewReplacer(sid, "$SID", sid[:len(sid)-1], "$SID[:-1]", sid[:len(sid)-2], "$SID[:-2]").Replace(b.String())
	golden(t, "typos", got)
}

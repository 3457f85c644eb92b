package permission

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/shell"
)

// corpusFiles are created in the session root of every decideShell call,
// so corpus rows can name real files and directories.
var corpusFiles = []string{
	"README.md", "notes.txt", "list", "y", "f",
	"src/main.go", "secrets/key", "secrets/log", "build/x", ".git/config",
}

// decideShell decides a Bash call of command with the engine, as the
// pipeline would: the real Bash tool's Attributes and CheckPermission
// (daemon/tools/shell) build the Access, in a tooltest.Env whose root is a
// fresh temporary directory holding corpusFiles (symlinks resolved; HOME is
// a sibling directory "home" holding .bashrc), and the engine decides with
// rules in mode.
//
// Each rule is "allow:RULE", "ask:RULE" or "deny:RULE" (no prefix: allow),
// optionally followed by "@SCOPE:PATH" to set its source; rules are
// session rules otherwise (`/x` is relative to the session root). A rule
// that does not parse fails the test. A command the tool refuses
// (CheckPermission error) fails the test too.
func decideShell(t *testing.T, rules []string, mode, command string) Decision {
	t.Helper()
	env := tooltest.New(t)
	home := filepath.Join(filepath.Dir(env.Root), "home")
	env.Vars = []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
	for _, f := range append(append([]string(nil), corpusFiles...), "../home/.bashrc") {
		p := filepath.Join(env.Root, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	bash := shell.New(nil).Tools()[0]
	input, err := json.Marshal(map[string]string{"command": command})
	if err != nil {
		t.Fatal(err)
	}
	call := &tool.Call{ID: "corpus", Name: "Bash", Input: input, Env: env}
	ctx := context.Background()
	acc, err := bash.CheckPermission(ctx, call)
	if err != nil {
		t.Fatalf("Bash CheckPermission(%q): %v", command, err)
	}
	return NewEngine().Decide(ctx, Request{
		Tool:   bash.Spec().Name,
		Mode:   mode,
		Attrs:  bash.Attributes(input),
		Access: acc,
		Rules:  testRules(t, rules...),
		Cwd:    env.Cwd(),
		Root:   env.Root,
		Home:   home,
	})
}

// TestDecideShellHarness checks the harness itself on a few commands
// (the corpus is TestShellCorpus in corpus_test.go).
func TestDecideShellHarness(t *testing.T) {
	if d := decideShell(t, []string{"deny:Bash(rm *)"}, ModeBypassPermissions, "ls && rm -rf x"); d.Verdict != Deny || d.By != ByRule {
		t.Errorf("compound deny: %+v", d)
	}
	if d := decideShell(t, nil, ModeDefault, "npm test"); d.Verdict != Ask || d.AlwaysRule != "Bash(npm test:*)" {
		t.Errorf("ask: %s %q", d.Verdict, d.AlwaysRule)
	}
	if d := decideShell(t, []string{"Bash(npm test *)"}, ModeDefault, "npm test"); d.Verdict != Allow {
		t.Errorf("allow: %s %s", d.Verdict, d.Reason)
	}
}

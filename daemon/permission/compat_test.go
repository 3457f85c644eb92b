package permission

// Claude Code compatibility: rule files of the shapes seen in public
// repositories (testdata/), and what the engine makes of them.

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/config"
)

// compatProject writes testdata/name as the project's .claude/settings.json
// and returns the loaded, trusted settings and the file's path.
func compatProject(t *testing.T, name string) (*config.Settings, string, *settingsFixture) {
	t.Helper()
	base := t.TempDir()
	f := &settingsFixture{home: filepath.Join(base, "home"), cfg: filepath.Join(base, "home", ".config"),
		proj: filepath.Join(base, "proj"), managed: filepath.Join(base, "etc", "managed-settings.json")}
	t.Setenv("HOME", f.home)
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	f.projFile = filepath.Join(f.proj, ".claude", "settings.json")
	writeFile(t, f.projFile, string(b))
	s, _ := f.loader(t).Load(f.proj)
	return s, f.projFile, f
}

// TestMangledRulesReported: a legacy ":*" that does not end the spec
// (`Bash(sudo :* )`, a trailing space inside the parentheses) matches
// nothing, in Claude Code and here: it is a problem naming the file, the
// line and the fix, not a silently inert deny rule. `Bash(curl :*)` (a
// space before ":*") is `Bash(curl *)`.
func TestMangledRulesReported(t *testing.T) {
	s, path, f := compatProject(t, "mangled-rules.json")
	rules, problems := LoadRules(s, true, nil)
	type prob struct {
		line int
		text string
		fix  string
	}
	want := []prob{
		{5, "Bash(git log:* )", "write Bash(git log *)"},
		{8, "Bash(sudo :* )", "write Bash(sudo *)"},
		{9, "Bash(rm -rf:* --no-preserve-root)", "write Bash(rm -rf * --no-preserve-root)"},
	}
	var got []prob
	for _, p := range problems {
		if p.Source.Path != path {
			t.Errorf("problem %v: not in %s", p, path)
		}
		if !strings.Contains(p.Message, `":*" must end the spec`) {
			t.Errorf("problem %v: no reason", p)
		}
		fix := p.Message[strings.LastIndex(p.Message, "write "):]
		got = append(got, prob{p.Source.Line, p.Text, fix})
	}
	slices.SortFunc(got, func(a, b prob) int { return a.line - b.line })
	if !slices.Equal(got, want) {
		t.Errorf("problems %v\nwant %v", got, want)
	}
	if d := ruleList(rules.Deny()); d != "Bash(curl :*) project .claude/settings.json#2:10" {
		t.Errorf("deny rules that apply: %s", d)
	}
	e := NewEngine()
	for cmd, v := range map[string]Verdict{"curl -s https://x.example": Deny, "curl": Deny, "curly": Ask} {
		r := bashReq(cmd)
		r.Rules, r.Cwd, r.Root, r.Home = rules, f.proj, f.proj, f.home
		if d := e.Decide(context.Background(), r); d.Verdict != v {
			t.Errorf("%q: %s (%s), want %s", cmd, d.Verdict, d.Reason, v)
		}
	}
}

// TestReadRulesAsDocumented pins reference.md section 4 for a deny list
// seen in public repositories. A report held that `Read(.env.local)`
// denying Write and `Read(secrets/**)` matching sub/secrets/x were stricter
// than Claude Code; section 4 documents both ("A Read deny also blocks
// writes"; "`src/**` means <cwd>/src in an allow rule but any depth in
// deny and ask"; "Bare filenames match at any depth"), and the corpus
// (issue 6002, corpus_test.go: "a Read deny also blocks writes") relies on
// the first, so both stay. What section 4 does narrow is kept narrow:
// `./x` is anchored, allow rules are anchored, an Edit deny does not block
// reads, and a Read ask does not cover writes.
func TestReadRulesAsDocumented(t *testing.T) {
	s, _, f := compatProject(t, "read-deny.json")
	rules, problems := LoadRules(s, true, []Rule{
		{Text: "Read(secrets/**)", Behavior: BehaviorAllow},
		{Text: "Read(./build/**)", Behavior: BehaviorDeny},
		{Text: "Edit(.env.example)", Behavior: BehaviorDeny},
		{Text: "Read(notes/**)", Behavior: BehaviorAsk},
	})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	p := func(rel string) string { return filepath.Join(f.proj, rel) }
	tests := []struct {
		name string
		req  Request
		want Verdict
	}{
		{"Read .env.local", readReq("Read", p(".env.local")), Deny},
		{"Read a/b/.env.local (bare name: any depth)", readReq("Read", p("a/b/.env.local")), Deny},
		{"Write .env.local (a Read deny blocks writes)", editReq("Write", p(".env.local")), Deny},
		{"Edit .env.local", editReq("Edit", p(".env.local")), Deny},
		{"Bash cat .env.local", withReads(bashReq("cat .env.local"), p(".env.local")), Deny},
		{"Read .env.local.example", readReq("Read", p(".env.local.example")), Allow},
		{"Read secrets/k", readReq("Read", p("secrets/k")), Deny},
		{"Read sub/secrets/x (deny: any depth)", readReq("Read", p("sub/secrets/x")), Deny},
		{"Grep sub/secrets", readReq("Grep", p("sub/secrets")), Deny},
		{"Read build/out (./ anchors at the cwd)", readReq("Read", p("build/out")), Deny},
		{"Read sub/build/out", readReq("Read", p("sub/build/out")), Allow},
		{"Read .env.example (an Edit deny does not block reads)", readReq("Read", p(".env.example")), Allow},
		{"Write .env.example", editReq("Write", p(".env.example")), Deny},
		{"Write notes/a (a Read ask does not cover writes)", editReq("Write", p("notes/a")), Ask},
		{"Read other/notes/a (ask: any depth)", readReq("Read", p("other/notes/a")), Ask},
	}
	e := NewEngine()
	for _, tc := range tests {
		r := tc.req
		r.Rules, r.Cwd, r.Root, r.Home = rules, f.proj, f.proj, f.home
		r.Access.InsideWorkingDirs = true // every path is in the project
		if d := e.Decide(context.Background(), r); d.Verdict != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, d.Verdict, d.Reason, tc.want)
		}
	}
	// The allow rule Read(secrets/**) is anchored at the cwd; outside the
	// project, the deny still wins inside it.
	r := readReq("Read", "/elsewhere/lib/secrets/x")
	r.Rules, r.Cwd, r.Root, r.Home = rules, f.proj, f.proj, f.home
	if d := e.Decide(context.Background(), r); d.Verdict != Deny {
		t.Errorf("deny any depth outside the project: %s", d.Verdict)
	}
}

// TestAdditionalDirsAgreeWithConfig: the rules' additional directories are
// config.Settings.AdditionalDirectories, a user file's relative entry
// resolved against the session's directory (as Claude Code resolves it
// against its working directory), not the home directory.
func TestAdditionalDirsAgreeWithConfig(t *testing.T) {
	f := newSettingsFixture(t)
	writeFile(t, f.userFile, `{"permissions": {"additionalDirectories": ["~/shared", "../sibling", "vendor/tools"]}}`)
	s := f.load(t)
	rules, _ := LoadRules(s, true, nil)
	want := []string{filepath.Join(f.home, "shared"), filepath.Join(filepath.Dir(f.proj), "sibling"), filepath.Join(f.proj, "vendor", "tools"),
		filepath.Join(filepath.Dir(f.proj), "lib"), "/abs/dir"}
	if got := rules.AdditionalDirs(); !slices.Equal(got, want) {
		t.Errorf("rules: %q, want %q", got, want)
	}
	if got := s.AdditionalDirectories(f.proj); !slices.Equal(got, want) {
		t.Errorf("config: %q, want %q", got, want)
	}
}

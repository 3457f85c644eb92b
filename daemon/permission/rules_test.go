package permission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/config"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

type settingsFixture struct {
	home, cfg, proj, managed                   string
	userFile, projFile, localFile, claudeLocal string
}

// newSettingsFixture writes a user file, a project file, two local files
// and a managed file, and returns their paths.
func newSettingsFixture(t *testing.T) *settingsFixture {
	base := t.TempDir()
	f := &settingsFixture{
		home: filepath.Join(base, "home"), cfg: filepath.Join(base, "home", ".config"),
		proj: filepath.Join(base, "proj"), managed: filepath.Join(base, "etc", "managed-settings.json"),
	}
	t.Setenv("HOME", f.home) // ~/ in additionalDirectories is the daemon user's home
	f.userFile = filepath.Join(f.cfg, "tackle", "settings.json")
	f.projFile = filepath.Join(f.proj, ".claude", "settings.json")
	f.localFile = filepath.Join(f.proj, ".tackle", "settings.local.json")
	f.claudeLocal = filepath.Join(f.proj, ".claude", "settings.local.json")
	writeFile(t, f.userFile, `{
  "permissions": {
    "allow": ["Bash(git status *)", "Read(/notes/**)"],
    "additionalDirectories": ["~/shared"]
  }
}`)
	writeFile(t, f.projFile, `{
  "model": "x",
  "permissions": {
    "defaultMode": "default",
    "deny": [
      "Bash(rm *)",
      "Read(./secrets/**)"
    ],
    "ask": ["Bash(git push *)"],
    "allow": [
      "Bash(npm test *)",
      "Bash(broken",
      "Edit(/src/**)"
    ],
    "additionalDirectories": ["../lib", "/abs/dir"]
  }
}`)
	writeFile(t, f.localFile, `{"permissions": {"allow": ["WebFetch(domain:example.com)"], "deny": ["WebFetch(nope)"]}}`)
	writeFile(t, f.claudeLocal, `{"permissions": {"allow": ["Bash(npm test *)", "*"]}}`)
	writeFile(t, f.managed, `{"permissions": {"deny": ["Bash(curl *)"]}}`)
	return f
}

// loader reads the fixture's files with the project trusted (LoadRules
// applies its own trusted argument too).
func (f *settingsFixture) loader(t *testing.T) *config.Loader {
	t.Helper()
	trust := config.NewTrust(f.cfg)
	if _, _, err := trust.Trust(f.proj, false); err != nil {
		t.Fatal(err)
	}
	return config.NewLoader(&config.Options{Home: f.home, ConfigHome: f.cfg, ManagedPath: f.managed, Trust: trust})
}

func (f *settingsFixture) load(t *testing.T) *config.Settings {
	l := f.loader(t)
	s, problems := l.Load(f.proj)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return s
}

func ruleList(rs []Rule) string {
	var out []string
	for _, r := range rs {
		file := "-"
		if r.Source.Path != "" {
			file = filepath.Base(filepath.Dir(r.Source.Path)) + "/" + filepath.Base(r.Source.Path)
		}
		out = append(out, fmt.Sprintf("%s %s %s#%d:%d", r.Text, r.Source.Scope, file, r.Source.Index, r.Source.Line))
	}
	return strings.Join(out, "\n")
}

func TestLoadRules(t *testing.T) {
	f := newSettingsFixture(t)
	s := f.load(t)
	session := []Rule{{Text: "Bash(make *)"}, {Text: "Bash(make *)", Behavior: BehaviorDeny}, {Text: "Bash("}}
	rules, problems := LoadRules(s, true, session)

	wantDeny := `Bash(rm *) project .claude/settings.json#0:6
Read(./secrets/**) project .claude/settings.json#1:7
Bash(curl *) managed etc/managed-settings.json#0:1
Bash(make *) session -#1:0`
	if got := ruleList(rules.Deny()); got != wantDeny {
		t.Errorf("deny:\n%s\nwant:\n%s", got, wantDeny)
	}
	if got, want := ruleList(rules.Ask()), "Bash(git push *) project .claude/settings.json#0:9"; got != want {
		t.Errorf("ask: %s, want %s", got, want)
	}
	wantAllow := `Bash(git status *) user tackle/settings.json#0:3
Read(/notes/**) user tackle/settings.json#1:3
Bash(npm test *) project .claude/settings.json#0:11
Edit(/src/**) project .claude/settings.json#2:13
WebFetch(domain:example.com) local .tackle/settings.local.json#0:1
Bash(make *) session -#0:0`
	if got := ruleList(rules.Allow()); got != wantAllow {
		t.Errorf("allow:\n%s\nwant:\n%s", got, wantAllow)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Error())
	}
	want := []string{
		f.projFile + `:12: rule "Bash(broken": column 5: the '(' is never closed`,
		f.claudeLocal + `:1: rule "*": allow rules may use '*'`,
		f.localFile + `:1: rule "WebFetch(nope)": column 10: WebFetch rules have the form WebFetch(domain:HOST)`,
		`session: rule "Bash(": column 5`,
	}
	if len(msgs) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(msgs, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(msgs[i], want[i]) {
			t.Errorf("problem %d: %s\nwant prefix %s", i, msgs[i], want[i])
		}
	}
	wantDirs := []string{filepath.Join(f.home, "shared"), filepath.Join(filepath.Dir(f.proj), "lib"), "/abs/dir"}
	if got := rules.AdditionalDirs(); strings.Join(got, ",") != strings.Join(wantDirs, ",") {
		t.Errorf("dirs %q, want %q", got, wantDirs)
	}
	if len(rules.Ignored()) != 0 || len(rules.IgnoredDirs()) != 0 {
		t.Error("trusted project ignores something")
	}

	// Relative rules resolve against their own file's root.
	e := NewEngine()
	d := e.Decide(context.Background(), Request{Tool: "Edit", Rules: rules, Cwd: f.proj, Root: f.proj, Access: editReq("Edit", filepath.Join(f.proj, "src", "a.go")).Access})
	if d.Verdict != Allow || d.Rule == nil || d.Rule.Text != "Edit(/src/**)" {
		t.Errorf("project /src/**: %s %s", d.Verdict, d.Reason)
	}
	d = e.Decide(context.Background(), Request{Tool: "Read", Rules: rules, Cwd: f.proj, Root: f.proj, Access: readReq("Read", filepath.Join(f.home, "notes", "a")).Access})
	if d.Verdict != Allow {
		t.Errorf("user /notes/** (ConfigHome/..): %s %s", d.Verdict, d.Reason)
	}
	if !strings.Contains(d.Reason, f.userFile+":3") {
		t.Errorf("reason %q does not name the file and line", d.Reason)
	}
}

func TestLoadRulesUntrusted(t *testing.T) {
	f := newSettingsFixture(t)
	s := f.load(t)
	rules, _ := LoadRules(s, false, []Rule{{Text: "Bash(make *)"}})
	wantAllow := `Bash(git status *) user tackle/settings.json#0:3
Read(/notes/**) user tackle/settings.json#1:3
Bash(make *) session -#0:0`
	if got := ruleList(rules.Allow()); got != wantAllow {
		t.Errorf("allow:\n%s\nwant:\n%s", got, wantAllow)
	}
	if got := len(rules.Deny()); got != 3 {
		t.Errorf("%d deny rules, want 3 (project deny rules still apply)", got)
	}
	if got := len(rules.Ask()); got != 1 {
		t.Errorf("%d ask rules, want 1", got)
	}
	wantIgnored := `Bash(npm test *) project .claude/settings.json#0:11
Bash(broken project .claude/settings.json#1:12
Edit(/src/**) project .claude/settings.json#2:13
Bash(npm test *) local .claude/settings.local.json#0:1
* local .claude/settings.local.json#1:1
WebFetch(domain:example.com) local .tackle/settings.local.json#0:1`
	if got := ruleList(rules.Ignored()); got != wantIgnored {
		t.Errorf("ignored:\n%s\nwant:\n%s", got, wantIgnored)
	}
	if got := rules.AdditionalDirs(); len(got) != 1 || got[0] != filepath.Join(f.home, "shared") {
		t.Errorf("dirs %q: want only the user's", got)
	}
	if got := rules.IgnoredDirs(); len(got) != 2 {
		t.Errorf("ignored dirs %q", got)
	}
	// The untrusted project's allow rule does not allow; its deny denies.
	e := NewEngine()
	if d := e.Decide(context.Background(), Request{Tool: "Bash", Rules: rules, Access: bashReq("npm test").Access}); d.Verdict != Ask {
		t.Errorf("untrusted allow rule used: %s %s", d.Verdict, d.Reason)
	}
	if d := e.Decide(context.Background(), Request{Tool: "Bash", Rules: rules, Access: bashReq("rm -rf x").Access}); d.Verdict != Deny {
		t.Errorf("untrusted deny rule dropped: %s %s", d.Verdict, d.Reason)
	}
}

func TestLoadRulesCacheAndChanges(t *testing.T) {
	f := newSettingsFixture(t)
	l := f.loader(t)
	s1, _ := l.Load(f.proj)
	r1, _ := LoadRules(s1, true, nil)
	r2, _ := LoadRules(s1, true, nil)
	// Each call has its own link cache, but the compiled rules are shared.
	all1, all2 := append(append(r1.deny, r1.ask...), r1.allow...), append(append(r2.deny, r2.ask...), r2.allow...)
	if len(all1) == 0 || len(all1) != len(all2) || all1[0] != all2[0] {
		t.Error("the same settings were parsed twice")
	}
	// A changed file gives new settings and new rules with new lines.
	writeFile(t, f.localFile, "{\n\n\"permissions\": {\"allow\": [\n\"Bash(ls *)\"]}}")
	s2, _ := l.Load(f.proj)
	if s2 == s1 {
		t.Fatal("loader did not see the change")
	}
	r3, _ := LoadRules(s2, true, nil)
	found := false
	for _, r := range r3.Allow() {
		if r.Text == "Bash(ls *)" {
			found = true
			if r.Source.Line != 4 || r.Source.Path != f.localFile {
				t.Errorf("source %+v", r.Source)
			}
		}
	}
	if !found {
		t.Error("new rule missing")
	}
	// Session rules do not leak into the cached base.
	r4, _ := LoadRules(s2, true, []Rule{{Text: "Bash(zzz)"}})
	r5, _ := LoadRules(s2, true, nil)
	if len(r4.Allow()) != len(r5.Allow())+1 {
		t.Errorf("session rules: %d vs %d", len(r4.Allow()), len(r5.Allow()))
	}
	if r, _ := LoadRules(nil, false, nil); len(r.All()) != 0 {
		t.Error("nil settings gave rules")
	}
}

func TestListLines(t *testing.T) {
	data := []byte(`{"a": {"permissions": {"allow": ["no"]}},
 "permissions": {"x": [1, {"allow": ["no"]}], "allow": [
   "one", 2, {"k": ["no"]},
   "two"], "deny": "notalist"}}`)
	got := listLines(data)
	items := got["allow"]
	if len(items) != 4 || items[0] != (listItem{"one", 3}) || items[3] != (listItem{"two", 4}) {
		t.Errorf("allow items %+v", items)
	}
	if _, ok := got["deny"]; ok {
		t.Error("a non-list deny was listed")
	}
	for _, broken := range []string{`{"permissions": [`, `{"permissions": {"allow": ["a", `, `[1]`, ``, `{"permissions": {"allow": ["a"]`} {
		if got := listLines([]byte(broken)); len(got["allow"]) != 0 {
			t.Errorf("broken file %q gave lines %v", broken, got)
		}
	}
}

func TestToolDenied(t *testing.T) {
	rules := testRules(t, "deny:WebSearch", "deny:mcp__gh", "deny:Bash(rm *)", "deny:Edit", "allow:Read")
	for name, want := range map[string]bool{"WebSearch": true, "mcp__gh__x": true, "Bash": false, "Write": true, "Read": false, "mcp__ghx__y": false} {
		if _, got := rules.ToolDenied(name); got != want {
			t.Errorf("ToolDenied(%s) = %v", name, got)
		}
	}
}

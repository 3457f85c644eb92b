package permission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// TestEngineNoRulesIsInterim: with no rules and no hook decision the engine
// decides exactly as the interim policy (verdict and reason), so dispatch
// can switch safely, except that a read-only Bash command inside the
// working directories is allowed.
func TestEngineNoRulesIsInterim(t *testing.T) {
	accesses := []tool.Access{
		{},
		{Kind: tool.AccessRead, Paths: []string{"/w/a"}, InsideWorkingDirs: true},
		{Kind: tool.AccessRead, Paths: []string{"/etc/passwd"}},
		{Kind: tool.AccessEdit, Paths: []string{"/w/a"}, InsideWorkingDirs: true},
		{Kind: tool.AccessEdit, Paths: []string{"/etc/x"}},
		{Kind: tool.AccessExec, Command: "rm -rf /"},
		{Kind: tool.AccessExec, Command: "ls", Paths: []string{"/w"}, InsideWorkingDirs: true},
		{Kind: tool.AccessNetwork, Command: "example.com"},
		{Kind: tool.AccessOther},
	}
	attrs := []tool.Attributes{{}, {ReadOnly: true}, {ReadOnly: true, Interactive: true}, {Interactive: true}}
	interim, engine := NewInterimPolicy(), NewEngine()
	n := 0
	for _, mode := range append([]string{""}, Modes...) {
		for _, a := range attrs {
			for _, acc := range accesses {
				r := Request{Tool: "T", Mode: mode, Attrs: a, Access: acc}
				want, got := interim.Decide(context.Background(), r), engine.Decide(context.Background(), r)
				if acc.Kind == tool.AccessExec && acc.InsideWorkingDirs && a.ReadOnly && !a.Interactive {
					// The one intended difference: a read-only command inside the
					// working directories needs no prompt (issue 4).
					want = Decision{Verdict: Allow, Reason: "read-only, inside the working directories"}
				}
				if got.Verdict != want.Verdict || got.Reason != want.Reason {
					t.Errorf("mode %q attrs %+v access %+v: engine %s %q, interim %s %q", mode, a, acc, got.Verdict, got.Reason, want.Verdict, want.Reason)
				}
				if len(got.Chain) == 0 || got.By == "" {
					t.Errorf("no chain or By: %+v", got)
				}
				n++
			}
		}
	}
	if n != 6*4*9 {
		t.Fatal(n)
	}
}

func decideWith(t *testing.T, r Request, mode string, rules ...string) Decision {
	t.Helper()
	r.Rules = testRules(t, rules...)
	r.Mode = mode
	r.Cwd, r.Root, r.Home = "/w", "/w", "/h"
	return NewEngine().Decide(context.Background(), r)
}

func TestEngineOrder(t *testing.T) {
	rm := bashReq("rm -rf build")
	roInside := Request{Tool: "Read", Attrs: tool.Attributes{ReadOnly: true}, Access: tool.Access{Kind: tool.AccessRead, Paths: []string{"/w/a"}, Reads: []string{"/w/a"}, InsideWorkingDirs: true}}
	editInside := Request{Tool: "Edit", Access: tool.Access{Kind: tool.AccessEdit, Paths: []string{"/w/a"}, Writes: []string{"/w/a"}, InsideWorkingDirs: true}}
	protected := editInside
	protected.Access.AlwaysAsk = "/w/.git/config is a protected path"
	hook := func(r Request, v Verdict) Request {
		r.Hook = HookDecision{Decision: v, Reason: "hook says", Hook: "check.sh"}
		return r
	}

	tests := []struct {
		name  string
		req   Request
		mode  string
		rules []string
		want  Verdict
		by    string
	}{
		// Deny rules win over every allow, in any scope, and over modes and hooks.
		{"deny beats allow", rm, "", []string{"allow:Bash(rm *)" + userFile, "deny:Bash(rm *)" + projFile}, Deny, ByRule},
		{"deny beats allow (listed after)", rm, "", []string{"deny:Bash(rm *)@local:/w/.claude/settings.local.json", "allow:Bash@managed:/etc/tackle/managed-settings.json"}, Deny, ByRule},
		{"deny beats ask", rm, "", []string{"ask:Bash(rm *)", "deny:Bash(rm *)"}, Deny, ByRule},
		{"deny beats bypass", rm, ModeBypassPermissions, []string{"deny:Bash(rm *)"}, Deny, ByRule},
		{"deny beats hook allow", hook(rm, Allow), "", []string{"deny:Bash(rm *)"}, Deny, ByRule},
		{"deny beats read-only inside", roInside, "", []string{"deny:Read(//w/a)"}, Deny, ByRule},
		// Ask rules beat allows, hooks' allow, bypass.
		{"ask beats allow", rm, "", []string{"allow:Bash(rm *)", "ask:Bash(rm *)"}, Ask, ByRule},
		{"ask beats bypass", rm, ModeBypassPermissions, []string{"ask:Bash(rm *)"}, Ask, ByRule},
		{"ask beats hook allow", hook(rm, Allow), "", []string{"ask:Bash(rm *)"}, Ask, ByRule},
		{"ask beats hook deny", hook(rm, Deny), "", []string{"ask:Bash(rm *)"}, Ask, ByRule},
		{"ask beats read-only inside", roInside, "", []string{"ask:Read"}, Ask, ByRule},
		{"ask rule in dontAsk denies", rm, ModeDontAsk, []string{"ask:Bash(rm *)"}, Deny, ByRule},
		// Hooks come after rules, before the mode and allow rules.
		{"hook deny beats allow rule", hook(rm, Deny), "", []string{"allow:Bash"}, Deny, ByHook},
		{"hook deny beats bypass", hook(rm, Deny), ModeBypassPermissions, nil, Deny, ByHook},
		{"hook deny beats read-only", hook(roInside, Deny), "", nil, Deny, ByHook},
		{"hook ask beats allow rule", hook(rm, Ask), "", []string{"allow:Bash"}, Ask, ByHook},
		{"hook ask beats bypass", hook(rm, Ask), ModeBypassPermissions, nil, Ask, ByHook},
		{"hook ask in dontAsk", hook(rm, Ask), ModeDontAsk, nil, Deny, ByHook},
		{"hook allow", hook(rm, Allow), "", nil, Allow, ByHook},
		{"hook allow beats plan", hook(rm, Allow), ModePlan, nil, Allow, ByHook},
		{"hook allow beats AlwaysAsk", hook(protected, Allow), "", nil, Allow, ByHook},
		{"hook bogus fails closed", hook(rm, "maybe"), "", []string{"allow:Bash"}, Deny, ByHook},
		// Modes.
		{"bypass", rm, ModeBypassPermissions, nil, Allow, ByMode},
		{"bypass beats AlwaysAsk", protected, ModeBypassPermissions, nil, Allow, ByMode},
		{"plan denies before allow rules", rm, ModePlan, []string{"allow:Bash(rm *)"}, Deny, ByMode},
		{"plan allows read-only inside", roInside, ModePlan, nil, Allow, ByTool},
		{"acceptEdits", editInside, ModeAcceptEdits, nil, Allow, ByMode},
		{"acceptEdits not outside", editReq("Edit", "/etc/x"), ModeAcceptEdits, nil, Ask, ByDefault},
		{"acceptEdits not Bash", rm, ModeAcceptEdits, nil, Ask, ByDefault},
		{"acceptEdits AlwaysAsk", protected, ModeAcceptEdits, nil, Ask, ByTool},
		{"default asks", rm, ModeDefault, nil, Ask, ByDefault},
		{"dontAsk denies what would ask", rm, ModeDontAsk, nil, Deny, ByDefault},
		{"dontAsk allows by rule", rm, ModeDontAsk, []string{"allow:Bash(rm *)"}, Allow, ByRule},
		{"dontAsk allows read-only inside", roInside, ModeDontAsk, nil, Allow, ByTool},
		// Allow rules and the tool's check.
		{"allow rule", rm, "", []string{"allow:Bash(rm *)"}, Allow, ByRule},
		{"allow rule AlwaysAsk", protected, "", []string{"allow:Edit"}, Ask, ByTool},
		{"AlwaysAsk in dontAsk", protected, ModeDontAsk, []string{"allow:Edit"}, Deny, ByTool},
		{"read-only inside", roInside, "", nil, Allow, ByTool},
		{"read-only AlwaysAsk", func() Request { r := roInside; r.Access.AlwaysAsk = "bash -c"; return r }(), "", nil, Ask, ByTool},
		{"interactive with allow rule", Request{Tool: "AskUserQuestion", Attrs: tool.Attributes{ReadOnly: true, Interactive: true}}, "", []string{"allow:AskUserQuestion"}, Ask, ByTool},
		{"interactive with hook allow", hook(Request{Tool: "AskUserQuestion", Attrs: tool.Attributes{Interactive: true}}, Allow), "", nil, Ask, ByTool},
		{"interactive in bypass", Request{Tool: "AskUserQuestion", Attrs: tool.Attributes{Interactive: true}}, ModeBypassPermissions, nil, Ask, ByTool},
		// Compound commands: every part must be allowed.
		{"compound all allowed", bashReq("npm test", "git status"), "", []string{"Bash(npm test *)", "Bash(git status)"}, Allow, ByRule},
		{"compound part allowed", bashReq("npm test", "curl x"), "", []string{"Bash(npm test *)"}, Ask, ByDefault},
		{"compound read-only inside", func() Request {
			r := bashReq("ls", "cat a")
			r.Attrs.ReadOnly, r.Access.InsideWorkingDirs = true, true
			return r
		}(), "", []string{"Bash(npm test *)"}, Allow, ByTool},
	}
	for _, tc := range tests {
		d := decideWith(t, tc.req, tc.mode, tc.rules...)
		if d.Verdict != tc.want || d.By != tc.by {
			t.Errorf("%s: got %s by %s (%s), want %s by %s; chain %+v", tc.name, d.Verdict, d.By, d.Reason, tc.want, tc.by, d.Chain)
		}
		if d.By == ByRule && d.Rule == nil {
			t.Errorf("%s: by rule without the rule", tc.name)
		}
		if d.Reason == "" {
			t.Errorf("%s: no reason", tc.name)
		}
	}
}

func TestDecisionExplains(t *testing.T) {
	r := bashReq("git status", "rm -rf x")
	d := decideWith(t, r, "", "allow:Bash(git *)", "deny:Bash(rm *)"+projFile)
	if d.Verdict != Deny || d.Rule == nil || d.Rule.Text != "Bash(rm *)" || d.Rule.Source.Path != "/w/proj/.claude/settings.json" {
		t.Fatalf("got %+v", d)
	}
	if !strings.Contains(d.Reason, "Bash(rm *)") || !strings.Contains(d.Reason, "rm -rf x") {
		t.Errorf("reason %q does not name the rule and the command", d.Reason)
	}
	if len(d.Chain) != 1 || d.Chain[0].Stage != StageDeny || d.Chain[0].Outcome != "deny" {
		t.Errorf("chain %+v", d.Chain)
	}
	// A full chain: every stage passes, then ask.
	d = decideWith(t, bashReq("curl x"), "", "allow:Bash(git *)")
	var stages []string
	for _, s := range d.Chain {
		stages = append(stages, s.Stage+"="+s.Outcome)
	}
	want := "deny rules=pass,ask rules=pass,hook=pass,mode=pass,allow rules=pass,tool=pass,default=ask"
	if strings.Join(stages, ",") != want {
		t.Errorf("chain %s, want %s", strings.Join(stages, ","), want)
	}
	// The returned rule is a copy.
	d = decideWith(t, bashReq("rm x"), "", "deny:Bash(rm *)")
	d.Rule.Text = "changed"
	if d2 := decideWith(t, bashReq("rm x"), "", "deny:Bash(rm *)"); d2.Rule.Text != "Bash(rm *)" {
		t.Error("a decision's rule aliases the rules")
	}
}

func TestAlwaysRule(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		req   Request
		rules []string
		want  string
	}{
		{"bash two words", bashReq("npm test --watch"), nil, "Bash(npm test:*)"},
		{"bash flag", bashReq("rm -rf build"), nil, "Bash(rm:*)"},
		{"bash file arg", bashReq("python3 x.py"), nil, "Bash(python3:*)"},
		{"bash one word", bashReq("make"), nil, "Bash(make:*)"},
		{"compound", bashReq("cd sub", "npm test", "git push origin main", "npm test -x"), nil, "Bash(npm test:*), Bash(git push:*)"},
		{"compound skips allowed", bashReq("git status", "curl https://x"), []string{"Bash(git status *)"}, "Bash(curl:*)"},
		{"at most five", bashReq("a1", "a2", "a3", "a4", "a5"), nil, "Bash(a1:*), Bash(a2:*), Bash(a3:*), Bash(a4:*), Bash(a5:*)"},
		{"edit", editReq("Write", "/etc/app/x.conf"), nil, "Edit(//etc/app/**)"},
		{"edit at the project's top", editReq("Edit", "/w/main.go"), nil, "Edit(//w/main.go)"},
		{"edit in the project", editReq("Edit", "/w/src/main.go"), nil, "Edit(//w/src/**)"},
		{"edit meta", editReq("Edit", "/tmp/a[1]/x"), nil, `Edit(//tmp/a\[1\]/**)`},
		{"read file", readReq("Read", "/etc/passwd"), nil, "Read(//etc/**)"},
		{"grep dir", readReq("Grep", filepath.Join(dir, "d")), nil, "Read(/" + dir + "/d/**)"},
		{"webfetch", fetchReq("Docs.Example.com"), nil, "WebFetch(domain:docs.example.com)"},
		{"mcp", namedReq("mcp__srv__do", ""), nil, "mcp__srv__do"},
		{"skill", namedReq("Skill", "pdf"), nil, "Skill(pdf)"},
		{"other", namedReq("TodoWrite", ""), nil, "TodoWrite"},
	}
	for _, tc := range tests {
		d := decideWith(t, tc.req, "", tc.rules...)
		if d.Verdict != Ask || d.AlwaysRule != tc.want {
			t.Errorf("%s: got %s %q, want ask %q", tc.name, d.Verdict, d.AlwaysRule, tc.want)
			continue
		}
		// Saving the rules settles the same call.
		all := append(append([]string(nil), tc.rules...), SplitRuleList(d.AlwaysRule)...)
		if d2 := decideWith(t, tc.req, "", all...); d2.Verdict != Allow {
			t.Errorf("%s: with %q saved: got %s (%s)", tc.name, all, d2.Verdict, d2.Reason)
		}
		if strings.Join(d.AlwaysRules, ", ") != d.AlwaysRule {
			t.Errorf("%s: AlwaysRules %q", tc.name, d.AlwaysRules)
		}
	}
	// No always rule where saving one would not help.
	for _, d := range []Decision{
		decideWith(t, bashReq("rm x"), "", "ask:Bash(rm *)"),
		decideWith(t, func() Request { r := bashReq("bash -c x"); r.Access.AlwaysAsk = "bash -c"; return r }(), ""),
		decideWith(t, func() Request { r := bashReq("x"); r.Hook = HookDecision{Decision: Ask}; return r }(), ""),
	} {
		if d.Verdict != Ask || d.AlwaysRule != "" {
			t.Errorf("got %s %q, want ask without an always rule", d.Verdict, d.AlwaysRule)
		}
	}
}

func TestSplitRuleList(t *testing.T) {
	tests := map[string][]string{
		"Bash(a *)":                      {"Bash(a *)"},
		"Bash(a *), Bash(b *)":           {"Bash(a *)", "Bash(b *)"},
		"Bash(a *), Bash(b *), WebFetch": {"Bash(a *)", "Bash(b *)", "WebFetch"},
		"Bash(echo a, b)":                {"Bash(echo a, b)"},
		"Bash(echo (x), y *)":            {"Bash(echo (x), y *)"},
	}
	for in, want := range tests {
		if got := SplitRuleList(in); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("SplitRuleList(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestDecideConcurrent: one engine and one rule set decide for sessions
// with different directories at once (the rules cache resolved patterns).
func TestDecideConcurrent(t *testing.T) {
	rules := testRules(t, "allow:Read(src/**)", "deny:Read(.env)")
	e := NewEngine()
	done := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			dir := fmt.Sprintf("/w/p%d", i)
			for j := 0; j < 200; j++ {
				r := readReq("Read", dir+"/src/a.go")
				r.Rules, r.Cwd = rules, dir
				if d := e.Decide(context.Background(), r); d.Verdict != Allow {
					done <- fmt.Errorf("%s: %s %s", dir, d.Verdict, d.Reason)
					return
				}
				r = readReq("Read", fmt.Sprintf("/w/p%d/src/a.go", (i+1)%8))
				r.Rules, r.Cwd = rules, dir
				if d := e.Decide(context.Background(), r); d.Verdict != Ask {
					done <- fmt.Errorf("%s: another cwd's file: %s", dir, d.Verdict)
					return
				}
			}
			done <- nil
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

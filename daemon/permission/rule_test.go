package permission

import (
	"errors"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		text       string
		tool, spec string
	}{
		{"Bash", "Bash", ""},
		{"  Bash  ", "Bash", ""},
		{"Bash(*)", "Bash", "*"},
		{"Bash(ls *)", "Bash", "ls *"},
		{"Bash(npm run:*)", "Bash", "npm run:*"},
		{"Bash(echo (x) y)", "Bash", "echo (x) y"},
		{"Bash(git commit -m \"a, b\")", "Bash", "git commit -m \"a, b\""},
		{"Read(//etc/**)", "Read", "//etc/**"},
		{"Read(~/.ssh/**)", "Read", "~/.ssh/**"},
		{"Read(./secrets/**)", "Read", "./secrets/**"},
		{"Edit(/src/**/*.go)", "Edit", "/src/**/*.go"},
		{"Read(.env)", "Read", ".env"},
		{"Edit({a,b}/*.md)", "Edit", "{a,b}/*.md"},
		{"WebFetch(domain:example.com)", "WebFetch", "domain:example.com"},
		{"WebFetch(domain:*.example.com)", "WebFetch", "domain:*.example.com"},
		{"WebFetch(domain:localhost:8080)", "WebFetch", "domain:localhost:8080"},
		{"mcp__github", "mcp__github", ""},
		{"mcp__github__*", "mcp__github__*", ""},
		{"mcp__github__create_issue", "mcp__github__create_issue", ""},
		{"mcp__my-srv__get_x", "mcp__my-srv__get_x", ""},
		{"mcp__*", "mcp__*", ""},
		{"*", "*", ""},
		{"Skill(pdf)", "Skill", "pdf"},
		{"Skill(name *)", "Skill", "name *"},
		{"Task(Explore)", "Task", "Explore"},
		{"Agent(model:opus)", "Agent", "model:opus"},
		{"Write", "Write", ""},
		{"WebSearch", "WebSearch", ""},
	}
	for _, tc := range tests {
		r, err := ParseRule(tc.text)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.text, err)
			continue
		}
		if r.Tool != tc.tool || r.Spec != tc.spec || r.Text != tc.text {
			t.Errorf("ParseRule(%q) = tool %q spec %q text %q, want %q %q", tc.text, r.Tool, r.Spec, r.Text, tc.tool, tc.spec)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	tests := []struct {
		text string
		col  int
		msg  string // substring
	}{
		{"", 1, "empty"},
		{"   ", 1, "empty"},
		{"(ls)", 1, "expected a tool name"},
		{"1Bash", 1, "starts with a letter"},
		{"Bash(ls", 5, "never closed"},
		{"Bash ls", 5, "unexpected"},
		{"Bash(ls) x", 5, "never closed"},
		{"Bash)", 5, "unexpected"},
		{"Bash()", 6, "empty"},
		{"Bash(  )", 6, "empty"},
		{"Bash(a\nb)", 7, "control character"},
		{"mc*p", 3, "only end"},
		{"mcp__srv(x)", 10, "MCP rules take no spec"},
		{"mcp__*(x)", 8, "no spec"},
		{"Write(src/**)", 7, "Edit(src/**)"},
		{"Glob(src/**)", 6, "Read(src/**)"},
		{"Read([a)", 6, "not a valid path pattern"},
		{"Read(~root/x)", 6, "~/"},
		{"WebFetch(example.com)", 10, "domain:HOST"},
		{"WebFetch(domain:)", 17, "empty"},
		{"WebFetch(domain:*.)", 17, "nothing after"},
		{"WebFetch(domain:a*.com)", 18, "unexpected \"*\""},
		{"WebFetch(domain:a b)", 18, "unexpected \" \""},
		{"  Bash(ls", 7, "never closed"},
	}
	for _, tc := range tests {
		r, err := ParseRule(tc.text)
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("ParseRule(%q) = %+v, %v; want a *ParseError", tc.text, r, err)
			continue
		}
		if pe.Column != tc.col || !strings.Contains(pe.Msg, tc.msg) {
			t.Errorf("ParseRule(%q): %v; want column %d and %q", tc.text, err, tc.col, tc.msg)
		}
		if r.Text != tc.text {
			t.Errorf("ParseRule(%q): Text %q lost", tc.text, r.Text)
		}
		if !strings.HasPrefix(err.Error(), "column ") {
			t.Errorf("error %q does not name the column", err)
		}
	}
}

func TestRuleProblemError(t *testing.T) {
	p := RuleProblem{Source: Source{Scope: "project", Path: "/p/.claude/settings.json", Line: 7}, Text: "Bash(", Message: "column 5: x"}
	if got, want := p.Error(), `/p/.claude/settings.json:7: rule "Bash(": column 5: x`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	p.Source = Source{Scope: "session"}
	if got := p.Error(); !strings.HasPrefix(got, "session: rule") {
		t.Errorf("got %q", got)
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{"Bash", "Bash(ls *)", "Bash(npm run:*)", "Read(//a/**)", "Edit(~/x)", "WebFetch(domain:*.x.com)",
		"mcp__s__t", "mcp__s__*", "*", "Skill(x *)", "Bash(", "Read([)", "(x)", " Bash ( x ) ", "Bash(a\x00b)", "Bash(é)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		r, err := ParseRule(text)
		if r.Text != text {
			t.Fatalf("Text %q, want %q", r.Text, text)
		}
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) || pe.Column < 1 || pe.Column > len(text)+1 {
				t.Fatalf("ParseRule(%q): error %v without a valid column", text, err)
			}
			return
		}
		// The canonical form parses to the same rule.
		r2, err := ParseRule(r.String())
		if err != nil || r2.Tool != r.Tool || r2.Spec != r.Spec {
			t.Fatalf("ParseRule(%q) = %+v, but its String %q gives %+v, %v", text, r, r.String(), r2, err)
		}
		// Compiling and matching never panic either.
		for _, b := range []string{BehaviorAllow, BehaviorDeny} {
			r.Behavior = b
			c := compile(r)
			in := &input{tool: r.Tool, commands: []string{"ls -la", ""}, reads: []string{"/a/b"}, writes: []string{"/a/c"}, domain: "x.com", pc: pathCtx{cwd: "/a", root: "/a", home: "/h"}}
			in.acc = &tool.Access{Specifier: "x"}
			c.matchAny(in)
		}
	})
}

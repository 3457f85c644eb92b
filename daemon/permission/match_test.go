package permission

import (
	"context"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// testRules builds rules from "behavior:Rule" strings ("allow:Bash(ls *)";
// no prefix means allow). A "@scope:path" suffix sets the source
// ("deny:Read(/x)@project:/w/proj/.claude/settings.json").
func testRules(t testing.TB, specs ...string) *Rules {
	t.Helper()
	var rs []Rule
	for _, s := range specs {
		r := ruleFromSpec(s)
		rs = append(rs, r)
	}
	rules := NewRules(rs...)
	if p := rules.Problems(); len(p) > 0 {
		t.Fatalf("rules %q: problems %v", specs, p)
	}
	return rules
}

func ruleFromSpec(s string) Rule {
	behavior := BehaviorAllow
	for _, b := range []string{BehaviorAllow, BehaviorAsk, BehaviorDeny} {
		if rest, ok := strings.CutPrefix(s, b+":"); ok {
			behavior, s = b, rest
			break
		}
	}
	var src Source
	for _, scope := range []string{"managed", "user", "project", "local", "cli", "session"} {
		if i := strings.LastIndex(s, "@"+scope+":"); i > 0 {
			src = Source{Scope: scope, Path: s[i+len(scope)+2:]}
			s = s[:i]
			break
		}
	}
	return Rule{Text: s, Behavior: behavior, Source: src}
}

// Helpers building requests as the tools' CheckPermission would.
func bashReq(cmds ...string) Request {
	return Request{Tool: "Bash", Access: tool.Access{Kind: tool.AccessExec, Command: strings.Join(cmds, " && "), Commands: cmds}}
}

func withReads(r Request, p ...string) Request  { r.Access.Reads = p; return r }
func withWrites(r Request, p ...string) Request { r.Access.Writes = p; return r }

func readReq(name string, p string) Request {
	return Request{Tool: name, Attrs: tool.Attributes{ReadOnly: true}, Access: tool.Access{Kind: tool.AccessRead, Paths: []string{p}, Reads: []string{p}}}
}

func editReq(name string, p string) Request {
	return Request{Tool: name, Access: tool.Access{Kind: tool.AccessEdit, Paths: []string{p}, Writes: []string{p}}}
}

func fetchReq(domain string) Request {
	return Request{Tool: "WebFetch", Attrs: tool.Attributes{ReadOnly: true}, Access: tool.Access{Kind: tool.AccessNetwork, Command: "https://" + domain + "/x", Domain: domain}}
}

func namedReq(name, spec string) Request {
	return Request{Tool: name, Access: tool.Access{Kind: tool.AccessOther, Specifier: spec}}
}

const (
	projFile = "@project:/w/proj/.claude/settings.json"
	userFile = "@user:/h/.claude/settings.json"
	tackUser = "@user:/h/.config/tackle/settings.json"
)

// TestMatchRuleForms checks every rule form against calls it must and must
// not match. Calls that no rule settles ask (they are neither read-only
// inside the working directories nor in a mode that decides).
func TestMatchRuleForms(t *testing.T) {
	tests := []struct {
		rule string
		req  Request
		want Verdict
	}{
		// Bash: wildcards, word boundary, legacy :*, bare.
		{"Bash(ls *)", bashReq("ls"), Allow},
		{"Bash(ls *)", bashReq("ls -la /tmp"), Allow},
		{"Bash(ls *)", bashReq("lsof"), Ask},
		{"Bash(ls*)", bashReq("lsof"), Allow},
		{"Bash(npm run:*)", bashReq("npm run build"), Allow},
		{"Bash(npm run:*)", bashReq("npm run"), Allow},
		{"Bash(npm run:*)", bashReq("npm runner"), Ask},
		{"Bash(npm test)", bashReq("npm test"), Allow},
		{"Bash(npm test)", bashReq("npm test --watch"), Ask},
		{"Bash(npm   test *)", bashReq("npm test x"), Allow},
		{"Bash(git * main)", bashReq("git push origin main"), Allow},
		{"Bash(git * main)", bashReq("git push origin dev"), Ask},
		{"Bash(*)", bashReq("rm -rf /"), Allow},
		{"Bash", bashReq("rm -rf /"), Allow},
		{"Bash(ls *)", bashReq("ls", "rm x"), Ask},
		{"deny:Bash(rm *)", bashReq("ls", "rm -rf x"), Deny},
		{"deny:Bash(rm *)", bashReq("FOO=1 rm x"), Deny},
		{"deny:Bash(rm *)", bashReq("/bin/rm x"), Deny},
		{"deny:Bash(rm *)", bashReq("rmdir x"), Ask},
		{"deny:Bash", bashReq("ls"), Deny},
		{"ask:Bash(git push *)", bashReq("git status", "git push origin"), Ask},
		{"deny:Bash(curl *)", Request{Tool: "Bash", Access: tool.Access{Kind: tool.AccessExec, Command: "curl x"}}, Deny}, // no Commands: the command line
		// Bash reads and writes against Read and Edit rules.
		{"deny:Read(./secrets/**)", withReads(bashReq("cat secrets/key"), "/w/proj/secrets/key"), Deny},
		{"deny:Read(.env)", withReads(bashReq("head a/b/.env"), "/w/proj/a/b/.env"), Deny},
		{"deny:Read", withReads(bashReq("cat x"), "/w/proj/x"), Deny},
		{"deny:Edit(//w/proj/secret.txt)", withWrites(bashReq("echo x"), "/w/proj/secret.txt"), Deny},
		{"deny:Read(//w/proj/secret.txt)", withWrites(bashReq("echo x"), "/w/proj/secret.txt"), Deny},
		{"ask:Edit(*.lock)", withWrites(bashReq("echo x"), "/w/proj/a.lock"), Ask},
		{"Bash(echo *)", withWrites(bashReq("echo x"), "/w/proj/out.txt"), Allow},
		{"Bash(echo *)", withWrites(bashReq("echo x"), "/etc/x"), Ask},
		// Read: absolute, home, settings root, cwd, bare names, directories.
		{"deny:Read(//etc/**)", readReq("Read", "/etc/passwd"), Deny},
		{"deny:Read(//etc/**)", readReq("Read", "/etcx"), Ask},
		{"deny:Read(//etc)", readReq("Read", "/etc/ssh/config"), Deny},
		{"deny:Read(//etc/*.conf)", readReq("Read", "/etc/a.conf"), Deny},
		{"deny:Read(//etc/*.conf)", readReq("Read", "/etc/x/a.conf"), Ask},
		{"deny:Read(~/.ssh/**)", readReq("Read", "/h/.ssh/id_rsa"), Deny},
		{"deny:Read(~/.ssh/**)", readReq("Read", "/w/.ssh/id_rsa"), Ask},
		{"deny:Read(/secrets/**)" + projFile, readReq("Read", "/w/proj/secrets/k"), Deny},
		{"deny:Read(/secrets/**)" + projFile, readReq("Read", "/w/other/secrets/k"), Ask},
		{"deny:Read(/notes.txt)" + userFile, readReq("Read", "/h/notes.txt"), Deny},
		{"deny:Read(/notes.txt)" + tackUser, readReq("Read", "/h/notes.txt"), Deny},
		{"deny:Read(/notes.txt)", readReq("Read", "/w/proj/notes.txt"), Deny}, // session rule: session root
		{"deny:Read(./secrets/**)", readReq("Grep", "/w/proj/secrets"), Deny},
		{"deny:Read(./secrets/**)", readReq("Glob", "/w/proj/secrets/a"), Deny},
		{"deny:Read(./secrets/**)", readReq("Read", "/w/other/secrets/a"), Ask},
		{"deny:Read(secrets/**)", readReq("Read", "/w/other/secrets/a"), Deny}, // deny: any depth
		{"deny:Read(.env)", readReq("Read", "/elsewhere/.env"), Deny},
		{"deny:Read(.env)", readReq("Read", "/w/proj/.envrc"), Ask},
		{"deny:Read(*.pem)", readReq("Read", "/w/proj/a/b/k.pem"), Deny},
		{"allow:Read(src/**)", readReq("Read", "/w/proj/src/a.go"), Allow},
		{"allow:Read(src/**)", readReq("Read", "/w/proj/lib/src/a.go"), Ask}, // allow: anchored at cwd
		{"allow:Read(.env)", readReq("Read", "/w/proj/a/.env"), Allow},
		{"allow:Read(.env)", readReq("Read", "/elsewhere/.env"), Ask},
		{"allow:Read(//opt/**)", readReq("Glob", "/opt/x"), Allow},
		{"allow:Read(//opt/**)", readReq("Grep", "/opt"), Allow},
		{"allow:Read", readReq("Read", "/anything"), Allow},
		{"allow:Read(//tmp/**)", editReq("Edit", "/tmp/x"), Ask},
		// Edit covers Edit, Write, MultiEdit, ReplaceLines, NotebookEdit.
		{"allow:Edit(//tmp/**)", editReq("Edit", "/tmp/a/b"), Allow},
		{"allow:Edit(//tmp/**)", editReq("Write", "/tmp/x"), Allow},
		{"allow:Edit(//tmp/**)", editReq("MultiEdit", "/tmp/x"), Allow},
		{"allow:Edit(//tmp/**)", editReq("ReplaceLines", "/tmp/x"), Allow},
		{"allow:Edit(//tmp/**)", editReq("NotebookEdit", "/tmp/x"), Allow},
		{"allow:Edit(//tmp/**)", editReq("Write", "/var/x"), Ask},
		{"allow:Edit", editReq("Write", "/etc/x"), Allow},
		{"allow:Write", editReq("Write", "/etc/x"), Allow},
		{"allow:Write", editReq("Edit", "/etc/x"), Ask},
		{"deny:Edit(*.lock)", editReq("Write", "/w/proj/a/yarn.lock"), Deny},
		{"deny:Read(//w/proj/secret)", editReq("Edit", "/w/proj/secret"), Deny}, // a Read deny blocks writes
		{"ask:Read(//w/proj/secret)", editReq("Edit", "/w/proj/secret"), Ask},   // (default ask)
		{"deny:Edit(//w/proj/x)", readReq("Read", "/w/proj/x"), Ask},            // an Edit deny does not block reads
		// WebFetch domains.
		{"WebFetch(domain:example.com)", fetchReq("example.com"), Allow},
		{"WebFetch(domain:example.com)", fetchReq("Example.COM"), Allow},
		{"WebFetch(domain:example.com)", fetchReq("example.com:443"), Allow},
		{"WebFetch(domain:example.com)", fetchReq("www.example.com"), Ask},
		{"WebFetch(domain:*.example.com)", fetchReq("www.example.com"), Allow},
		{"WebFetch(domain:*.example.com)", fetchReq("a.b.example.com"), Allow},
		{"WebFetch(domain:*.example.com)", fetchReq("example.com"), Ask},
		{"WebFetch(domain:*.example.com)", fetchReq("badexample.com"), Ask},
		{"WebFetch(domain:localhost:8080)", fetchReq("localhost:8080"), Allow},
		{"WebFetch(domain:localhost:8080)", fetchReq("localhost:9090"), Ask},
		{"WebFetch(domain:example.com)", Request{Tool: "WebFetch", Access: tool.Access{Kind: tool.AccessNetwork, Command: "https://example.com/a"}}, Allow},
		{"deny:WebFetch", fetchReq("example.com"), Deny},
		{"deny:WebFetch(domain:evil.com)", fetchReq("evil.com"), Deny},
		// MCP names.
		{"mcp__srv", namedReq("mcp__srv__tool", ""), Allow},
		{"mcp__srv", namedReq("mcp__srv2__tool", ""), Ask},
		{"mcp__srv", namedReq("mcp__srvx", ""), Ask},
		{"mcp__srv__*", namedReq("mcp__srv__a", ""), Allow},
		{"mcp__srv__*", namedReq("mcp__other__a", ""), Ask},
		{"mcp__srv__a", namedReq("mcp__srv__a", ""), Allow},
		{"mcp__srv__a", namedReq("mcp__srv__b", ""), Ask},
		{"deny:mcp__*", namedReq("mcp__x__y", ""), Deny},
		{"deny:*", namedReq("TodoWrite", ""), Deny},
		// Skill and Task (alias Agent) on the specifier.
		{"Skill(pdf)", namedReq("Skill", "pdf"), Allow},
		{"Skill(pdf)", namedReq("Skill", "pdf2"), Ask},
		{"Skill(pdf)", namedReq("Skill", ""), Ask},
		{"Skill(pdf *)", namedReq("Skill", "pdf"), Allow},
		{"Skill(pdf *)", namedReq("Skill", "pdf extract"), Allow},
		{"Skill", namedReq("Skill", "anything"), Allow},
		{"Task(Explore)", namedReq("Task", "Explore"), Allow},
		{"Task(Explore)", namedReq("Agent", "Explore"), Allow},
		{"Agent(Explore)", namedReq("Task", "Explore"), Allow},
		{"Task(Explore)", namedReq("Task", "general-purpose"), Ask},
		{"deny:Agent(model:opus)", namedReq("Task", "Explore"), Ask},
		{"TodoWrite", namedReq("TodoWrite", ""), Allow},
		{"TodoWrite", namedReq("TodoRead", ""), Ask},
	}
	e := NewEngine()
	for _, tc := range tests {
		r := tc.req
		r.Rules = testRules(t, tc.rule)
		r.Cwd, r.Root, r.Home = "/w/proj", "/w/proj", "/h"
		d := e.Decide(context.Background(), r)
		if d.Verdict != tc.want {
			t.Errorf("rule %s, %s %+v: got %s (%s), want %s", tc.rule, r.Tool, r.Access, d.Verdict, d.Reason, tc.want)
			continue
		}
		if tc.want != Ask && (d.By != ByRule || d.Rule == nil) {
			t.Errorf("rule %s, %s: decided by %q rule %v, want by the rule", tc.rule, r.Tool, d.By, d.Rule)
		}
	}
}

// TestMatchMetaInCwd: glob metacharacters in the cwd are literal.
func TestMatchMetaInCwd(t *testing.T) {
	e := NewEngine()
	r := readReq("Read", "/w/pro[j]/src/a.go")
	r.Rules = testRules(t, "Read(src/**)")
	r.Cwd = "/w/pro[j]"
	if d := e.Decide(context.Background(), r); d.Verdict != Allow {
		t.Errorf("got %s: %s", d.Verdict, d.Reason)
	}
	r = readReq("Read", "/w/proj/src/a.go")
	r.Rules = testRules(t, "Read(src/**)")
	r.Cwd = "/w/pro[j]"
	if d := e.Decide(context.Background(), r); d.Verdict != Ask {
		t.Errorf("a metacharacter of the cwd acted as a pattern: %s", d.Verdict)
	}
}

func TestMatchWildcard(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true},
		{"*", "a b", true},
		{"a*", "a", true},
		{"a*c", "abbbc", true},
		{"a*c", "abbbcd", false},
		{"*a*b*", "xxaxxbxx", true},
		{"*a*b*", "xxbxxaxx", false},
		{"ab", "abc", false},
		{"", "", true},
		{"", "a", false},
	}
	for _, tc := range tests {
		if got := matchWildcard(tc.pat, tc.s); got != tc.want {
			t.Errorf("matchWildcard(%q, %q) = %v", tc.pat, tc.s, got)
		}
	}
}

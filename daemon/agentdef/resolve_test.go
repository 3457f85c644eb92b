package agentdef_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/agentdef"
)

// pool is a parent's tools: tackle's built-ins, a few of Claude Code's
// and two MCP servers.
var pool = []string{
	"Read", "Write", "Edit", "Glob", "Grep", "Bash", "BashOutput", "KillShell", "WebFetch", "WebSearch", "TodoWrite",
	"NotebookEdit", "Skill", "ToolSearch", "Agent", "AskUserQuestion", "EnterPlanMode", "ExitPlanMode", "Workflow",
	"mcp__github__create_issue", "mcp__github__list_prs", "mcp__slack__post", "mcp__githubber__x",
}

// childPool is pool without what no child gets by default.
var childPool = []string{
	"Read", "Write", "Edit", "Glob", "Grep", "Bash", "BashOutput", "KillShell", "WebFetch", "WebSearch", "TodoWrite",
	"NotebookEdit", "Skill", "ToolSearch", "Agent",
	"mcp__github__create_issue", "mcp__github__list_prs", "mcp__slack__post", "mcp__githubber__x",
}

func def(tools, disallowed []string) *agentdef.Definition {
	return &agentdef.Definition{Name: "t", Tools: tools, DisallowedTools: disallowed}
}

func list(s ...string) []string { return s }

func TestResolve(t *testing.T) {
	tests := []struct {
		name string
		def  *agentdef.Definition
		opts agentdef.ResolveOptions
		want []string
	}{
		{"omitted: all a child may have", def(nil, nil), agentdef.ResolveOptions{}, childPool},
		{"nil definition", nil, agentdef.ResolveOptions{}, childPool},
		{"wildcard", def(list("*"), nil), agentdef.ResolveOptions{}, childPool},
		{"wildcard among others", def(list("Read", "*"), nil), agentdef.ResolveOptions{}, childPool},
		{"at the depth limit: no Agent", def(nil, nil), agentdef.ResolveOptions{AtDepthLimit: true}, without(childPool, "Agent")},
		{"listed Agent at the depth limit", def(list("Agent", "Read"), nil), agentdef.ResolveOptions{AtDepthLimit: true}, list("Read")},
		{"plan mode keeps ExitPlanMode", def(nil, nil), agentdef.ResolveOptions{PlanMode: true}, insert(childPool, "Agent", "ExitPlanMode")},
		{"ExitPlanMode listed, not in plan mode", def(list("Read", "ExitPlanMode"), nil), agentdef.ResolveOptions{}, list("Read")},
		{"ExitPlanMode listed, in plan mode", def(list("Read", "ExitPlanMode"), nil), agentdef.ResolveOptions{PlanMode: true}, list("Read", "ExitPlanMode")},
		{"never given even when listed", def(list("AskUserQuestion", "EnterPlanMode", "Workflow", "Read"), nil), agentdef.ResolveOptions{}, list("Read")},
		{"a list, in the pool's order", def(list("Grep", "Read", "Grep"), nil), agentdef.ResolveOptions{}, list("Read", "Grep")},
		{"rule content names the tool", def(list("Bash(git *)", "Read(./src/**)"), nil), agentdef.ResolveOptions{}, list("Read", "Bash")},
		{"Task is Agent in tools", def(list("Task", "Read"), nil), agentdef.ResolveOptions{}, list("Read", "Agent")},
		{"Task(types) is Agent", def(list("Task(worker)"), nil), agentdef.ResolveOptions{}, list("Agent")},
		{"Task is Agent in disallowedTools", def(nil, list("Task")), agentdef.ResolveOptions{}, without(childPool, "Agent")},
		{"disallowed first, then tools", def(list("Read", "Write", "Edit"), list("Write")), agentdef.ResolveOptions{}, list("Read", "Edit")},
		{"a disallowed spec removes the whole tool", def(nil, list("Bash(rm *)")), agentdef.ResolveOptions{}, without(childPool, "Bash")},
		{"disallowed wildcard", def(nil, list("*")), agentdef.ResolveOptions{}, nil},
		{"tools mcp__server", def(list("mcp__github"), nil), agentdef.ResolveOptions{}, list("mcp__github__create_issue", "mcp__github__list_prs")},
		{"tools mcp__server__*", def(list("mcp__github__*", "Read"), nil), agentdef.ResolveOptions{}, list("Read", "mcp__github__create_issue", "mcp__github__list_prs")},
		{"tools one MCP tool", def(list("mcp__github__list_prs"), nil), agentdef.ResolveOptions{}, list("mcp__github__list_prs")},
		{"disallowed mcp__server", def(nil, list("mcp__github")), agentdef.ResolveOptions{}, without(childPool, "mcp__github__create_issue", "mcp__github__list_prs")},
		{"disallowed mcp__server__*", def(nil, list("mcp__slack__*")), agentdef.ResolveOptions{}, without(childPool, "mcp__slack__post")},
		{"disallowed mcp__*", def(nil, list("mcp__*")), agentdef.ResolveOptions{}, without(childPool, "mcp__github__create_issue", "mcp__github__list_prs", "mcp__slack__post", "mcp__githubber__x")},
		{"mcp__* in tools matches nothing", def(list("mcp__*", "Read"), nil), agentdef.ResolveOptions{}, list("Read")},
		{"wildcard and disallowed", def(list("*"), list("Bash", "mcp__*")), agentdef.ResolveOptions{}, list("Read", "Write", "Edit", "Glob", "Grep", "BashOutput", "KillShell", "WebFetch", "WebSearch", "TodoWrite", "NotebookEdit", "Skill", "ToolSearch", "Agent")},
		{"unmatched entries are ignored", def(list("Read", "Grpe"), nil), agentdef.ResolveOptions{}, list("Read")},
		{"background: MCP and the background built-ins", def(nil, nil), agentdef.ResolveOptions{Background: true},
			list("Read", "Write", "Edit", "Glob", "Grep", "Bash", "WebFetch", "WebSearch", "TodoWrite", "NotebookEdit", "Skill", "ToolSearch", "Agent",
				"mcp__github__create_issue", "mcp__github__list_prs", "mcp__slack__post", "mcp__githubber__x")},
		{"background whatever tools says", def(list("Read", "BashOutput", "KillShell", "mcp__slack"), nil), agentdef.ResolveOptions{Background: true}, list("Read", "mcp__slack__post")},
		{"background at the depth limit in plan mode", def(list("Read", "Agent", "ExitPlanMode"), nil), agentdef.ResolveOptions{Background: true, AtDepthLimit: true, PlanMode: true}, list("Read", "ExitPlanMode")},
		{"background keeps an alias of TaskStop", def(nil, list("mcp__*")), agentdef.ResolveOptions{Background: true, Aliases: map[string][]string{"KillShell": {"TaskStop", "KillBash"}, "BashOutput": {"TaskOutput"}}},
			list("Read", "Write", "Edit", "Glob", "Grep", "Bash", "KillShell", "WebFetch", "WebSearch", "TodoWrite", "NotebookEdit", "Skill", "ToolSearch", "Agent")},
		{"an alias withheld as TaskOutput", def(list("BashOutput", "TaskStop"), nil), agentdef.ResolveOptions{Aliases: map[string][]string{"KillShell": {"TaskStop"}, "BashOutput": {"TaskOutput"}}}, list("KillShell")},
		{"fork: the pool exactly", def(list("Read"), list("Bash")), agentdef.ResolveOptions{Fork: true, Background: true, AtDepthLimit: true}, pool},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := agentdef.Resolve(tt.def, pool, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func without(list []string, drop ...string) []string {
	var out []string
	for _, s := range list {
		if !contains(drop, s) {
			out = append(out, s)
		}
	}
	return out
}

// insert adds s after the element after.
func insert(list []string, after, s string) []string {
	var out []string
	for _, x := range list {
		out = append(out, x)
		if x == after {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestResolveZeroTools(t *testing.T) {
	tests := []struct {
		name string
		def  *agentdef.Definition
		opts agentdef.ResolveOptions
		want string
	}{
		{"misspelled", &agentdef.Definition{Name: "greper", Tools: list("Grpe")}, agentdef.ResolveOptions{},
			"Agent 'greper' would be spawned with zero tools — refusing. Its tools list resolved to nothing: unrecognized [Grpe]. Fix the agent's tools frontmatter or pass a different subagent_type."},
		{"All tools", &agentdef.Definition{Name: "builder", Tools: list("All", "tools")}, agentdef.ResolveOptions{},
			"Agent 'builder' would be spawned with zero tools — refusing. Its tools list resolved to nothing: unrecognized [All, tools]. Fix the agent's tools frontmatter or pass a different subagent_type."},
		{"every reason", &agentdef.Definition{Name: "mixed", Tools: list("Grpe", "AskUserQuestion", "NotebookRead", "mcp__jira", "Foo", "Grpe", "ScheduleWakeup", "mcp__*", "Bash(git", "TodoRead")},
			agentdef.ResolveOptions{},
			"Agent 'mixed' would be spawned with zero tools — refusing. Its tools list resolved to nothing: unrecognized [Grpe, Foo, Bash(git]; not available to subagents [AskUserQuestion, ScheduleWakeup]; recognized but matched no tools in this session [NotebookRead, mcp__jira, mcp__*, TodoRead]. Fix the agent's tools frontmatter or pass a different subagent_type."},
		{"background", &agentdef.Definition{Name: "bg", Tools: list("BashOutput", "KillShell")}, agentdef.ResolveOptions{Background: true},
			"Agent 'bg' would be spawned with zero tools — refusing. Its tools list resolved to nothing: not available to subagents [BashOutput, KillShell]. Fix the agent's tools frontmatter or pass a different subagent_type."},
		{"only Agent at the depth limit", &agentdef.Definition{Name: "boss", Tools: list("Task")}, agentdef.ResolveOptions{AtDepthLimit: true},
			"Agent 'boss' would be spawned with zero tools — refusing. Its tools list resolved to nothing: not available to subagents [Task]. Fix the agent's tools frontmatter or pass a different subagent_type."},
		{"ExitPlanMode outside plan mode", &agentdef.Definition{Name: "p", Tools: list("ExitPlanMode")}, agentdef.ResolveOptions{},
			"Agent 'p' would be spawned with zero tools — refusing. Its tools list resolved to nothing: not available to subagents [ExitPlanMode]. Fix the agent's tools frontmatter or pass a different subagent_type."},
		{"in both lists", &agentdef.Definition{Name: "w", Tools: list("Write"), DisallowedTools: list("Write")}, agentdef.ResolveOptions{},
			"Agent 'w' would be spawned with zero tools — refusing. Its tools list resolved to nothing: recognized but matched no tools in this session [Write]. Fix the agent's tools frontmatter or pass a different subagent_type."},
		{"a server that is not there", &agentdef.Definition{Name: "pg", Tools: list("mcp__postgres__query", "mcp__mcp-postgres")}, agentdef.ResolveOptions{},
			"Agent 'pg' would be spawned with zero tools — refusing. Its tools list resolved to nothing: recognized but matched no tools in this session [mcp__postgres__query, mcp__mcp-postgres]. Fix the agent's tools frontmatter or pass a different subagent_type."},
		{"a pool tool tackle does not know", &agentdef.Definition{Name: "x", Tools: list("Probe")}, agentdef.ResolveOptions{Background: true},
			"Agent 'x' would be spawned with zero tools — refusing. Its tools list resolved to nothing: not available to subagents [Probe]. Fix the agent's tools frontmatter or pass a different subagent_type."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := agentdef.Resolve(tt.def, append(pool, "Probe"), tt.opts)
			var ze *agentdef.ZeroToolsError
			if !errors.As(err, &ze) || got != nil {
				t.Fatalf("Resolve = %q, %v", got, err)
			}
			if err.Error() != tt.want {
				t.Errorf("got  %s\nwant %s", err, tt.want)
			}
			if ze.Agent != tt.def.Name {
				t.Errorf("agent %q", ze.Agent)
			}
		})
	}
	// A list that leaves nothing because the pool is empty and no tools
	// list was given is no refusal.
	if got, err := agentdef.Resolve(def(nil, nil), nil, agentdef.ResolveOptions{}); err != nil || got != nil {
		t.Errorf("empty pool: %q, %v", got, err)
	}
}

func TestResolveBuiltins(t *testing.T) {
	b := agentdef.Builtins()
	explore, err := agentdef.Resolve(b[1], pool, agentdef.ResolveOptions{Background: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(list("Read", "Glob", "Grep", "Bash", "WebFetch", "WebSearch", "ToolSearch"), explore); diff != "" {
		t.Errorf("Explore (-want +got):\n%s", diff)
	}
	gp, err := agentdef.Resolve(b[0], pool, agentdef.ResolveOptions{})
	if err != nil || !cmp.Equal(gp, childPool) {
		t.Errorf("general-purpose: %q, %v", gp, err)
	}
}

func TestIsKnownTool(t *testing.T) {
	for name, want := range map[string]bool{
		"Read": true, "Task": true, "Bash(git *)": true, "NotebookEdit": true, "ReplaceLines": true,
		"Grpe": false, "mcp__github": false, "": false, "read": false,
	} {
		if got := agentdef.IsKnownTool(name); got != want {
			t.Errorf("IsKnownTool(%q) = %v", name, got)
		}
	}
}

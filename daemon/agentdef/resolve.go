package agentdef

import (
	"fmt"
	"strings"
)

// knownTools are the built-in tool names of tackle and Claude Code (its
// tools reference and agent.md), with the aliases both accept: a tools
// entry naming one is "recognized" even when this session lacks the tool.
var knownTools = setOf(
	// tackle's own
	"Read", "Write", "Edit", "MultiEdit", "ReplaceLines", "Glob", "Grep", "Bash", "BashOutput", "KillShell", "KillBash",
	"WebFetch", "WebSearch", "TodoWrite", "TodoRead", "Skill", "ToolSearch", "ListMcpResources", "ReadMcpResource",
	// Claude Code's
	"Agent", "Task", "Artifact", "AskUserQuestion", "CronCreate", "CronDelete", "CronList", "EndConversation",
	"EnterPlanMode", "EnterWorktree", "ExitPlanMode", "ExitWorktree", "ListAgents", "ListMcpResourcesTool", "LSP",
	"Monitor", "NotebookEdit", "NotebookRead", "PowerShell", "PushNotification", "ReadMcpResourceTool", "RemoteTrigger",
	"ReportFindings", "ScheduleWakeup", "SendFeedback", "SendMessage", "SendUserFile", "ShareOnboardingGuide",
	"SlashCommand", "SubagentHandback", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate",
	"WaitForMcpServers", "Workflow",
)

// neverForChildren are withheld from every child that is not a fork
// (agent.md section 4); Agent and ExitPlanMode have their own conditions.
var neverForChildren = setOf("AskUserQuestion", "EndConversation", "EnterPlanMode", "ScheduleWakeup", "TaskOutput",
	"WaitForMcpServers", "Workflow")

// backgroundTools are the only built-ins a background child keeps
// (agent.md section 4), with LSP, which Claude Code added in 2.1.280.
// Agent and ExitPlanMode are not filtered here: they follow their own
// conditions wherever the child runs (Claude Code's sub-agents docs,
// "Available tools").
var backgroundTools = setOf("Read", "Grep", "Glob", "LSP", "Bash", "PowerShell", "Edit", "Write", "NotebookEdit",
	"WebFetch", "WebSearch", "TodoWrite", "Skill", "ToolSearch", "EnterWorktree", "ExitWorktree", "Monitor",
	"TaskStop", "SendMessage", "Artifact")

func setOf(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// IsKnownTool reports whether name (or Name(rule)) is a built-in tool of
// tackle or Claude Code.
func IsKnownTool(name string) bool {
	n, _, ok := SplitSpec(name)
	return ok && knownTools[n]
}

// ResolveOptions says how a child is started.
type ResolveOptions struct {
	// Background is set for a child running in the background: it keeps
	// every MCP tool but only the built-ins background children may use.
	Background bool
	// AtDepthLimit is set when the child may not start children of its
	// own: Agent is withheld.
	AtDepthLimit bool
	// Fork is set for a fork of the parent's conversation: it gets the
	// parent's pool exactly, whatever the definition says.
	Fork bool
	// PlanMode is set when the child's effective permission mode is plan
	// (the definition's permissionMode as the parent's mode lets it
	// apply): it keeps ExitPlanMode, which other children never get.
	PlanMode bool
	// Aliases are the other names of the pool's tools, by tool
	// (tool.Spec.Aliases: KillShell answers to TaskStop). A tool counts as
	// each of its names, for the lists and for the filters: KillShell is
	// kept in the background as TaskStop, BashOutput is withheld as
	// TaskOutput.
	Aliases map[string][]string
}

// ZeroToolsError is the refusal to start a child whose non-empty tools
// list, without a wildcard, resolved to nothing. Each list holds the
// entries as written.
type ZeroToolsError struct {
	// Agent is the agent type.
	Agent string
	// Unrecognized entries name no known tool and no tool of the pool.
	Unrecognized []string
	// Unavailable entries name tools a child of this kind never gets.
	Unavailable []string
	// Unmatched entries are known tools or MCP patterns that matched no
	// tool of this session (or only tools disallowedTools removed).
	Unmatched []string
}

// Error is Claude Code's text for the refusal, word for word.
func (e *ZeroToolsError) Error() string {
	var reasons []string
	add := func(label string, list []string) {
		if len(list) > 0 {
			reasons = append(reasons, label+" ["+strings.Join(list, ", ")+"]")
		}
	}
	add("unrecognized", e.Unrecognized)
	add("not available to subagents", e.Unavailable)
	add("recognized but matched no tools in this session", e.Unmatched)
	return fmt.Sprintf("Agent '%s' would be spawned with zero tools — refusing. Its tools list resolved to nothing: %s. "+
		"Fix the agent's tools frontmatter or pass a different subagent_type.", e.Agent, strings.Join(reasons, "; "))
}

// poolTool is one tool of the parent's pool, with all its names.
type poolTool struct {
	name  string
	names []string // name first, then aliases; Task read as Agent
}

// Resolve returns the tools of a child of type def, from available (the
// tool names of the parent's pool: built-ins and mcp__server__tool), in
// the pool's order, following agent.md section 4:
//
//   - A fork gets available exactly; def is not read.
//   - Never given to a child: Agent at the depth limit, AskUserQuestion,
//     EndConversation, EnterPlanMode, ExitPlanMode (unless PlanMode),
//     ScheduleWakeup, TaskOutput, WaitForMcpServers, Workflow.
//   - A background child keeps every MCP tool but only Read, Grep, Glob,
//     LSP, Bash, PowerShell, Edit, Write, NotebookEdit, WebFetch,
//     WebSearch, TodoWrite, Skill, ToolSearch, EnterWorktree,
//     ExitWorktree, Monitor, TaskStop, SendMessage and Artifact of the
//     built-ins (and Agent and ExitPlanMode on the conditions above).
//   - disallowedTools removes first, then tools selects from the rest: a
//     tool in both is removed; omitted tools, or "*" among them, means all
//     the rest. Entries are names, Task meaning Agent; mcp__srv and
//     mcp__srv__* stand for every tool of server srv, and mcp__* in
//     disallowedTools for every MCP tool. An entry's rule content
//     (Bash(git *)) is not read: the entry names its tool, and a
//     disallowedTools entry removes the whole tool (Definition.ToolRules
//     has the rules).
//
// A non-empty tools list without a wildcard that leaves nothing is a
// *ZeroToolsError; a list that leaves something ignores its entries that
// matched nothing. A nil def is one without tools or disallowedTools.
func Resolve(def *Definition, available []string, opts ResolveOptions) ([]string, error) {
	var pool []poolTool
	seen := map[string]bool{}
	for _, name := range available {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		t := poolTool{name: name, names: []string{canonical(name)}}
		for _, a := range opts.Aliases[name] {
			t.names = append(t.names, canonical(a))
		}
		pool = append(pool, t)
	}
	if opts.Fork {
		out := make([]string, len(pool))
		for i, t := range pool {
			out[i] = t.name
		}
		return out, nil
	}
	if def == nil {
		def = &Definition{}
	}

	var kept, withheld []poolTool
	for _, t := range pool {
		if withheldFromChild(t.names, opts) {
			withheld = append(withheld, t)
		} else {
			kept = append(kept, t)
		}
	}
	var rest []poolTool
	for _, t := range kept {
		removed := false
		for _, spec := range def.DisallowedTools {
			if name, _, ok := SplitSpec(spec); ok && matches(name, t.names, true) {
				removed = true
				break
			}
		}
		if !removed {
			rest = append(rest, t)
		}
	}

	var out []string
	if def.AllTools() {
		for _, t := range rest {
			out = append(out, t.name)
		}
		return out, nil
	}
	for _, t := range rest {
		for _, spec := range def.Tools {
			if name, _, ok := SplitSpec(spec); ok && matches(name, t.names, false) {
				out = append(out, t.name)
				break
			}
		}
	}
	if len(out) > 0 || len(def.Tools) == 0 {
		return out, nil
	}
	return nil, zeroTools(def, pool, withheld, opts)
}

// withheldFromChild reports whether a child that is not a fork is denied
// the tool known by names.
func withheldFromChild(names []string, opts ResolveOptions) bool {
	background := opts.Background && !strings.HasPrefix(names[0], "mcp__")
	for _, n := range names {
		switch {
		case n == "Agent":
			return opts.AtDepthLimit
		case n == "ExitPlanMode":
			return !opts.PlanMode
		case neverForChildren[n]:
			return true
		}
	}
	if background {
		for _, n := range names {
			if backgroundTools[n] {
				return false
			}
		}
		return true
	}
	return false
}

// matches reports whether the entry name (Task already read as Agent)
// stands for the tool known by names. mcp__* is a pattern only in
// disallowedTools (deny).
func matches(name string, names []string, deny bool) bool {
	if name == "*" {
		return true
	}
	if name == "mcp__*" {
		return deny && strings.HasPrefix(names[0], "mcp__")
	}
	if rest, ok := strings.CutPrefix(name, "mcp__"); ok {
		tool := names[0]
		if srv, ok := strings.CutSuffix(rest, "__*"); ok {
			return srv != "" && strings.HasPrefix(tool, "mcp__"+srv+"__")
		}
		if !strings.Contains(rest, "__") { // mcp__srv: the server
			return rest != "" && (tool == name || strings.HasPrefix(tool, name+"__"))
		}
		return tool == name
	}
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// zeroTools explains why def's tools list resolved to nothing: each entry
// as written, once, under the first reason that fits it.
func zeroTools(def *Definition, pool, withheld []poolTool, opts ResolveOptions) *ZeroToolsError {
	e := &ZeroToolsError{Agent: def.Name}
	done := map[string]bool{}
	for _, spec := range def.Tools {
		spec = strings.TrimSpace(spec)
		if done[spec] {
			continue
		}
		done[spec] = true
		name, _, ok := SplitSpec(spec)
		if !ok {
			e.Unrecognized = append(e.Unrecognized, spec)
			continue
		}
		unavailable := withheldFromChild([]string{name}, opts) && (knownTools[name] || inPool(name, pool))
		for _, t := range withheld {
			if matches(name, t.names, false) {
				unavailable = true
			}
		}
		switch {
		case unavailable:
			e.Unavailable = append(e.Unavailable, spec)
		case knownTools[name] || strings.HasPrefix(name, "mcp__") || inPool(name, pool):
			e.Unmatched = append(e.Unmatched, spec)
		default:
			e.Unrecognized = append(e.Unrecognized, spec)
		}
	}
	return e
}

func inPool(name string, pool []poolTool) bool {
	for _, t := range pool {
		if matches(name, t.names, false) {
			return true
		}
	}
	return false
}

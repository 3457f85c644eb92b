package agentdef

import (
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/internal/safefile"
)

// MaxFileSize is the largest agent file read; a larger one is a Problem.
// It is safefile.LimitAgent, which says why.
const MaxFileSize = safefile.LimitAgent

// MaxNameLength is the longest name Claude Code accepts (sub-agents docs,
// "Frontmatter reference"); a longer one skips the file.
const MaxNameLength = 256

// Sources of a definition (Definition.Source), highest priority first.
const (
	SourceManaged    = "managed"
	SourceProject    = "project"
	SourceAdditional = "additional"
	SourceUser       = "user"
	SourcePlugin     = "plugin"
	SourceBuiltin    = "builtin"
)

// Permission modes of the permissionMode field, as normalised (`manual`
// reads as PermissionDefault).
const (
	PermissionDefault     = "default"
	PermissionAcceptEdits = "acceptEdits"
	PermissionAuto        = "auto"
	PermissionDontAsk     = "dontAsk"
	PermissionBypass      = "bypassPermissions"
	PermissionPlan        = "plan"
)

// IsolationWorktree is the one isolation a definition may ask for.
const IsolationWorktree = "worktree"

// Definition is one agent type: a parsed file or a built-in. A Definition
// handed out by a Catalog or Set is shared and must not be modified; use
// Clone to change a copy.
type Definition struct {
	// Name is the agent type, the Agent tool's subagent_type: the
	// frontmatter `name` (never the file name), "plugin:name" for a
	// plugin's, with the plugin's subdirectories in between
	// ("plugin:review:security", as Claude Code names them).
	Name string
	// Description says when to delegate to the agent; the Agent tool's
	// listing shows it.
	Description string
	// Tools is the allow list as written, one spec per entry ("Read",
	// "Bash(git *)", "mcp__github", "*"); nil when the field is omitted,
	// which means every tool the child may have. Resolve reads only the
	// tool name of a spec; the rule content is for the daemon, which may
	// turn it into allow rules (ToolRules).
	Tools []string
	// DisallowedTools is the deny list as written. An entry with rule
	// content, such as Bash(git push *), removes the whole tool, as in
	// Claude Code.
	DisallowedTools []string
	// Model is an alias (sonnet, opus, haiku, fable) or a full model id;
	// "" inherits (the frontmatter `inherit` reads as "").
	Model string
	// PermissionMode is one of the Permission constants, or "" to take
	// the parent's mode. How it combines with the parent's mode is the
	// daemon's (agent.md section 4, "Permission mode").
	PermissionMode string
	// MaxTurns stops the child after that many turns; 0 means no limit.
	MaxTurns int
	// Skills are skills whose full SKILL.md is preloaded into the child.
	Skills []string
	// MCPServers are the servers the child gets: references to configured
	// servers, and inline configurations connected for the child's life.
	MCPServers []MCPServer
	// Hooks are the frontmatter hooks in the shape of settings' "hooks"
	// ({"PreToolUse": [{"matcher": …, "hooks": […]}]}), scoped to the child
	// while it runs; nil when there are none. They are kept as written: the
	// daemon turns a Stop hook into SubagentStop.
	Hooks map[string]any
	// Memory is "user", "project", "local" or "" (no persistent memory).
	// Claude Code gives a child with memory Read, Write and Edit for its
	// memory directory: the daemon's to grant, not Resolve's.
	Memory string
	// Background makes the child always run in the background.
	Background bool
	// Effort is low, medium, high, xhigh, max, or "" (the session's).
	Effort string
	// Isolation is IsolationWorktree or "".
	Isolation string
	// Color is one of red, blue, green, yellow, purple, orange, pink, cyan,
	// or "".
	Color string
	// InitialPrompt is submitted first when the agent is the main session
	// agent (never for a child).
	InitialPrompt string
	// OmitClaudeMd leaves the memory files (CLAUDE.md) out of the child's
	// context: the frontmatter omitClaudeMd, and set for Explore and Plan.
	OmitClaudeMd bool
	// Prompt is the Markdown body: the child's system prompt (BOM removed,
	// CRLF as LF, blank lines around it trimmed).
	Prompt string
	// Source is one of the Source constants.
	Source string
	// Path is the file ("" for a built-in).
	Path string
	// OneShot marks Explore and Plan: their result is the content only,
	// without the agentId and usage trailer, and their context has no
	// CLAUDE.md and no git status (agent.md section 4).
	OneShot bool
	// ReadOnly marks Explore and Plan: the daemon lets their Bash run
	// read-only commands only.
	ReadOnly bool

	// pos holds where each frontmatter key is (for Problems found after
	// parsing, such as the fields an untrusted project may not set).
	pos map[string]position
	// mcpPos is where each MCPServers entry is.
	mcpPos []position
}

// MCPServer is one entry of a definition's mcpServers.
type MCPServer struct {
	// Name is the server's name: a configured server's when Config is nil,
	// else the inline server's key.
	Name string
	// Config is an inline server's configuration as written, in the shape
	// of a .mcp.json entry ({"type": "stdio", "command": …}); nil for a
	// reference to a configured server (whose connection is shared).
	Config map[string]any
}

// Inline reports whether the entry defines its own server.
func (m MCPServer) Inline() bool { return m.Config != nil }

type position struct{ line, col int }

// Clone returns a shallow copy of d (slices and maps are shared and must
// not be modified in place).
func (d *Definition) Clone() *Definition {
	c := *d
	return &c
}

// AllTools reports whether Tools grants every tool: omitted, or holding
// the wildcard "*".
func (d *Definition) AllTools() bool {
	if d.Tools == nil {
		return true
	}
	for _, t := range d.Tools {
		if t == "*" {
			return true
		}
	}
	return false
}

// ToolRules returns the entries of Tools that carry rule content
// ("Bash(git *)", "WebFetch(domain:go.dev)"), with Task(…) spelled
// Agent(…): what the daemon may turn into allow rules for the child.
// Claude Code ignores the agent types in an Agent(…) entry of a child's
// definition; they matter only for the main session agent.
func (d *Definition) ToolRules() []string {
	var out []string
	for _, spec := range d.Tools {
		name, content, ok := SplitSpec(spec)
		if ok && content != "" {
			out = append(out, name+"("+content+")")
		}
	}
	return out
}

// SplitSpec splits a tool spec "Name(content)" into the tool's name (Task
// read as Agent) and the rule content; a spec without parentheses has no
// content. ok is false for an empty spec or one whose parenthesis is not
// closed at its end.
func SplitSpec(spec string) (name, content string, ok bool) {
	spec = strings.TrimSpace(spec)
	i := strings.IndexByte(spec, '(')
	if i < 0 {
		name = spec
	} else {
		if !strings.HasSuffix(spec, ")") {
			return "", "", false
		}
		name, content = strings.TrimSpace(spec[:i]), strings.TrimSpace(spec[i+1:len(spec)-1])
	}
	if name == "" {
		return "", "", false
	}
	return canonical(name), content, true
}

// canonical is a tool's name with the alias Task read as Agent.
func canonical(name string) string {
	if name == "Task" {
		return "Agent"
	}
	return name
}

// Problem is a file that did not load as an agent, or a field of one that
// was ignored, with where and why. Line and Column are 1-based; zero when
// the problem is not at a place in the file (it cannot be read at all).
type Problem struct {
	Path         string
	Line, Column int
	Message      string
	// Skipped is set when the file did not load; else only a field or an
	// entry of it was ignored.
	Skipped bool
}

// Error formats the problem as "path:line:col: message" ("path: message"
// when it has no position).
func (p Problem) Error() string {
	switch {
	case p.Line > 0 && p.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", p.Path, p.Line, p.Column, p.Message)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Message)
}

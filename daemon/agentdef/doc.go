// Package agentdef owns tackle's sub-agent definitions: the Markdown files
// with YAML frontmatter that Claude Code keeps in .claude/agents (and tackle
// also in .tackle/agents, $XDG_CONFIG_HOME/tackle/agents and a managed
// directory), the built-in types general-purpose, Explore and Plan, and the
// rules of agent.md section 4 that turn a definition and the parent's tool
// pool into the child's tools.
//
// A definition narrows: it is a system prompt and a tool list, so project
// definitions load even in a folder nobody trusted. What could widen or
// run something — hooks, inline MCP servers, a permission mode other than
// default or plan — is dropped from an untrusted project's files, and a
// file whose value for a limiting field is wrong (an unknown permission
// mode, a maxTurns that is not a positive integer, an unknown isolation, a
// malformed tools list or hooks) is skipped rather than loaded without the
// limit. Every file that does not load is a Problem naming file:line:col
// and why, where Claude Code would skip it silently.
//
// The package parses (parse.go), discovers the definitions of a session
// and caches parsed files daemon-wide (discover.go), holds the built-ins
// (builtin.go), resolves a child's tools (resolve.go) and writes the
// Agent tool's listing (listing.go). Every file is read through
// internal/safefile, so a FIFO, a device or a huge file planted in a
// repository is a Problem, found without blocking.
//
// It must not know about sessions, permissions, hooks or MCP connections:
// it hands the daemon raw hooks, inline MCP configurations and tool specs
// such as Bash(git *), and the daemon turns them into running hooks,
// connections and allow rules. Nothing here grants a permission by itself.
package agentdef

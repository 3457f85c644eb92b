package render

import (
	"fmt"
	"strings"
	"time"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// This file renders sub-agents for people: the one-line summary of an
// agent (tackle agents ps, sessions show) and the tree that attach, chat
// and run draw under an Agent call from the parent session's
// subagent_updated and call_progress events.

// TreeMark starts a sub-agent's line under its Agent call.
const TreeMark = "  ⎿ "

// treeIndent starts a sub-agent's tool line, under its agent's line.
const treeIndent = "      "

// AgentName names a sub-agent to people: its type and, quoted, its
// description.
func AgentName(typ, desc string) string {
	if typ == "" {
		typ = "agent"
	}
	if desc == "" {
		return typ
	}
	return fmt.Sprintf("%s %q", typ, OneLine(desc))
}

// AgentRefName is AgentName for the agent a permission request names:
// `general-purpose (Find the word)`.
func AgentRefName(r *tacklev1.AgentRef) string {
	typ := r.GetType()
	if typ == "" {
		typ = "agent"
	}
	if d := r.GetDescription(); d != "" {
		return typ + " (" + OneLine(d) + ")"
	}
	return typ
}

// SubagentDuration is how long the agent ran, or has been running at at
// (the daemon sends 0 while it runs).
func SubagentDuration(sa *tacklev1.Subagent, at time.Time) time.Duration {
	if ms := sa.GetDurationMs(); ms > 0 {
		return time.Duration(ms) * time.Millisecond
	}
	if st := sa.GetStarted(); st != nil && !at.IsZero() {
		if d := at.Sub(st.AsTime()); d > 0 {
			return d
		}
	}
	return 0
}

// subagentState is what a summary line shows except the duration: a new
// line is printed when it changes.
func subagentState(sa *tacklev1.Subagent) string {
	return fmt.Sprintf("%s|%d|%d|%s", sa.GetStatus(), sa.GetToolUses(), sa.GetTokens(), sa.GetError())
}

// SubagentSummary is one line about a sub-agent:
// `general-purpose "Find the word" running · 3 tools · 1.2k tokens · 4.1s`.
// Durations of running agents are counted up to at.
func SubagentSummary(sa *tacklev1.Subagent, at time.Time) string {
	return AgentName(sa.GetAgentType(), sa.GetDescription()) + " " + SubagentStats(sa, at)
}

// SubagentStats is a sub-agent's status and counts:
// `running · 3 tools · 1.2k tokens · 4.1s`.
func SubagentStats(sa *tacklev1.Subagent, at time.Time) string {
	var b strings.Builder
	b.WriteString(sa.GetStatus())
	b.WriteString(" · " + countOf(int64(sa.GetToolUses()), "tool", "tools"))
	if n := sa.GetTokens(); n > 0 {
		b.WriteString(" · " + ShortCount(n) + " tokens")
	}
	b.WriteString(" · " + ShortDuration(SubagentDuration(sa, at)))
	if sa.GetBackground() {
		b.WriteString(" · background")
	}
	if e := sa.GetError(); e != "" {
		b.WriteString(": " + OneLine(e))
	}
	return b.String()
}

// countOf is "1 tool", "3 tools".
func countOf(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// ShortCount formats a count for people: 950, 1.2k, 3.4M.
func ShortCount(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1_000_000)
}

// ShortDuration formats a duration for people: 0.4s, 12.0s, 3m05s, 1h02m.
func ShortDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	}
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// AgentTree draws a session's sub-agents under their Agent calls in
// line-oriented output (a terminal or a pipe alike: it never moves the
// cursor). Each change of an agent's state (started, a tool call, ended)
// prints its summary line again; the agent's tool calls, which arrive as
// progress of the Agent call ("[type] Tool arg"), are indented under it.
// When other lines came between, the summary is printed again before the
// next tool line, so that every tool line sits under its own agent. It is
// used by one goroutine.
type AgentTree struct {
	byCall map[string]*tacklev1.Subagent // Agent call id → the newest state of its agent
	shown  map[string]string             // agent id → the subagentState its last line showed
	last   string                        // the Agent call whose line was written last ("" after another line)
}

// NewAgentTree returns a tree that has seen no sub-agent yet.
func NewAgentTree() *AgentTree {
	return &AgentTree{byCall: map[string]*tacklev1.Subagent{}, shown: map[string]string{}}
}

// Seen records the state of an agent the caller has shown (a snapshot's
// listing), so that its tool lines have a line to sit under and the same
// state is not printed again.
func (t *AgentTree) Seen(sa *tacklev1.Subagent) {
	if c := sa.GetParentCallId(); c != "" {
		t.byCall[c] = sa
	}
	t.shown[sa.GetId()] = subagentState(sa)
}

// Lines returns the lines to print for e, and ok when e is the tree's
// (a subagent_updated event, or a sub-agent's tool line): the caller
// prints other events itself and then calls broke.
func (t *AgentTree) Lines(e *tacklev1.Event) (lines []string, ok bool) {
	switch e.GetType() {
	case "subagent_updated":
		sa := e.GetSubagent()
		if sa == nil {
			return nil, true
		}
		call := e.GetCallId()
		if call == "" {
			call = sa.GetParentCallId()
		}
		if call != "" {
			t.byCall[call] = sa
		}
		state := subagentState(sa)
		prev, known := t.shown[sa.GetId()]
		if known && prev == state {
			return nil, true
		}
		t.shown[sa.GetId()] = state
		t.last = call
		line := TreeMark + SubagentSummary(sa, eventTime(e))
		if !known && sa.GetId() != "" {
			line += " · id " + sa.GetId()
		}
		return []string{line}, true
	case "call_progress":
		call := e.GetCallId()
		sa := t.byCall[call]
		typ, rest, tagged := agentProgress(e.GetText())
		if sa == nil {
			if !tagged || !isAgentTool(e.GetTool()) {
				return nil, false
			}
			// An agent whose state this client has not seen (it joined
			// late): the tag names it.
			t.last = ""
			return []string{TreeMark + typ + ": " + rest}, true
		}
		var out []string
		if t.last != call {
			t.last = call
			out = append(out, TreeMark+SubagentSummary(sa, eventTime(e)))
		}
		text := strings.TrimRight(e.GetText(), "\n")
		if tagged && typ == sa.GetAgentType() {
			text = rest // the agent's line names the type
		}
		return append(out, treeIndent+text), true
	}
	return nil, false
}

// Broke notes that a line other than the tree's was printed.
func (t *AgentTree) Broke() { t.last = "" }

// isAgentTool reports whether name is the Agent tool (or its alias Task).
func isAgentTool(name string) bool { return name == "Agent" || name == "Task" }

// agentProgress splits a sub-agent's tool line "[type] Tool arg".
func agentProgress(text string) (typ, rest string, ok bool) {
	text = strings.TrimRight(text, "\n")
	if !strings.HasPrefix(text, "[") {
		return "", text, false
	}
	typ, rest, ok = strings.Cut(text[1:], "] ")
	if !ok || typ == "" {
		return "", text, false
	}
	return typ, rest, true
}

// eventTime is when e happened (now when it does not say).
func eventTime(e *tacklev1.Event) time.Time {
	if ts := e.GetTime(); ts != nil {
		return ts.AsTime()
	}
	return time.Now()
}

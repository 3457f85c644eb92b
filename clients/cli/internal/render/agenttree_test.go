package render

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The tree of two agents whose lines interleave: each state change is a
// line, a repeated state is not, each tool line sits under its own agent's
// line, a line of something else in between brings the agent's line back,
// and a tool line of an agent never seen names its type.
func TestAgentTreeLines(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(t0.Add(d)) }
	agent := func(id, call, typ, desc, status string, tools int32, tokens, ms int64) *tacklev1.Subagent {
		return &tacklev1.Subagent{Id: id, ParentCallId: call, AgentType: typ, Description: desc, Status: status,
			ToolUses: tools, Tokens: tokens, DurationMs: ms, Started: at(0)}
	}
	updated := func(sa *tacklev1.Subagent, d time.Duration) *tacklev1.Event {
		return &tacklev1.Event{Type: "subagent_updated", CallId: sa.GetParentCallId(), Subagent: sa, Time: at(d)}
	}
	progress := func(call, text string) *tacklev1.Event {
		return &tacklev1.Event{Type: "call_progress", CallId: call, Tool: "Agent", Text: text, Time: at(time.Second)}
	}
	tree := NewAgentTree()
	var got []string
	feed := func(e *tacklev1.Event) {
		lines, ok := tree.Lines(e)
		if !ok {
			got = append(got, "(other)")
			tree.Broke()
			return
		}
		got = append(got, lines...)
	}
	feed(updated(agent("s_a", "c1", "general-purpose", "Find the word", "running", 0, 0, 0), 400*time.Millisecond))
	feed(updated(agent("s_b", "c2", "Explore", "Map the code", "running", 0, 0, 0), 500*time.Millisecond))
	feed(updated(agent("s_a", "c1", "general-purpose", "Find the word", "running", 1, 0, 0), 1200*time.Millisecond))
	feed(progress("c1", "[general-purpose] Read /x/notes.txt"))
	feed(progress("c2", "[Explore] Glob **/*.go"))
	feed(progress("c2", "[Explore] Grep func main"))
	feed(updated(agent("s_b", "c2", "Explore", "Map the code", "running", 0, 0, 0), 2*time.Second)) // no change
	feed(&tacklev1.Event{Type: "call_state", CallId: "c3", Tool: "Bash", State: "running"})
	feed(progress("c2", "[Explore] Read /x/main.go"))
	feed(progress("c2", "progress of the Agent call itself"))
	feed(updated(agent("s_a", "c1", "general-purpose", "Find the word", "completed", 1, 1234, 4100), 5*time.Second))
	feed(progress("c9", "[Plan] Read /x/plan.md"))
	feed(&tacklev1.Event{Type: "call_progress", CallId: "c3", Tool: "Bash", Text: "[not an agent] output"})
	want := []string{
		`  ⎿ general-purpose "Find the word" running · 0 tools · 0.4s · id s_a`,
		`  ⎿ Explore "Map the code" running · 0 tools · 0.5s · id s_b`,
		`  ⎿ general-purpose "Find the word" running · 1 tool · 1.2s`,
		`      Read /x/notes.txt`,
		`  ⎿ Explore "Map the code" running · 0 tools · 1.0s`,
		`      Glob **/*.go`,
		`      Grep func main`,
		`(other)`,
		`  ⎿ Explore "Map the code" running · 0 tools · 1.0s`,
		`      Read /x/main.go`,
		`      progress of the Agent call itself`,
		`  ⎿ general-purpose "Find the word" completed · 1 tool · 1.2k tokens · 4.1s`,
		`  ⎿ Plan: Read /x/plan.md`,
		`(other)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tree lines (-want +got):\n%s", diff)
	}
}

func TestSubagentSummary(t *testing.T) {
	for _, tc := range []struct {
		sa   *tacklev1.Subagent
		want string
	}{
		{&tacklev1.Subagent{AgentType: "Explore", Description: "Look", Status: "running", ToolUses: 3, DurationMs: 65_000, Background: true},
			`Explore "Look" running · 3 tools · 1m05s · background`},
		{&tacklev1.Subagent{AgentType: "reader", Status: "failed", ToolUses: 1, Tokens: 2_500_000, DurationMs: 3_725_000, Error: "the model failed\nmore"},
			`reader failed · 1 tool · 2.5M tokens · 1h02m: the model failed …`},
		{&tacklev1.Subagent{AgentType: "general-purpose", Description: "Say \"hi\"", Status: "killed", Tokens: 999},
			`general-purpose "Say \"hi\"" killed · 0 tools · 999 tokens · 0.0s`},
	} {
		if got := SubagentSummary(tc.sa, time.Time{}); got != tc.want {
			t.Errorf("subagentSummary(%v) = %q, want %q", tc.sa, got, tc.want)
		}
	}
	if got := AgentRefName(&tacklev1.AgentRef{Type: "general-purpose", Description: "Find the word"}); got != "general-purpose (Find the word)" {
		t.Errorf("agentRefName = %q", got)
	}
}

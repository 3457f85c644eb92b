package hook

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

// agentEnv is a sub-agent's session: tooltest.Env plus AgentEnv.
type agentEnv struct {
	*tooltest.Env
	id, typ string
}

func (e agentEnv) AgentID() string   { return e.id }
func (e agentEnv) AgentType() string { return e.typ }

var _ AgentEnv = agentEnv{}

// child returns a sub-agent's session in the fixture's project.
func (f *fixture) child(id, agentID, agentType string) agentEnv {
	c := tooltest.At(f.root)
	c.ID, c.Vars, c.Out = id, f.env.Vars, f.env.Out
	return agentEnv{Env: c, id: agentID, typ: agentType}
}

// keys returns the sorted keys of a recorded input.
func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func inputs(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range readLines(t, path) {
		out = append(out, l["input"].(map[string]any))
	}
	return out
}

func TestSubagentStart(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	rec, explore := filepath.Join(dir, "rec.jsonl"), filepath.Join(dir, "explore.jsonl")
	f.write("project", map[string]any{"SubagentStart": []any{
		matcherGroup("reviewer|planner",
			cmdHook(testdata(t, "record.sh"), rec),
			cmdHook(`cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"review the diff only"}}'`),
			cmdHook(`cat >/dev/null; echo "plain stdout is not context"`),
			cmdHook(`cat >/dev/null; echo '{"decision":"block","reason":"no","hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"still context"}}'`),
			cmdHook(testdata(t, "exit.sh"), "2", "do not start")),
		matcherGroup("Explore", cmdHook(testdata(t, "record.sh"), explore)),
	}})
	child := f.child("child-1", "a1b2", "reviewer")
	got := f.h.SubagentStart(context.Background(), child, "a1b2", "reviewer")
	if want := "review the diff only\nstill context"; got != want {
		t.Errorf("context %q, want %q", got, want)
	}
	ins := inputs(t, rec)
	if len(ins) != 1 {
		t.Fatalf("%d records, want 1", len(ins))
	}
	want := map[string]any{"session_id": "child-1", "transcript_path": "", "cwd": f.root, "permission_mode": "default",
		"hook_event_name": "SubagentStart", "agent_id": "a1b2", "agent_type": "reviewer"}
	if diff := cmp.Diff(want, ins[0]); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	if n := len(readLines(t, explore)); n != 0 {
		t.Errorf("the Explore group ran %d times for a reviewer", n)
	}
	// Nothing blocks: every run is ok, the refusals are noted.
	var reasons []string
	for _, ev := range f.hookEvents() {
		if ev.Event != SubagentStart || ev.Outcome != event.HookOK {
			t.Errorf("event %+v", ev)
		}
		if ev.Reason != "" {
			reasons = append(reasons, ev.Reason)
		}
	}
	wantReasons := []string{"a SubagentStart hook cannot block the start; ignored", "exit status 2 cannot block a sub-agent's start; ignored: do not start"}
	if diff := cmp.Diff(wantReasons, reasons); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}

	// The matcher is the agent type.
	if got := f.h.SubagentStart(context.Background(), f.child("child-2", "c3d4", "Explore"), "c3d4", "Explore"); got != "" {
		t.Errorf("Explore context %q", got)
	}
	if ins := inputs(t, explore); len(ins) != 1 || ins[0]["agent_type"] != "Explore" || ins[0]["agent_id"] != "c3d4" {
		t.Errorf("Explore records %v", ins)
	}
	if n := len(readLines(t, rec)); n != 1 {
		t.Errorf("the reviewer group ran for Explore (%d records)", n)
	}
	if got := f.h.SubagentStart(context.Background(), f.child("child-3", "e5", "general-purpose"), "e5", "general-purpose"); got != "" {
		t.Errorf("unmatched type: context %q", got)
	}
}

func TestSubagentStop(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	f.write("user", map[string]any{"SubagentStop": []any{matcherGroup("reviewer", cmdHook(testdata(t, "substop.sh"), rec))}})
	child := f.child("child-1", "a1b2", "reviewer")
	ctx := context.Background()
	in := SubagentStopInput{AgentID: "a1b2", AgentType: "reviewer", TranscriptPath: "/t/agent-a1b2.jsonl", LastMessage: "done"}

	block, reason := f.h.SubagentStop(ctx, child, in)
	if !block || reason != "run the tests first" {
		t.Errorf("block %v reason %q, want the hook's block", block, reason)
	}
	ins := inputs(t, rec)
	if len(ins) != 1 {
		t.Fatalf("%d records", len(ins))
	}
	want := map[string]any{"session_id": "child-1", "transcript_path": "", "cwd": f.root, "permission_mode": "default",
		"hook_event_name": "SubagentStop", "agent_id": "a1b2", "agent_type": "reviewer", "agent_transcript_path": "/t/agent-a1b2.jsonl",
		"stop_hook_active": false, "last_assistant_message": "done", "background_tasks": []any{}, "session_crons": []any{}}
	if diff := cmp.Diff(want, ins[0]); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}

	// stop_hook_active lets it end.
	in.Active = true
	if block, reason := f.h.SubagentStop(ctx, child, in); block || reason != "" {
		t.Errorf("active: block %v reason %q", block, reason)
	}
	if ins := inputs(t, rec); len(ins) != 2 || ins[1]["stop_hook_active"] != true {
		t.Errorf("active records %v", ins)
	}

	// Exit 2: the reason is stderr.
	in.Active, in.LastMessage = false, "exit2please"
	if block, reason := f.h.SubagentStop(ctx, child, in); !block || reason != "fix the lint first" {
		t.Errorf("exit 2: block %v reason %q", block, reason)
	}
	evs := f.hookEvents()
	if len(evs) != 3 || evs[0].Outcome != event.HookBlocked || evs[1].Outcome != event.HookOK || evs[2].Outcome != event.HookBlocked || evs[2].Reason != "fix the lint first" {
		t.Errorf("events %+v", evs)
	}

	// The matcher is the agent type.
	in.AgentType = "Explore"
	if block, _ := f.h.SubagentStop(ctx, f.child("child-2", "c3", "Explore"), in); block {
		t.Error("a reviewer's SubagentStop hook blocked an Explore agent")
	}
	if n := len(readLines(t, rec)); n != 3 {
		t.Errorf("%d records, want 3", n)
	}
}

// Tool hooks inside a sub-agent get agent_id and agent_type; a main
// session's input has neither key.
func TestAgentFieldsInInput(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	record := cmdHook(testdata(t, "record.sh"), rec)
	f.write("project", map[string]any{
		"PreToolUse":    []any{matcherGroup("Bash", record)},
		"PostToolBatch": []any{matcherGroup("", record)},
	})
	ctx := context.Background()
	envs := []struct {
		name string
		env  tool.Env
		want []string // besides the common keys
	}{
		{"main", f.env, nil},
		{"AgentEnv without an id", f.child("main-2", "", "reviewer"), nil},
		{"sub-agent", f.child("child-1", "a1b2", "reviewer"), []string{"agent_id", "agent_type"}},
	}
	common := []string{"cwd", "hook_event_name", "permission_mode", "session_id", "transcript_path"}
	for _, tc := range envs {
		t.Run(tc.name, func(t *testing.T) {
			before := len(readLines(t, rec))
			ev := f.call("Bash", `{"command":"ls"}`)
			ev.Env = tc.env
			f.h.PreToolUse(ctx, ev)
			f.h.PostToolBatch(ctx, tc.env, "t", nil)
			ins := inputs(t, rec)[before:]
			if len(ins) != 2 {
				t.Fatalf("%d records, want 2", len(ins))
			}
			wantPre := slices.Sorted(slices.Values(slices.Concat(common, tc.want, []string{"tool_input", "tool_name", "tool_use_id"})))
			if diff := cmp.Diff(wantPre, keys(ins[0])); diff != "" {
				t.Errorf("PreToolUse keys (-want +got):\n%s", diff)
			}
			wantBatch := slices.Sorted(slices.Values(slices.Concat(common, tc.want)))
			if diff := cmp.Diff(wantBatch, keys(ins[1])); diff != "" {
				t.Errorf("PostToolBatch keys (-want +got):\n%s", diff)
			}
			if tc.want != nil && (ins[0]["agent_id"] != "a1b2" || ins[0]["agent_type"] != "reviewer" || ins[0]["session_id"] != "child-1") {
				t.Errorf("PreToolUse input %v", ins[0])
			}
		})
	}
}

// An agent definition's hooks run for the child's session only, after the
// settings' hooks, until ClearScoped; its Stop hooks are SubagentStop hooks.
func TestScopedHooks(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	settingsRec, scopedRec, stopRec := filepath.Join(dir, "settings.jsonl"), filepath.Join(dir, "scoped.jsonl"), filepath.Join(dir, "stop.jsonl")
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), settingsRec))}})
	child := f.child("child-1", "a1b2", "reviewer")
	ctx := context.Background()
	bash := func(env tool.Env) {
		ev := f.call("Bash", `{"command":"ls"}`)
		ev.Env = env
		f.h.PreToolUse(ctx, ev)
	}
	frontmatter := map[string]any{
		// As a YAML decoder gives it: map[any]any inside.
		"PreToolUse": []any{map[any]any{"matcher": "Bash", "hooks": []any{map[any]any{"type": "command", "command": testdata(t, "record.sh") + " " + scopedRec}}}},
		"Stop":       []any{matcherGroup("", cmdHook(testdata(t, "substop.sh"), stopRec, "frontmatter Stop"))},
		"PostToolUse": []any{
			matcherGroup("", map[string]any{"type": "command"}),
			matcherGroup("", cmdHook("true")),
		},
		"TeammateIdle": []any{matcherGroup("", cmdHook("true"))},
	}
	probs := f.h.SetScoped(child.SessionID(), frontmatter, "/home/u/.claude/agents/reviewer.md")
	var msgs []string
	for _, p := range probs {
		msgs = append(msgs, p.Error())
	}
	wantMsgs := []string{
		`/home/u/.claude/agents/reviewer.md: hooks.PostToolUse: entry 1: hook 1: a command hook needs a "command"`,
		`/home/u/.claude/agents/reviewer.md: hooks.TeammateIdle: tackle does not run this hook event (yet); its hooks are ignored`,
	}
	if diff := cmp.Diff(wantMsgs, msgs); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	if !f.h.Has(child, PostToolUse) || f.h.Has(f.env, PostToolUse) {
		t.Error("the valid PostToolUse entry is not registered for the child alone")
	}

	bash(child)
	bash(f.env) // the main session: the settings' hook only
	if n, m := len(readLines(t, settingsRec)), len(readLines(t, scopedRec)); n != 2 || m != 1 {
		t.Errorf("settings' hook ran %d times (want 2), scoped %d (want 1)", n, m)
	}
	// The frontmatter's Stop runs as SubagentStop, never as Stop.
	if block, reason := f.h.Stop(ctx, child, false, "done"); block || reason != "" {
		t.Errorf("Stop ran the frontmatter's Stop hook: %v %q", block, reason)
	}
	block, reason := f.h.SubagentStop(ctx, child, SubagentStopInput{AgentID: "a1b2", AgentType: "reviewer", LastMessage: "done"})
	if !block || reason != "run the tests first" {
		t.Errorf("SubagentStop: block %v reason %q", block, reason)
	}
	if l := readLines(t, stopRec); len(l) != 1 || l[0]["tag"] != "frontmatter Stop" || l[0]["input"].(map[string]any)["hook_event_name"] != SubagentStop {
		t.Errorf("stop records %v", l)
	}
	if block, _ := f.h.SubagentStop(ctx, f.child("child-2", "c3", "reviewer"), SubagentStopInput{AgentID: "c3", AgentType: "reviewer"}); block {
		t.Error("another child ran the first child's scoped SubagentStop hook")
	}

	// A second SetScoped replaces the first.
	if probs := f.h.SetScoped(child.SessionID(), map[string]any{"SubagentStop": []any{matcherGroup("", cmdHook(testdata(t, "substop.sh"), stopRec, "second"))}}, "reviewer"); len(probs) > 0 {
		t.Fatal(probs)
	}
	bash(child)
	if n := len(readLines(t, scopedRec)); n != 1 {
		t.Errorf("replaced scoped PreToolUse hook still ran (%d records)", n)
	}
	f.h.SubagentStop(ctx, child, SubagentStopInput{AgentID: "a1b2", AgentType: "reviewer"})
	if l := readLines(t, stopRec); len(l) != 2 || l[1]["tag"] != "second" {
		t.Errorf("stop records after replace %v", l)
	}

	f.h.ClearScoped(child.SessionID())
	bash(child)
	if block, _ := f.h.SubagentStop(ctx, child, SubagentStopInput{AgentID: "a1b2", AgentType: "reviewer"}); block {
		t.Error("a scoped SubagentStop hook ran after ClearScoped")
	}
	if n, m, s := len(readLines(t, settingsRec)), len(readLines(t, scopedRec)), len(readLines(t, stopRec)); n != 4 || m != 1 || s != 2 {
		t.Errorf("after ClearScoped: settings %d (want 4), scoped %d (want 1), stop %d (want 2)", n, m, s)
	}
	if f.h.Has(child, SubagentStop) || f.h.Has(child, PostToolUse) {
		t.Error("Has still sees scoped hooks after ClearScoped")
	}
}

// Scoped hooks sit beside a skill's: clearing one leaves the other, and a
// definition file inside the project runs its hooks only in a trusted
// project.
func TestScopedHooksWithSkillsAndTrust(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	skillRec, scopedRec := filepath.Join(dir, "skill.jsonl"), filepath.Join(dir, "scoped.jsonl")
	child := f.child("child-1", "a1b2", "reviewer")
	ctx := context.Background()
	bash := func() {
		ev := f.call("Bash", `{"command":"ls"}`)
		ev.Env = child
		f.h.PreToolUse(ctx, ev)
	}
	raw, _ := json.Marshal(map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), skillRec))}})
	if err := f.h.AddSession(child.SessionID(), "skill review", raw, true); err != nil {
		t.Fatal(err)
	}
	def := filepath.Join(f.root, ".claude", "agents", "reviewer.md")
	if probs := f.h.SetScoped(child.SessionID(), map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), scopedRec))}}, def); len(probs) > 0 {
		t.Fatal(probs)
	}
	bash()
	f.setTrusted(false)
	bash()
	if n, m := len(readLines(t, skillRec)), len(readLines(t, scopedRec)); n != 2 || m != 1 {
		t.Errorf("skill ran %d (want 2), project definition's hook %d (want 1: not while untrusted)", n, m)
	}
	f.setTrusted(true)
	f.h.ClearScoped(child.SessionID())
	bash()
	if n, m := len(readLines(t, skillRec)), len(readLines(t, scopedRec)); n != 3 || m != 1 {
		t.Errorf("after ClearScoped: skill ran %d (want 3), scoped %d (want 1)", n, m)
	}
	// ClearScoped of a session without any is a no-op; so is SetScoped of nothing.
	f.h.ClearScoped("nobody")
	if probs := f.h.SetScoped("nobody", nil, "x"); probs != nil {
		t.Errorf("problems of nothing: %v", probs)
	}
	f.h.sessMu.RLock()
	_, kept := f.h.sess["nobody"]
	f.h.sessMu.RUnlock()
	if kept {
		t.Error("an empty SetScoped registered a session")
	}
}

func TestSubagentHooksShape(t *testing.T) {
	stopA := []any{"a"}
	got := subagentHooks(map[string]any{"Stop": stopA, "SubagentStop": []any{"b"}, "PreToolUse": []any{map[any]any{1: "x"}}})
	want := map[string]any{"SubagentStop": []any{"b", "a"}, "PreToolUse": []any{map[string]any{"1": "x"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := subagentHooks(map[string]any{"Stop": "oops", "SubagentStop": []any{"b"}}); !strings.Contains(strings.Join(strings.Fields(strings.TrimSpace(jsonOf(got))), ""), `"SubagentStop":"oops"`) {
		t.Errorf("a malformed Stop is hidden: %v", got)
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

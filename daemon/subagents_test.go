package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// The sub-agent tests script several conversations at once: the parent's
// and each child's, told apart by a marker in their first user message
// (fakemodel.Conversations).

// agentCall is an Agent tool_use block.
func agentCall(typ, desc, task string, extra ...any) fakemodel.Block {
	in := map[string]any{"description": desc, "prompt": task}
	if typ != "" {
		in["subagent_type"] = typ
	}
	for i := 0; i+1 < len(extra); i += 2 {
		in[extra[i].(string)] = extra[i+1]
	}
	return fakemodel.ToolUse("Agent", in)
}

// requestsOf are the requests of the conversation whose first user
// message contains marker.
func requestsOf(fm *fakemodel.Server, marker string) []*fakemodel.Request {
	var out []*fakemodel.Request
	for _, r := range fm.Requests() {
		if strings.Contains(r.FirstUserText(), marker) {
			out = append(out, r)
		}
	}
	return out
}

// resultTexts are the texts of a request's tool results, by tool_use id
// order.
func resultTexts(r *fakemodel.Request) []string {
	var out []string
	for _, tr := range r.ToolResults() {
		out = append(out, tr.Content)
	}
	return out
}

// toolUses are the names of every tool_use of a request's messages.
func toolUses(r *fakemodel.Request) []string {
	var out []string
	for _, m := range r.Anthropic.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				out = append(out, b.Name)
			}
		}
	}
	return out
}

var trailer = regexp.MustCompile(`^agentId: (s_[0-9a-f]+)\n<usage>subagent_tokens: (\d+)\ntool_uses: (\d+)\nduration_ms: (\d+)</usage>$`)

// A foreground child: its first request holds its own system prompt and
// the task only; the parent's next request holds one tool_result with
// exactly the child's final text and Claude Code's trailer, and none of the
// child's calls; the child's calls stream as progress of the parent call.
func TestAgentForeground(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(2*time.Second))
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	file := filepath.Join(dir, "notes.txt")
	writeFile(t, file, "the secret word is tackle\n")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Call("Read", map[string]any{"file_path": file}),
			fakemodel.Say("The word is tackle."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(fakemodel.Text("Delegating."), agentCall("general-purpose", "Find the word", "[child] Read notes.txt and report the secret word.")),
			fakemodel.Say("It is tackle."),
		)},
	))
	s := attach(t, d, id)
	p, evs := promptAndWait(t, d, s, "[parent] what is the secret word?")
	if p.GetStopReason() != "end_turn" || p.GetFinalText() != "It is tackle." {
		t.Fatalf("the parent's prompt ended %+v", p)
	}

	child := requestsOf(fm, "[child]")
	if len(child) != 2 {
		t.Fatalf("%d child requests, want 2", len(child))
	}
	first := child[0]
	if n := len(first.Anthropic.Messages); n != 1 {
		t.Errorf("the child's first request has %d messages, want 1 (the task)", n)
	}
	if strings.Contains(string(first.Body), "[parent]") || strings.Contains(string(first.Body), "Delegating.") {
		t.Error("the child's first request holds the parent's conversation")
	}
	if slices.Contains(first.ToolNames(), "Agent") == false || slices.Contains(first.ToolNames(), "AskUserQuestion") {
		t.Errorf("the child's tools: %v (want Agent below the depth limit, never AskUserQuestion)", first.ToolNames())
	}
	if sys := first.System(); !strings.Contains(sys, "# Environment") || strings.Contains(sys, "You are tackle") {
		t.Errorf("the child's system prompt is not its definition's body plus the environment:\n%.600s", sys)
	}

	parent := requestsOf(fm, "[parent]")
	if len(parent) != 2 {
		t.Fatalf("%d parent requests, want 2", len(parent))
	}
	rs := parent[1].ToolResults()
	if len(rs) != 1 {
		t.Fatalf("the parent's second request has %d tool results, want 1", len(rs))
	}
	var blocks []string
	for _, m := range parent[1].Anthropic.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				var cs []struct{ Text string }
				if err := json.Unmarshal(b.Content, &cs); err != nil {
					t.Fatalf("the Agent result's content %s: %v", b.Content, err)
				}
				for _, c := range cs {
					blocks = append(blocks, c.Text)
				}
			}
		}
	}
	if len(blocks) != 2 || blocks[0] != "The word is tackle." {
		t.Fatalf("the Agent result's blocks: %q", blocks)
	}
	m := trailer.FindStringSubmatch(blocks[1])
	if m == nil {
		t.Fatalf("the trailer %q is not Claude Code's", blocks[1])
	}
	if m[3] != "1" || m[2] == "0" {
		t.Errorf("trailer: tool_uses %s, subagent_tokens %s (want 1 and the child's usage)", m[3], m[2])
	}
	if uses := toolUses(parent[1]); !slices.Equal(uses, []string{"Agent"}) {
		t.Errorf("the parent's request shows tool uses %v: the child's calls leaked", uses)
	}

	// Clients saw the child as progress of the Agent call and as
	// subagent_updated events; its session names its parent.
	var progress, states []string
	for _, e := range evs {
		switch e.GetType() {
		case "call_progress":
			progress = append(progress, e.GetText())
		case "subagent_updated":
			states = append(states, e.GetSubagent().GetStatus())
		}
	}
	if !slices.Contains(progress, "[general-purpose] Read "+file) {
		t.Errorf("progress of the Agent call: %q", progress)
	}
	if len(states) < 2 || states[0] != "running" || states[len(states)-1] != "completed" {
		t.Errorf("subagent_updated states: %v", states)
	}
	gs, err := d.Client().GetSession(context.Background(), &tacklev1.GetSessionRequest{Id: m[1]})
	if err != nil {
		t.Fatal(err)
	}
	if a := gs.GetSession().GetAgent(); a.GetParentSessionId() != id || a.GetAgentType() != "general-purpose" || a.GetDepth() != 1 {
		t.Errorf("the child session's link: %+v", a)
	}
}

// Two foreground children in one parallel batch both run, and their
// results reach the parent in one request, in call order.
func TestAgentParallelChildren(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	both := make(chan struct{})
	var once sync.Once
	var arrived sync.WaitGroup
	arrived.Add(2)
	wait := func(text string) fakemodel.Script {
		return func(*fakemodel.Request) fakemodel.Turn {
			arrived.Done()
			once.Do(func() { go func() { arrived.Wait(); close(both) }() })
			select {
			case <-both: // both children are running at once
			case <-time.After(20 * time.Second):
				text = "timed out waiting for the other child"
			}
			return fakemodel.Say(text)
		}
	}
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[one]", Script: wait("one says hi")},
		fakemodel.Route{Prompt: "[two]", Script: wait("two says hi")},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "First", "[one] say hi"), agentCall("", "Second", "[two] say hi")),
			fakemodel.Say("Both answered."),
		)},
	))
	s := attach(t, d, id)
	if p, _ := promptAndWait(t, d, s, "[parent] ask both"); p.GetStopReason() != "end_turn" {
		t.Fatalf("prompt: %+v", p)
	}
	parent := requestsOf(fm, "[parent]")
	got := resultTexts(parent[len(parent)-1])
	if len(got) != 2 || !strings.HasPrefix(got[0], "one says hi") || !strings.HasPrefix(got[1], "two says hi") {
		t.Errorf("results: %q", got)
	}
}

// A child's Write asks the root session's controllers, naming the agent;
// a second attached client answers it, and the Write runs.
func TestAgentChildPermissionFromAnotherClient(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(30*time.Second))
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	target := filepath.Join(dir, "out.txt")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Call("Write", map[string]any{"file_path": target, "content": "written by a child\n"}),
			fakemodel.Say("Wrote it."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "Write the file", "[child] write out.txt")),
			fakemodel.Say("Done."),
		)},
	))
	first := attach(t, d, id)
	second := attach(t, d, id)
	resp := prompt(t, d, id, "[parent] write it")
	var req *tacklev1.PermissionRequest
	for req == nil {
		if e := second.recv().GetEvent(); e != nil && e.GetType() == "permission_requested" {
			req = e.GetPermission()
		}
	}
	if req.GetTool() != "Write" || req.GetAgent().GetType() != "general-purpose" || req.GetAgent().GetDescription() != "Write the file" || req.GetSessionId() == id || req.GetSessionId() == "" {
		t.Fatalf("the request the root's client got: %+v", req)
	}
	second.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
		SessionId: id, RequestId: req.GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE}}})
	first.waitEvent("prompt_ended", resp.GetPromptId())
	if b, err := os.ReadFile(target); err != nil || string(b) != "written by a child\n" {
		t.Errorf("the child's Write: %q, %v", b, err)
	}
}

// Nobody answers a child's prompt: it is denied at the timeout and the
// child goes on with the denial (it is not killed).
func TestAgentChildPromptTimesOut(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(500*time.Millisecond))
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	target := filepath.Join(dir, "out.txt")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Call("Write", map[string]any{"file_path": target, "content": "x"}),
			fakemodel.Say("I was not allowed to write."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "Write the file", "[child] write out.txt")),
			fakemodel.Say("Done."),
		)},
	))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "[parent] write it")
	child := requestsOf(fm, "[child]")
	if len(child) != 2 {
		t.Fatalf("%d child requests, want 2 (it went on after the denial)", len(child))
	}
	if rs := resultTexts(child[1]); len(rs) != 1 || !strings.Contains(rs[0], "nobody answered the permission request") {
		t.Errorf("the child's denial: %q", rs)
	}
	parent := requestsOf(fm, "[parent]")
	if rs := resultTexts(parent[1]); len(rs) != 1 || !strings.HasPrefix(rs[0], "I was not allowed to write.") {
		t.Errorf("the parent's result: %q", rs)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the denied Write ran")
	}
}

// The depth limit: three layers below the main conversation, the child
// has no Agent tool.
func TestAgentDepthLimit(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[d3]", Script: fakemodel.Turns(fakemodel.Say("deepest"))},
		fakemodel.Route{Prompt: "[d2]", Script: fakemodel.Turns(fakemodel.Reply(agentCall("", "Go deeper", "[d3] go")), fakemodel.Say("d2 done"))},
		fakemodel.Route{Prompt: "[d1]", Script: fakemodel.Turns(fakemodel.Reply(agentCall("", "Go deeper", "[d2] go")), fakemodel.Say("d1 done"))},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(fakemodel.Reply(agentCall("", "Go deeper", "[d1] go")), fakemodel.Say("top done"))},
	))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "[parent] go deep")
	for _, c := range []struct {
		marker string
		agent  bool
	}{{"[d1]", true}, {"[d2]", true}, {"[d3]", false}} {
		rs := requestsOf(fm, c.marker)
		if len(rs) == 0 {
			t.Fatalf("no request of %s", c.marker)
		}
		if got := slices.Contains(rs[0].ToolNames(), "Agent"); got != c.agent {
			t.Errorf("%s has the Agent tool: %v, want %v", c.marker, got, c.agent)
		}
	}
}

// The concurrency limit: the 21st running child is refused with Claude
// Code's text (background children hold their slots while they run).
func TestAgentConcurrencyLimit(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	release := make(chan struct{})
	var calls []fakemodel.Block
	for i := range 21 {
		calls = append(calls, agentCall("", fmt.Sprintf("Child %d", i), fmt.Sprintf("[child] number %d", i), "run_in_background", true))
	}
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: func(*fakemodel.Request) fakemodel.Turn {
			<-release
			return fakemodel.Say("ok")
		}},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(calls...),
			fakemodel.Say("Launched."),
			fakemodel.Say("Noted."),
		)},
	))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "[parent] start 21")
	close(release)
	parent := requestsOf(fm, "[parent]")
	rs := resultTexts(parent[1])
	if len(rs) != 21 {
		t.Fatalf("%d results", len(rs))
	}
	refused := 0
	for _, r := range rs {
		if r == "Concurrent subagent limit reached. You can run 20 subagents at once. Do not retry. If the user wants more concurrent subagents, ask them to increase CLAUDE_CODE_MAX_CONCURRENT_SUBAGENTS." {
			refused++
		} else if !strings.HasPrefix(r, "Async agent launched successfully.") {
			t.Errorf("a result: %q", r)
		}
	}
	if refused != 1 {
		t.Errorf("%d refused, want 1", refused)
	}
}

// agentIDIn finds the agentId a tool result of the request carries.
func agentIDIn(r *fakemodel.Request) string {
	for _, t := range resultTexts(r) {
		if m := regexp.MustCompile(`agentId: (s_[0-9a-f]+)`).FindStringSubmatch(t); m != nil {
			return m[1]
		}
	}
	return ""
}

// A background child: the call returns at once; when the child ends, its
// <task-notification> reaches the idle parent as a prompt of its own (a
// client is attached).
func TestAgentBackgroundNotification(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	release := make(chan struct{})
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: func(*fakemodel.Request) fakemodel.Turn {
			<-release
			return fakemodel.Say("Background work done.")
		}},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "Investigate auth bug", "[child] look", "run_in_background", true)),
			fakemodel.Say("Launched it."),
			fakemodel.Say("The agent reported."),
		)},
	))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "[parent] investigate in the background")
	parent := requestsOf(fm, "[parent]")
	rs := resultTexts(parent[1])
	if len(rs) != 1 || !strings.HasPrefix(rs[0], "Async agent launched successfully. (This tool result is internal metadata") {
		t.Fatalf("the launch result: %q", rs)
	}
	agentID := agentIDIn(parent[1])
	close(release)
	e := s.waitEvent("prompt_ended", "")
	if e.GetPrompt().GetFinalText() != "The agent reported." {
		t.Fatalf("the notification's prompt: %+v", e.GetPrompt())
	}
	parent = requestsOf(fm, "[parent]")
	last := parent[len(parent)-1].LastUserText()
	for _, want := range []string{"<task-notification>", "<task-id>" + agentID + "</task-id>", "<status>completed</status>",
		`<summary>Agent "Investigate auth bug" finished</summary>`, "<result>Background work done.</result>", "<tool_uses>0</tool_uses>"} {
		if !strings.Contains(last, want) {
			t.Errorf("the notification lacks %q:\n%s", want, last)
		}
	}
}

// TaskStop stops a background child; its notification says so.
func TestAgentTaskStop(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	hold := fakemodel.NewHold(0)
	defer hold.Release()
	step := 0
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("never")}, Hold: hold})},
		fakemodel.Route{Prompt: "[parent]", Script: func(r *fakemodel.Request) fakemodel.Turn {
			step++
			switch step {
			case 1:
				return fakemodel.Reply(agentCall("", "Long task", "[child] work forever", "run_in_background", true))
			case 2:
				<-hold.Reached()
				return fakemodel.Call("TaskStop", map[string]any{"task_id": agentIDIn(r)})
			default:
				return fakemodel.Say("Stopped it.")
			}
		}},
	))
	s := attach(t, d, id)
	// KillShell/TaskStop asks in the default mode (it stops what the
	// session started): this parent may.
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "[parent] start and stop", PermissionMode: "bypassPermissions"})
	if err != nil {
		t.Fatal(err)
	}
	s.waitEvent("prompt_ended", resp.GetPromptId())
	parent := requestsOf(fm, "[parent]")
	if rs := resultTexts(parent[2]); len(rs) != 1 || !strings.HasPrefix(rs[0], "Successfully stopped agent s_") {
		t.Errorf("TaskStop's result: %q", rs)
	}
	if o, err := fm.WaitDone(context.Background(), requestsOf(fm, "[child]")[0].Index); err != nil || !o.ClientGone {
		t.Errorf("the child's request: %+v, %v (want it aborted)", o, err)
	}
}

// Cancelling the parent's prompt ends its foreground child: the child's
// stream is aborted and every call of both has its result.
func TestAgentCancelParentEndsChild(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	hold := fakemodel.NewHold(0)
	defer hold.Release()
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("never")}, Hold: hold})},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "Long task", "[child] work")),
			fakemodel.Say("After the cancel."),
		)},
	))
	s := attach(t, d, id)
	resp := prompt(t, d, id, "[parent] go")
	<-hold.Reached()
	if _, err := tacklev1.NewAgentServiceClient(d.Conn()).CancelPrompt(context.Background(), &tacklev1.CancelPromptRequest{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	e := s.waitEvent("prompt_ended", resp.GetPromptId())
	if e.GetPrompt().GetStopReason() != "cancelled" {
		t.Fatalf("the parent ended %+v", e.GetPrompt())
	}
	if o, err := fm.WaitDone(context.Background(), requestsOf(fm, "[child]")[0].Index); err != nil || !o.ClientGone {
		t.Errorf("the child's request: %+v, %v (want it aborted)", o, err)
	}
	// The next prompt's request is valid: the Agent call has its result.
	p, _ := promptAndWait(t, d, s, "[parent] and now?")
	if p.GetStopReason() != "end_turn" {
		t.Fatalf("the next prompt: %+v", p)
	}
	parent := requestsOf(fm, "[parent]")
	if rs := resultTexts(parent[len(parent)-1]); len(rs) != 1 {
		t.Errorf("the Agent call's results in the next request: %q", rs)
	}
}

// writeAgent writes an agent definition into the project.
func writeAgent(t *testing.T, dir, name, frontmatter, body string) {
	t.Helper()
	p := filepath.Join(dir, ".claude", "agents", name+".md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p, "---\nname: "+name+"\n"+frontmatter+"---\n"+body+"\n")
}

// tools and disallowedTools decide the child's tools; a list that
// resolves to nothing refuses the spawn with Claude Code's text; maxTurns
// stops the child.
func TestAgentDefinitionTools(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	writeAgent(t, dir, "reader", "description: Reads files\ntools: Read, Grep, Glob\ndisallowedTools: Grep\nmaxTurns: 1\n", "You read files and report what they say.")
	writeAgent(t, dir, "typo", "description: Misspelt tools\ntools: Grpe\n", "You search.")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[reader]", Script: fakemodel.Turns(
			fakemodel.Reply(fakemodel.Text("Looking."), fakemodel.ToolUse("Glob", map[string]any{"pattern": "*"})),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("reader", "Read", "[reader] read"), agentCall("typo", "Search", "[typo] search")),
			fakemodel.Say("Done."),
		)},
	))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "[parent] go")
	reader := requestsOf(fm, "[reader]")
	if len(reader) != 1 {
		t.Fatalf("%d reader requests, want 1 (maxTurns: 1)", len(reader))
	}
	if got := reader[0].ToolNames(); !slices.Equal(got, []string{"Glob", "Read"}) && !slices.Equal(got, []string{"Read", "Glob"}) {
		t.Errorf("the reader's tools: %v, want Read and Glob", got)
	}
	if sys := reader[0].System(); !strings.HasPrefix(sys, "You read files and report what they say.") {
		t.Errorf("the reader's system prompt: %.200q", sys)
	}
	parent := requestsOf(fm, "[parent]")
	rs := resultTexts(parent[1])
	if len(rs) != 2 {
		t.Fatalf("results: %q", rs)
	}
	if !strings.HasPrefix(rs[0], "Looking.") {
		t.Errorf("the reader's report at its turn limit: %q", rs[0])
	}
	want := "Agent 'typo' would be spawned with zero tools — refusing. Its tools list resolved to nothing: unrecognized [Grpe]. Fix the agent's tools frontmatter or pass a different subagent_type."
	if !strings.Contains(rs[1], want) {
		t.Errorf("the zero-tools refusal: %q", rs[1])
	}
	if len(requestsOf(fm, "[typo]")) != 0 {
		t.Error("the refused agent made a request")
	}
}

// A context: fork skill runs as a child whose task is the rendered skill;
// the sender of a non-interactive prompt waits for it, and the Skill
// result is Claude Code's forked one.
func TestForkedSkill(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	sk := filepath.Join(dir, ".claude", "skills", "survey", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(sk), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sk, "---\nname: survey\ndescription: Surveys the code base\ncontext: fork\n---\n[forked] Survey the repository and list its packages.\n")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[forked]", Script: fakemodel.Turns(fakemodel.Say("Two packages: a and b."))},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Call("Skill", map[string]any{"skill": "survey"}),
			fakemodel.Say("Surveyed."),
		)},
	))
	s := attach(t, d, id)
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "[parent] survey", NonInteractive: true})
	if err != nil {
		t.Fatal(err)
	}
	s.waitEvent("prompt_ended", resp.GetPromptId())
	forked := requestsOf(fm, "[forked]")
	if len(forked) != 1 || len(forked[0].Anthropic.Messages) != 1 {
		t.Fatalf("the forked child's requests: %d", len(forked))
	}
	parent := requestsOf(fm, "[parent]")
	rs := resultTexts(parent[1])
	if len(rs) != 1 || rs[0] != "Skill \"survey\" completed (forked execution).\nTwo packages: a and b." {
		t.Errorf("the Skill result: %q", rs)
	}
}

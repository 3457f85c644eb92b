package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/fakemodel"
	"github.com/tackle-agent/tackle/internal/testpeers"
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
	// A client attaching now sees the open request in its snapshot.
	late := snapshotOf(t, d, id)
	if ps := late.GetPendingPermissions(); len(ps) != 1 || ps[0].GetRequestId() != req.GetRequestId() || ps[0].GetAgent().GetType() != "general-purpose" {
		t.Errorf("a late joiner's pending permissions: %+v", ps)
	}
	// The child's own snapshot shows it too, and the child shows as
	// blocked while it waits.
	if ps := snapshotOf(t, d, req.GetSessionId()).GetPendingPermissions(); len(ps) != 1 || ps[0].GetRequestId() != req.GetRequestId() {
		t.Errorf("the child session's pending permissions: %+v", ps)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		ls, err := tacklev1.NewSubagentServiceClient(d.Conn()).ListSubagents(context.Background(), &tacklev1.ListSubagentsRequest{SessionId: id})
		if err != nil {
			t.Fatal(err)
		}
		if len(ls.GetAgents()) == 1 && ls.GetAgents()[0].GetStatus() == "blocked" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the waiting child is listed as %+v, want blocked", ls.GetAgents())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Answered naming the child's session: it reaches the root's request.
	second.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
		SessionId: req.GetSessionId(), RequestId: req.GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE}}})
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

// Hooks around a child: SubagentStart adds context to its task, a
// SubagentStop block keeps it going with the reason, a PreToolUse hook
// matched on Task sees the Agent call, and tool hooks inside the child
// carry agent_id and agent_type; a definition's own hooks run for its
// child only.
func TestAgentHooks(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	log := filepath.Join(dir, "hooks.log")
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, "#!/bin/sh\n"+body+"\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	start := script("start.sh", `cat >> `+log+`; echo >> `+log+`; echo '{"hookSpecificOutput":{"hookEventName":"SubagentStart","additionalContext":"Context from SubagentStart."}}'`)
	stop := script("substop.sh", `if grep -q '"stop_hook_active":true'; then exit 0; fi; echo 'Check your answer once more.' >&2; exit 2`)
	pre := script("pre.sh", `cat >> `+log+`; echo >> `+log)
	own := script("own.sh", `echo own-hook >> `+log)
	cmd := func(p string) []any {
		return []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": p}}}}
	}
	hooks := map[string]any{"hooks": map[string]any{
		"SubagentStart": cmd(start),
		"SubagentStop":  cmd(stop),
		"PreToolUse":    []any{map[string]any{"matcher": "Task|Read", "hooks": []any{map[string]any{"type": "command", "command": pre}}}},
	}}
	b, _ := json.Marshal(hooks)
	writeFile(t, filepath.Join(dir, ".tackle", "settings.json"), string(b))
	writeAgent(t, dir, "hooked", "description: Has its own hook\nhooks:\n  PostToolUse:\n    - hooks:\n        - type: command\n          command: "+own+"\n", "You read.")
	if _, err := d.Client().Trust(context.Background(), &tacklev1.TrustRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "a.txt")
	writeFile(t, file, "alpha\n")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(
			fakemodel.Call("Read", map[string]any{"file_path": file}),
			fakemodel.Say("First answer."),
			fakemodel.Say("Checked answer."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("hooked", "Read a", "[child] read a.txt")),
			fakemodel.Say("Done."),
		)},
	))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "[parent] go")
	child := requestsOf(fm, "[child]")
	if len(child) != 3 {
		t.Fatalf("%d child requests, want 3 (the SubagentStop block made it go on)", len(child))
	}
	if first, _ := json.Marshal(child[0].Anthropic.Messages); !strings.Contains(string(first), "Context from SubagentStart.") {
		t.Errorf("SubagentStart's context is not in the child's task: %s", first)
	}
	if last := child[2].LastUserText(); !strings.Contains(last, "Check your answer once more.") {
		t.Errorf("the SubagentStop reason is not the child's next message: %q", last)
	}
	parent := requestsOf(fm, "[parent]")
	if rs := resultTexts(parent[1]); len(rs) != 1 || !strings.HasPrefix(rs[0], "Checked answer.") {
		t.Errorf("the parent's result: %q", rs)
	}
	got, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var sawAgentCall, sawChildRead, sawStart bool
	childID := ""
	for _, line := range strings.Split(string(got), "\n") {
		var in map[string]any
		if json.Unmarshal([]byte(line), &in) != nil {
			continue
		}
		switch {
		case in["hook_event_name"] == "SubagentStart":
			sawStart = in["agent_type"] == "hooked"
			childID, _ = in["agent_id"].(string)
		case in["tool_name"] == "Agent":
			_, has := in["agent_id"]
			sawAgentCall = !has // the parent's own call: no agent fields
		case in["tool_name"] == "Read":
			sawChildRead = in["agent_type"] == "hooked" && in["agent_id"] != nil && in["agent_id"] == childID
		}
	}
	if !sawStart || !sawAgentCall || !sawChildRead {
		t.Errorf("hook inputs (start %v, Agent call matched by Task %v, child's Read with agent fields %v):\n%s", sawStart, sawAgentCall, sawChildRead, got)
	}
	if n := strings.Count(string(got), "own-hook"); n != 1 {
		t.Errorf("the definition's own PostToolUse hook ran %d times, want once (the child's Read)", n)
	}
}

// A definition's skills are preloaded into the child's system prompt;
// the Agent tool's description lists the agent types.
func TestAgentSkillsAndListing(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	sk := filepath.Join(dir, ".claude", "skills", "house-style", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(sk), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, sk, "---\nname: house-style\ndescription: How we write Go here\n---\nAlways wrap errors with %w.\n")
	writeAgent(t, dir, "styled", "description: Writes Go in the house style\nskills: house-style\n", "You write Go.")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: fakemodel.Turns(fakemodel.Say("ok"))},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("styled", "Write Go", "[child] write")),
			fakemodel.Say("Done."),
		)},
	))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "[parent] go")
	child := requestsOf(fm, "[child]")
	if sys := child[0].System(); !strings.Contains(sys, "Always wrap errors with %w.") || !strings.HasPrefix(sys, "You write Go.") {
		t.Errorf("the child's system prompt lacks the preloaded skill:\n%.800s", sys)
	}
	var desc string
	for _, tl := range requestsOf(fm, "[parent]")[0].Anthropic.Tools {
		if tl.Name == "Agent" {
			desc = tl.Description
		}
	}
	for _, want := range []string{"styled: Writes Go in the house style", "general-purpose", "Explore", "Plan"} {
		if !strings.Contains(desc, want) {
			t.Errorf("the Agent tool's description lacks %q:\n%s", want, desc)
		}
	}
}

// processesOf counts this test process's descendants whose command line
// starts with bin (other tests on the machine may run the same server).
func processesOf(t *testing.T, bin string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	parent := map[int]int{}
	var matches []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(stat, ')'); i > 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
				parent[pid], _ = strconv.Atoi(f[1])
			}
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if slices.Contains(args[:min(len(args), 3)], bin) {
			matches = append(matches, pid)
		}
	}
	self, n := os.Getpid(), 0
	for _, pid := range matches {
		for p, hops := parent[pid], 0; p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			if p == self {
				n++
				break
			}
		}
	}
	return n
}

// Ten children share the parent's MCP connection: no new server process;
// a definition's inline server is connected for its child only, and
// closed when the child ends.
func TestAgentsShareMCPConnections(t *testing.T) {
	bin := testpeers.Bin(t, "mcp-server-everything")
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"ev": map[string]any{"command": bin, "args": []string{"stdio"}}}})
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), string(b))
	id, dir := agentSession(t, d, fm)
	s := attach(t, d, id)
	s.waitConnected(d, "ev")
	if n := processesOf(t, bin); n != 1 {
		t.Fatalf("%d server processes before the children, want 1", n)
	}
	writeAgent(t, dir, "echoer", "description: Echoes\nmcpServers:\n  - ev\n", "You echo.")
	writeAgent(t, dir, "private", "description: Has its own server\nmcpServers:\n  - mine:\n      command: "+bin+"\n      args: [stdio]\n", "You use your own server.")
	if _, err := d.Client().Trust(context.Background(), &tacklev1.TrustRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	var calls []fakemodel.Block
	var routes []fakemodel.Route
	for i := range 10 {
		marker := fmt.Sprintf("[echo %d]", i)
		calls = append(calls, agentCall("echoer", fmt.Sprintf("Echo %d", i), marker+" echo"))
		routes = append(routes, fakemodel.Route{Prompt: marker, Script: fakemodel.Turns(
			fakemodel.Call("mcp__ev__echo", map[string]any{"message": fmt.Sprintf("hello %d", i)}),
			fakemodel.Say("echoed"),
		)})
	}
	var during int
	routes = append(routes,
		fakemodel.Route{Prompt: "[private]", Script: fakemodel.Turns(
			fakemodel.Call("mcp__mine__echo", map[string]any{"message": "private"}),
			fakemodel.Say("done"),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: func(r *fakemodel.Request) fakemodel.Turn {
			switch len(requestsOf(fm, "[parent]")) {
			case 1:
				return fakemodel.Reply(calls...)
			case 2:
				during = processesOf(t, bin)
				return fakemodel.Reply(agentCall("private", "Private", "[private] use yours"))
			default:
				return fakemodel.Say("All done.")
			}
		}},
	)
	fm.SetScript(fakemodel.Conversations(routes...))
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "[parent] echo ten times", PermissionMode: "bypassPermissions"})
	if err != nil {
		t.Fatal(err)
	}
	s.waitEvent("prompt_ended", resp.GetPromptId())
	if during != 1 {
		t.Errorf("%d server processes after ten children called it, want 1 (the shared one)", during)
	}
	for i := range 10 {
		rs := requestsOf(fm, fmt.Sprintf("[echo %d]", i))
		if len(rs) != 2 || !strings.Contains(resultTexts(rs[1])[0], fmt.Sprintf("hello %d", i)) {
			t.Errorf("child %d's echo: %d requests", i, len(rs))
		}
	}
	priv := requestsOf(fm, "[private]")
	if len(priv) != 2 || !strings.Contains(strings.Join(resultTexts(priv[1]), ""), "private") {
		t.Fatalf("the inline server's call: %d requests, %q", len(priv), resultTexts(priv[len(priv)-1]))
	}
	// (MCP tools are deferred here: listed by name in the system prompt.)
	offered := func(r *fakemodel.Request) bool {
		return slices.Contains(r.ToolNames(), "mcp__mine__echo") || strings.Contains(r.System(), "mcp__mine__echo")
	}
	if !offered(priv[0]) || offered(requestsOf(fm, "[parent]")[0]) {
		t.Errorf("the inline server's tools are not the child's alone: child %v", priv[0].ToolNames())
	}
	deadline := time.Now().Add(10 * time.Second)
	for processesOf(t, bin) != 1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := processesOf(t, bin); n != 1 {
		t.Errorf("%d server processes after the private child ended, want 1", n)
	}
}

// API errors in a child (agent.md §4): with partial text, that text and a
// note that it was cut off; without, Claude Code's "terminated early".
func TestAgentAPIErrors(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	overloaded := &fakemodel.APIError{Type: "overloaded_error", Message: "Overloaded"}
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[partial]", Script: fakemodel.Turns(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("Half of the answer")}, StreamError: overloaded})},
		fakemodel.Route{Prompt: "[nothing]", Script: fakemodel.Turns(fakemodel.HTTPError(400, "invalid_request_error", "prompt is too long"))},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "Partial", "[partial] go"), agentCall("", "Nothing", "[nothing] go")),
			fakemodel.Say("Done."),
		)},
	))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "[parent] go")
	rs := resultTexts(requestsOf(fm, "[parent]")[1])
	if len(rs) != 2 {
		t.Fatalf("results: %q", rs)
	}
	if !strings.HasPrefix(rs[0], "Half of the answer\n\n[The agent was cut off by an API error") || !strings.Contains(rs[0], "Overloaded") {
		t.Errorf("the partial child's result: %q", rs[0])
	}
	if !strings.HasPrefix(rs[1], "Agent terminated early due to an API error: ") || !strings.Contains(rs[1], "prompt is too long") {
		t.Errorf("the child without text: %q", rs[1])
	}
}

// git runs git in dir for a test.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// isolation: worktree runs the child in a temporary worktree of the
// project: its edit lands there, not in the parent's tree, and the result
// names the worktree's path and branch; outside a repository it is a
// clear error.
func TestAgentWorktree(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	gitIn(t, dir, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(dir, "f.txt"), "one\n")
	gitIn(t, dir, "add", "f.txt")
	gitIn(t, dir, "commit", "-q", "-m", "first")
	var wtFile string
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[iso]", Script: func(r *fakemodel.Request) fakemodel.Turn {
			if len(r.Anthropic.Messages) == 1 {
				// The child's cwd is the worktree: its environment says so.
				m := regexp.MustCompile(`Working directory: (\S+)`).FindStringSubmatch(r.System())
				if m == nil {
					return fakemodel.Say("no working directory")
				}
				wtFile = filepath.Join(m[1], "g.txt") // a new file: the child has read nothing (its own read-state)
				return fakemodel.Call("Write", map[string]any{"file_path": wtFile, "content": "two\n"})
			}
			return fakemodel.Say("Changed it in my worktree.")
		}},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "Isolated edit", "[iso] change f.txt", "isolation", "worktree")),
			fakemodel.Say("Done."),
		)},
	))
	s := attach(t, d, id)
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "[parent] edit in isolation", PermissionMode: "acceptEdits"})
	if err != nil {
		t.Fatal(err)
	}
	s.waitEvent("prompt_ended", resp.GetPromptId())
	if _, err := os.Stat(filepath.Join(dir, "g.txt")); err == nil {
		t.Error("the child's Write landed in the parent's tree")
	}
	if b, err := os.ReadFile(wtFile); err != nil || string(b) != "two\n" {
		t.Errorf("the worktree's file %s: %q, %v", wtFile, b, err)
	}
	var blocks []string
	for _, m := range requestsOf(fm, "[parent]")[1].Anthropic.Messages {
		for _, b := range m.Content {
			if b.Type == "tool_result" {
				blocks = append(blocks, b.ResultText())
			}
		}
	}
	joined := strings.Join(blocks, "\n")
	if !strings.Contains(joined, "worktreePath: "+filepath.Dir(wtFile)) || !strings.Contains(joined, "worktreeBranch: tackle/agent-") {
		t.Errorf("the result does not name the worktree:\n%s", joined)
	}
	if branches := gitIn(t, dir, "branch", "--list", "tackle/agent-*"); branches == "" {
		t.Error("the changed worktree's branch is gone")
	}

	// Outside a repository: a clear error, no child.
	id2, _ := agentSession(t, d, fm)
	fm.SetScript(fakemodel.Conversations(fakemodel.Route{Prompt: "[parent2]", Script: fakemodel.Turns(
		fakemodel.Reply(agentCall("", "Isolated edit", "[iso2] change", "isolation", "worktree")),
		fakemodel.Say("Done."),
	)}))
	s2 := attach(t, d, id2)
	promptAndWait(t, d, s2, "[parent2] edit")
	if rs := resultTexts(requestsOf(fm, "[parent2]")[1]); len(rs) != 1 || !strings.Contains(rs[0], `isolation "worktree" needs a git repository`) {
		t.Errorf("outside a repository: %q", rs)
	}
}

// An "always" answer to a child applies to the root session and all its
// children: the next child's Write of the same kind does not ask.
func TestAgentAlwaysAppliesToTheTree(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(30*time.Second))
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	outside := t.TempDir() // outside the working directories: Write asks
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[first]", Script: fakemodel.Turns(
			fakemodel.Call("Write", map[string]any{"file_path": filepath.Join(outside, "a.txt"), "content": "a"}),
			fakemodel.Say("wrote a"),
		)},
		fakemodel.Route{Prompt: "[second]", Script: fakemodel.Turns(
			fakemodel.Call("Write", map[string]any{"file_path": filepath.Join(outside, "b.txt"), "content": "b"}),
			fakemodel.Say("wrote b"),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("", "First", "[first] write a")),
			fakemodel.Reply(agentCall("", "Second", "[second] write b")),
			fakemodel.Say("Done."),
		)},
	))
	_ = dir
	s := attach(t, d, id)
	resp := prompt(t, d, id, "[parent] write both")
	asked := 0
	for {
		e := s.recv().GetEvent()
		if e == nil {
			continue
		}
		if e.GetType() == "permission_requested" {
			asked++
			req := e.GetPermission()
			var scope tacklev1.Scope
			for _, o := range req.GetOptions() {
				if o.GetOption() == "allow_always" && o.GetScope() == tacklev1.Scope_SCOPE_SESSION {
					scope = o.GetScope()
				}
			}
			if scope != tacklev1.Scope_SCOPE_SESSION {
				t.Fatalf("no session-scoped always option: %+v", req.GetOptions())
			}
			s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
				SessionId: id, RequestId: req.GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ALWAYS, Scope: scope}}})
		}
		if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == resp.GetPromptId() {
			break
		}
	}
	if asked != 1 {
		t.Errorf("%d permission requests, want 1 (the second child is covered by the first's always)", asked)
	}
	for _, f := range []string{"a.txt", "b.txt"} {
		if _, err := os.Stat(filepath.Join(outside, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// The child's permission mode: the definition's, except that a parent in
// acceptEdits or bypassPermissions wins.
func TestAgentPermissionMode(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(time.Second))
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	writeAgent(t, dir, "planner", "description: Plans only\npermissionMode: plan\n", "You plan.")
	target := filepath.Join(dir, "plan.txt")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child]", Script: func(r *fakemodel.Request) fakemodel.Turn {
			if len(r.ToolResults()) == 0 {
				return fakemodel.Call("Write", map[string]any{"file_path": target, "content": "x"})
			}
			return fakemodel.Say(r.ToolResults()[0].Content)
		}},
		fakemodel.Route{Prompt: "[parent]", Script: func(r *fakemodel.Request) fakemodel.Turn {
			if len(r.ToolResults()) == 0 {
				return fakemodel.Reply(agentCall("planner", "Plan", "[child] plan"))
			}
			return fakemodel.Say("Done.")
		}},
	))
	s := attach(t, d, id)
	run := func(mode string) string {
		resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "[parent] plan " + mode, PermissionMode: mode})
		if err != nil {
			t.Fatal(err)
		}
		s.waitEvent("prompt_ended", resp.GetPromptId())
		rs := requestsOf(fm, "[parent]")
		return resultTexts(rs[len(rs)-1])[0]
	}
	if got := run("default"); !strings.Contains(got, "plan mode") {
		t.Errorf("parent default, definition plan: the child's Write gave %q, want a plan-mode denial", got)
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("the plan-mode child wrote")
	}
	run("acceptEdits")
	if _, err := os.Stat(target); err != nil {
		t.Errorf("parent acceptEdits wins over the definition's plan: %v", err)
	}
}

// snapshotOf attaches a new client to the session and returns its snapshot.
func snapshotOf(t *testing.T, d *daemontest.Daemon, id string) *tacklev1.Snapshot {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := d.Client().Attach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "late"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, LiveOnly: true}}}); err != nil {
		t.Fatal(err)
	}
	m, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	return m.GetSnapshot()
}

// Explore is read-only whatever the parent's mode: its Bash runs read-only
// commands, and a command that changes something is refused.
func TestAgentExploreIsReadOnly(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	victim := filepath.Join(dir, "keep.txt")
	writeFile(t, victim, "keep me\n")
	fm.SetScript(fakemodel.Conversations(
		fakemodel.Route{Prompt: "[scout]", Script: fakemodel.Turns(
			fakemodel.Reply(fakemodel.ToolUse("Bash", map[string]any{"command": "ls"}), fakemodel.ToolUse("Bash", map[string]any{"command": "rm keep.txt"})),
			fakemodel.Say("Looked around."),
		)},
		fakemodel.Route{Prompt: "[parent]", Script: fakemodel.Turns(
			fakemodel.Reply(agentCall("Explore", "Look around", "[scout] explore")),
			fakemodel.Say("Done."),
		)},
	))
	s := attach(t, d, id)
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "[parent] explore", PermissionMode: "bypassPermissions"})
	if err != nil {
		t.Fatal(err)
	}
	s.waitEvent("prompt_ended", resp.GetPromptId())
	scout := requestsOf(fm, "[scout]")
	if got := scout[0].ToolNames(); slices.Contains(got, "Write") || slices.Contains(got, "Edit") || !slices.Contains(got, "Bash") {
		t.Errorf("Explore's tools: %v", got)
	}
	rs := resultTexts(scout[1])
	if len(rs) != 2 || !strings.Contains(rs[0], "keep.txt") || !strings.Contains(rs[1], "this agent is read-only") {
		t.Errorf("Explore's Bash results: %q", rs)
	}
	if _, err := os.Stat(victim); err != nil {
		t.Errorf("Explore removed a file: %v", err)
	}
	// One-shot: the report without the trailer.
	if got := resultTexts(requestsOf(fm, "[parent]")[1]); len(got) != 1 || got[0] != "Looked around." {
		t.Errorf("Explore's result: %q", got)
	}
}

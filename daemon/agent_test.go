package daemon_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// agentSession creates a session in a new project whose environment points
// the anthropic provider at the fake model server.
func agentSession(t *testing.T, d *daemontest.Daemon, fm *fakemodel.Server) (id, dir string) {
	t.Helper()
	dir = t.TempDir()
	cs, err := d.Client().CreateSession(context.Background(), &tacklev1.CreateSessionRequest{
		Cwd: dir, Env: []string{"ANTHROPIC_BASE_URL=" + fm.URL(), "ANTHROPIC_API_KEY=sk-test", "HOME=" + d.Home(), "PATH=" + os.Getenv("PATH")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cs.GetSession().GetId(), dir
}

// promptAndWait sends a prompt and collects the session's events until its
// prompt_ended.
func promptAndWait(t *testing.T, d *daemontest.Daemon, s *stream, text string) (*tacklev1.PromptInfo, []*tacklev1.Event) {
	t.Helper()
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: s.session, Text: text})
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	var evs []*tacklev1.Event
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		e := s.recv().GetEvent()
		if e == nil {
			continue
		}
		evs = append(evs, e)
		if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == resp.GetPromptId() {
			return e.GetPrompt(), evs
		}
	}
	t.Fatal("no prompt_ended")
	return nil, nil
}

func TestPromptRunsToolsThroughThePipeline(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(2*time.Second))
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("the secret word is tackle\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "x.txt")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Reply(fakemodel.Text("Reading both."),
			fakemodel.ToolUse("Read", map[string]any{"file_path": file}),
			fakemodel.ToolUse("Write", map[string]any{"file_path": outside, "content": "x"})),
		fakemodel.Say("The word is tackle."),
	))
	s := attach(t, d, id)
	p, evs := promptAndWait(t, d, s, "what is the secret word?")
	if p.GetStopReason() != "end_turn" || p.GetFinalText() != "The word is tackle." || p.GetRequests() != 2 {
		t.Fatalf("prompt ended %+v", p)
	}
	// The second request carried the results, in block order: Read's
	// content, and Write's denial (nobody answered: denied, never run).
	reqs := fm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	body, _ := json.Marshal(reqs[1].Anthropic)
	for _, want := range []string{"the secret word is tackle", `"is_error":true`, "what is the secret word?", "Reading both."} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the second request lacks %q: %s", want, body)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Error("the denied Write ran")
	}
	var types []string
	for _, e := range evs {
		switch e.GetType() {
		case "prompt_started", "assistant_message", "tool_results", "turn_started", "turn_ended", "prompt_ended":
			types = append(types, e.GetType())
		}
	}
	want := "prompt_started assistant_message turn_started turn_ended tool_results assistant_message prompt_ended"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("events:\n got %s\nwant %s", got, want)
	}

	// The next prompt continues the conversation.
	fm.SetScript(fakemodel.Turns(fakemodel.Say("Yes.")))
	p, _ = promptAndWait(t, d, s, "sure?")
	if p.GetStopReason() != "end_turn" {
		t.Fatalf("second prompt: %+v", p)
	}
	reqs = fm.Requests()
	if n := len(reqs[len(reqs)-1].Anthropic.Messages); n != 5 {
		t.Errorf("the third request has %d messages, want 5 (prompt, tool use, results, answer, prompt)", n)
	}
}

func TestPromptErrorsSayWhatToSet(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-other"})
	id, _ := agentSession(t, d, fm)
	s := attach(t, d, id)
	p, _ := promptAndWait(t, d, s, "hello")
	if p.GetStopReason() != "error" || !strings.Contains(p.GetError(), "ANTHROPIC_API_KEY") {
		t.Errorf("a 401: %+v", p)
	}
}

// waitEvent reads the stream until an event of typ (and, if set, for
// prompt id) arrives.
func (s *stream) waitEvent(typ, promptID string) *tacklev1.Event {
	s.t.Helper()
	for {
		e := s.recv().GetEvent()
		if e != nil && e.GetType() == typ && (promptID == "" || e.GetPrompt().GetId() == promptID) {
			return e
		}
	}
}

func prompt(t *testing.T, d *daemontest.Daemon, sessionID, text string) *tacklev1.PromptResponse {
	t.Helper()
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: sessionID, Text: text})
	if err != nil {
		t.Fatalf("Prompt: %v", err)
	}
	return resp
}

// Cancel mid-stream: the HTTP request is aborted, the partial text is kept,
// the conversation stays valid for the next prompt; a late subscriber's
// snapshot showed the running prompt, its partial text and the queue.
func TestPromptCancelQueueAndSnapshot(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	hold := fakemodel.NewHold(4)
	fm.SetScript(fakemodel.Turns(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("I am thinking about it at length")}, Chunk: 4, Hold: hold},
		fakemodel.Say("Second answer."),
	))
	s := attach(t, d, id)
	first := prompt(t, d, id, "first")
	<-hold.Reached()
	// The daemon keeps the partial text before it publishes a delta of it;
	// the fake model having sent the text says nothing of the daemon
	// having read it.
	s.waitEvent("assistant_delta", "")
	second := prompt(t, d, id, "second, from another client")
	if !second.GetQueued() {
		t.Fatalf("the second prompt was not queued: %+v", second)
	}
	// A late joiner sees the running prompt, what streamed so far, the queue.
	ctx := context.Background()
	stl, err := d.Client().Attach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stl.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "late"}}})
	stl.Recv()
	stl.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, LiveOnly: true}}})
	m, err := stl.Recv()
	if err != nil {
		t.Fatal(err)
	}
	snap := m.GetSnapshot()
	if snap.GetPrompt().GetId() != first.GetPromptId() || snap.GetPartialText() == "" || len(snap.GetQueuedPrompts()) != 1 ||
		snap.GetQueuedPrompts()[0].GetId() != second.GetPromptId() {
		t.Errorf("snapshot: prompt %v, partial %q, queued %v", snap.GetPrompt(), snap.GetPartialText(), snap.GetQueuedPrompts())
	}

	if r, err := tacklev1.NewAgentServiceClient(d.Conn()).CancelPrompt(ctx, &tacklev1.CancelPromptRequest{SessionId: id}); err != nil || !r.GetCancelled() {
		t.Fatalf("CancelPrompt: %v %v", r, err)
	}
	end := s.waitEvent("prompt_ended", first.GetPromptId()).GetPrompt()
	if end.GetStopReason() != "cancelled" {
		t.Errorf("first prompt ended %+v", end)
	}
	if o, err := fm.WaitDone(ctx, 0); err != nil || !o.ClientGone {
		t.Errorf("the first request's outcome: %+v, %v (want the client gone)", o, err)
	}
	// The queued prompt runs next, after a valid conversation (the fake
	// server rejects an invalid one with a 400).
	end = s.waitEvent("prompt_ended", second.GetPromptId()).GetPrompt()
	if end.GetStopReason() != "end_turn" || end.GetFinalText() != "Second answer." {
		t.Errorf("second prompt ended %+v", end)
	}
	reqs := fm.Requests()
	last := reqs[len(reqs)-1].Anthropic.Messages
	if b, _ := json.Marshal(last); !strings.Contains(string(b), `"text":"`+snap.GetPartialText()) || !strings.Contains(string(b), "second, from another client") {
		t.Errorf("the second prompt's request: %s", b)
	}
}

// A tool_use cut off at max_tokens never runs: it gets an error result,
// and the loop goes on.
func TestPromptToolCutOffAtMaxTokens(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	target := filepath.Join(dir, "never.txt")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.ToolUse("Write", map[string]any{"file_path": target, "content": "x"})}, StopReason: "max_tokens", CutAfter: 4},
		fakemodel.Say("Sorry, I will write less."),
	))
	s := attach(t, d, id)
	p, evs := promptAndWait(t, d, s, "write it")
	if p.GetStopReason() != "end_turn" {
		t.Fatalf("prompt ended %+v", p)
	}
	for _, e := range evs {
		if e.GetType() == "turn_started" {
			t.Errorf("a cut-off call ran: %v", e.GetCalls())
		}
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the cut-off Write wrote")
	}
	if b, _ := json.Marshal(fm.Requests()[1].Anthropic.Messages); !strings.Contains(string(b), "cut off") {
		t.Errorf("the model was not told: %s", b)
	}
}

// UserPromptSubmit adds context or blocks; Stop makes the loop go on once
// (the hook lets it end when stop_hook_active is set).
func TestPromptHooks(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	submit := filepath.Join(dir, "submit.sh")
	stop := filepath.Join(dir, "stop.sh")
	writeFile(t, submit, "#!/bin/sh\nif grep -q forbidden; then echo 'no forbidden words' >&2; exit 2; fi\necho 'Context: the build uses make.'\n")
	writeFile(t, stop, "#!/bin/sh\nif grep -q '\"stop_hook_active\":true'; then exit 0; fi\necho 'Run the tests before you stop.' >&2\nexit 2\n")
	for _, f := range []string{submit, stop} {
		if err := os.Chmod(f, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	hooks := map[string]any{"hooks": map[string]any{
		"UserPromptSubmit": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": submit}}}},
		"Stop":             []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": stop}}}},
	}}
	b, _ := json.Marshal(hooks)
	writeFile(t, filepath.Join(dir, ".tackle", "settings.json"), string(b))
	if _, err := d.Client().Trust(context.Background(), &tacklev1.TrustRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	fm.SetScript(fakemodel.Turns(fakemodel.Say("Done."), fakemodel.Say("Tests pass. Done.")))
	s := attach(t, d, id)
	p, _ := promptAndWait(t, d, s, "build it")
	if p.GetStopReason() != "end_turn" || p.GetFinalText() != "Tests pass. Done." || p.GetRequests() != 2 {
		t.Fatalf("prompt ended %+v", p)
	}
	reqs := fm.Requests()
	if first, _ := json.Marshal(reqs[0].Anthropic.Messages); !strings.Contains(string(first), "Context: the build uses make.") {
		t.Errorf("the hook's context is not in the prompt: %s", first)
	}
	if second, _ := json.Marshal(reqs[1].Anthropic.Messages); !strings.Contains(string(second), "Run the tests before you stop.") {
		t.Errorf("the Stop hook's reason is not the next message: %s", second)
	}

	p, _ = promptAndWait(t, d, s, "say something forbidden")
	if p.GetStopReason() != "blocked" || !strings.Contains(p.GetError(), "no forbidden words") {
		t.Errorf("a blocked prompt: %+v", p)
	}
	if n := len(fm.Requests()); n != 2 {
		t.Errorf("the blocked prompt reached the model: %d requests", n)
	}
}

// Compaction at the threshold: a request whose usage passes
// autoCompactPercent of the window makes the loop summarize before the
// next request, which then starts from the summary; /compact by hand too.
func TestPromptCompaction(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	file := filepath.Join(dir, "a.txt")
	writeFile(t, file, "alpha\n")
	// A window of 1,000 tokens compacts at 850.
	writeFile(t, filepath.Join(dir, ".tackle", "settings.json"), `{"autoCompactPercent": 85, "provider": {"contextTokens": 1000}}`)
	if _, err := d.Client().Trust(context.Background(), &tacklev1.TrustRequest{Dir: dir}); err != nil { // provider widens: trusted only
		t.Fatal(err)
	}
	big := fakemodel.Usage{InputTokens: 900, OutputTokens: 20}
	fm.SetScript(fakemodel.Turns(
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.ToolUse("Read", map[string]any{"file_path": file})}, Usage: big},
		fakemodel.Say("SUMMARY: the user asked to read a.txt; it says alpha."),
		fakemodel.Say("It says alpha."),
	))
	s := attach(t, d, id)
	p, evs := promptAndWait(t, d, s, "read a.txt")
	if p.GetStopReason() != "end_turn" || p.GetFinalText() != "It says alpha." {
		t.Fatalf("prompt ended %+v", p)
	}
	compacted := false
	for _, e := range evs {
		compacted = compacted || e.GetType() == "compacted" && strings.Contains(e.GetMessageJson(), "SUMMARY")
	}
	if !compacted {
		t.Error("no compacted event")
	}
	reqs := fm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	if len(reqs[1].Anthropic.Tools) != 0 {
		t.Error("the summary request offered tools")
	}
	if msgs := reqs[2].Anthropic.Messages; len(msgs) != 1 || !strings.Contains(mustJSON(t, msgs[0]), "SUMMARY") {
		t.Errorf("the request after compaction: %s", mustJSON(t, msgs))
	}

	// By hand.
	fm.SetScript(fakemodel.Turns(fakemodel.Say("SECOND SUMMARY")))
	r, err := tacklev1.NewAgentServiceClient(d.Conn()).Compact(context.Background(), &tacklev1.CompactRequest{SessionId: id, Instructions: "focus on alpha"})
	if err != nil || !strings.Contains(r.GetSummary(), "SECOND SUMMARY") {
		t.Fatalf("Compact: %v %v", r, err)
	}
	last := fm.Requests()[len(fm.Requests())-1]
	if !strings.Contains(mustJSON(t, last.Anthropic.Messages), "focus on alpha") {
		t.Errorf("the instructions did not reach the model")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The openai format through the same loop: tool calls by index, a
// finish_reason "stop" after tool calls (gpt-4o's quirk) still runs them.
func TestPromptOpenAIFormat(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-oa", OpenAIStopAfterToolCalls: true})
	dir := t.TempDir()
	file := filepath.Join(dir, "n.txt")
	writeFile(t, file, "forty-two\n")
	cs, err := d.Client().CreateSession(context.Background(), &tacklev1.CreateSessionRequest{
		Cwd: dir, Env: []string{"OPENAI_BASE_URL=" + fm.URL() + "/v1", "OPENAI_API_KEY=sk-oa", "HOME=" + d.Home()},
	})
	if err != nil {
		t.Fatal(err)
	}
	id := cs.GetSession().GetId()
	fm.SetScript(fakemodel.Turns(
		fakemodel.Reply(fakemodel.ToolUse("Read", map[string]any{"file_path": file}), fakemodel.ToolUse("Glob", map[string]any{"pattern": "*.txt"})),
		fakemodel.Say("It is forty-two."),
	))
	s := attach(t, d, id)
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "what number?", Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	p := s.waitEvent("prompt_ended", resp.GetPromptId()).GetPrompt()
	if p.GetStopReason() != "end_turn" || p.GetFinalText() != "It is forty-two." {
		t.Fatalf("prompt ended %+v", p)
	}
	reqs := fm.Requests()
	if len(reqs) != 2 || reqs[1].OpenAI == nil {
		t.Fatalf("requests: %d", len(reqs))
	}
	if b := mustJSON(t, reqs[1].OpenAI.Messages); !strings.Contains(b, "forty-two") || !strings.Contains(b, `"role":"tool"`) {
		t.Errorf("the tool messages: %s", b)
	}
}

// A 529 before the stream is retried, and clients see the retry; a 429
// with retry-after is waited for.
func TestPromptRetriesAreEvents(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	fm.SetScript(fakemodel.Turns(fakemodel.Overloaded(), fakemodel.RateLimited().With("retry-after", "0.2"), fakemodel.Say("Finally.")))
	s := attach(t, d, id)
	p, evs := promptAndWait(t, d, s, "hi")
	if p.GetStopReason() != "end_turn" || p.GetFinalText() != "Finally." {
		t.Fatalf("prompt ended %+v", p)
	}
	var retries []*tacklev1.ModelRetry
	for _, e := range evs {
		if e.GetType() == "model_retry" {
			retries = append(retries, e.GetRetry())
		}
	}
	if len(retries) != 2 || retries[0].GetStatus() != 529 || retries[1].GetStatus() != 429 || retries[1].GetWaitMs() != 200 {
		t.Errorf("retries: %v", retries)
	}
}

// A hook of type prompt asks the small model; {"ok": false} blocks the
// call with the model's reason. WebFetch's prompt is answered by the small
// model over the fetched page.
func TestSmallModelHooksAndWebFetch(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, dir := agentSession(t, d, fm)
	hooks := map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash",
		"hooks": []any{map[string]any{"type": "prompt", "prompt": "Is this command safe to run? $ARGUMENTS"}}}}}}
	b, _ := json.Marshal(hooks)
	writeFile(t, filepath.Join(dir, ".tackle", "settings.json"), string(b))
	if _, err := d.Client().Trust(context.Background(), &tacklev1.TrustRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html><head><title>Tackle Docs</title></head><body><h1>Tackle Docs</h1><p>Version 7.</p></body></html>"))
	}))
	defer page.Close()
	fm.SetScript(fakemodel.Turns(
		fakemodel.Call("Bash", map[string]any{"command": "echo hi"}),
		fakemodel.Say(`{"ok": false, "reason": "echo is not allowed here"}`), // the hook's question
		fakemodel.Call("WebFetch", map[string]any{"url": page.URL, "prompt": "Which version?"}),
		fakemodel.Say("The page says version 7."), // WebFetch's question
		fakemodel.Say("Done."),
	))
	s := attach(t, d, id)
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "go", PermissionMode: "bypassPermissions"})
	if err != nil {
		t.Fatal(err)
	}
	p := s.waitEvent("prompt_ended", resp.GetPromptId()).GetPrompt()
	if p.GetStopReason() != "end_turn" {
		t.Fatalf("prompt ended %+v", p)
	}
	reqs := fm.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	if q := mustJSON(t, reqs[1].Anthropic.Messages); !strings.Contains(q, "Is this command safe") || !strings.Contains(q, "echo hi") {
		t.Errorf("the hook's question: %s", q)
	}
	if reqs[1].Anthropic.Model == reqs[0].Anthropic.Model {
		t.Errorf("the hook asked the main model %s, not the small one", reqs[1].Anthropic.Model)
	}
	if r := reqs[2].ToolResults(); len(r) != 1 || !r[0].IsError || !strings.Contains(mustJSON(t, r[0]), "echo is not allowed here") {
		t.Errorf("the blocked call's result: %s", mustJSON(t, r))
	}
	if q := mustJSON(t, reqs[3].Anthropic.Messages); !strings.Contains(q, "Version 7") || !strings.Contains(q, "Which version?") {
		t.Errorf("WebFetch's question to the small model: %s", q)
	}
	if r := reqs[4].ToolResults(); len(r) != 1 || r[0].IsError || !strings.Contains(mustJSON(t, r[0]), "The page says version 7.") {
		t.Errorf("WebFetch's result: %s", mustJSON(t, r))
	}
}

// A prompt sent on the Attach stream, with an image: PromptAccepted
// answers it, and the model gets the image.
func TestPromptOnAttachWithImage(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test", Script: fakemodel.Turns(fakemodel.Say("A red pixel."))})
	id, _ := agentSession(t, d, fm)
	s := attach(t, d, id)
	png := []byte("\x89PNG\r\n\x1a\n fake but non-empty")
	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Prompt{Prompt: &tacklev1.PromptRequest{
		Text: "what is this?", Ref: "r1", Images: []*tacklev1.PromptImage{{MediaType: "image/png", Data: png}}}}})
	var promptID string
	for promptID == "" {
		m := s.recv()
		if a := m.GetPromptAccepted(); a != nil && a.GetRef() == "r1" {
			promptID = a.GetPromptId()
		}
		if e := m.GetError(); e != nil {
			t.Fatalf("stream error: %v", e)
		}
	}
	p := s.waitEvent("prompt_ended", promptID).GetPrompt()
	if p.GetStopReason() != "end_turn" {
		t.Fatalf("prompt ended %+v", p)
	}
	if b := mustJSON(t, fm.Requests()[0].Anthropic.Messages); !strings.Contains(b, `"type":"image"`) || !strings.Contains(b, "image/png") {
		t.Errorf("the image did not reach the model: %s", b)
	}
	// A bad image is refused with a clear error.
	_, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "x",
		Images: []*tacklev1.PromptImage{{MediaType: "image/tiff", Data: png}}})
	if err == nil || !strings.Contains(err.Error(), "image/tiff") {
		t.Errorf("a TIFF: %v", err)
	}
}

// Cancel while a tool runs: the call ends cancelled, the prompt ends
// cancelled, and the next prompt's request is valid (every tool_use has
// its result).
func TestPromptCancelMidTool(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test"})
	id, _ := agentSession(t, d, fm)
	fm.SetScript(fakemodel.Turns(fakemodel.Call("Bash", map[string]any{"command": "sleep 30"}), fakemodel.Say("Fine.")))
	s := attach(t, d, id)
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "wait", PermissionMode: "bypassPermissions"})
	if err != nil {
		t.Fatal(err)
	}
	for {
		if e := s.recv().GetEvent(); e.GetType() == "call_state" && e.GetState() == "running" {
			break
		}
	}
	if _, err := tacklev1.NewAgentServiceClient(d.Conn()).CancelPrompt(context.Background(), &tacklev1.CancelPromptRequest{SessionId: id, PromptId: resp.GetPromptId()}); err != nil {
		t.Fatal(err)
	}
	var result *tacklev1.ToolResult
	for {
		e := s.recv().GetEvent()
		if e.GetType() == "call_result" {
			result = e.GetResult()
		}
		if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == resp.GetPromptId() {
			if e.GetPrompt().GetStopReason() != "cancelled" {
				t.Errorf("prompt ended %+v", e.GetPrompt())
			}
			break
		}
	}
	if result.GetStatus() != "cancelled" {
		t.Errorf("the running call ended %v", result)
	}
	p, _ := promptAndWait(t, d, s, "never mind")
	if p.GetStopReason() != "end_turn" {
		t.Fatalf("the next prompt: %+v (the fake server rejects a tool_use without its result)", p)
	}
}

// File references are read through the pipeline as the person's Read
// calls: the content joins the prompt; a denied file says why, unread.
func TestPromptFileReferences(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test", Script: fakemodel.Turns(fakemodel.Say("Seen."))})
	id, dir := agentSession(t, d, fm)
	writeFile(t, filepath.Join(dir, "notes.txt"), "remember the milk\n")
	writeFile(t, filepath.Join(dir, "secrets", "k"), "hunter2\n")
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"), `{"permissions":{"deny":["Read(./secrets/**)"]}}`)
	s := attach(t, d, id)
	resp, err := tacklev1.NewAgentServiceClient(d.Conn()).Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: id, Text: "look", Files: []string{"notes.txt", "secrets/k"}})
	if err != nil {
		t.Fatal(err)
	}
	if p := s.waitEvent("prompt_ended", resp.GetPromptId()).GetPrompt(); p.GetStopReason() != "end_turn" {
		t.Fatalf("prompt ended %+v", p)
	}
	b := mustJSON(t, fm.Requests()[0].Anthropic.Messages)
	if !strings.Contains(b, "remember the milk") || !strings.Contains(b, `not read`) || strings.Contains(b, "hunter2") {
		t.Errorf("the prompt's files: %s", b)
	}
}

// Hook inputs name the session's transcript, kept in Claude Code's JSONL
// format: a Stop hook can read the conversation so far.
func TestHooksReadTheTranscript(t *testing.T) {
	d := daemontest.Start(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test", Script: fakemodel.Turns(fakemodel.Say("The answer is 42."))})
	id, dir := agentSession(t, d, fm)
	out := filepath.Join(dir, "seen.jsonl")
	stop := filepath.Join(dir, "stop.sh")
	writeFile(t, stop, "#!/bin/sh\npython3 -c 'import json,sys; p=json.load(sys.stdin)[\"transcript_path\"]; print(open(p).read(), end=\"\")' > "+out+"\n")
	if err := os.Chmod(stop, 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"hooks": map[string]any{"Stop": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": stop}}}}}})
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), string(b))
	s := attach(t, d, id)
	promptAndWait(t, d, s, "what is the answer?")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the transcript the Stop hook read: %d lines\n%s", len(lines), data)
	}
	var first, second map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &second)
	if first["type"] != "user" || second["type"] != "assistant" || second["parentUuid"] != first["uuid"] || first["sessionId"] != id {
		t.Errorf("the lines: %v\n%v", first, second)
	}
	if !strings.Contains(lines[0], "what is the answer?") || !strings.Contains(lines[1], "The answer is 42.") {
		t.Errorf("the messages:\n%s", data)
	}
}

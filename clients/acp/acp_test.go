package acp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tackle-agent/tackle/clients/acp"
	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// editor is the client side: acp-go-sdk's, recording every update and
// answering permission requests with answer.
type editor struct {
	mu      sync.Mutex
	updates []sdk.SessionUpdate
	asked   []sdk.RequestPermissionRequest
	answer  func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse
}

func (e *editor) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	e.mu.Lock()
	e.updates = append(e.updates, n.Update)
	e.mu.Unlock()
	return nil
}

func (e *editor) RequestPermission(_ context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	e.mu.Lock()
	e.asked = append(e.asked, r)
	answer := e.answer
	e.mu.Unlock()
	return answer(r), nil
}

func (e *editor) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, errors.New("not offered")
}
func (e *editor) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, errors.New("not offered")
}
func (e *editor) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, errors.New("not offered")
}
func (e *editor) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, errors.New("not offered")
}
func (e *editor) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, errors.New("not offered")
}
func (e *editor) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, errors.New("not offered")
}
func (e *editor) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, errors.New("not offered")
}

// kinds lists the updates as "kind[:status]".
func (e *editor) kinds() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, u := range e.updates {
		switch {
		case u.ToolCall != nil:
			out = append(out, "tool_call:"+string(u.ToolCall.Status))
		case u.ToolCallUpdate != nil && u.ToolCallUpdate.Status != nil:
			out = append(out, "tool_call_update:"+string(*u.ToolCallUpdate.Status))
		case u.AgentMessageChunk != nil:
			out = append(out, "agent_message_chunk")
		case u.UserMessageChunk != nil:
			out = append(out, "user_message_chunk")
		}
	}
	return out
}

// fixture is tackle acp (Serve, in this process) on a real daemon, and the
// editor's connection to it; stdout is checked to hold only JSON lines.
type fixture struct {
	d    *daemontest.Daemon
	fm   *fakemodel.Server
	ed   *editor
	conn *sdk.ClientSideConnection
	dir  string
	bad  chan string // stdout lines that are not single JSON objects
}

func start(t *testing.T, script fakemodel.Script) *fixture {
	t.Helper()
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(20*time.Second))
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test", Script: script})
	c, err := client.Dial(context.Background(), &client.Options{Socket: d.Socket(), NoAutostart: true, ClientName: "acp-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	toAgentR, toAgentW := io.Pipe()
	fromAgentR, fromAgentW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	env := []string{"ANTHROPIC_BASE_URL=" + fm.URL(), "ANTHROPIC_API_KEY=sk-test", "HOME=" + d.Home(), "PATH=" + os.Getenv("PATH")}
	go func() {
		defer close(served)
		acp.Serve(ctx, acp.Options{Client: c, Environ: env, Version: "test", StateDir: t.TempDir()}, toAgentR, fromAgentW)
		fromAgentW.Close()
	}()
	// Every line the agent writes must be one JSON object.
	linesR, linesW := io.Pipe()
	f := &fixture{d: d, fm: fm, ed: &editor{answer: allow("allow_once")}, dir: t.TempDir(), bad: make(chan string, 16)}
	go func() {
		sc := bufio.NewScanner(fromAgentR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var m map[string]json.RawMessage
			if json.Unmarshal(line, &m) != nil || m["jsonrpc"] == nil {
				select {
				case f.bad <- string(line):
				default:
				}
			}
			linesW.Write(append(append([]byte(nil), line...), '\n'))
		}
		linesW.Close()
	}()
	f.conn = sdk.NewClientSideConnection(f.ed, toAgentW, linesR)
	t.Cleanup(func() {
		toAgentW.Close()
		cancel()
		<-served
		select {
		case l := <-f.bad:
			t.Errorf("stdout held a line that is not a JSON-RPC message: %q", l)
		default:
		}
	})
	if _, err := f.conn.Initialize(context.Background(), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	return f
}

func allow(option string) func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
	return func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Selected: &sdk.RequestPermissionOutcomeSelected{OptionId: sdk.PermissionOptionId(option), Outcome: "selected"}}}
	}
}

func (f *fixture) newSession(t *testing.T) sdk.SessionId {
	t.Helper()
	r, err := f.conn.NewSession(context.Background(), sdk.NewSessionRequest{Cwd: f.dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Modes == nil || r.Modes.CurrentModeId != "default" || len(r.Modes.AvailableModes) != 5 {
		t.Errorf("modes: %+v", r.Modes)
	}
	return r.SessionId
}

func (f *fixture) prompt(t *testing.T, sid sdk.SessionId, text string) sdk.StopReason {
	t.Helper()
	r, err := f.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
	if err != nil {
		t.Fatalf("prompt: %v", err)
	}
	return r.StopReason
}

// A prompt whose answer writes a file: the permission request reaches the
// editor with tackle's options, the tool call goes pending → in_progress
// → completed with a diff, and the prompt ends end_turn after its updates.
func TestPromptWritesThroughThePermissionPrompt(t *testing.T) {
	f := start(t, nil)
	target := filepath.Join(f.dir, "hello.txt")
	f.fm.SetScript(fakemodel.Turns(
		fakemodel.Reply(fakemodel.Text("Writing it."), fakemodel.ToolUse("Write", map[string]any{"file_path": target, "content": "hi from acp\n"})),
		fakemodel.Say("Done."),
	))
	sid := f.newSession(t)
	if got := f.prompt(t, sid, "write hello.txt"); got != sdk.StopReasonEndTurn {
		t.Fatalf("stop reason %q", got)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "hi from acp\n" {
		t.Fatalf("the file: %q, %v", b, err)
	}
	got := strings.Join(f.ed.kinds(), " ")
	if !strings.Contains(got, "tool_call:pending tool_call_update:in_progress tool_call_update:completed") {
		t.Errorf("updates: %s", got)
	}
	f.ed.mu.Lock()
	defer f.ed.mu.Unlock()
	if len(f.ed.asked) != 1 {
		t.Fatalf("%d permission requests", len(f.ed.asked))
	}
	var ids []string
	for _, o := range f.ed.asked[0].Options {
		ids = append(ids, string(o.OptionId)+"/"+string(o.Kind))
	}
	if strings.Join(ids, " ") != "allow_once/allow_once allow_always/allow_always reject_once/reject_once" {
		t.Errorf("options: %v", ids)
	}
	// The request shows the daemon's preview: the diff the Write would make.
	if c := f.ed.asked[0].ToolCall.Content; len(c) != 1 || c[0].Content == nil || c[0].Content.Content.Text == nil || !strings.Contains(c[0].Content.Content.Text.Text, "+hi from acp") {
		t.Errorf("the permission request's content: %+v", c)
	}
	var diff *sdk.ToolCallContentDiff
	for _, u := range f.ed.updates {
		if u.ToolCallUpdate != nil {
			for _, c := range u.ToolCallUpdate.Content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
		}
	}
	if diff == nil || diff.Path != target || diff.NewText != "hi from acp\n" {
		t.Errorf("the completed call's diff: %+v", diff)
	}
}

// A rejected or unknown option is a denial: the file is not written and the
// call fails.
func TestRejectAndUnknownOptionDeny(t *testing.T) {
	for _, option := range []string{"reject_once", "no-such-option"} {
		f := start(t, nil)
		f.ed.answer = allow(option)
		target := filepath.Join(f.dir, "x.txt")
		f.fm.SetScript(fakemodel.Turns(fakemodel.Call("Write", map[string]any{"file_path": target, "content": "x"}), fakemodel.Say("Could not.")))
		sid := f.newSession(t)
		f.prompt(t, sid, "write")
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%s: the file was written", option)
		}
		if got := strings.Join(f.ed.kinds(), " "); !strings.Contains(got, "tool_call_update:failed") {
			t.Errorf("%s: updates %s", option, got)
		}
	}
}

// session/load replays the conversation before it answers; session/resume
// replays nothing.
func TestLoadReplaysResumeDoesNot(t *testing.T) {
	f := start(t, fakemodel.Turns(fakemodel.Say("The first answer.")))
	sid := f.newSession(t)
	f.prompt(t, sid, "first question")

	// Load it again (as an editor reopening it would), the updates so far
	// dropped.
	f.ed.mu.Lock()
	f.ed.updates = nil
	f.ed.mu.Unlock()
	if _, err := f.conn.LoadSession(context.Background(), sdk.LoadSessionRequest{SessionId: sid, Cwd: f.dir, McpServers: []sdk.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(f.ed.kinds(), " ")
	if got != "user_message_chunk agent_message_chunk" {
		t.Errorf("replayed before the answer: %q", got)
	}
	f.ed.mu.Lock()
	f.ed.updates = nil
	f.ed.mu.Unlock()
	if _, err := f.conn.ResumeSession(context.Background(), sdk.ResumeSessionRequest{SessionId: sid, Cwd: f.dir}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // nothing is coming; a replay would be here by now
	if got := f.ed.kinds(); len(got) != 0 {
		t.Errorf("resume replayed %v", got)
	}
}

// session/cancel during a pending permission: the call is never run, and
// the prompt ends cancelled.
func TestCancelDuringPermission(t *testing.T) {
	f := start(t, nil)
	asked := make(chan struct{})
	release := make(chan struct{})
	f.ed.answer = func(sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		close(asked)
		<-release
		return sdk.RequestPermissionResponse{Outcome: sdk.RequestPermissionOutcome{Cancelled: &sdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}
	}
	target := filepath.Join(f.dir, "never.txt")
	f.fm.SetScript(fakemodel.Turns(fakemodel.Call("Write", map[string]any{"file_path": target, "content": "x"}), fakemodel.Say("unreached")))
	sid := f.newSession(t)
	done := make(chan sdk.StopReason, 1)
	go func() {
		r, err := f.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("write")}})
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- r.StopReason
	}()
	<-asked
	if err := f.conn.Cancel(context.Background(), sdk.CancelNotification{SessionId: sid}); err != nil {
		t.Fatal(err)
	}
	close(release)
	if got := <-done; got != sdk.StopReasonCancelled {
		t.Errorf("stop reason %q", got)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the cancelled call ran")
	}
}

// A malformed line gets a JSON-RPC parse error and the connection goes on;
// an unknown method gets -32601.
func TestMalformedLineAndUnknownMethod(t *testing.T) {
	d := daemontest.Start(t)
	c, err := client.Dial(context.Background(), &client.Options{Socket: d.Socket(), NoAutostart: true, ClientName: "acp-test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		acp.Serve(ctx, acp.Options{Client: c}, inR, outW)
		outW.Close()
	}()
	sc := bufio.NewScanner(outR)
	next := func() map[string]any {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("no answer: %v", sc.Err())
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a line that is not JSON: %q", sc.Text())
		}
		return m
	}
	io.WriteString(inW, "{this is not json\n")
	if m := next(); m["error"] == nil || m["error"].(map[string]any)["code"].(float64) != -32700 {
		t.Errorf("the malformed line's answer: %v", m)
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":7,"method":"no/such_method","params":{}}`+"\n")
	if m := next(); m["error"] == nil || m["error"].(map[string]any)["code"].(float64) != -32601 {
		t.Errorf("an unknown method's answer: %v", m)
	}
	io.WriteString(inW, `{"jsonrpc":"2.0","id":8,"method":"initialize","params":{"protocolVersion":1}}`+"\n")
	if m := next(); m["result"] == nil || m["id"].(float64) != 8 {
		t.Errorf("initialize after the errors: %v", m)
	} else if r := m["result"].(map[string]any); r["protocolVersion"].(float64) != 1 || r["agentCapabilities"].(map[string]any)["loadSession"] != true {
		t.Errorf("initialize: %v", r)
	}
	inW.Close()
}

// A permission another client answers first: the editor's request is
// withdrawn ($/cancel_request ends its context), the call runs once, and
// the editor's late answer changes nothing.
func TestAnsweredElsewhereFirst(t *testing.T) {
	f := start(t, nil)
	target := filepath.Join(f.dir, "once.txt")
	f.fm.SetScript(fakemodel.Turns(fakemodel.Call("Bash", map[string]any{"command": "echo run >> " + target}), fakemodel.Say("Done.")))
	asked := make(chan sdk.RequestPermissionRequest, 1)
	withdrawn := make(chan struct{})
	f.ed.answer = func(r sdk.RequestPermissionRequest) sdk.RequestPermissionResponse {
		asked <- r
		<-withdrawn
		return allow("allow_once")(r)
	}
	sid := f.newSession(t)
	done := make(chan sdk.StopReason, 1)
	go func() {
		r, err := f.conn.Prompt(context.Background(), sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock("run it")}})
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- r.StopReason
	}()
	<-asked
	c, err := client.Dial(context.Background(), &client.Options{Socket: f.d.Socket(), NoAutostart: true, ClientName: "terminal"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pending, err := c.ListPendingPermissions(context.Background(), string(sid))
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending: %v, %v", pending, err)
	}
	if r, err := c.AnswerPermission(context.Background(), &tacklev1.PermissionAnswer{SessionId: string(sid), RequestId: pending[0].GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE}); err != nil || !r.GetAccepted() {
		t.Fatalf("answering from the terminal: %v, %v", r, err)
	}
	if got := <-done; got != sdk.StopReasonEndTurn {
		t.Errorf("stop reason %q", got)
	}
	close(withdrawn) // the editor answers late
	time.Sleep(50 * time.Millisecond)
	if b, _ := os.ReadFile(target); string(b) != "run\n" {
		t.Errorf("the command ran %q (want once)", b)
	}
}

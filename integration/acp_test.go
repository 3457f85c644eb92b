package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/internal/fakemodel"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// The tests of `tackle acp` against real ACP clients: acpx (a headless
// client from npm) and testpeers/acp/client.mjs (the official TypeScript
// SDK's client app), both run with the Node 22 of testpeers; and a client
// in this file that speaks the wire format line by line, for the protocol
// errors and the benchmark.

// acpMsg is one JSON-RPC 2.0 message of ACP.
type acpMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *acpError       `json:"error,omitempty"`
}

type acpError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (m acpMsg) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// update is params.update of a session/update notification (nil for any
// other message).
func (m acpMsg) update() map[string]any {
	if m.Method != "session/update" {
		return nil
	}
	var p struct {
		SessionID string         `json:"sessionId"`
		Update    map[string]any `json:"update"`
	}
	if json.Unmarshal(m.Params, &p) != nil {
		return nil
	}
	return p.Update
}

// parseACPLine parses one line an agent wrote: it must be a single JSON
// object, a JSON-RPC 2.0 request, notification or response.
func parseACPLine(line string) (acpMsg, error) {
	var m acpMsg
	if strings.TrimSpace(line) == "" {
		return m, fmt.Errorf("an empty line")
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &obj); err != nil {
		return m, fmt.Errorf("not one JSON object: %v", err)
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return m, fmt.Errorf("not a JSON-RPC message: %v", err)
	}
	if m.JSONRPC != "2.0" {
		return m, fmt.Errorf(`"jsonrpc" is %q, not "2.0"`, m.JSONRPC)
	}
	_, hasResult := obj["result"]
	switch {
	case m.Method != "" && (hasResult || m.Error != nil):
		return m, fmt.Errorf("both a method and a result or error")
	case m.Method == "" && len(m.ID) == 0:
		return m, fmt.Errorf("neither a method nor an id")
	case m.Method == "" && hasResult == (m.Error != nil):
		return m, fmt.Errorf("a response needs exactly one of result and error")
	}
	return m, nil
}

// wireMsg is one line of a client's transcript: its direction as the
// client saw it ("send" to the agent, "recv" from it; "" when the client
// does not say), the line and the message.
type wireMsg struct {
	Dir  string
	Line string
	Ms   int // when the client saw it, in ms from its start (client.mjs only)
	acpMsg
}

// checkAgentLines fails t for every line the agent wrote that is not a
// single-line JSON-RPC message, and returns the transcript parsed.
func checkAgentLines(t *testing.T, what string, dirs, lines []string) []wireMsg {
	t.Helper()
	var out []wireMsg
	bad := 0
	for i, line := range lines {
		m, err := parseACPLine(line)
		if err != nil && (dirs == nil || dirs[i] == "recv") {
			bad++
			if bad <= 5 {
				t.Errorf("%s: line %d of the agent's stdout: %v: %.300q", what, i+1, err, line)
			}
		}
		w := wireMsg{Line: line, acpMsg: m}
		if dirs != nil {
			w.Dir = dirs[i]
		}
		out = append(out, w)
	}
	return out
}

// responseTo is the index of the response to the request at i (the first
// message after it from the other side with its id), or -1.
func responseTo(wire []wireMsg, i int) int {
	for j := i + 1; j < len(wire); j++ {
		if wire[j].isResponse() && bytes.Equal(wire[j].ID, wire[i].ID) && (wire[i].Dir == "" || wire[j].Dir != wire[i].Dir) {
			return j
		}
	}
	return -1
}

// requestIndex is the index of the n-th (from 0) request for method, or -1.
func requestIndex(wire []wireMsg, method string, n int) int {
	for i, w := range wire {
		if w.Method == method && len(w.ID) > 0 {
			if n == 0 {
				return i
			}
			n--
		}
	}
	return -1
}

// toolTrail is the tool_call and tool_call_update updates of one call,
// with their wire indexes.
type toolTrail struct {
	idx     []int
	updates []map[string]any
}

func toolCallTrail(wire []wireMsg, callID string) toolTrail {
	var tr toolTrail
	for i, w := range wire {
		u := w.update()
		if u == nil || (u["sessionUpdate"] != "tool_call" && u["sessionUpdate"] != "tool_call_update") || u["toolCallId"] != callID {
			continue
		}
		tr.idx = append(tr.idx, i)
		tr.updates = append(tr.updates, u)
	}
	return tr
}

// statuses are the statuses the call went through, repeats folded.
func (tr toolTrail) statuses() []string {
	var out []string
	for _, u := range tr.updates {
		if s, ok := u["status"].(string); ok && (len(out) == 0 || out[len(out)-1] != s) {
			out = append(out, s)
		}
	}
	return out
}

func (tr toolTrail) last() string {
	s := tr.statuses()
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

// toolCalls are the toolCallIds of the tool_call updates, in order.
func toolCalls(wire []wireMsg) []string {
	var ids []string
	for _, w := range wire {
		if u := w.update(); u != nil && u["sessionUpdate"] == "tool_call" {
			id, _ := u["toolCallId"].(string)
			ids = append(ids, id)
		}
	}
	return ids
}

// messageText joins the text of the updates of kind (agent_message_chunk,
// user_message_chunk, …) in wire[from:to].
func messageText(wire []wireMsg, kind string, from, to int) string {
	var b strings.Builder
	for _, w := range wire[from:to] {
		if u := w.update(); u != nil && u["sessionUpdate"] == kind {
			if c, ok := u["content"].(map[string]any); ok {
				s, _ := c["text"].(string)
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

func summarize(wire []wireMsg) string {
	var b strings.Builder
	for _, w := range wire {
		if w.Dir != "" {
			fmt.Fprintf(&b, "\n  %6dms %-4s %.400s", w.Ms, w.Dir, w.Line)
		} else {
			fmt.Fprintf(&b, "\n  %.400s", w.Line)
		}
	}
	return b.String()
}

// acpEnv is an agentEnv whose clients find the tackle CLI, for the
// permission answers "from another client".
func acpEnv(t *testing.T) (*env, *fakemodel.Server) {
	t.Helper()
	e, fm := agentEnv(t, nil)
	e.vars = append(e.vars, "TACKLE_CLI="+filepath.Join(binDir, "tackle"))
	return e, fm
}

func nodeBin(t testing.TB) string {
	t.Helper()
	return filepath.Join(testpeers.NodeBinDir(t), "node")
}

// acpx runs acpx exec against `tackle acp` in the project dir and returns
// its run and its --format json transcript.
func (e *env) acpx(prompt string, flags ...string) (runResult, []wireMsg) {
	t := e.t
	t.Helper()
	args := append([]string{testpeers.Bin(t, "acpx"), "--agent", filepath.Join(binDir, "tackle") + " acp", "--format", "json", "--timeout", "60"}, flags...)
	args = append(args, "exec", prompt)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeBin(t), args...)
	cmd.Dir, cmd.Env = e.project, e.vars
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := runResult{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running acpx: %v", err)
	}
	var lines []string
	if s := strings.TrimRight(r.stdout, "\n"); s != "" {
		lines = strings.Split(s, "\n")
	}
	// Every stdout line of acpx --format json is one JSON-RPC message of
	// either side, so this also checks the agent's framing.
	return r, checkAgentLines(t, "acpx --format json", nil, lines)
}

// writeScript is a model that writes path with content, then says done.
func writeScript(path, content, done string) fakemodel.Script {
	return fakemodel.Turns(fakemodel.Call("Write", map[string]any{"file_path": path, "content": content}), fakemodel.Say(done))
}

// acpx --approve-all: the Write's tool_call goes pending → (permission,
// approved) → in_progress → completed with a diff; the prompt ends
// end_turn and the file is written.
func TestACPAcpxApproveAll(t *testing.T) {
	e, fm := acpEnv(t)
	path := filepath.Join(e.project, "hello.txt")
	fm.SetScript(writeScript(path, "hello from acp\n", "Done."))
	r, wire := e.acpx("write hello.txt", "--approve-all")
	if r.code != 0 {
		t.Fatalf("acpx: exit %d\nstderr %s\ntranscript:%s", r.code, r.stderr, summarize(wire))
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello from acp\n" {
		t.Errorf("the file: %q, %v", b, err)
	}
	calls := toolCalls(wire)
	if len(calls) != 1 {
		t.Fatalf("%d tool_call updates, want 1:%s", len(calls), summarize(wire))
	}
	tr := toolCallTrail(wire, calls[0])
	if got, want := tr.statuses(), []string{"pending", "in_progress", "completed"}; !slices.Equal(got, want) {
		t.Errorf("the call's statuses %v, want %v:%s", got, want, summarize(wire))
	}
	first := tr.updates[0]
	if first["title"] == "" || first["title"] == nil || first["kind"] != "edit" || !strings.Contains(mustJSON(first["locations"]), path) {
		t.Errorf("tool_call: want a title, kind edit and the file among its locations: %s", mustJSON(first))
	}
	diff := false
	for _, u := range tr.updates {
		if u["status"] != "completed" {
			continue
		}
		content, _ := u["content"].([]any)
		for _, c := range content {
			c, _ := c.(map[string]any)
			if c["type"] == "diff" {
				diff = true
				if c["path"] != path || !strings.Contains(fmt.Sprint(c["newText"]), "hello from acp") {
					t.Errorf("the diff: %s", mustJSON(c))
				}
				if old, ok := c["oldText"]; ok && old != nil {
					t.Errorf("the diff of a new file has oldText %q (the schema leaves it out)", old)
				}
			}
		}
	}
	if !diff {
		t.Errorf("no {type: diff} content in the completed update:%s", summarize(wire))
	}
	// The permission was asked while pending, and the call ran after the answer.
	ask := requestIndex(wire, "session/request_permission", 0)
	if ask < 0 {
		t.Fatalf("no session/request_permission:%s", summarize(wire))
	}
	answer := responseTo(wire, ask)
	if !(tr.idx[0] < ask && answer > ask && answer < tr.idx[len(tr.idx)-1]) {
		t.Errorf("order: tool_call at %d, permission at %d, its answer at %d, the last update at %d", tr.idx[0], ask, answer, tr.idx[len(tr.idx)-1])
	}
	if !strings.Contains(wire[ask].Line, calls[0]) {
		t.Errorf("the permission request is not about the call %s: %s", calls[0], wire[ask].Line)
	}
	last := wire[len(wire)-1]
	var res struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(last.Result, &res); err != nil || res.StopReason != "end_turn" {
		t.Errorf("the transcript's last line is %s, want the prompt's {stopReason: end_turn}", last.Line)
	}
	if reqs := fm.Requests(); len(reqs) != 2 || len(reqs[1].ToolResults()) != 1 || reqs[1].ToolResults()[0].IsError {
		t.Errorf("the model should get one successful Write result: %d requests", len(reqs))
	}
}

// acpx --deny-all: the Write is refused (acpx answers with the reject
// option), the call fails, the file is not written, acpx exits 5.
func TestACPAcpxDenyAll(t *testing.T) {
	e, fm := acpEnv(t)
	path := filepath.Join(e.project, "denied.txt")
	fm.SetScript(writeScript(path, "must not be written\n", "Understood."))
	r, wire := e.acpx("write denied.txt", "--deny-all")
	if r.code != 5 {
		t.Errorf("acpx: exit %d, want 5 (permission denied)\nstderr %s", r.code, r.stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the denied file exists (%v)", err)
	}
	calls := toolCalls(wire)
	if len(calls) != 1 {
		t.Fatalf("%d tool_call updates, want 1:%s", len(calls), summarize(wire))
	}
	tr := toolCallTrail(wire, calls[0])
	if st := tr.statuses(); len(st) == 0 || st[0] != "pending" || tr.last() != "failed" || slices.Contains(st, "completed") {
		t.Errorf("the denied call's statuses %v, want pending … failed:%s", st, summarize(wire))
	}
	ask := requestIndex(wire, "session/request_permission", 0)
	if ask < 0 {
		t.Fatalf("no session/request_permission:%s", summarize(wire))
	}
	if ans := responseTo(wire, ask); ans < 0 || !strings.Contains(wire[ans].Line, "selected") {
		t.Errorf("acpx's answer: %v", ans)
	}
	if reqs := fm.Requests(); len(reqs) != 2 || len(reqs[1].ToolResults()) != 1 || !reqs[1].ToolResults()[0].IsError {
		t.Errorf("the model should get the Write's denial as an error result (%d requests)", len(reqs))
	}
	if last := wire[len(wire)-1]; !strings.Contains(last.Line, `"stopReason":"end_turn"`) {
		t.Errorf("the last line: %s", last.Line)
	}
}

// clientRun is the output of testpeers/acp/client.mjs.
type clientRun struct {
	Setup      string         `json:"setup"`
	Initialize map[string]any `json:"initialize"`
	Session    map[string]any `json:"session"`
	SessionID  string         `json:"sessionId"`
	List       *struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
		} `json:"sessions"`
	} `json:"list"`
	Prompts []struct {
		Text     string `json:"text"`
		Response *struct {
			StopReason string `json:"stopReason"`
		} `json:"response"`
		Error map[string]any `json:"error"`
	} `json:"prompts"`
	Permissions []struct {
		Request struct {
			SessionID string `json:"sessionId"`
			ToolCall  struct {
				ToolCallID string `json:"toolCallId"`
			} `json:"toolCall"`
			Options []struct {
				OptionID string `json:"optionId"`
				Name     string `json:"name"`
				Kind     string `json:"kind"`
			} `json:"options"`
		} `json:"request"`
		Answer                       map[string]any `json:"answer"`
		Pending                      *cliRun        `json:"pending"`
		Elsewhere                    *cliRun        `json:"elsewhere"`
		OutcomeShownBeforeLateAnswer bool           `json:"outcomeShownBeforeLateAnswer"`
		Error                        string         `json:"error"`
	} `json:"permissions"`
	Wire []struct {
		Dir  string `json:"dir"`
		Line string `json:"line"`
		Ms   int    `json:"ms"`
	} `json:"wire"`
	UnterminatedStdout *string `json:"unterminatedStdout"`
	Exit               struct {
		Code   *int    `json:"code"`
		Signal *string `json:"signal"`
	} `json:"exit"`
	ExitTimeout bool   `json:"exitTimeout"`
	Error       string `json:"error"`

	wire   []wireMsg
	stderr string
}

type cliRun struct {
	Code   int    `json:"code"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
}

// stopReason of prompt i ("" when it has none).
func (c *clientRun) stopReason(i int) string {
	if i >= len(c.Prompts) || c.Prompts[i].Response == nil {
		return ""
	}
	return c.Prompts[i].Response.StopReason
}

// runACPClient runs client.mjs with args against `tackle acp` in the
// project dir; it fails t when the client reports an error, the agent's
// stdout holds a line that is not one JSON-RPC message, or the agent does
// not exit 0 when its stdin ends.
func (e *env) runACPClient(args ...string) *clientRun {
	t := e.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	full := append(append([]string{testpeers.ACPClient(t)}, args...), "--", filepath.Join(binDir, "tackle"), "acp")
	cmd := exec.CommandContext(ctx, nodeBin(t), full...)
	cmd.Dir, cmd.Env = e.project, e.vars
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	runErr := cmd.Run()
	var c clientRun
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatalf("client.mjs %v: %v; no result (%v)\nstdout %s\nstderr %s", args, runErr, err, out.String(), errb.String())
	}
	c.stderr = errb.String()
	dirs, lines := make([]string, len(c.Wire)), make([]string, len(c.Wire))
	for i, w := range c.Wire {
		dirs[i], lines[i] = w.Dir, w.Line
	}
	c.wire = checkAgentLines(t, "client.mjs "+strings.Join(args, " "), dirs, lines)
	for i := range c.wire {
		c.wire[i].Ms = c.Wire[i].Ms
	}
	if c.Error != "" {
		t.Fatalf("client.mjs %v: %s\nstderr %s\nwire:%s", args, c.Error, c.stderr, summarize(c.wire))
	}
	if c.UnterminatedStdout != nil {
		t.Errorf("the agent's stdout ended with an unterminated line %q", *c.UnterminatedStdout)
	}
	if c.ExitTimeout || c.Exit.Code == nil || *c.Exit.Code != 0 {
		t.Errorf("tackle acp after its stdin ended: exit %+v, timed out %v; want exit 0\nstderr %s", c.Exit, c.ExitTimeout, c.stderr)
	}
	return &c
}

// session/load replays the conversation as session/update notifications
// before it answers; session/resume replays nothing; session/list finds
// the session. Each step is a new `tackle acp` process, as when an editor
// restarts.
func TestACPLoadReplaysResumeDoesNot(t *testing.T) {
	e, fm := acpEnv(t)
	path := filepath.Join(e.project, "hist.txt")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Call("Write", map[string]any{"file_path": path, "content": "history\n"}),
		fakemodel.Say("History written."),
		fakemodel.Say("Resumed fine."),
	))
	first := e.runACPClient("new", "--prompt", "[history] write hist.txt")
	if first.stopReason(0) != "end_turn" || first.SessionID == "" {
		t.Fatalf("the first prompt: %+v, session %q:%s", first.Prompts, first.SessionID, summarize(first.wire))
	}
	sid := first.SessionID

	load := e.runACPClient("load", "--list", "--session", sid)
	if load.List == nil || !slices.ContainsFunc(load.List.Sessions, func(s struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
	}) bool {
		return s.SessionID == sid && s.Cwd == e.project
	}) {
		t.Errorf("session/list {cwd} lacks %s in %s: %+v", sid, e.project, load.List)
	}
	req := requestIndex(load.wire, "session/load", 0)
	resp := responseTo(load.wire, req)
	if req < 0 || resp < 0 || load.wire[resp].Error != nil {
		t.Fatalf("session/load: request %d, response %d:%s", req, resp, summarize(load.wire))
	}
	replayKinds := []string{"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update"}
	for _, w := range load.wire[resp+1:] {
		if u := w.update(); u != nil && slices.Contains(replayKinds, fmt.Sprint(u["sessionUpdate"])) {
			t.Errorf("a %s after the session/load response: %s", u["sessionUpdate"], w.Line)
		}
	}
	// The replay: the user's prompt, the Write, the answer, in that order.
	user, call, answer := -1, -1, -1
	for i := req; i < resp; i++ {
		u := load.wire[i].update()
		switch {
		case u == nil:
		case u["sessionUpdate"] == "user_message_chunk" && user < 0 && strings.Contains(mustJSON(u["content"]), "[history] write hist.txt"):
			user = i
		case u["sessionUpdate"] == "tool_call" && call < 0:
			call = i
		case u["sessionUpdate"] == "agent_message_chunk":
			answer = i
		}
	}
	if user < 0 || call < 0 || answer < 0 || !(user < call && call < answer) {
		t.Errorf("the replay before the session/load response: user_message_chunk at %d, tool_call at %d, last agent_message_chunk at %d (want all, in this order):%s",
			user, call, answer, summarize(load.wire))
	}
	if text := messageText(load.wire, "agent_message_chunk", req, resp); !strings.Contains(text, "History written.") {
		t.Errorf("the replayed answer %q lacks the model's text", text)
	}
	if call >= 0 {
		if tr := toolCallTrail(load.wire[:resp], toolCalls(load.wire[req:resp])[0]); tr.last() != "completed" {
			t.Errorf("the replayed Write's statuses %v, want it completed", tr.statuses())
		}
	}

	resume := e.runACPClient("resume", "--session", sid, "--prompt", "[resumed] still there?")
	req = requestIndex(resume.wire, "session/resume", 0)
	resp = responseTo(resume.wire, req)
	if req < 0 || resp < 0 || resume.wire[resp].Error != nil {
		t.Fatalf("session/resume: request %d, response %d:%s", req, resp, summarize(resume.wire))
	}
	for _, w := range resume.wire {
		if w.Dir == "recv" && (strings.Contains(w.Line, "History written.") || strings.Contains(w.Line, "[history]")) {
			t.Errorf("session/resume replayed the history: %s", w.Line)
		}
	}
	for _, w := range resume.wire[req:resp] {
		if u := w.update(); u != nil && slices.Contains(replayKinds, fmt.Sprint(u["sessionUpdate"])) {
			t.Errorf("a %s before the session/resume response: %s", u["sessionUpdate"], w.Line)
		}
	}
	if resume.stopReason(0) != "end_turn" || !strings.Contains(messageText(resume.wire, "agent_message_chunk", resp, len(resume.wire)), "Resumed fine.") {
		t.Errorf("the prompt after session/resume: %+v:%s", resume.Prompts, summarize(resume.wire))
	}
	reqs := fm.Requests()
	if len(reqs) != 3 || !strings.Contains(mustJSON(reqs[2].Anthropic.Messages), "[history] write hist.txt") {
		t.Errorf("the resumed prompt did not continue the conversation (%d requests)", len(reqs))
	}
}

// A permission answered first by another client (tackle permissions
// answer): the ACP request is withdrawn in effect: the call runs once, a
// tool_call_update shows its outcome before the client answers, and the
// client's late reject changes nothing (the next prompt goes on).
func TestACPPermissionAnsweredElsewhere(t *testing.T) {
	e, fm := acpEnv(t)
	path := filepath.Join(e.project, "elsewhere.txt")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Call("Write", map[string]any{"file_path": path, "content": "allowed elsewhere\n"}),
		fakemodel.Say("Written."),
		fakemodel.Say("Still fine."),
	))
	c := e.runACPClient("new", "--answer", "elsewhere", "--prompt", "[elsewhere] write elsewhere.txt", "--prompt", "[after] all good?")
	if len(c.Permissions) != 1 {
		t.Fatalf("%d permission requests, want 1:%s", len(c.Permissions), summarize(c.wire))
	}
	p := c.Permissions[0]
	if p.Elsewhere == nil || p.Elsewhere.Code != 0 {
		t.Fatalf("tackle permissions answer: %+v (pending: %+v)", p.Elsewhere, p.Pending)
	}
	if !p.OutcomeShownBeforeLateAnswer {
		t.Errorf("no tool_call_update showed the call's outcome after it was answered elsewhere (waited 30 s):%s", summarize(c.wire))
	}
	if c.stopReason(0) != "end_turn" || c.stopReason(1) != "end_turn" {
		t.Errorf("the prompts: %+v", c.Prompts)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "allowed elsewhere\n" {
		t.Errorf("the file: %q, %v", b, err)
	}
	tr := toolCallTrail(c.wire, p.Request.ToolCall.ToolCallID)
	if tr.last() != "completed" || slices.Contains(tr.statuses(), "failed") {
		t.Errorf("the call's statuses %v: the late reject must change nothing:%s", tr.statuses(), summarize(c.wire))
	}
	// The late answer went out after the outcome was shown, and before the next prompt.
	ask := requestIndex(c.wire, "session/request_permission", 0)
	late := responseTo(c.wire, ask)
	if late < 0 || len(tr.idx) == 0 || late < tr.idx[len(tr.idx)-1] || late > requestIndex(c.wire, "session/prompt", 1) {
		t.Errorf("the late answer at %d, the call's last update at %v:%s", late, tr.idx, summarize(c.wire))
	}
	if n := len(toolCalls(c.wire)); n != 1 {
		t.Errorf("%d tool_call updates, want 1", n)
	}
	reqs := fm.Requests()
	if len(reqs) != 3 || len(reqs[1].ToolResults()) != 1 || reqs[1].ToolResults()[0].IsError {
		t.Fatalf("the model should get one successful Write result, then the next prompt (%d requests)", len(reqs))
	}
	if last := mustJSON(reqs[2].Anthropic.Messages); strings.Count(last, `"tool_result"`) != 1 {
		t.Errorf("the next prompt's request should carry the one Write result: %s", last)
	}
	// The options: allow once, allow always (named by the rule it saves), reject once.
	kinds := map[string]string{}
	for _, o := range p.Request.Options {
		kinds[o.Kind] = o.Name
	}
	for _, k := range []string{"allow_once", "allow_always", "reject_once"} {
		if _, ok := kinds[k]; !ok {
			t.Errorf("no %s option among %+v", k, p.Request.Options)
		}
	}
	var pending []struct {
		AlwaysRule string `json:"always_rule"`
	}
	if p.Pending != nil && json.Unmarshal([]byte(p.Pending.Stdout), &pending) == nil && len(pending) == 1 && pending[0].AlwaysRule != "" {
		if !strings.Contains(kinds["allow_always"], pending[0].AlwaysRule) {
			t.Errorf("the allow_always option %q does not name the rule %q", kinds["allow_always"], pending[0].AlwaysRule)
		}
	}
}

// session/cancel while a permission is pending: the client answers it
// cancelled, the call is denied and never runs, gets one result, and the
// prompt ends with stopReason cancelled after its last updates; the next
// prompt goes on.
func TestACPCancelDuringPermission(t *testing.T) {
	e, fm := acpEnv(t)
	path := filepath.Join(e.project, "cancelled.txt")
	fm.SetScript(writeScript(path, "must not be written\n", "Back again."))
	c := e.runACPClient("new", "--answer", "cancel", "--prompt", "[cancel] write cancelled.txt", "--prompt", "[after] hello")
	if c.stopReason(0) != "cancelled" {
		t.Errorf("the cancelled prompt: %+v, want stopReason cancelled:%s", c.Prompts[0], summarize(c.wire))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the cancelled Write ran (%v)", err)
	}
	if len(c.Permissions) != 1 {
		t.Fatalf("%d permission requests, want 1", len(c.Permissions))
	}
	callID := c.Permissions[0].Request.ToolCall.ToolCallID
	tr := toolCallTrail(c.wire, callID)
	if tr.last() != "failed" || slices.Contains(tr.statuses(), "completed") || slices.Contains(tr.statuses(), "in_progress") {
		t.Errorf("the cancelled call's statuses %v, want it to end failed without running:%s", tr.statuses(), summarize(c.wire))
	}
	end := responseTo(c.wire, requestIndex(c.wire, "session/prompt", 0))
	next := requestIndex(c.wire, "session/prompt", 1)
	if end < 0 || next < 0 {
		t.Fatalf("prompt responses:%s", summarize(c.wire))
	}
	for _, w := range c.wire[end:next] {
		if w.update() != nil {
			t.Errorf("an update after the cancelled prompt's response: %s", w.Line)
		}
	}
	for _, i := range tr.idx {
		if i > end {
			t.Errorf("an update of the cancelled call after the prompt ended: %s", c.wire[i].Line)
		}
	}
	if c.stopReason(1) != "end_turn" || !strings.Contains(messageText(c.wire, "agent_message_chunk", next, len(c.wire)), "Back again.") {
		t.Errorf("the prompt after the cancel: %+v", c.Prompts[1:])
	}
	reqs := fm.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests, want 2 (the Write, then the next prompt)", len(reqs))
	}
	if res := reqs[1].ToolResults(); len(res) != 1 || !res[0].IsError {
		t.Errorf("the next request's result for the cancelled Write: %+v, want one error result", res)
	}
}

// An optionId the agent never offered is a denial.
func TestACPUnknownOptionIsDenial(t *testing.T) {
	e, fm := acpEnv(t)
	path := filepath.Join(e.project, "unknown.txt")
	fm.SetScript(writeScript(path, "must not be written\n", "Understood."))
	c := e.runACPClient("new", "--answer", "unknown", "--prompt", "[unknown] write unknown.txt")
	if c.stopReason(0) != "end_turn" {
		t.Errorf("the prompt: %+v:%s", c.Prompts, summarize(c.wire))
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the Write ran on an unknown option (%v)", err)
	}
	if len(c.Permissions) != 1 {
		t.Fatalf("%d permission requests, want 1", len(c.Permissions))
	}
	if tr := toolCallTrail(c.wire, c.Permissions[0].Request.ToolCall.ToolCallID); tr.last() != "failed" {
		t.Errorf("the call's statuses %v, want it to end failed", tr.statuses())
	}
	if reqs := fm.Requests(); len(reqs) != 2 || len(reqs[1].ToolResults()) != 1 || !reqs[1].ToolResults()[0].IsError {
		t.Errorf("the model should get the Write's denial as an error result (%d requests)", len(reqs))
	}
}

// acpConn is a `tackle acp` process spoken to line by line: every line it
// writes must be one JSON-RPC 2.0 message.
type acpConn struct {
	tb     testing.TB
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
	nextID int
	done   chan struct{}
	err    error // cmd.Wait's, once done is closed
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// acpHangGuard bounds each wait for the agent; it only catches hangs.
const acpHangGuard = 60 * time.Second

func startACP(tb testing.TB, dir string, env []string, args ...string) *acpConn {
	tb.Helper()
	cmd := exec.Command(filepath.Join(binDir, "tackle"), append(args, "acp")...)
	cmd.Dir, cmd.Env = dir, env
	c := &acpConn{tb: tb, cmd: cmd, lines: make(chan string, 256), stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	c.stdin = stdin
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
		close(c.lines)
		c.err = cmd.Wait()
		close(c.done)
	}()
	tb.Cleanup(func() {
		stdin.Close()
		select {
		case <-c.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

func (c *acpConn) fatalf(format string, args ...any) {
	c.tb.Helper()
	c.tb.Fatalf("tackle acp: "+format+"\nstderr:\n%s", append(args, c.stderr.String())...)
}

func (c *acpConn) writeLine(line string) {
	c.tb.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.fatalf("writing %q: %v", line, err)
	}
}

// next is the agent's next message; ok is false at the end of its stdout.
func (c *acpConn) next() (m acpMsg, line string, ok bool) {
	c.tb.Helper()
	select {
	case line, ok = <-c.lines:
		if !ok {
			return m, "", false
		}
	case <-time.After(acpHangGuard):
		c.fatalf("no message within %v", acpHangGuard)
	}
	m, err := parseACPLine(line)
	if err != nil {
		c.fatalf("a stdout line that is not one JSON-RPC message (%v): %.300q", err, line)
	}
	return m, line, true
}

// call sends a request and reads up to its response; every other message
// before it goes to handle (nil: a request from the agent fails the test,
// notifications are dropped).
func (c *acpConn) call(method string, params any, handle func(acpMsg)) acpMsg {
	c.tb.Helper()
	c.nextID++
	id := json.RawMessage(fmt.Sprint(c.nextID))
	c.writeLine(mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
	for {
		m, line, ok := c.next()
		if !ok {
			c.fatalf("stdout ended before the response to %s", method)
		}
		switch {
		case m.isResponse() && bytes.Equal(m.ID, id):
			return m
		case handle != nil:
			handle(m)
		case m.Method != "" && len(m.ID) > 0:
			c.fatalf("an unexpected request during %s: %s", method, line)
		}
	}
}

// result decodes a successful response into v.
func (c *acpConn) result(m acpMsg, v any) {
	c.tb.Helper()
	if m.Error != nil {
		c.fatalf("error response %+v", *m.Error)
	}
	if err := json.Unmarshal(m.Result, v); err != nil {
		c.fatalf("decoding %s: %v", m.Result, err)
	}
}

// close ends stdin and returns the exit code.
func (c *acpConn) close() int {
	c.tb.Helper()
	c.stdin.Close()
	guard := time.After(acpHangGuard)
	for open := true; open; {
		select {
		case _, open = <-c.lines:
		case <-guard:
			c.fatalf("still running %v after its stdin ended", acpHangGuard)
		}
	}
	select {
	case <-c.done:
	case <-guard:
		c.fatalf("still running %v after its stdin ended", acpHangGuard)
	}
	if ee, ok := c.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if c.err != nil {
		c.fatalf("waiting: %v", c.err)
	}
	return 0
}

type initializeResult struct {
	ProtocolVersion   int `json:"protocolVersion"`
	AgentCapabilities struct {
		LoadSession        bool `json:"loadSession"`
		PromptCapabilities struct {
			Image           bool `json:"image"`
			EmbeddedContext bool `json:"embeddedContext"`
		} `json:"promptCapabilities"`
		McpCapabilities struct {
			HTTP bool `json:"http"`
			SSE  bool `json:"sse"`
		} `json:"mcpCapabilities"`
		SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
	} `json:"agentCapabilities"`
	AgentInfo *struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	} `json:"agentInfo"`
}

var initParams = map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{}, "clientInfo": map[string]any{"name": "integration", "version": "0"}}

// initialize: the version and the capabilities; a malformed line is a
// parse error and the connection goes on; an unknown method is -32601;
// session/new offers tackle's permission modes and session/set_mode
// switches them (acceptEdits: a Write runs without asking); a newer
// client version is answered with 1.
func TestACPInitializeAndErrors(t *testing.T) {
	e, fm := acpEnv(t)
	c := startACP(t, e.project, e.vars)
	var init initializeResult
	c.result(c.call("initialize", initParams, nil), &init)
	caps := init.AgentCapabilities
	if init.ProtocolVersion != 1 || !caps.LoadSession || !caps.PromptCapabilities.Image || !caps.PromptCapabilities.EmbeddedContext ||
		!caps.McpCapabilities.HTTP || !caps.McpCapabilities.SSE || init.AgentInfo == nil || init.AgentInfo.Name == "" {
		t.Errorf("initialize: %+v", init)
	}
	for _, k := range []string{"list", "resume"} {
		if _, ok := caps.SessionCapabilities[k]; !ok {
			t.Errorf("sessionCapabilities lacks %s: %v", k, caps.SessionCapabilities)
		}
	}

	// A cut-off line, then a request of an unknown method: the parse error
	// must come before that request's response (and the connection go on).
	c.writeLine(`{"jsonrpc":"2.0","id":41,"method":"session/new","params":`)
	var before []string
	r := c.call("no/such_method", map[string]any{}, func(m acpMsg) {
		before = append(before, mustJSON(m))
	})
	if !slices.ContainsFunc(before, func(s string) bool { return strings.Contains(s, `"id":null`) && strings.Contains(s, `"code":-32700`) }) {
		t.Errorf("a malformed line got no -32700 error response with id null (messages before the next response: %v)", before)
	}
	if r.Error == nil || r.Error.Code != -32601 {
		t.Errorf("an unknown method: %+v, want -32601", r.Error)
	}

	var sess struct {
		SessionID string `json:"sessionId"`
		Modes     *struct {
			CurrentModeID  string `json:"currentModeId"`
			AvailableModes []struct {
				ID string `json:"id"`
			} `json:"availableModes"`
		} `json:"modes"`
	}
	c.result(c.call("session/new", map[string]any{"cwd": e.project, "mcpServers": []any{}}, nil), &sess)
	if sess.SessionID == "" {
		t.Fatal("session/new: no sessionId")
	}
	if sess.Modes == nil {
		t.Errorf("session/new: no modes")
	} else {
		var ids []string
		for _, m := range sess.Modes.AvailableModes {
			ids = append(ids, m.ID)
		}
		if want := []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"}; sess.Modes.CurrentModeID != "default" || !slices.Equal(ids, want) {
			t.Errorf("modes: current %q, available %v; want default of %v", sess.Modes.CurrentModeID, ids, want)
		}
	}
	var modeUpdate bool
	seeMode := func(m acpMsg) {
		if u := m.update(); u != nil && u["sessionUpdate"] == "current_mode_update" && u["currentModeId"] == "acceptEdits" {
			modeUpdate = true
		}
	}
	if r := c.call("session/set_mode", map[string]any{"sessionId": sess.SessionID, "modeId": "acceptEdits"}, seeMode); r.Error != nil {
		t.Fatalf("session/set_mode acceptEdits: %+v", *r.Error)
	}
	path := filepath.Join(e.project, "mode.txt")
	fm.SetScript(writeScript(path, "accepted\n", "Done."))
	var out struct {
		StopReason string `json:"stopReason"`
	}
	c.result(c.call("session/prompt", map[string]any{"sessionId": sess.SessionID, "prompt": []any{map[string]any{"type": "text", "text": "write mode.txt"}}}, func(m acpMsg) {
		seeMode(m)
		if m.Method == "session/request_permission" {
			t.Errorf("acceptEdits asked for the Write: %s", m.Params)
			c.writeLine(mustJSON(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"outcome": map[string]any{"outcome": "cancelled"}}}))
		}
	}), &out)
	if b, err := os.ReadFile(path); out.StopReason != "end_turn" || err != nil || string(b) != "accepted\n" {
		t.Errorf("the prompt in acceptEdits: stop %q, file %q, %v", out.StopReason, b, err)
	}
	if !modeUpdate {
		t.Logf("no current_mode_update after session/set_mode (the agent reports only its own switches)")
	}
	if code := c.close(); code != 0 {
		t.Errorf("exit %d after stdin ended\nstderr %s", code, c.stderr)
	}

	// A client of a newer version gets the agent's own, 1.
	c = startACP(t, e.project, e.vars)
	c.result(c.call("initialize", map[string]any{"protocolVersion": 7, "clientCapabilities": map[string]any{}}, nil), &init)
	if init.ProtocolVersion != 1 {
		t.Errorf("initialize with protocolVersion 7: answered %d, want 1", init.ProtocolVersion)
	}
	c.close()
}

// Without a daemon (and --no-autostart) tackle acp exits 2 with a message
// on stderr; its stdout holds nothing but JSON-RPC.
func TestACPDaemonUnreachable(t *testing.T) {
	e := newEnv(t)
	c := startACP(t, e.project, e.vars, "--no-autostart")
	io.WriteString(c.stdin, mustJSON(map[string]any{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initParams})+"\n")
	for {
		if _, _, ok := c.next(); !ok {
			break
		}
	}
	if code := c.close(); code != 2 || !strings.Contains(c.stderr.String(), "tackled") {
		t.Errorf("exit %d, stderr %q; want 2 and a message naming tackled", code, c.stderr)
	}
}

// promptTurn sends one text prompt and reads to its response; it fails on a
// permission request (the benchmark's model only talks).
func (c *acpConn) promptTurn(sid, text string) string {
	c.tb.Helper()
	var out struct {
		StopReason string `json:"stopReason"`
	}
	c.result(c.call("session/prompt", map[string]any{"sessionId": sid, "prompt": []any{map[string]any{"type": "text", "text": text}}}, func(m acpMsg) {
		if m.Method != "" && len(m.ID) > 0 {
			c.fatalf("an unexpected request: %s %s", m.Method, m.Params)
		}
	}), &out)
	return out.StopReason
}

const benchAnswer = "Hello there, this is the answer."

// BenchmarkACPPromptTurn: a prompt turn through `tackle acp` (one
// long-lived process, one session, a warm daemon), from session/prompt
// sent to its response, the model answering with text. Compare with
// BenchmarkRunPromptTurn (goal: at most 1.2×).
func BenchmarkACPPromptTurn(b *testing.B) {
	env := newBenchEnv(b)
	fm := fakemodel.Start(b, &fakemodel.Options{APIKey: "sk-bench", Script: fakemodel.Repeat(fakemodel.Say(benchAnswer))})
	env = append(env, "ANTHROPIC_BASE_URL="+fm.URL(), "ANTHROPIC_API_KEY=sk-bench")
	dir := b.TempDir()
	c := startACP(b, dir, env)
	var init initializeResult
	c.result(c.call("initialize", initParams, nil), &init)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	c.result(c.call("session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}, nil), &sess)
	if r := c.promptTurn(sess.SessionID, "hi"); r != "end_turn" { // warm
		b.Fatalf("stopReason %q", r)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if r := c.promptTurn(sess.SessionID, "hi"); r != "end_turn" {
			b.Fatalf("stopReason %q", r)
		}
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	reportP50(b, durs)
}

// BenchmarkRunPromptTurn: the same prompt turn as BenchmarkACPPromptTurn
// through `tackle run` (a process per prompt, a warm daemon).
func BenchmarkRunPromptTurn(b *testing.B) {
	env := newBenchEnv(b)
	fm := fakemodel.Start(b, &fakemodel.Options{APIKey: "sk-bench", Script: fakemodel.Repeat(fakemodel.Say(benchAnswer))})
	env = append(env, "ANTHROPIC_BASE_URL="+fm.URL(), "ANTHROPIC_API_KEY=sk-bench")
	dir := b.TempDir()
	run := func() time.Duration {
		cmd := exec.Command(filepath.Join(binDir, "tackle"), "run", "hi")
		cmd.Dir, cmd.Env = dir, env
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil || !strings.Contains(string(out), benchAnswer) {
			b.Fatalf("tackle run: %v\n%s", err, out)
		}
		return d
	}
	run() // warm
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		durs = append(durs, run())
	}
	b.StopTimer()
	reportP50(b, durs)
}

// A 1×1 PNG.
const tinyPNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// session/prompt with a resource link, an embedded resource and an image
// reaches the model with all three; thinking streams as
// agent_thought_chunk; the model's max_tokens and refusal stops map to the
// same stopReasons.
func TestACPPromptContentAndStopReasons(t *testing.T) {
	e, fm := acpEnv(t)
	linked := e.write("linked.txt", "LINKED-CONTENT-7\n")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Reply(fakemodel.Thinking("pondering the files"), fakemodel.Text("Seen them.")),
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("This answer is cut")}, StopReason: "max_tokens"},
		fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("I can't help with that.")}, StopReason: "refusal"},
	))
	c := startACP(t, e.project, e.vars)
	var init initializeResult
	c.result(c.call("initialize", initParams, nil), &init)
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	c.result(c.call("session/new", map[string]any{"cwd": e.project, "mcpServers": []any{}}, nil), &sess)

	prompt := func(blocks ...any) (string, map[string]string) {
		t.Helper()
		texts := map[string]string{}
		var out struct {
			StopReason string `json:"stopReason"`
		}
		c.result(c.call("session/prompt", map[string]any{"sessionId": sess.SessionID, "prompt": blocks}, func(m acpMsg) {
			if m.Method != "" && len(m.ID) > 0 {
				t.Errorf("an unexpected request: %s %s", m.Method, m.Params)
			}
			if u := m.update(); u != nil {
				if content, ok := u["content"].(map[string]any); ok {
					s, _ := content["text"].(string)
					texts[fmt.Sprint(u["sessionUpdate"])] += s
				}
			}
		}), &out)
		return out.StopReason, texts
	}
	stop, texts := prompt(
		map[string]any{"type": "text", "text": "[content] what do these say?"},
		map[string]any{"type": "resource_link", "uri": "file://" + linked, "name": "linked.txt"},
		map[string]any{"type": "resource", "resource": map[string]any{"uri": "file://" + filepath.Join(e.project, "embedded.txt"), "text": "EMBEDDED-CONTENT-9", "mimeType": "text/plain"}},
		map[string]any{"type": "image", "data": tinyPNG, "mimeType": "image/png"},
	)
	if stop != "end_turn" || texts["agent_thought_chunk"] != "pondering the files" || texts["agent_message_chunk"] != "Seen them." {
		t.Errorf("the first prompt: stop %q, texts %q", stop, texts)
	}
	reqs := fm.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	sent := mustJSON(reqs[0].Anthropic.Messages)
	for _, want := range []string{"[content] what do these say?", "linked.txt", "EMBEDDED-CONTENT-9", `"image"`} {
		if !strings.Contains(sent, want) {
			t.Errorf("the model request lacks %s: %.2000s", want, sent)
		}
	}
	if stop, _ := prompt(map[string]any{"type": "text", "text": "a long answer"}); stop != "max_tokens" {
		t.Errorf("the model's max_tokens: stopReason %q", stop)
	}
	if stop, _ := prompt(map[string]any{"type": "text", "text": "something refused"}); stop != "refusal" {
		t.Errorf("the model's refusal: stopReason %q", stop)
	}
	if code := c.close(); code != 0 {
		t.Errorf("exit %d after stdin ended", code)
	}
}

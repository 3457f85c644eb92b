package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// session is one ACP session: a controller stream subscribed to the tackle
// session, and the pump that turns its events into session/update
// notifications (one goroutine, so they go out in the session's order).
type session struct {
	a        *agent
	id       string
	st       *client.Stream
	clientID string
	ctx      context.Context
	cancel   context.CancelFunc
	gone     chan struct{} // closed when the pump ends
	replayed chan struct{} // closed once the replay (LoadSession) went out

	mu       sync.Mutex
	mode     string
	waiting  chan *tacklev1.PromptInfo // the Prompt call waiting for its end
	promptID string
	early    map[string]*tacklev1.PromptInfo // prompt ends seen before Prompt knew the id
	asks     map[string]context.CancelFunc   // open session/request_permission calls, by request id
	calls    map[string]*callInfo            // tool calls seen, by call id
}

// callInfo is what the pump remembers of a tool call.
type callInfo struct {
	name   string
	input  json.RawMessage
	output strings.Builder // progress lines (Bash output, a sub-agent's calls)
}

// open subscribes a controller stream to the session and starts its pump;
// replay sends the conversation first (session/load).
func (a *agent) open(info *tacklev1.Session, replay bool) (*session, error) {
	a.mu.Lock()
	if old := a.sessions[info.GetId()]; old != nil {
		a.mu.Unlock()
		old.close()
		a.mu.Lock()
	}
	a.mu.Unlock()
	ctx, cancel := context.WithCancel(a.ctx)
	st, err := a.o.Client.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("attaching to tackled: %w", err)
	}
	from, live := uint64(0), true
	if replay {
		from, live = 1, false
	}
	snap, err := st.Subscribe(info.GetId(), from, live)
	if err != nil {
		cancel()
		st.Close()
		return nil, err
	}
	s := &session{
		a: a, id: info.GetId(), st: st, clientID: st.Welcome().GetClientId(), ctx: ctx, cancel: cancel,
		gone: make(chan struct{}), replayed: make(chan struct{}), mode: snap.GetSession().GetPermissionMode(),
		early: map[string]*tacklev1.PromptInfo{}, asks: map[string]context.CancelFunc{}, calls: map[string]*callInfo{},
	}
	last := snap.GetSession().GetLastSeq()
	if !replay || last == 0 {
		close(s.replayed)
	}
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	go s.pump(last, replay)
	go s.announceCommands()
	// Requests that were open before this client came: asked here too.
	for _, p := range snap.GetPendingPermissions() {
		s.ask(p)
	}
	return s, nil
}

func (s *session) getMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

func (s *session) setMode(m string) {
	s.mu.Lock()
	s.mode = m
	s.mu.Unlock()
}

// close ends the session's stream and pump.
func (s *session) close() {
	s.cancel()
	s.st.Close()
	s.mu.Lock()
	for _, c := range s.asks {
		c()
	}
	s.mu.Unlock()
}

// cancelPrompt cancels the running prompt and withdraws the editor's
// open permission requests (the daemon resolves them as cancelled).
func (s *session) cancelPrompt(ctx context.Context) {
	if _, err := s.a.o.Client.CancelPrompt(ctx, s.id, ""); err != nil {
		s.a.logf("cancelling the prompt of %s: %v", s.id, err)
	}
	s.mu.Lock()
	for id, c := range s.asks {
		c()
		delete(s.asks, id)
	}
	s.mu.Unlock()
}

// update sends one session/update.
func (s *session) update(u sdk.SessionUpdate) {
	if err := s.a.conn.SessionUpdate(s.ctx, sdk.SessionNotification{SessionId: sdk.SessionId(s.id), Update: u}); err != nil && s.ctx.Err() == nil {
		s.a.logf("sending an update of %s: %v", s.id, err)
	}
}

// pump translates the session's events until the stream ends. With
// replay, the events up to last are the stored conversation: whole
// messages stand for the deltas that streamed them.
func (s *session) pump(last uint64, replay bool) {
	defer close(s.gone)
	for item := range s.st.Chan(s.ctx) {
		if item.Err != nil {
			if s.ctx.Err() == nil {
				s.a.logf("the stream of session %s ended: %v", s.id, item.Err)
			}
			return
		}
		if e := item.Msg.GetError(); e != nil {
			s.a.logf("tackled: %s (%s)", e.GetMessage(), e.GetCode())
			continue // an answer to a request another client answered first, and the like
		}
		e := item.Msg.GetEvent()
		if e == nil {
			continue
		}
		inReplay := replay && e.GetSeq() <= last
		s.event(e, inReplay)
		if replay && e.GetSeq() >= last {
			select {
			case <-s.replayed:
			default:
				close(s.replayed)
			}
		}
	}
}

// event translates one event.
func (s *session) event(e *tacklev1.Event, replay bool) {
	switch e.GetType() {
	case "prompt_started":
		if replay {
			s.update(sdk.UpdateUserMessageText(e.GetPrompt().GetText()))
		}
	case "assistant_delta":
		if replay {
			return // the whole message follows
		}
		switch d := e.GetDelta(); d.GetKind() {
		case "text":
			s.update(sdk.UpdateAgentMessageText(d.GetText()))
		case "thinking":
			s.update(sdk.UpdateAgentThoughtText(d.GetText()))
		}
	case "assistant_message":
		if replay {
			s.replayMessage(e.GetMessageJson())
		}
	case "turn_started":
		for _, c := range e.GetCalls() {
			s.startCall(c)
		}
	case "call_state":
		if e.GetState() == "running" {
			st := sdk.ToolCallStatusInProgress
			s.update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(e.GetCallId()), Status: &st, SessionUpdate: "tool_call_update"}})
		}
	case "call_progress":
		s.progress(e.GetCallId(), e.GetText())
	case "call_result":
		s.endCall(e.GetCallId(), e.GetResult())
	case "todos_updated":
		s.plan(e.GetSession().GetTodosJson())
	case "permission_requested":
		if !replay {
			s.ask(e.GetPermission())
		}
	case "permission_resolved":
		s.resolved(e.GetResolution().GetRequestId())
	case "prompt_ended":
		if !replay {
			s.ended(e.GetPrompt())
		}
	case "skills_changed":
		go s.announceCommands()
	}
}

// replayMessage sends a stored assistant message's text and thinking.
func (s *session) replayMessage(raw string) {
	var m struct {
		Content []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			Thinking string `json:"thinking"`
		} `json:"content"`
	}
	if json.Unmarshal([]byte(raw), &m) != nil {
		return
	}
	for _, b := range m.Content {
		switch {
		case b.Type == "text" && b.Text != "":
			s.update(sdk.UpdateAgentMessageText(b.Text))
		case b.Type == "thinking" && b.Thinking != "":
			s.update(sdk.UpdateAgentThoughtText(b.Thinking))
		}
	}
}

// ended hands a prompt's end to the Prompt call waiting for it.
func (s *session) ended(info *tacklev1.PromptInfo) {
	if info.GetClientId() != s.clientID {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.waiting != nil && s.promptID == info.GetId() {
		s.waiting <- info
		return
	}
	s.early[info.GetId()] = info
}

// startCall announces a tool call.
func (s *session) startCall(c *tacklev1.ToolCall) {
	in := json.RawMessage(c.GetInputJson())
	s.mu.Lock()
	s.calls[c.GetId()] = &callInfo{name: c.GetName(), input: in}
	s.mu.Unlock()
	var raw any
	_ = json.Unmarshal(in, &raw)
	u := &sdk.SessionUpdateToolCall{
		ToolCallId: sdk.ToolCallId(c.GetId()), Title: title(c.GetName(), in), Kind: kindOf(c.GetName()),
		Status: sdk.ToolCallStatusPending, Locations: locations(in), RawInput: raw, SessionUpdate: "tool_call",
	}
	s.update(sdk.SessionUpdate{ToolCall: u})
}

// maxProgress bounds the progress text a tool call's update carries.
const maxProgress = 8000

// progress shows a call's output so far (Bash) or its sub-agent's calls.
func (s *session) progress(callID, text string) {
	s.mu.Lock()
	c := s.calls[callID]
	if c == nil {
		s.mu.Unlock()
		return
	}
	if c.output.Len() > 0 && !strings.HasSuffix(c.output.String(), "\n") {
		c.output.WriteString("\n")
	}
	c.output.WriteString(text)
	out := c.output.String()
	s.mu.Unlock()
	if len(out) > maxProgress {
		out = "…" + out[len(out)-maxProgress:]
	}
	s.update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(callID),
		Content: []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(out))}, SessionUpdate: "tool_call_update"}})
}

// endCall reports a call's result: an edit as a diff, anything else as
// its text.
func (s *session) endCall(callID string, r *tacklev1.ToolResult) {
	s.mu.Lock()
	c := s.calls[callID]
	delete(s.calls, callID)
	s.mu.Unlock()
	st := sdk.ToolCallStatusCompleted
	if r.GetStatus() != "completed" {
		st = sdk.ToolCallStatusFailed
	}
	var content []sdk.ToolCallContent
	if c != nil && st == sdk.ToolCallStatusCompleted {
		content = diffs(c.name, c.input)
	}
	if content == nil {
		var b strings.Builder
		for _, blk := range r.GetContent() {
			b.WriteString(blk.GetText())
		}
		text := b.String()
		if len(text) > maxProgress {
			text = text[:maxProgress] + "…"
		}
		if text != "" {
			content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}
		}
	}
	s.update(sdk.SessionUpdate{ToolCallUpdate: &sdk.SessionToolCallUpdate{ToolCallId: sdk.ToolCallId(callID), Status: &st,
		Content: content, RawOutput: map[string]any{"status": r.GetStatus(), "display": r.GetDisplay()}, SessionUpdate: "tool_call_update"}})
}

// plan sends the todo list as the plan.
func (s *session) plan(todosJSON string) {
	var todos []struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	}
	if json.Unmarshal([]byte(todosJSON), &todos) != nil {
		return
	}
	entries := []sdk.PlanEntry{}
	for _, t := range todos {
		st := sdk.PlanEntryStatusPending
		switch t.Status {
		case "in_progress":
			st = sdk.PlanEntryStatusInProgress
		case "completed":
			st = sdk.PlanEntryStatusCompleted
		}
		entries = append(entries, sdk.PlanEntry{Content: t.Content, Priority: sdk.PlanEntryPriorityMedium, Status: st})
	}
	s.update(sdk.UpdatePlan(entries...))
}

// announceCommands lists the session's skills a person may invoke, as
// slash commands.
func (s *session) announceCommands() {
	r, err := s.a.o.Client.Service().ListSkills(s.ctx, &tacklev1.ListSkillsRequest{SessionId: s.id})
	if err != nil {
		return
	}
	cmds := []sdk.AvailableCommand{}
	for _, sk := range r.GetSkills() {
		if !sk.GetUserInvocable() {
			continue
		}
		c := sdk.AvailableCommand{Name: sk.GetName(), Description: sk.GetDescription()}
		if h := sk.GetArgumentHint(); h != "" {
			c.Input = &sdk.AvailableCommandInput{Unstructured: &sdk.UnstructuredCommandInput{Hint: h}}
		}
		cmds = append(cmds, c)
	}
	s.update(sdk.SessionUpdate{AvailableCommandsUpdate: &sdk.SessionAvailableCommandsUpdate{AvailableCommands: cmds, SessionUpdate: "available_commands_update"}})
}

// ask puts a tackle permission request to the editor, in its own
// goroutine (the editor may take its time), and answers tackle with the
// choice; a cancelled request or an unknown option is a denial.
func (s *session) ask(p *tacklev1.PermissionRequest) {
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	if _, dup := s.asks[p.GetRequestId()]; dup {
		s.mu.Unlock()
		cancel()
		return
	}
	s.asks[p.GetRequestId()] = cancel
	s.mu.Unlock()
	in := json.RawMessage(p.GetInputJson())
	t := title(p.GetTool(), in)
	if ag := p.GetAgent(); ag != nil {
		t = fmt.Sprintf("%s (agent %s: %s)", t, ag.GetType(), ag.GetDescription())
	}
	if r := p.GetReason(); r != "" {
		t += " — " + r
	}
	kind := kindOf(p.GetTool())
	st := sdk.ToolCallStatusPending
	options := []sdk.PermissionOption{{OptionId: "allow_once", Name: "Allow once", Kind: sdk.PermissionOptionKindAllowOnce}}
	var alwaysScope tacklev1.Scope
	for _, o := range p.GetOptions() {
		if o.GetOption() == "allow_always" && alwaysScope == tacklev1.Scope_SCOPE_UNSPECIFIED {
			alwaysScope = o.GetScope()
			options = append(options, sdk.PermissionOption{OptionId: "allow_always", Name: "Always allow " + o.GetRule(), Kind: sdk.PermissionOptionKindAllowAlways})
		}
	}
	options = append(options, sdk.PermissionOption{OptionId: "reject_once", Name: "Reject", Kind: sdk.PermissionOptionKindRejectOnce})
	var raw any
	_ = json.Unmarshal(in, &raw)
	req := sdk.RequestPermissionRequest{SessionId: sdk.SessionId(s.id), Options: options, ToolCall: sdk.ToolCallUpdate{
		ToolCallId: sdk.ToolCallId(p.GetCallId()), Title: &t, Kind: &kind, Status: &st, Locations: locations(in), RawInput: raw,
	}}
	if pv := p.GetPreview(); pv != "" {
		// What the call would do, as the daemon renders it for every
		// client: an edit's diff, a command and its directory, a URL.
		req.ToolCall.Content = []sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(pv))}
	}
	// The request was announced in this session; a sub-agent's is
	// answered here too (it is open in its root session, this one).
	answerSession := s.id
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.asks, p.GetRequestId())
			s.mu.Unlock()
			cancel()
		}()
		resp, err := s.a.conn.RequestPermission(ctx, req)
		if ctx.Err() != nil {
			return // withdrawn: answered elsewhere, or the prompt was cancelled
		}
		d := tacklev1.Decision_DECISION_DENY
		var scope tacklev1.Scope
		if err == nil && resp.Outcome.Selected != nil {
			switch resp.Outcome.Selected.OptionId {
			case "allow_once":
				d = tacklev1.Decision_DECISION_ALLOW_ONCE
			case "allow_always":
				d, scope = tacklev1.Decision_DECISION_ALLOW_ALWAYS, alwaysScope
			}
		}
		if err != nil {
			s.a.logf("asking the editor about %s: %v (denied)", p.GetTool(), err)
		}
		if err := s.st.Answer(&tacklev1.PermissionAnswer{SessionId: answerSession, RequestId: p.GetRequestId(), Decision: d, Scope: scope}); err != nil {
			s.a.logf("answering tackled: %v", err)
		}
	}()
}

// resolved withdraws the editor's request when another client (or the
// timeout) answered it: ACP cannot take a request back, so the late
// answer is simply not sent on; the call's updates show the outcome.
func (s *session) resolved(requestID string) {
	s.mu.Lock()
	c := s.asks[requestID]
	delete(s.asks, requestID)
	s.mu.Unlock()
	if c != nil {
		c()
	}
}

// title names a call for people: the tool and its main argument.
func title(name string, input json.RawMessage) string {
	var m map[string]any
	_ = json.Unmarshal(input, &m)
	for _, k := range []string{"file_path", "path", "pattern", "command", "url", "query", "description", "skill", "notebook_path"} {
		if v, ok := m[k].(string); ok && v != "" {
			if len(v) > 100 {
				v = v[:97] + "..."
			}
			return name + " " + strings.ReplaceAll(v, "\n", " ")
		}
	}
	return name
}

// kindOf is ACP's kind of a tackle tool.
func kindOf(name string) sdk.ToolKind {
	switch name {
	case "Read", "NotebookRead", "ListMcpResources", "ReadMcpResource", "BashOutput", "TaskOutput":
		return sdk.ToolKindRead
	case "Write", "Edit", "MultiEdit", "ReplaceLines", "NotebookEdit":
		return sdk.ToolKindEdit
	case "Glob", "Grep", "ToolSearch":
		return sdk.ToolKindSearch
	case "Bash", "KillShell", "TaskStop":
		return sdk.ToolKindExecute
	case "WebFetch", "WebSearch":
		return sdk.ToolKindFetch
	case "TodoWrite", "Agent", "Task":
		return sdk.ToolKindThink
	}
	return sdk.ToolKindOther
}

// locations are the files a call is about, with the line where known.
func locations(input json.RawMessage) []sdk.ToolCallLocation {
	var m struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Path         string `json:"path"`
		Offset       *int   `json:"offset"`
	}
	if json.Unmarshal(input, &m) != nil {
		return nil
	}
	p := m.FilePath
	if p == "" {
		p = m.NotebookPath
	}
	if p == "" && filepath.IsAbs(m.Path) {
		p = m.Path
	}
	if p == "" {
		return nil
	}
	l := sdk.ToolCallLocation{Path: p}
	if m.Offset != nil && *m.Offset > 0 {
		l.Line = m.Offset
	}
	return []sdk.ToolCallLocation{l}
}

// diffs are an edit's changes as ACP diffs (nil for another tool).
func diffs(name string, input json.RawMessage) []sdk.ToolCallContent {
	var in struct {
		FilePath  string `json:"file_path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Edits     []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		} `json:"edits"`
	}
	if json.Unmarshal(input, &in) != nil || in.FilePath == "" {
		return nil
	}
	switch name {
	case "Write":
		return []sdk.ToolCallContent{sdk.ToolDiffContent(in.FilePath, in.Content)}
	case "Edit":
		return []sdk.ToolCallContent{sdk.ToolDiffContent(in.FilePath, in.NewString, in.OldString)}
	case "MultiEdit":
		var out []sdk.ToolCallContent
		for _, e := range in.Edits {
			out = append(out, sdk.ToolDiffContent(in.FilePath, e.NewString, e.OldString))
		}
		return out
	}
	return nil
}

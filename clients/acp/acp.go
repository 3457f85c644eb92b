// Package acp is `tackle acp`: an Agent Client Protocol (v1) agent on stdio,
// for editors (Zed, JetBrains, Neovim's CodeCompanion and avante.nvim,
// Emacs' agent-shell) that run an agent as a subprocess. It is a thin
// client of tackled: an ACP session is a tackle session, a prompt is a
// tackle prompt, and the session's events become session/update
// notifications; tackle's permission requests become
// session/request_permission. So the editor gets tackle's tools, shared
// MCP connections and shared permission prompts, and a terminal can
// attach to the very session the editor drives.
//
// The protocol itself (framing, JSON-RPC, the schema's types) is
// github.com/coder/acp-go-sdk's. stdout carries protocol messages only;
// logs go to stderr.
package acp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/exetrim"
)

// Options configures an agent.
type Options struct {
	// Client is the connection to tackled (required).
	Client *client.Client
	// Environ is the environment sessions are created with (the model's
	// variables come from it).
	Environ []string
	// Version is tackle's, for agentInfo.
	Version string
	// Log receives diagnostics (stderr; nil: discarded).
	Log io.Writer
	// StateDir holds the editor's MCP server lists, as files for the
	// daemon (default: the temporary directory).
	StateDir string
}

// Serve speaks ACP on in and out until in ends or ctx is done.
func Serve(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	a := &agent{o: o, sessions: map[string]*session{}}
	a.ctx, a.cancel = context.WithCancel(ctx)
	defer a.cancel()
	w := &lockedWriter{w: out}
	// The connection starts reading at once, and logs through a field
	// SetLogger sets: its reader waits until the logger is in place.
	ready := make(chan struct{})
	a.conn = sdk.NewAgentSideConnection(a, w, &lineFilter{r: bufio.NewReaderSize(in, 64<<10), out: w, ready: ready, lines: &w.traffic})
	a.conn.SetLogger(slog.New(slog.NewTextHandler(o.Log, &slog.HandlerOptions{Level: slog.LevelWarn})))
	close(ready)
	// One `tackle acp` runs per editor, for as long as the editor is
	// open: memory goes back to the system once nothing has come or gone
	// for a check period.
	var trimmer sync.WaitGroup
	trimmer.Add(1)
	go func() {
		defer trimmer.Done()
		exetrim.WhenIdle(a.ctx, exetrim.IdleCheck, w.traffic.Load, func(err error) {
			a.logf("idle: could not unmap the executable's pages: %v", err)
		})
	}()
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
	}
	a.closeAll()
	a.cancel()
	trimmer.Wait()
	return nil
}

// agent implements sdk.Agent and sdk.AgentLoader.
type agent struct {
	o      Options
	conn   *sdk.AgentSideConnection
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	sessions map[string]*session
	caps     sdk.ClientCapabilities
}

var (
	_ sdk.Agent       = (*agent)(nil)
	_ sdk.AgentLoader = (*agent)(nil)
)

func (a *agent) logf(format string, args ...any) {
	fmt.Fprintf(a.o.Log, "tackle acp: "+format+"\n", args...)
}

// Initialize implements sdk.Agent.
func (a *agent) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.mu.Lock()
	a.caps = p.ClientCapabilities
	a.mu.Unlock()
	return sdk.InitializeResponse{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			PromptCapabilities: sdk.PromptCapabilities{Image: true, EmbeddedContext: true},
			McpCapabilities:    sdk.McpCapabilities{Http: true, Sse: true},
			SessionCapabilities: sdk.SessionCapabilities{
				List: &sdk.SessionListCapabilities{}, Resume: &sdk.SessionResumeCapabilities{}, Close: &sdk.SessionCloseCapabilities{},
			},
		},
		AgentInfo:   &sdk.Implementation{Name: "tackle", Version: a.o.Version},
		AuthMethods: []sdk.AuthMethod{},
	}, nil
}

// Authenticate implements sdk.Agent: tackle needs none (the model's keys
// are the daemon's and the sessions' business).
func (a *agent) Authenticate(context.Context, sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	return sdk.AuthenticateResponse{}, nil
}

// modes are tackle's permission modes, as ACP session modes.
var modes = []sdk.SessionMode{
	{Id: "default", Name: "Default", Description: ptr("Ask before edits and commands that the rules do not allow")},
	{Id: "acceptEdits", Name: "Accept edits", Description: ptr("File edits inside the working directories run without asking")},
	{Id: "plan", Name: "Plan", Description: ptr("Only read-only tools run: the agent plans, changes nothing")},
	{Id: "dontAsk", Name: "Don't ask", Description: ptr("What would ask is denied instead")},
	{Id: "bypassPermissions", Name: "Bypass permissions", Description: ptr("Everything runs without asking (where the settings allow it)")},
}

func ptr[T any](v T) *T { return &v }

// modeState is a session's modes for a response.
func modeState(current string) *sdk.SessionModeState {
	if current == "" {
		current = "default"
	}
	return &sdk.SessionModeState{CurrentModeId: sdk.SessionModeId(current), AvailableModes: modes}
}

// NewSession implements sdk.Agent.
func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	if !filepath.IsAbs(p.Cwd) {
		return sdk.NewSessionResponse{}, sdk.NewInvalidParams(map[string]string{"cwd": "must be an absolute path"})
	}
	cfg, err := a.mcpConfig(p.McpServers)
	if err != nil {
		return sdk.NewSessionResponse{}, sdk.NewInvalidParams(map[string]string{"mcpServers": err.Error()})
	}
	req := &tacklev1.CreateSessionRequest{Cwd: p.Cwd, AdditionalDirectories: p.AdditionalDirectories, Env: a.o.Environ}
	if cfg != "" {
		req.McpConfig = []string{cfg}
	}
	resp, err := a.o.Client.CreateSession(ctx, req)
	if err != nil {
		return sdk.NewSessionResponse{}, fmt.Errorf("creating the tackle session: %w", err)
	}
	s, err := a.open(resp.GetSession(), false)
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.id), Modes: modeState(s.getMode())}, nil
}

// LoadSession implements sdk.AgentLoader: the conversation is replayed as
// session/update notifications before the answer.
func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	info, err := a.o.Client.GetSession(ctx, string(p.SessionId))
	if err != nil {
		return sdk.LoadSessionResponse{}, fmt.Errorf("loading session %s: %w", p.SessionId, err)
	}
	s, err := a.open(info, true)
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	select {
	case <-s.replayed:
	case <-ctx.Done():
		return sdk.LoadSessionResponse{}, ctx.Err()
	}
	return sdk.LoadSessionResponse{Modes: modeState(s.getMode())}, nil
}

// ResumeSession implements sdk.Agent: the session again, nothing replayed.
func (a *agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	info, err := a.o.Client.GetSession(ctx, string(p.SessionId))
	if err != nil {
		return sdk.ResumeSessionResponse{}, fmt.Errorf("resuming session %s: %w", p.SessionId, err)
	}
	s, err := a.open(info, false)
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	return sdk.ResumeSessionResponse{Modes: modeState(s.getMode())}, nil
}

// ListSessions implements sdk.Agent: tackle's sessions (not sub-agents'),
// of cwd when given, newest first.
func (a *agent) ListSessions(ctx context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	all, err := a.o.Client.ListSessions(ctx)
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	out := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	for _, s := range all {
		if s.GetAgent() != nil || p.Cwd != nil && *p.Cwd != s.GetCwd() {
			continue
		}
		si := sdk.SessionInfo{SessionId: sdk.SessionId(s.GetId()), Cwd: s.GetCwd(), AdditionalDirectories: s.GetAdditionalDirectories()}
		if t := s.GetUpdatedAt(); t != nil {
			si.UpdatedAt = ptr(t.AsTime().UTC().Format(time.RFC3339))
		}
		out.Sessions = append(out.Sessions, si)
	}
	return out, nil
}

// CloseSession implements sdk.Agent: its prompt is cancelled and the
// session's stream closed (the tackle session stays).
func (a *agent) CloseSession(ctx context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	if s != nil {
		s.cancelPrompt(ctx)
		s.close()
	}
	return sdk.CloseSessionResponse{}, nil
}

// SetSessionMode implements sdk.Agent: the mode the session's next
// prompts run in.
func (a *agent) SetSessionMode(ctx context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s, err := a.session(string(p.SessionId))
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	known := false
	for _, m := range modes {
		known = known || m.Id == p.ModeId
	}
	if !known {
		return sdk.SetSessionModeResponse{}, sdk.NewInvalidParams(map[string]string{"modeId": "unknown mode " + string(p.ModeId)})
	}
	s.setMode(string(p.ModeId))
	s.update(sdk.SessionUpdate{CurrentModeUpdate: &sdk.SessionCurrentModeUpdate{CurrentModeId: p.ModeId, SessionUpdate: "current_mode_update"}})
	return sdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption implements sdk.Agent: tackle has no config
// options (its modes are session modes).
func (a *agent) SetSessionConfigOption(context.Context, sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodSessionSetConfigOption)
}

// Cancel implements sdk.Agent: the running prompt is cancelled (it ends
// with stopReason cancelled) and the editor's open permission requests
// of the session are withdrawn.
func (a *agent) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	s, err := a.session(string(p.SessionId))
	if err != nil {
		return nil
	}
	s.cancelPrompt(ctx)
	return nil
}

// Prompt implements sdk.Agent.
func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(string(p.SessionId))
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	req, err := a.promptRequest(ctx, s, p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	done := make(chan *tacklev1.PromptInfo, 1)
	s.mu.Lock()
	s.waiting = done
	s.mu.Unlock()
	resp, err := a.o.Client.Prompt(ctx, req)
	if err != nil {
		return sdk.PromptResponse{}, fmt.Errorf("sending the prompt: %w", err)
	}
	s.mu.Lock()
	s.promptID = resp.GetPromptId()
	if info := s.early[resp.GetPromptId()]; info != nil {
		delete(s.early, resp.GetPromptId())
		s.mu.Unlock()
		done <- info
	} else {
		s.mu.Unlock()
	}
	var info *tacklev1.PromptInfo
	select {
	case info = <-done:
	case <-s.gone:
		return sdk.PromptResponse{}, errors.New("the connection to tackled ended")
	}
	s.mu.Lock()
	s.waiting, s.promptID = nil, ""
	s.mu.Unlock()
	return promptResult(info)
}

// promptResult maps a tackle prompt's end to ACP's.
func promptResult(info *tacklev1.PromptInfo) (sdk.PromptResponse, error) {
	switch info.GetStopReason() {
	case "end_turn", "stop_sequence", "blocked":
		return sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}, nil
	case "max_tokens", "model_context_window_exceeded":
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTokens}, nil
	case "max_turns":
		return sdk.PromptResponse{StopReason: sdk.StopReasonMaxTurnRequests}, nil
	case "refusal":
		return sdk.PromptResponse{StopReason: sdk.StopReasonRefusal}, nil
	case "cancelled", "interrupted":
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	msg := info.GetError()
	if msg == "" {
		msg = "the prompt ended: " + info.GetStopReason()
	}
	return sdk.PromptResponse{}, sdk.NewInternalError(map[string]string{"error": msg})
}

// promptRequest turns ACP content into a tackle prompt: text as it is, a
// /skill invocation rendered as the person's, embedded resources (editor
// buffers) as the files' current content, resource links to files as
// file references (read through the pipeline), images as images.
func (a *agent) promptRequest(ctx context.Context, s *session, blocks []sdk.ContentBlock) (*tacklev1.PromptRequest, error) {
	req := &tacklev1.PromptRequest{SessionId: s.id, PermissionMode: s.getMode(), ClientId: s.clientID}
	var text []string
	for _, b := range blocks {
		switch {
		case b.Text != nil:
			text = append(text, b.Text.Text)
		case b.Resource != nil && b.Resource.Resource.TextResourceContents != nil:
			r := b.Resource.Resource.TextResourceContents
			text = append(text, fmt.Sprintf("<file path=%q>\n%s\n</file>", pathOf(r.Uri), r.Text))
		case b.Resource != nil:
			text = append(text, fmt.Sprintf("(an attached binary resource was left out: %s)", b.Resource.Resource.BlobResourceContents.Uri))
		case b.ResourceLink != nil:
			if p := pathOf(b.ResourceLink.Uri); filepath.IsAbs(p) {
				req.Files = append(req.Files, p)
			} else {
				text = append(text, b.ResourceLink.Uri)
			}
		case b.Image != nil:
			data, err := base64.StdEncoding.DecodeString(b.Image.Data)
			if err != nil {
				return nil, sdk.NewInvalidParams(map[string]string{"image": "data is not base64"})
			}
			req.Images = append(req.Images, &tacklev1.PromptImage{MediaType: b.Image.MimeType, Data: data})
		}
	}
	req.Text = strings.Join(text, "\n\n")
	if name, args, ok := slashCommand(req.Text); ok {
		r, err := a.o.Client.Service().RenderSkill(ctx, &tacklev1.RenderSkillRequest{SessionId: s.id, Name: name, Args: args, PermissionMode: s.getMode()})
		if err == nil {
			req.Text = r.GetText()
		}
	}
	if strings.TrimSpace(req.Text) == "" && len(req.Images) == 0 && len(req.Files) == 0 {
		return nil, sdk.NewInvalidParams(map[string]string{"prompt": "the prompt is empty"})
	}
	return req, nil
}

// slashCommand splits "/name args".
func slashCommand(text string) (name, args string, ok bool) {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "/") || strings.HasPrefix(t, "//") {
		return "", "", false
	}
	name, args, _ = strings.Cut(t[1:], " ")
	return name, strings.TrimSpace(args), name != "" && !strings.ContainsAny(name, "/\n")
}

// pathOf is the path of a file:// URI (the URI itself otherwise).
func pathOf(uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return u.Path
	}
	return uri
}

// mcpConfig writes the editor's MCP servers as a configuration file for
// the session ("" when there are none). Names the editor gives are kept;
// the daemon shares the connections like any configured server's.
func (a *agent) mcpConfig(servers []sdk.McpServer) (string, error) {
	if len(servers) == 0 {
		return "", nil
	}
	out := map[string]any{}
	for _, m := range servers {
		switch {
		case m.Stdio != nil:
			env := map[string]string{}
			for _, e := range m.Stdio.Env {
				env[e.Name] = e.Value
			}
			out[m.Stdio.Name] = map[string]any{"type": "stdio", "command": m.Stdio.Command, "args": m.Stdio.Args, "env": env}
		case m.Http != nil:
			out[m.Http.Name] = map[string]any{"type": "http", "url": m.Http.Url, "headers": headers(m.Http.Headers)}
		case m.Sse != nil:
			out[m.Sse.Name] = map[string]any{"type": "sse", "url": m.Sse.Url, "headers": headers(m.Sse.Headers)}
		default:
			return "", errors.New("an MCP server of a kind tackle does not connect to (stdio, http and sse are)")
		}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": out})
	if err != nil {
		return "", err
	}
	dir := a.o.StateDir
	if dir == "" {
		dir = os.TempDir()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "acp-mcp-*.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return "", err
	}
	if _, err := f.Write(b); err != nil {
		return "", err
	}
	return f.Name(), nil
}

func headers(hs []sdk.HttpHeader) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		out[h.Name] = h.Value
	}
	return out
}

// session returns an open session.
func (a *agent) session(id string) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.sessions[id]; s != nil {
		return s, nil
	}
	return nil, sdk.NewInvalidParams(map[string]string{"sessionId": "no open session " + id + ": create it with session/new, or load or resume it"})
}

// closeAll ends every session's stream (the editor went away).
func (a *agent) closeAll() {
	a.mu.Lock()
	ss := a.sessions
	a.sessions = map[string]*session{}
	a.mu.Unlock()
	ids := make([]string, 0, len(ss))
	for id := range ss {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ss[id].close()
	}
}

// lockedWriter serialises the writes of the protocol connection and of the
// line filter's parse errors, each a whole line.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
	// traffic counts the writes, and the lines the client sent
	// (lineFilter), for the idle trim.
	traffic atomic.Int64
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.traffic.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// lineFilter passes the client's lines on, answering a line that is not
// JSON with JSON-RPC's parse error (the protocol library would drop it
// silently) so the client learns of it, and the connection goes on.
type lineFilter struct {
	r    *bufio.Reader
	out  io.Writer
	rest []byte // of a line already read, not yet returned
	// ready, when not nil, is closed once the reader may start: the first
	// Read waits for it.
	ready <-chan struct{}
	lines *atomic.Int64 // counts the lines read, when not nil
}

// parseError is JSON-RPC's answer to a line that does not parse.
var parseError = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: the line is not a JSON-RPC message"}}` + "\n")

func (f *lineFilter) Read(p []byte) (int, error) {
	if f.ready != nil {
		<-f.ready
		f.ready = nil
	}
	for len(f.rest) == 0 {
		line, err := f.r.ReadBytes('\n')
		if f.lines != nil {
			f.lines.Add(1)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if json.Valid(t) {
				f.rest = append(t, '\n')
			} else if _, werr := f.out.Write(parseError); werr != nil {
				return 0, werr
			}
		}
		if err != nil {
			if len(f.rest) > 0 {
				break
			}
			return 0, err
		}
	}
	n := copy(p, f.rest)
	f.rest = f.rest[n:]
	return n, nil
}

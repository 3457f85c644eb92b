package daemon

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/daemon/agent"
	"github.com/tackle-agent/tackle/daemon/agent/sysprompt"
	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/model"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// This file runs the sessions' prompts through the query loop
// (daemon/agent): one prompt at a time per session, later ones queued and
// handed to the running loop at its next request; the conversation kept in
// memory and in the session log, which rebuilds it after a restart.

// prompts implements server.Agent.
type prompts struct {
	d *Daemon

	mu       sync.Mutex                 // guards the fields below
	running  map[string]*runningPrompt  // by session id
	convs    map[string][]model.Message // by session id: the conversation so far
	usage    map[string]model.Usage     // by session id: its last request's usage (the context's size)
	env      map[string]sysprompt.Info  // by session id: the environment its first prompt saw
	stopping bool                       // Stop was called: no new prompt starts
	wg       sync.WaitGroup             // running loops
	files    *transcripts               // the sessions' JSONL transcripts (transcript_path)
}

// runningPrompt is a session's prompt in progress. Its fields are guarded
// by prompts.mu (cancel is set once).
type runningPrompt struct {
	id      string
	cancel  context.CancelFunc
	info    *event.Prompt   // as prompt_started announced it
	queue   []queuedPrompt  // arrived meanwhile, not yet given to the model
	joined  []queuedPrompt  // queued prompts the running loop took: they end with it
	partial strings.Builder // the text streaming now
	child   *childRun       // set for a sub-agent's session: how its loop runs
	mode    string          // the permission mode the prompt was sent with
	// nonInteractive: the sender leaves at the prompt's end (tackle run).
	nonInteractive bool
}

// childRun is how a sub-agent's loop differs from a client's prompt: its
// system prompt, tools, mode and limits, where its permission requests go,
// and who waits for its end. The subagents layer fills it in.
type childRun struct {
	ctx      context.Context   // the loop's parent context: the Agent call's (foreground), or the daemon's
	body     string            // the definition's system prompt
	scout    bool              // Explore and Plan: no git status
	noMemory bool              // no memory files (CLAUDE.md)
	model    string            // an alias or id ("" the settings')
	tools    func(string) bool // whether the child has a tool (canonical name)
	readOnly bool
	mode     string
	maxTurns int
	context  string // what SubagentStart hooks added
	askVia   *session.Session
	agent    *event.AgentRef
	// onMessage sees every whole message (the parent's progress lines).
	onMessage func(model.Message)
	// onAsk is told when a permission request opens and closes.
	onAsk func(open bool)
	// onStop runs the SubagentStop hooks.
	onStop func(ctx context.Context, active bool, last string) (bool, string)
	// done receives the first prompt's outcome (capacity 1).
	done chan agent.Outcome
}

// queuedPrompt is a prompt waiting for the running one.
type queuedPrompt struct {
	id  string
	req server.PromptRequest
}

func newPrompts(d *Daemon) *prompts {
	return &prompts{d: d, files: newTranscripts(), running: map[string]*runningPrompt{}, convs: map[string][]model.Message{}, usage: map[string]model.Usage{}, env: map[string]sysprompt.Info{}}
}

// errStopping refuses a prompt while the daemon stops.
var errStopping = &unavailable{"tackled is stopping: send the prompt again once it is back"}

// unavailable is an error the server maps to Unavailable.
type unavailable struct{ msg string }

func (e *unavailable) Error() string { return e.msg }

// Unavailable marks it for the server's error mapping.
func (e *unavailable) Unavailable() bool { return true }

// Prompt implements server.Agent: it starts req on sess, or queues it.
func (p *prompts) Prompt(sess *session.Session, req server.PromptRequest) (server.PromptAccepted, error) {
	if strings.TrimSpace(req.Text) == "" {
		return server.PromptAccepted{}, &invalidInput{"the prompt is empty: say what the agent should do"}
	}
	return p.start(sess, req, nil)
}

// start starts req on sess (a sub-agent's first prompt when child is
// set), or queues it behind the running prompt.
func (p *prompts) start(sess *session.Session, req server.PromptRequest, child *childRun) (server.PromptAccepted, error) {
	id := newPromptID()
	p.mu.Lock()
	if p.stopping {
		p.mu.Unlock()
		return server.PromptAccepted{}, errStopping
	}
	if r := p.running[sess.ID()]; r == nil && child == nil && sess.Agent() != nil {
		p.mu.Unlock()
		return server.PromptAccepted{}, &failedPrecondition{"this is a sub-agent's session and the sub-agent has ended: prompt its parent session instead"}
	} else if r != nil && child != nil {
		p.mu.Unlock()
		return server.PromptAccepted{}, fmt.Errorf("sub-agent session %s is already running", sess.ID())
	} else if r != nil {
		r.queue = append(r.queue, queuedPrompt{id: id, req: req})
		p.mu.Unlock()
		p.appendEvent(sess, &event.Event{Type: event.PromptQueued, Prompt: &event.Prompt{ID: id, ClientID: req.ClientID, Text: req.Text}})
		return server.PromptAccepted{PromptID: id, Queued: true}, nil
	}
	r := &runningPrompt{id: id, info: &event.Prompt{ID: id, ClientID: req.ClientID, Text: req.Text}, child: child, mode: req.PermissionMode, nonInteractive: req.NonInteractive}
	p.running[sess.ID()] = r
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		p.run(sess, r, req)
	}()
	return server.PromptAccepted{PromptID: id}, nil
}

// CancelPrompt implements server.Agent.
func (p *prompts) CancelPrompt(sess *session.Session, promptID string) error {
	p.mu.Lock()
	r := p.running[sess.ID()]
	p.mu.Unlock()
	if r == nil || promptID != "" && promptID != r.id || r.cancel == nil {
		return server.ErrNoPrompt
	}
	r.cancel()
	return nil
}

// Stop implements server.Agent.
func (p *prompts) Stop() {
	p.mu.Lock()
	p.stopping = true
	for _, r := range p.running {
		if r.cancel != nil {
			r.cancel()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// run runs a prompt and then those queued after its last request; each
// has its own context, so cancelling one leaves the queued ones.
func (p *prompts) run(sess *session.Session, r *runningPrompt, req server.PromptRequest) {
	base := p.d.bgCtx
	if r.child != nil && r.child.ctx != nil {
		// A foreground child ends with the Agent call that waits for it;
		// the daemon's stop ends it through Stop.
		base = r.child.ctx
	}
	for {
		ctx, cancel := context.WithCancel(base)
		p.mu.Lock()
		r.cancel = cancel
		if p.stopping {
			cancel()
		}
		p.mu.Unlock()
		last := p.runOne(ctx, sess, r, req)
		cancel()
		if last {
			return
		}
		// Prompts queued after the loop's last request: the next prompt.
		p.mu.Lock()
		next := r.queue
		r.queue = nil
		req = next[0].req
		var texts []string
		req.Images = nil
		for _, q := range next {
			texts = append(texts, q.req.Text)
			req.Images = append(req.Images, q.req.Images...)
		}
		req.Text = strings.Join(texts, "\n\n")
		r.id = next[0].id
		r.info = &event.Prompt{ID: r.id, ClientID: req.ClientID, Text: req.Text}
		r.partial.Reset()
		p.mu.Unlock()
	}
}

// Snapshot implements server.Agent.
func (p *prompts) Snapshot(sessionID string) (*event.Prompt, string, []*event.Prompt) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.running[sessionID]
	if r == nil {
		return nil, "", nil
	}
	var queued []*event.Prompt
	for _, q := range r.queue {
		queued = append(queued, &event.Prompt{ID: q.id, ClientID: q.req.ClientID, Text: q.req.Text})
	}
	info := *r.info
	return &info, r.partial.String(), queued
}

// runOne runs one prompt's loop to its end and records it. last reports
// that no prompt waits (the session is idle again); otherwise run goes on
// with the queue.
func (p *prompts) runOne(ctx context.Context, sess *session.Session, r *runningPrompt, req server.PromptRequest) (last bool) {
	started := time.Now()
	history := p.conversation(sess)
	user := model.Message{Role: model.RoleUser, Content: promptBlocks(req)}
	user.Content = append(user.Content, p.fileBlocks(ctx, sess, req)...)
	// Background agents that ended while the session was idle.
	for _, n := range p.d.agents.takeNotes(sess.ID()) {
		user.Content = append(user.Content, model.Block{Type: model.BlockText, Text: n})
	}
	p.mu.Lock()
	info := r.info
	p.mu.Unlock()
	end := func(out agent.Outcome, err error) {
		e := &event.Prompt{ID: r.id, ClientID: req.ClientID, Model: info.Model, StopReason: out.StopReason, Requests: out.Requests, FinalText: out.Text,
			Usage: &event.Usage{InputTokens: out.Usage.InputTokens, OutputTokens: out.Usage.OutputTokens,
				CacheCreationInputTokens: out.Usage.CacheCreationInputTokens, CacheReadInputTokens: out.Usage.CacheReadInputTokens}}
		if err != nil {
			e.Error = err.Error()
		}
		// The session is idle before its clients hear the prompt ended, so
		// a prompt sent right after starts (and Compact works) at once.
		p.mu.Lock()
		joined := r.joined
		r.joined = nil
		var left []queuedPrompt
		if last = len(r.queue) == 0 || p.stopping; last {
			left, r.queue = r.queue, nil
			delete(p.running, sess.ID())
		}
		p.mu.Unlock()
		p.appendEvent(sess, &event.Event{Type: event.PromptEnded, Prompt: e})
		// The queued prompts it took in end with it (their clients wait).
		for _, q := range joined {
			je := *e
			je.ID, je.ClientID = q.id, q.req.ClientID
			p.appendEvent(sess, &event.Event{Type: event.PromptEnded, Prompt: &je})
		}
		for _, q := range left {
			p.appendEvent(sess, &event.Event{Type: event.PromptEnded, Prompt: &event.Prompt{ID: q.id, ClientID: q.req.ClientID,
				StopReason: agent.StopCancelled, Error: "tackled stopped before this queued prompt ran"}})
		}
		p.d.log.Debug("prompt ended", "session", sess.ID(), "prompt", r.id, "stop", out.StopReason, "requests", out.Requests, "took", time.Since(started))
	}

	child := r.child
	// UserPromptSubmit hooks: a block ends the prompt before the model
	// sees it; context joins the prompt. A sub-agent's task is not a
	// person's prompt: its SubagentStart hooks ran instead.
	if child != nil {
		if child.context != "" {
			user.Content = append(user.Content, model.Block{Type: model.BlockText, Text: child.context})
			child.context = ""
		}
	} else if hr := p.d.hooks.UserPromptSubmit(ctx, sess, req.Text); hr.Block {
		p.appendEvent(sess, &event.Event{Type: event.PromptStarted, Prompt: info})
		end(agent.Outcome{StopReason: agent.StopBlocked}, fmt.Errorf("a UserPromptSubmit hook blocked the prompt: %s", hr.Reason))
		return
	} else if hr.Context != "" {
		user.Content = append(user.Content, model.Block{Type: model.BlockText, Text: hr.Context})
	}
	modelName := req.Model
	if child != nil && modelName == "" {
		modelName = child.model
	}
	cfg, err := p.d.modelConfig(sess, modelName)
	if err != nil {
		// Nothing reached the model: the prompt is not part of the
		// conversation (a person fixes the setting and sends it again).
		p.appendEvent(sess, &event.Event{Type: event.PromptStarted, Prompt: info})
		end(agent.Outcome{StopReason: agent.StopError}, err)
		return
	}
	p.mu.Lock()
	info.Model = cfg.Model
	p.mu.Unlock()
	p.appendEvent(sess, &event.Event{Type: event.PromptStarted, Prompt: info, Message: agent.MessageJSON(user)})

	tools, deferred := p.d.modelTools(sess)
	turn := dispatch.Turn{ClientID: req.ClientID, PermissionMode: req.PermissionMode, FromModel: true}
	if req.PermissionMode == "" {
		turn.ResolveMode = func() string { return p.d.perms.effectiveMode(sess, "") }
	}
	system := ""
	maxTurns := req.MaxTurns
	onStop := func(active bool, last string) (bool, string) { return p.d.hooks.Stop(ctx, sess, active, last) }
	if child != nil {
		tools, deferred = onlyTools(tools, deferred, child.tools)
		turn.PermissionMode, turn.ResolveMode = child.mode, nil
		turn.Tools, turn.ReadOnly, turn.Agent, turn.OnAsk = child.tools, child.readOnly, child.agent, child.onAsk
		if child.askVia != nil {
			turn.AskVia = child.askVia
		}
		info := p.environment(sess)
		if child.scout {
			info.GitStatus = ""
		}
		system = p.d.agentSystemPrompt(sess, cfg.Model, deferred, info, child.body, child.noMemory)
		if maxTurns == 0 {
			maxTurns = child.maxTurns
		}
		onStop = func(active bool, last string) (bool, string) { return child.onStop(ctx, active, last) }
	} else {
		system = p.d.systemPrompt(sess, cfg.Model, deferred, p.environment(sess))
	}
	turn.ResolvePermissionTimeout = func() time.Duration { return p.d.askTimeout(sess.Root()) }
	coalesce := &deltaCoalescer{}
	opts := agent.Options{
		Provider: cfg.Provider, Runner: p.d.disp,
		Model: cfg.Model, MaxTokens: cfg.MaxTokens, MaxTurns: maxTurns,
		System: system,
		Tools:  tools, Turn: turn,
		OnEvent: func(ev model.Event) {
			if ev.Type == model.EventText {
				p.mu.Lock()
				r.partial.WriteString(ev.Text)
				p.mu.Unlock()
			}
			for _, d := range coalesce.add(r.id, ev) {
				p.appendEvent(sess, &event.Event{Type: event.AssistantDelta, Delta: d})
			}
		},
		OnMessage: func(m model.Message) {
			if d := coalesce.flush(); d != nil {
				p.appendEvent(sess, &event.Event{Type: event.AssistantDelta, Delta: d})
			}
			typ := event.ToolResults
			if m.Role == model.RoleAssistant {
				typ = event.AssistantMessage
				p.mu.Lock()
				r.partial.Reset()
				p.mu.Unlock()
			}
			p.appendEvent(sess, &event.Event{Type: typ, Message: agent.MessageJSON(m)})
			if child != nil && child.onMessage != nil {
				child.onMessage(m)
			}
		},
		OnRetry: func(ri model.RetryInfo) {
			p.appendEvent(sess, &event.Event{Type: event.ModelRetry, Retry: &event.Retry{
				PromptID: r.id, Attempt: ri.Attempt, WaitMS: int64(ri.Wait * 1000), Status: ri.Status, Reason: ri.Reason}})
		},
		Inbox:  func() []model.Block { return p.takeQueued(sess.ID()) },
		OnStop: onStop,
	}
	opts.CompactAt = compactAt(p.d.settingInt(sess, "autoCompactPercent", defaultAutoCompactPercent), cfg.Resolved.ContextTokens)
	p.mu.Lock()
	opts.PriorUsage = p.usage[sess.ID()]
	p.mu.Unlock()
	opts.PreCompact = func() { p.d.hooks.PreCompact(ctx, sess, "auto", "") }
	opts.OnCompact = func(start model.Message, _ model.Usage) {
		p.appendEvent(sess, &event.Event{Type: event.Compacted, Message: agent.MessageJSON(start)})
	}
	out := agent.Run(ctx, opts, sess, history, user.Content)
	p.mu.Lock()
	p.convs[sess.ID()] = out.Messages
	p.usage[sess.ID()] = out.LastUsage
	p.mu.Unlock()
	end(out, out.Err)
	if child != nil && child.done != nil {
		child.done <- out
		child.done = nil
	}
	return last
}

// onlyTools keeps the specs and deferred names of the tools allowed.
func onlyTools(specs []model.Tool, deferred []string, allowed func(string) bool) ([]model.Tool, []string) {
	var s []model.Tool
	for _, t := range specs {
		if allowed(t.Name) {
			s = append(s, t)
		}
	}
	var d []string
	for _, n := range deferred {
		if allowed(n) {
			d = append(d, n)
		}
	}
	return s, d
}

// toolsOf is a running sub-agent's tool set (nil for another session).
func (p *prompts) toolsOf(sessionID string) func(string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.running[sessionID]; r != nil && r.child != nil {
		return r.child.tools
	}
	return nil
}

// modeOf is the permission mode the session's running prompt was given
// ("" when it follows the session's settings, or none runs).
func (p *prompts) modeOf(sessionID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.running[sessionID]; r != nil {
		if r.child != nil {
			return r.child.mode
		}
		return r.mode
	}
	return ""
}

// nonInteractive reports whether the session's running prompt was sent
// by a client that leaves at its end (tackle run).
func (p *prompts) nonInteractive(sessionID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.running[sessionID]
	return r != nil && r.nonInteractive
}

// busy reports whether a prompt runs in the session.
func (p *prompts) busy(sessionID string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running[sessionID] != nil
}

// modelOf is the model the session's running prompt talks to ("" when
// idle): a sub-agent's model when nothing else names one.
func (p *prompts) modelOf(sessionID string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if r := p.running[sessionID]; r != nil && r.info != nil {
		return r.info.Model
	}
	return ""
}

// defaultAutoCompactPercent is the share of the context window past which
// the loop compacts (setting autoCompactPercent).
const defaultAutoCompactPercent = 85

// compactAt is the token count that triggers a compaction (0: never).
func compactAt(percent, window int) int {
	if percent <= 0 || percent > 100 || window <= 0 {
		return 0
	}
	return window * percent / 100
}

// Compact implements server.Agent.
func (p *prompts) Compact(ctx context.Context, sess *session.Session, instructions string) (string, event.Usage, error) {
	p.mu.Lock()
	busy := p.running[sess.ID()] != nil
	p.mu.Unlock()
	if busy {
		return "", event.Usage{}, &failedPrecondition{"a prompt is running in this session: compact once it ends (or cancel it)"}
	}
	msgs := p.conversation(sess)
	if len(msgs) == 0 {
		return "", event.Usage{}, &failedPrecondition{"the session has no conversation to compact yet"}
	}
	cfg, err := p.d.modelConfig(sess, "")
	if err != nil {
		return "", event.Usage{}, err
	}
	p.d.hooks.PreCompact(ctx, sess, "manual", instructions)
	_, deferred := p.d.modelTools(sess)
	req := model.Request{Model: cfg.Model, MaxTokens: cfg.MaxTokens, System: p.d.systemPrompt(sess, cfg.Model, deferred, p.environment(sess))}
	start, u, err := agent.Compact(ctx, cfg.Provider, req, msgs, instructions)
	if err != nil {
		return "", event.Usage{}, err
	}
	p.appendEvent(sess, &event.Event{Type: event.Compacted, Message: agent.MessageJSON(start)})
	p.mu.Lock()
	p.convs[sess.ID()] = []model.Message{start}
	p.usage[sess.ID()] = model.Usage{}
	p.mu.Unlock()
	summary := ""
	if len(start.Content) > 0 {
		summary = start.Content[0].Text
	}
	return summary, event.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens, CacheReadInputTokens: u.CacheReadInputTokens}, nil
}

// failedPrecondition is an error the server maps to FailedPrecondition.
type failedPrecondition struct{ msg string }

func (e *failedPrecondition) Error() string { return e.msg }

// FailedPrecondition marks it for the server's error mapping.
func (e *failedPrecondition) FailedPrecondition() bool { return true }

// environment is the session's system prompt environment, gathered at its
// first prompt (a session's cwd may move; the git status is the start's).
func (p *prompts) environment(sess *session.Session) sysprompt.Info {
	p.mu.Lock()
	info, ok := p.env[sess.ID()]
	p.mu.Unlock()
	if ok {
		return info
	}
	info = gatherEnv(sess.Cwd())
	p.mu.Lock()
	p.env[sess.ID()] = info
	p.mu.Unlock()
	return info
}

// inheritEnvironment gives a sub-agent's session its parent's
// environment.
func (p *prompts) inheritEnvironment(childID string, parent *session.Session) {
	info := p.environment(parent)
	p.mu.Lock()
	p.env[childID] = info
	p.mu.Unlock()
}

// promptBlocks is a prompt's content for the model: its text, then its
// images.
func promptBlocks(req server.PromptRequest) []model.Block {
	out := []model.Block{{Type: model.BlockText, Text: req.Text}}
	for _, im := range req.Images {
		out = append(out, model.Block{Type: model.BlockImage, MediaType: im.MediaType, Source: base64.StdEncoding.EncodeToString(im.Data)})
	}
	return out
}

// fileBlocks reads a prompt's file references as the person's Read calls
// through the pipeline (events, deny rules, permission prompts) and
// returns them as text blocks; a file that cannot be read says why.
func (p *prompts) fileBlocks(ctx context.Context, sess *session.Session, req server.PromptRequest) []model.Block {
	if len(req.Files) == 0 {
		return nil
	}
	t := dispatch.Turn{ClientID: req.ClientID, PermissionMode: req.PermissionMode}
	if t.PermissionMode == "" {
		t.ResolveMode = func() string { return p.d.perms.effectiveMode(sess, "") }
	}
	for i, f := range req.Files {
		if !filepath.IsAbs(f) {
			f = filepath.Join(sess.Cwd(), f)
		}
		in, _ := json.Marshal(map[string]string{"file_path": f})
		t.Calls = append(t.Calls, event.CallInfo{ID: fmt.Sprintf("file_%d", i+1), Name: "Read", Input: in})
	}
	var out []model.Block
	for i, r := range p.d.disp.RunTurn(ctx, sess, t) {
		var b strings.Builder
		for _, c := range r.Content {
			b.WriteString(c.Text)
		}
		path := req.Files[i]
		if r.IsError {
			out = append(out, model.Block{Type: model.BlockText, Text: fmt.Sprintf("<file path=%q>(not read: %s)</file>", path, strings.TrimSpace(b.String()))})
			continue
		}
		out = append(out, model.Block{Type: model.BlockText, Text: fmt.Sprintf("<file path=%q>\n%s\n</file>", path, b.String())})
	}
	return out
}

// takeQueued hands the running loop the prompts queued meanwhile.
func (p *prompts) takeQueued(sessionID string) []model.Block {
	var out []model.Block
	// Background agents that ended since the last request.
	for _, n := range p.d.agents.takeNotes(sessionID) {
		out = append(out, model.Block{Type: model.BlockText, Text: n})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.running[sessionID]
	if r == nil || len(r.queue) == 0 {
		return out
	}
	for _, q := range r.queue {
		out = append(out, promptBlocks(q.req)...)
	}
	r.joined = append(r.joined, r.queue...)
	r.queue = nil
	return out
}

// conversation returns the session's conversation, rebuilt from its log
// the first time; a prompt the daemon was killed in is ended first
// (interrupted), its open tool calls answered.
func (p *prompts) conversation(sess *session.Session) []model.Message {
	p.mu.Lock()
	msgs, ok := p.convs[sess.ID()]
	p.mu.Unlock()
	if ok {
		return msgs
	}
	replay, sub, err := sess.Subscribe(1, false, 1)
	if err != nil {
		p.d.log.Error("reading a session's transcript", "session", sess.ID(), "error", err)
		return nil
	}
	sub.Close()
	msgs, open, repair, problems := agent.Transcript(replay)
	for _, pr := range problems {
		p.d.log.Warn("a transcript event was skipped", "session", sess.ID(), "problem", pr)
	}
	if repair != nil {
		p.appendEvent(sess, &event.Event{Type: event.ToolResults, Message: agent.MessageJSON(*repair)})
		msgs = append(msgs, *repair)
	}
	if open != nil {
		p.appendEvent(sess, &event.Event{Type: event.PromptEnded, Prompt: &event.Prompt{ID: open.ID, ClientID: open.ClientID, StopReason: agent.StopInterrupted,
			Error: "the daemon stopped while this prompt ran"}})
	}
	p.mu.Lock()
	p.convs[sess.ID()] = msgs
	p.mu.Unlock()
	return msgs
}

func (p *prompts) appendEvent(sess *session.Session, e *event.Event) {
	if _, err := sess.Append(e); err != nil {
		p.d.log.Error("appending a prompt event", "session", sess.ID(), "type", e.Type, "error", err)
		return
	}
	switch e.Type {
	case event.PromptStarted, event.AssistantMessage, event.ToolResults, event.Compacted:
		p.files.add(sess, e)
	}
}

// deltaInterval is how often a streaming answer's pieces go to clients at
// most: a model can send thousands a second, each an event for every
// attached client; pieces within it are joined (the first goes at once).
const deltaInterval = 15 * time.Millisecond

// deltaCoalescer joins consecutive pieces of the same block into one
// assistant_delta per deltaInterval. It is used by one loop goroutine.
type deltaCoalescer struct {
	pending *event.Delta
	last    time.Time // when the last delta went out
}

// add takes a stream event and returns the deltas to send now (a block
// boundary or the interval flushes what is pending).
func (c *deltaCoalescer) add(promptID string, ev model.Event) []*event.Delta {
	d := deltaOf(promptID, ev)
	if d == nil {
		if ev.Type == model.EventBlockStop || ev.Type == model.EventMessage {
			if f := c.flush(); f != nil {
				return []*event.Delta{f}
			}
		}
		return nil
	}
	var out []*event.Delta
	switch {
	case c.pending == nil:
		c.pending = d
	case c.pending.Kind == d.Kind && c.pending.Index == d.Index && d.ToolUseID == "":
		c.pending.Text += d.Text
	default:
		out = append(out, c.flush())
		c.pending = d
	}
	if time.Since(c.last) >= deltaInterval {
		out = append(out, c.flush())
	}
	return out
}

// flush returns the pending delta (nil when none) and starts a new interval.
func (c *deltaCoalescer) flush() *event.Delta {
	d := c.pending
	c.pending = nil
	if d != nil {
		c.last = time.Now()
	}
	return d
}

// deltaOf is the client event of a stream event ("" pieces and block
// boundaries are not sent).
func deltaOf(promptID string, ev model.Event) *event.Delta {
	d := &event.Delta{PromptID: promptID, Index: ev.Index, Text: ev.Text}
	switch ev.Type {
	case model.EventText:
		d.Kind = event.DeltaText
	case model.EventThinking:
		d.Kind = event.DeltaThinking
	case model.EventToolUse:
		d.Kind, d.ToolUseID, d.Name = event.DeltaToolInput, ev.ID, ev.Name
		return d
	case model.EventToolInput:
		d.Kind = event.DeltaToolInput
	default:
		return nil
	}
	if d.Text == "" {
		return nil
	}
	return d
}

// modelTools are the specs the model gets (what ListTools gives the
// session: its loaded tools in full) and the names of the deferred ones.
func (d *Daemon) modelTools(sess *session.Session) (specs []model.Tool, deferred []string) {
	tools := d.registry.Tools()
	tools = append(tools, d.mcp.tools(sess.ID())...)
	isDeferred := d.deferral.deferred(sess, tools)
	for _, t := range tools {
		spec := t.Spec()
		if isDeferred[spec.Name] && !sess.Loaded(spec.Name) {
			deferred = append(deferred, spec.Name)
			continue
		}
		desc := spec.Description
		if dt, ok := t.(interface{ Description(tool.Env) string }); ok {
			desc = dt.Description(sess)
		}
		schema := spec.InputSchema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		specs = append(specs, model.Tool{Name: spec.Name, Description: desc, InputSchema: schema})
	}
	return specs, deferred
}

// newPromptID returns "p_" and 16 random hex digits.
func newPromptID() string {
	var b [8]byte
	rand.Read(b[:])
	return "p_" + hex.EncodeToString(b[:])
}

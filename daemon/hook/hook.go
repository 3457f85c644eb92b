// Package hook runs the hooks of the settings files: their configuration
// (the "hooks" key of every settings source, merged, identical handlers run
// once), matchers and `if` conditions, the command and http runners, and
// what their output decides (reference.md section 3).
//
// It implements the pipeline's hook stage (dispatch.Hooks), the session
// hooks the server calls (SessionStart, SessionEnd, CwdChanged,
// ConfigChange) and the query loop's (UserPromptSubmit, Stop, PreCompact,
// SubagentStart, SubagentStop), with the hooks a session adds at run time
// (a skill's, an agent definition's). It decides nothing about permissions
// itself: a PreToolUse decision goes to the permission engine, which weighs
// it against rules and the mode. It must not import the pipeline or
// anything above it.
package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Options configures Hooks. A nil *Options (or a nil Settings) means no hooks.
type Options struct {
	// Settings returns the merged settings of a project root.
	Settings func(root string) (*config.Settings, []config.Problem)
	// Trusted reports whether a project root is trusted; untrusted
	// projects' project and local hooks are ignored. Nil trusts nothing.
	Trusted func(root string) bool
	// Logger receives configuration problems and hook failures (default: none).
	Logger hclog.Logger
	// Emit appends a hook event to a session's log. Nil appends through the
	// session itself when it has an Append method (as dispatch.Session does).
	Emit func(sessionID string, e *event.Event)
	// Recheck is how long a parsed configuration is used before the
	// settings are consulted again (default 1 s). ConfigChange and
	// Invalidate drop it at once.
	Recheck time.Duration
	// Ask answers a hook of type prompt: the session's small model (or
	// model, when the hook names one) gets system and prompt and its text
	// answer is returned. Nil: prompt hooks fail (no decision).
	Ask AskFunc
}

// AskFunc asks a model one question for a session.
type AskFunc func(ctx context.Context, env tool.Env, model, system, prompt string) (string, error)

// MaxOutputChars is the size over which a hook's text (a reason, context,
// message) is saved to a file and replaced by a preview.
const MaxOutputChars = 10000

// Hooks runs hooks. It is safe for concurrent use.
type Hooks struct {
	opts Options
	log  hclog.Logger

	mu    sync.RWMutex // guards cache
	cache map[string]*cacheEntry

	sessMu sync.RWMutex // guards sess
	sess   map[string]*sessionHooks
}

type cacheEntry struct {
	settings *config.Settings
	cfg      *Config
	checked  time.Time
}

// New returns Hooks. It starts nothing.
func New(opts *Options) *Hooks {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Recheck <= 0 {
		o.Recheck = time.Second
	}
	return &Hooks{opts: o, log: o.Logger.Named("hook"), cache: map[string]*cacheEntry{}}
}

// Invalidate drops the parsed configuration of every project, so the next
// hook event reads the settings again.
func (h *Hooks) Invalidate() {
	h.mu.Lock()
	clear(h.cache)
	h.mu.Unlock()
}

// Config returns the parsed hooks of a project root.
func (h *Hooks) Config(root string) *Config {
	if h == nil || h.opts.Settings == nil {
		return nil
	}
	now := time.Now()
	h.mu.RLock()
	e := h.cache[root]
	var checked time.Time // written under the lock by a concurrent turn
	if e != nil {
		checked = e.checked
	}
	h.mu.RUnlock()
	if e != nil && now.Sub(checked) < h.opts.Recheck {
		return e.cfg
	}
	s, _ := h.opts.Settings(root)
	if e != nil && e.settings == s {
		h.mu.Lock()
		e.checked = now
		h.mu.Unlock()
		return e.cfg
	}
	cfg := Parse(s)
	for _, p := range cfg.Problems {
		h.log.Warn("hook configuration ignored", "problem", p.Error())
	}
	h.mu.Lock()
	if len(h.cache) >= 256 {
		clear(h.cache)
	}
	h.cache[root] = &cacheEntry{settings: s, cfg: cfg, checked: now}
	h.mu.Unlock()
	return cfg
}

// Has reports whether any hook of the event (PreToolUse, …) is configured
// for the session env, before matchers, `if` and trust are applied. It is
// cheap and allocates nothing: the pipeline asks it before announcing a
// hook stage.
func (h *Hooks) Has(env tool.Env, eventName string) bool {
	if h == nil || env == nil {
		return false
	}
	idx := eventIndex(eventName)
	if idx < 0 {
		return false
	}
	cfg := h.configOf(env)
	return cfg != nil && len(cfg.groups[idx]) > 0
}

// selection is what to run for one event.
type selection struct {
	env      tool.Env
	root     string
	event    string
	tool     string
	turnID   string
	callID   string
	handlers []*Handler
}

// selectHandlers returns the handlers of event idx that match value (and,
// for tool events, whose `if` matches ev), de-duplicated, in configuration
// order; nil when there are none. It allocates nothing when no hook of the
// event is configured.
func (h *Hooks) selectHandlers(env tool.Env, idx int, value string, ev *ToolEvent) *selection {
	if h == nil || env == nil {
		return nil
	}
	root := rootOf(env)
	cfg := h.configOf(env)
	if cfg == nil || len(cfg.groups[idx]) == 0 {
		return nil
	}
	trusted := true
	if cfg.needTrust[idx] {
		trusted = h.opts.Trusted != nil && h.opts.Trusted(root)
	}
	var out []*Handler
	for _, g := range cfg.groups[idx] {
		if !g.trusted && !trusted || cfg.disableAll && !g.managed {
			continue
		}
		if !g.match.match(value) {
			continue
		}
	handlers:
		for _, hd := range g.Handlers {
			if hd.cond != nil && (ev == nil || !hd.cond.match(ev)) {
				continue
			}
			for _, o := range out {
				if o.key == hd.key {
					continue handlers
				}
			}
			out = append(out, hd)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return &selection{env: env, root: root, event: Events[idx], handlers: out}
}

// environ is the session's environment (its client's with the settings'
// env applied; the daemon's when the session has none) plus
// TACKLE_PROJECT_DIR and CLAUDE_PROJECT_DIR.
func environ(env tool.Env, root string) []string {
	base := env.Environ()
	if len(base) == 0 {
		base = os.Environ()
	}
	out := make([]string, 0, len(base)+2)
	for _, kv := range base {
		if strings.HasPrefix(kv, "TACKLE_PROJECT_DIR=") || strings.HasPrefix(kv, "CLAUDE_PROJECT_DIR=") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, "TACKLE_PROJECT_DIR="+root, "CLAUDE_PROJECT_DIR="+root)
}

// input is the JSON a handler gets on stdin (reference.md section 3).
type input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode,omitempty"`
	HookEventName  string `json:"hook_event_name"`
	// AgentID and AgentType are set inside a sub-agent only (AgentEnv).
	AgentID   string `json:"agent_id,omitempty"`
	AgentType string `json:"agent_type,omitempty"`

	ToolName              string          `json:"tool_name,omitempty"`
	ToolInput             json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID             string          `json:"tool_use_id,omitempty"`
	ToolResponse          map[string]any  `json:"tool_response,omitempty"`
	DurationMS            *int64          `json:"duration_ms,omitempty"`
	Error                 string          `json:"error,omitempty"`
	IsInterrupt           *bool           `json:"is_interrupt,omitempty"`
	PermissionSuggestions []suggestion    `json:"permission_suggestions,omitempty"`
	Reason                string          `json:"reason,omitempty"`
	ToolCalls             []batchEntry    `json:"tool_calls,omitempty"`

	Message          string `json:"message,omitempty"`
	NotificationType string `json:"notification_type,omitempty"`
	Source           string `json:"source,omitempty"`
	OldCwd           string `json:"old_cwd,omitempty"`
	NewCwd           string `json:"new_cwd,omitempty"`
	FilePath         string `json:"file_path,omitempty"`

	Prompt               string `json:"prompt,omitempty"`
	StopHookActive       *bool  `json:"stop_hook_active,omitempty"`
	LastAssistantMessage string `json:"last_assistant_message,omitempty"`
	Trigger              string `json:"trigger,omitempty"`
	CustomInstructions   string `json:"custom_instructions,omitempty"`

	// SubagentStop only: the child's transcript, and the parent's
	// background tasks and crons (always lists, empty in tackle).
	AgentTranscriptPath *string         `json:"agent_transcript_path,omitempty"`
	BackgroundTasks     json.RawMessage `json:"background_tasks,omitempty"`
	SessionCrons        json.RawMessage `json:"session_crons,omitempty"`
}

// responseOf is a call's tool_response as Claude Code sends it: each
// built-in tool's own response object (Write/Edit: filePath and what was
// written; Bash: stdout, stderr, interrupted; Read: the file object;
// Glob/Grep: the files), with tackle's own fields beside (status,
// is_error, content, text) for hooks written for tackle — but for Write,
// whose "content" is Claude Code's: the content written.
func responseOf(name string, input json.RawMessage, r *event.Result) map[string]any {
	if r == nil {
		return nil
	}
	text := resultText(r)
	out := map[string]any{"status": r.Status, "is_error": r.IsError, "content": r.Content, "text": text}
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	ok := r.Status == "completed"
	switch name {
	case "Write":
		typ := "update"
		if strings.Contains(text, "created") {
			typ = "create"
		}
		out["type"], out["filePath"], out["content"], out["success"] = typ, str("file_path"), str("content"), ok
	case "Edit":
		out["filePath"], out["oldString"], out["newString"], out["replaceAll"], out["success"] = str("file_path"), str("old_string"), str("new_string"), in["replace_all"] == true, ok
	case "MultiEdit":
		out["filePath"], out["edits"], out["success"] = str("file_path"), in["edits"], ok
	case "Bash":
		out["stdout"], out["stderr"], out["interrupted"], out["isImage"] = text, "", r.Status == "cancelled", false
	case "Read":
		out["type"] = "text"
		out["file"] = map[string]any{"filePath": str("file_path"), "content": text, "numLines": strings.Count(text, "\n")}
	case "Glob":
		files := nonEmptyLines(text)
		out["filenames"], out["numFiles"] = files, len(files)
	case "Grep":
		out["mode"] = str("output_mode")
		if out["mode"] == "" || out["mode"] == "files_with_matches" {
			files := nonEmptyLines(text)
			out["mode"], out["filenames"], out["numFiles"] = "files_with_matches", files, len(files)
		}
	}
	return out
}

func nonEmptyLines(s string) []string {
	out := []string{}
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func resultText(r *event.Result) string {
	var sb strings.Builder
	for i, c := range r.Content {
		if c.Type == "text" || c.Type == "" {
			if i > 0 && sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(c.Text)
		}
	}
	return sb.String()
}

type suggestion struct {
	Type        string           `json:"type"`
	Rules       []suggestionRule `json:"rules"`
	Behavior    string           `json:"behavior"`
	Destination string           `json:"destination"`
}

type suggestionRule struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

type batchEntry struct {
	ToolName     string          `json:"tool_name"`
	ToolInput    json.RawMessage `json:"tool_input"`
	ToolUseID    string          `json:"tool_use_id"`
	ToolResponse map[string]any  `json:"tool_response"`
}

func (h *Hooks) baseInput(env tool.Env, eventName, mode string) input {
	in := input{SessionID: env.SessionID(), Cwd: env.Cwd(), PermissionMode: mode, HookEventName: eventName}
	setAgent(&in, env)
	return in
}

func toolInput(ev *ToolEvent, eventName string) input {
	in := input{SessionID: ev.Env.SessionID(), Cwd: ev.Env.Cwd(), PermissionMode: ev.mode(), HookEventName: eventName, ToolName: ev.Tool}
	if ev.Call != nil {
		in.ToolInput, in.ToolUseID = ev.Call.Input, ev.Call.ID
	}
	setAgent(&in, ev.Env)
	return in
}

// AgentEnv is implemented by the session of a sub-agent: the input of
// every hook run for it carries agent_id and agent_type, as Claude Code's
// does inside a subagent. A session whose AgentID is "" (or that does not
// implement it) is a main session: the keys are left out.
type AgentEnv interface {
	// AgentID identifies the sub-agent (the id its parent was told).
	AgentID() string
	// AgentType is the agent type it runs (subagent_type).
	AgentType() string
}

// setAgent fills agent_id and agent_type when env is a sub-agent's.
func setAgent(in *input, env tool.Env) {
	if a, ok := env.(AgentEnv); ok {
		if id := a.AgentID(); id != "" {
			in.AgentID, in.AgentType = id, a.AgentType()
		}
	}
	if tp, ok := env.(TranscriptEnv); ok {
		in.TranscriptPath = tp.TranscriptPath()
	}
}

// TranscriptEnv is implemented by a session that keeps a transcript file
// in Claude Code's JSONL format: hook inputs carry its transcript_path.
type TranscriptEnv interface {
	TranscriptPath() string
}

// runAll runs the selected handlers in parallel, with in as their stdin,
// and returns their results in configuration order.
func (h *Hooks) runAll(ctx context.Context, sel *selection, in input) []runResult {
	data, err := json.Marshal(in)
	if err != nil { // cannot happen: every field marshals
		h.log.Error("encoding hook input", "event", sel.event, "error", err)
		return nil
	}
	env := environ(sel.env, sel.root)
	dir := sel.env.Cwd()
	var ask askFunc
	if h.opts.Ask != nil {
		ask = func(ctx context.Context, model, system, prompt string) (string, error) {
			return h.opts.Ask(ctx, sel.env, model, system, prompt)
		}
	}
	res := make([]runResult, len(sel.handlers))
	if len(sel.handlers) == 1 {
		res[0] = run(ctx, sel.handlers[0], data, dir, env, ask)
		return res
	}
	var wg sync.WaitGroup
	for i, hd := range sel.handlers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = run(ctx, hd, data, dir, env, ask)
		}()
	}
	wg.Wait()
	return res
}

// emit appends a hook_ran event (and a notice for a systemMessage).
func (h *Hooks) emit(sel *selection, r *runResult, outcome, reason string) {
	if outcome == event.HookError || outcome == event.HookTimeout {
		h.log.Warn("hook failed", "event", sel.event, "hook", r.h.Name(), "tool", sel.tool, "outcome", outcome, "reason", reason)
	} else {
		h.log.Debug("hook ran", "event", sel.event, "hook", r.h.Name(), "tool", sel.tool, "outcome", outcome)
	}
	e := &event.Event{Type: event.HookRan, TurnID: sel.turnID, CallID: sel.callID, Tool: sel.tool,
		Hook: &event.HookRun{Event: sel.event, Hook: r.h.Name(), Tool: sel.tool, Outcome: outcome, Reason: reason, DurationMS: r.duration.Milliseconds()}}
	h.append(sel.env, e)
	if r.out != nil && r.out.SystemMessage != "" {
		h.append(sel.env, &event.Event{Type: event.Notice, TurnID: sel.turnID, CallID: sel.callID, Tool: sel.tool,
			Text: fmt.Sprintf("%s hook %s: %s", sel.event, r.h.Name(), h.limit(sel.env, r.out.SystemMessage))})
	}
}

func (h *Hooks) append(env tool.Env, e *event.Event) {
	if h.opts.Emit != nil {
		h.opts.Emit(env.SessionID(), e)
		return
	}
	if a, ok := env.(interface {
		Append(e *event.Event) (*event.Event, error)
	}); ok {
		if _, err := a.Append(e); err != nil {
			h.log.Error("appending hook event", "session", env.SessionID(), "error", err)
		}
	}
}

// limit replaces a text over MaxOutputChars with a preview and the path of
// a file holding all of it.
func (h *Hooks) limit(env tool.Env, s string) string {
	if len(s) <= MaxOutputChars || utf8.RuneCountInString(s) <= MaxOutputChars {
		return s
	}
	preview := s
	for n := 2000; len(preview) > n; n-- {
		if utf8.RuneStart(s[n]) {
			preview = s[:n]
			break
		}
	}
	path, err := persistText(env.OutputDir(), s)
	if err != nil {
		h.log.Error("persisting large hook output", "error", err)
		return fmt.Sprintf("<persisted-output>\nHook output too large (%d KB), and saving it failed (%v): only a preview is available.\n\nPreview (first 2KB):\n%s\n...\n</persisted-output>", (len(s)+1023)/1024, err, preview)
	}
	return fmt.Sprintf("<persisted-output>\nHook output too large (%d KB). Full output saved to: %s\n\nPreview (first 2KB):\n%s\n...\n</persisted-output>", (len(s)+1023)/1024, path, preview)
}

func persistText(dir, s string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("the session has no output directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating output directory %q: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "hook-*.txt")
	if err != nil {
		return "", fmt.Errorf("creating hook output file: %w", err)
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("writing hook output %q: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("writing hook output %q: %w", f.Name(), err)
	}
	return filepath.Abs(f.Name())
}

// blockReason is the reason of an exit-2 block: stderr, else a default.
func blockReason(r *runResult) string {
	if r.stderr != "" {
		return r.stderr
	}
	return "the hook exited with status 2 and gave no reason"
}

// failed returns the outcome of a run that produced no usable output, or "".
func failed(r *runResult) (string, string) {
	switch {
	case r.timeout:
		return event.HookTimeout, r.err
	case r.out == nil && r.err != "":
		return event.HookError, r.err
	}
	return "", ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func joinNonEmpty(parts []string, sep string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}

func toolSelection(sel *selection, ev *ToolEvent) {
	sel.tool, sel.turnID = ev.Tool, ev.TurnID
	if ev.Call != nil {
		sel.callID = ev.Call.ID
	}
}

// PreToolUse runs the PreToolUse hooks matching the call and combines
// their decisions: any exit 2 (or continue:false) blocks; otherwise deny >
// defer > ask > allow, where defer leaves the decision to the rules.
func (h *Hooks) PreToolUse(ctx context.Context, ev ToolEvent) PreResult {
	sel := h.selectHandlers(ev.Env, idxPreToolUse, ev.Tool, &ev)
	if sel == nil {
		return PreResult{}
	}
	toolSelection(sel, &ev)
	runs := h.runAll(ctx, sel, toolInput(&ev, PreToolUse))
	rank := map[string]int{"allow": 1, "ask": 2, "defer": 3, "deny": 4}
	var (
		blocks                []string
		best                  string
		reasons, names, ctxts []string
		updated               json.RawMessage
	)
	type verdict struct{ decision, reason, name string }
	var verdicts []verdict
	for i := range runs {
		r := &runs[i]
		if o, why := failed(r); o != "" {
			h.emit(sel, r, o, why)
			continue
		}
		if r.block {
			reason := h.limit(ev.Env, blockReason(r))
			blocks = append(blocks, reason)
			h.emit(sel, r, event.HookBlocked, reason)
			continue
		}
		o := r.out
		if o == nil {
			h.emit(sel, r, event.HookOK, r.err)
			continue
		}
		if o.Continue != nil && !*o.Continue {
			reason := h.limit(ev.Env, orDefault(o.StopReason, "the hook said continue: false"))
			blocks = append(blocks, reason)
			h.emit(sel, r, event.HookBlocked, reason)
			continue
		}
		decision, reason := "", o.Reason
		switch o.Decision { // the deprecated top-level form
		case "approve":
			decision = "allow"
		case "block":
			decision = "deny"
		}
		outcome, why := event.HookOK, r.err
		if s := o.HookSpecificOutput; s != nil {
			if s.PermissionDecision != "" {
				decision, reason = s.PermissionDecision, s.PermissionDecisionReason
			}
			if _, ok := rank[decision]; !ok && decision != "" {
				outcome, why = event.HookError, fmt.Sprintf("permissionDecision %q is not one of allow, deny, ask, defer; ignored", decision)
				decision = ""
			}
			if s.AdditionalContext != "" {
				ctxts = append(ctxts, h.limit(ev.Env, s.AdditionalContext))
			}
			if len(s.UpdatedInput) > 0 && string(s.UpdatedInput) != "null" && updated == nil && decision != "deny" {
				updated = s.UpdatedInput
			}
		}
		reason = h.limit(ev.Env, reason)
		switch decision {
		case "allow":
			outcome, why = event.HookAllowed, reason
		case "deny":
			outcome, why = event.HookDenied, reason
		case "ask":
			outcome, why = event.HookAsked, reason
		case "defer":
			outcome, why = event.HookOK, joinNonEmpty([]string{"defer", reason}, ": ")
		}
		if decision != "" {
			verdicts = append(verdicts, verdict{decision, reason, r.h.Name()})
			if rank[decision] > rank[best] {
				best = decision
			}
		}
		h.emit(sel, r, outcome, why)
	}
	res := PreResult{AdditionalContext: strings.Join(ctxts, "\n"), UpdatedInput: updated}
	if len(blocks) > 0 {
		res.Block, res.Reason = true, strings.Join(blocks, "; ")
		res.UpdatedInput = nil
		return res
	}
	for _, v := range verdicts {
		if v.decision == best {
			reasons = append(reasons, v.reason)
			names = append(names, v.name)
		}
	}
	switch best {
	case "allow":
		res.Decision = permission.Allow
	case "ask":
		res.Decision = permission.Ask
	case "deny":
		res.Decision = permission.Deny
		res.UpdatedInput = nil
	}
	if res.Decision != "" {
		res.Reason, res.Hook = joinNonEmpty(reasons, "; "), strings.Join(names, ", ")
	}
	return res
}

// post runs PostToolUse-like hooks and combines them.
func (h *Hooks) post(ctx context.Context, sel *selection, env tool.Env, in input, replace bool) PostResult {
	runs := h.runAll(ctx, sel, in)
	var res PostResult
	var reasons, ctxts []string
	for i := range runs {
		r := &runs[i]
		if o, why := failed(r); o != "" {
			h.emit(sel, r, o, why)
			continue
		}
		if r.block {
			reason := h.limit(env, blockReason(r))
			reasons = append(reasons, reason)
			h.emit(sel, r, event.HookBlocked, reason)
			continue
		}
		o := r.out
		if o == nil {
			h.emit(sel, r, event.HookOK, r.err)
			continue
		}
		outcome, why := event.HookOK, r.err
		if s := o.HookSpecificOutput; s != nil {
			if s.AdditionalContext != "" {
				ctxts = append(ctxts, h.limit(env, s.AdditionalContext))
			}
			if replace && len(s.UpdatedToolOutput) > 0 && string(s.UpdatedToolOutput) != "null" && !res.ReplaceOutput {
				var txt string
				if json.Unmarshal(s.UpdatedToolOutput, &txt) != nil {
					txt = string(s.UpdatedToolOutput) // an object or array: its JSON
				}
				res.ReplaceOutput, res.UpdatedOutput = true, h.limit(env, txt)
			}
		}
		switch {
		case o.Continue != nil && !*o.Continue:
			why = h.limit(env, orDefault(o.StopReason, "the hook said continue: false"))
			outcome = event.HookBlocked
			reasons = append(reasons, why)
		case o.Decision == "block":
			why = h.limit(env, orDefault(o.Reason, "no reason given"))
			outcome = event.HookBlocked
			reasons = append(reasons, why)
		}
		h.emit(sel, r, outcome, why)
	}
	res.AdditionalContext = strings.Join(ctxts, "\n")
	if len(reasons) > 0 {
		res.Flag, res.Reason = true, strings.Join(reasons, "; ")
	}
	return res
}

// PostToolUse runs the PostToolUse hooks of a call whose handler ran.
func (h *Hooks) PostToolUse(ctx context.Context, ev ToolEvent, res *event.Result) PostResult {
	sel := h.selectHandlers(ev.Env, idxPostToolUse, ev.Tool, &ev)
	if sel == nil {
		return PostResult{}
	}
	toolSelection(sel, &ev)
	in := toolInput(&ev, PostToolUse)
	var callInput json.RawMessage
	if ev.Call != nil {
		callInput = ev.Call.Input
	}
	in.ToolResponse = responseOf(ev.Tool, callInput, res)
	if res != nil {
		d := res.DurationMS
		in.DurationMS = &d
	}
	return h.post(ctx, sel, ev.Env, in, true)
}

// PostToolUseFailure runs the PostToolUseFailure hooks of a call that
// failed (its handler failed, or it was interrupted).
func (h *Hooks) PostToolUseFailure(ctx context.Context, ev ToolEvent, res *event.Result) PostResult {
	sel := h.selectHandlers(ev.Env, idxPostToolUseFailure, ev.Tool, &ev)
	if sel == nil {
		return PostResult{}
	}
	toolSelection(sel, &ev)
	in := toolInput(&ev, PostToolUseFailure)
	interrupted := res != nil && res.Status == event.StatusCancelled
	in.IsInterrupt = &interrupted
	if res != nil {
		in.Error = resultText(res)
		d := res.DurationMS
		in.DurationMS = &d
	}
	return h.post(ctx, sel, ev.Env, in, false)
}

// PostToolBatch runs the PostToolBatch hooks once for a finished batch of
// calls. Its additionalContext and block reason are for the model.
func (h *Hooks) PostToolBatch(ctx context.Context, env tool.Env, turnID string, calls []BatchCall) PostResult {
	sel := h.selectHandlers(env, idxPostToolBatch, "", nil)
	if sel == nil {
		return PostResult{}
	}
	sel.turnID = turnID
	in := h.baseInput(env, PostToolBatch, sessionMode(env))
	for _, c := range calls {
		b := batchEntry{ToolName: c.Tool}
		if c.Call != nil {
			b.ToolInput, b.ToolUseID = c.Call.Input, c.Call.ID
		}
		b.ToolResponse = responseOf(c.Tool, b.ToolInput, c.Result)
		in.ToolCalls = append(in.ToolCalls, b)
	}
	return h.post(ctx, sel, env, in, false)
}

// PermissionRequest runs the PermissionRequest hooks of a call about to
// ask people. A deny from any hook wins over an allow; "" asks people.
// alwaysRule is the rule an "always" answer would save.
func (h *Hooks) PermissionRequest(ctx context.Context, ev ToolEvent, alwaysRule string) PermissionResult {
	sel := h.selectHandlers(ev.Env, idxPermissionRequest, ev.Tool, &ev)
	if sel == nil {
		return PermissionResult{}
	}
	toolSelection(sel, &ev)
	in := toolInput(&ev, PermissionRequest)
	if alwaysRule != "" {
		tl, spec := alwaysRule, ""
		if i := strings.IndexByte(alwaysRule, '('); i > 0 && strings.HasSuffix(alwaysRule, ")") {
			tl, spec = alwaysRule[:i], alwaysRule[i+1:len(alwaysRule)-1]
		}
		in.PermissionSuggestions = []suggestion{{Type: "addRules", Rules: []suggestionRule{{ToolName: tl, RuleContent: spec}}, Behavior: "allow", Destination: "localSettings"}}
	}
	runs := h.runAll(ctx, sel, in)
	var res PermissionResult
	var allowNames, denyNames, msgs []string
	var updated json.RawMessage
	for i := range runs {
		r := &runs[i]
		if o, why := failed(r); o != "" {
			h.emit(sel, r, o, why)
			continue
		}
		if r.block {
			h.emit(sel, r, event.HookOK, "exit status 2 does not answer a permission request; ignored")
			continue
		}
		var d *struct {
			Behavior     string          `json:"behavior"`
			UpdatedInput json.RawMessage `json:"updatedInput"`
			Message      string          `json:"message"`
			Interrupt    bool            `json:"interrupt"`
		}
		if r.out != nil && r.out.HookSpecificOutput != nil {
			d = r.out.HookSpecificOutput.Decision
		}
		switch {
		case d == nil:
			h.emit(sel, r, event.HookOK, r.err)
		case d.Behavior == "allow":
			allowNames = append(allowNames, r.h.Name())
			if updated == nil && len(d.UpdatedInput) > 0 && string(d.UpdatedInput) != "null" {
				updated = d.UpdatedInput
			}
			h.emit(sel, r, event.HookAllowed, d.Message)
		case d.Behavior == "deny":
			denyNames = append(denyNames, r.h.Name())
			msg := h.limit(ev.Env, d.Message)
			msgs = append(msgs, msg)
			h.emit(sel, r, event.HookDenied, msg)
		default:
			h.emit(sel, r, event.HookError, fmt.Sprintf("decision.behavior %q is not allow or deny; ignored", d.Behavior))
		}
	}
	switch {
	case len(denyNames) > 0:
		res.Decision, res.Hook, res.Message = permission.Deny, strings.Join(denyNames, ", "), joinNonEmpty(msgs, "; ")
	case len(allowNames) > 0:
		res.Decision, res.Hook, res.UpdatedInput = permission.Allow, strings.Join(allowNames, ", "), updated
	}
	return res
}

// observe runs hooks whose output decides nothing and records each run.
func (h *Hooks) observe(ctx context.Context, sel *selection, in input) []runResult {
	runs := h.runAll(ctx, sel, in)
	for i := range runs {
		r := &runs[i]
		if o, why := failed(r); o != "" {
			h.emit(sel, r, o, why)
			continue
		}
		why := r.err
		if r.block {
			why = blockReason(r)
		}
		h.emit(sel, r, event.HookOK, h.limit(sel.env, why))
	}
	return runs
}

// PermissionDenied runs the PermissionDenied hooks after a call was denied
// (by a rule, the mode, a hook, a person or the timeout). They only observe.
func (h *Hooks) PermissionDenied(ctx context.Context, ev ToolEvent, reason string) {
	sel := h.selectHandlers(ev.Env, idxPermissionDenied, ev.Tool, &ev)
	if sel == nil {
		return
	}
	toolSelection(sel, &ev)
	in := toolInput(&ev, PermissionDenied)
	in.Reason = reason
	h.observe(ctx, sel, in)
}

// Notification types.
const (
	// NotifyPermissionPrompt: a permission request waits for an answer.
	NotifyPermissionPrompt = "permission_prompt"
)

// Notification runs the Notification hooks (matched on the notification
// type) with a message for people.
func (h *Hooks) Notification(ctx context.Context, env tool.Env, turnID, callID, notificationType, message string) {
	sel := h.selectHandlers(env, idxNotification, notificationType, nil)
	if sel == nil {
		return
	}
	sel.turnID, sel.callID = turnID, callID
	in := h.baseInput(env, Notification, sessionMode(env))
	in.Message, in.NotificationType = message, notificationType
	h.observe(ctx, sel, in)
}

// SessionStart sources (the SessionStart matcher's values).
const (
	SourceStartup = "startup"
	SourceResume  = "resume"
)

// SessionStart runs the SessionStart hooks (matched on source: startup when
// a session is created, resume when a client attaches to an existing one)
// and returns the context they add (additionalContext, or plain stdout).
func (h *Hooks) SessionStart(ctx context.Context, env tool.Env, source string) string {
	sel := h.selectHandlers(env, idxSessionStart, source, nil)
	if sel == nil {
		return ""
	}
	in := h.baseInput(env, SessionStart, sessionMode(env))
	in.Source = source
	runs := h.observe(ctx, sel, in)
	var ctxts []string
	for _, r := range runs {
		switch {
		case r.timeout || r.block:
		case r.out != nil && r.out.HookSpecificOutput != nil:
			ctxts = append(ctxts, r.out.HookSpecificOutput.AdditionalContext)
		case r.exitCode == 0:
			ctxts = append(ctxts, r.plain)
		}
	}
	return h.limit(env, joinNonEmpty(ctxts, "\n"))
}

// SessionEnd runs the SessionEnd hooks (matched on reason: e.g. "deleted",
// "shutdown").
func (h *Hooks) SessionEnd(ctx context.Context, env tool.Env, reason string) {
	sel := h.selectHandlers(env, idxSessionEnd, reason, nil)
	if sel == nil {
		return
	}
	in := h.baseInput(env, SessionEnd, sessionMode(env))
	in.Reason = reason
	h.observe(ctx, sel, in)
}

// CwdChanged runs the CwdChanged hooks after the session's working
// directory moved from oldDir to newDir.
func (h *Hooks) CwdChanged(ctx context.Context, env tool.Env, oldDir, newDir string) {
	sel := h.selectHandlers(env, idxCwdChanged, "", nil)
	if sel == nil {
		return
	}
	in := h.baseInput(env, CwdChanged, sessionMode(env))
	in.OldCwd, in.NewCwd = oldDir, newDir
	h.observe(ctx, sel, in)
}

// ConfigChange drops the cached hook configuration and runs the
// ConfigChange hooks of the session env for the settings file at path
// (matched on its source: user_settings, project_settings,
// local_settings, policy_settings). Call it once per loaded session whose
// settings include the file.
func (h *Hooks) ConfigChange(ctx context.Context, env tool.Env, path string) {
	h.Invalidate()
	source := "project_settings"
	switch {
	case strings.HasSuffix(path, "settings.local.json"):
		source = "local_settings"
	case strings.Contains(path, "managed-settings"):
		source = "policy_settings"
	case !strings.HasPrefix(path, rootOf(env)+string(filepath.Separator)):
		source = "user_settings"
	}
	sel := h.selectHandlers(env, idxConfigChange, source, nil)
	if sel == nil {
		return
	}
	in := h.baseInput(env, ConfigChange, sessionMode(env))
	in.Source, in.FilePath = source, path
	h.observe(ctx, sel, in)
}

func sessionMode(env tool.Env) string {
	if m, ok := env.(interface{ PermissionMode() string }); ok {
		if mode := m.PermissionMode(); mode != "" {
			return mode
		}
	}
	return permission.ModeDefault
}

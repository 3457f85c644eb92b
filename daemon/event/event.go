// Package event defines the domain events of a session's log and the Bus that
// fans them out to attached clients.
//
// Every step of a tool call is an Event with a per-session sequence number;
// the session package assigns the numbers and persists events before
// publishing them. This package does no I/O and knows nothing of protobuf.
package event

import (
	"encoding/json"
	"time"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Type names an event. The strings are stable: they are stored in the
// database and printed by `tackle attach --json`.
type Type string

const (
	// TurnStarted: a batch of tool calls (one model turn) was accepted. Turn.Calls lists them.
	TurnStarted Type = "turn_started"
	// CallState: a call moved to a new non-final state (CallState field).
	CallState Type = "call_state"
	// CallProgress: output while a handler runs. May be dropped for slow readers.
	CallProgress Type = "call_progress"
	// CallResult: the one final result of a call.
	CallResult Type = "call_result"
	// TurnEnded: every call of the turn has its result.
	TurnEnded Type = "turn_ended"
	// PermissionRequested: a call waits for a person's answer.
	PermissionRequested Type = "permission_requested"
	// PermissionResolved: a permission request was answered, timed out or cancelled.
	PermissionResolved Type = "permission_resolved"
	// SessionUpdated: cwd, mode, todos or directories changed.
	SessionUpdated Type = "session_updated"
	// Notice: something a person should know (config error, daemon restart).
	Notice Type = "notice"
	// ToolsChanged: the session's tool pool changed (an MCP server connected,
	// failed or changed its lists); Text names the server.
	ToolsChanged Type = "tools_changed"
	// SkillsChanged: a touched file revealed nested skills or activated
	// skills with paths; Text names them.
	SkillsChanged Type = "skills_changed"
	// TodosUpdated: the session's todo list was replaced (Session.Todos holds it).
	TodosUpdated Type = "todos_updated"
	// ShellUpdated: a background shell started, exited or was killed (Shell holds it).
	ShellUpdated Type = "shell_updated"
	// HookRan: a hook handler ran (Hook holds what it was and what came of it).
	HookRan Type = "hook_ran"

	// The query loop's events (daemon/agent). The session log is the
	// transcript: PromptStarted (the user's message), AssistantMessage and
	// ToolResults, in order, rebuild the conversation.

	// PromptQueued: a prompt arrived while another runs; it goes to the
	// model at the next request (Prompt holds it).
	PromptQueued Type = "prompt_queued"
	// PromptStarted: a prompt's loop started (Prompt holds it; Message the
	// user message as the model gets it).
	PromptStarted Type = "prompt_started"
	// AssistantDelta: a piece of the model's answer as it streams (Delta).
	// May be dropped for slow readers; AssistantMessage holds it all.
	AssistantDelta Type = "assistant_delta"
	// AssistantMessage: one whole assistant message (Message).
	AssistantMessage Type = "assistant_message"
	// ToolResults: the user message that follows an assistant message: a
	// tool_result for each of its tool calls, then the text of prompts
	// queued meanwhile (Message).
	ToolResults Type = "tool_results"
	// ModelRetry: a model request failed and is retried (Retry).
	ModelRetry Type = "model_retry"
	// Compacted: the conversation was replaced by a summary; Message is the
	// user message it now starts with (the transcript restarts there).
	Compacted Type = "compacted"
	// PromptEnded: a prompt's loop ended (Prompt: StopReason, Usage, Error).
	PromptEnded Type = "prompt_ended"
	// SubagentUpdated: a sub-agent of the session started, called a tool or
	// ended (Subagent; CallID is its Agent call).
	SubagentUpdated Type = "subagent_updated"
	// MCPAuthRequired: an MCP server of the session waits for a person to
	// authorise tackle in a browser, or that flow ended (MCPAuth).
	MCPAuthRequired Type = "mcp_auth_required"
)

// Types lists every event type (TestTypesListsEveryType keeps it whole).
var Types = []Type{
	TurnStarted, CallState, CallProgress, CallResult, TurnEnded, PermissionRequested, PermissionResolved,
	SessionUpdated, Notice, ToolsChanged, SkillsChanged, TodosUpdated, ShellUpdated, HookRan, PromptQueued,
	PromptStarted, AssistantDelta, AssistantMessage, ToolResults, ModelRetry, Compacted, PromptEnded,
	SubagentUpdated, MCPAuthRequired,
}

// Call states, in pipeline order. The final states are the Status values of a Result.
const (
	StateQueued             = "queued"
	StateValidating         = "validating"
	StateHookPre            = "hook_pre"
	StateAwaitingPermission = "awaiting_permission"
	StateRunning            = "running"
	StateHookPost           = "hook_post"
)

// Final statuses of a call.
const (
	StatusCompleted = "completed" // the handler ran and succeeded
	StatusFailed    = "failed"    // the handler ran (or panicked) and failed
	StatusInvalid   = "invalid"   // unknown tool, schema or validation failure
	StatusDenied    = "denied"    // permission denied (rule, mode, person, timeout)
	StatusBlocked   = "blocked"   // a hook blocked the call
	StatusCancelled = "cancelled" // cancelled, interrupted, shutdown
)

// Event is one entry of a session's append-only log.
type Event struct {
	Seq       uint64    `json:"seq"`
	SessionID string    `json:"session_id"`
	Time      time.Time `json:"time"`
	Type      Type      `json:"type"`
	TurnID    string    `json:"turn_id,omitempty"`
	CallID    string    `json:"call_id,omitempty"`
	Tool      string    `json:"tool,omitempty"`

	// State is set for CallState.
	State string `json:"state,omitempty"`
	// Text is set for CallProgress (output) and Notice (message).
	Text string `json:"text,omitempty"`
	// Turn is set for TurnStarted.
	Turn *Turn `json:"turn,omitempty"`
	// Result is set for CallResult.
	Result *Result `json:"result,omitempty"`
	// Permission is set for PermissionRequested.
	Permission *PermissionRequest `json:"permission,omitempty"`
	// Resolution is set for PermissionResolved.
	Resolution *PermissionResolution `json:"resolution,omitempty"`
	// Session is set for SessionUpdated and TodosUpdated: the fields that changed.
	Session *SessionChange `json:"session,omitempty"`
	// Shell is set for ShellUpdated.
	Shell *ShellInfo `json:"shell,omitempty"`
	// Subagent is set for SubagentUpdated.
	Subagent *SubagentInfo `json:"subagent,omitempty"`
	// Hook is set for HookRan.
	Hook *HookRun `json:"hook,omitempty"`
	// Prompt is set for PromptQueued, PromptStarted and PromptEnded.
	Prompt *Prompt `json:"prompt,omitempty"`
	// Delta is set for AssistantDelta.
	Delta *Delta `json:"delta,omitempty"`
	// Message is set for PromptStarted, AssistantMessage and ToolResults:
	// a model.Message as JSON (this package does not import model).
	Message json.RawMessage `json:"message,omitempty"`
	// Retry is set for ModelRetry.
	Retry *Retry `json:"retry,omitempty"`
	// MCPAuth is set for MCPAuthRequired.
	MCPAuth *MCPAuth `json:"mcp_auth,omitempty"`
}

// MCPAuth is a step of an MCP server's OAuth flow.
type MCPAuth struct {
	Server string `json:"server"`
	// State is "required" (URL is to be opened), "authorized" or "failed".
	State string `json:"state"`
	URL   string `json:"url,omitempty"`
	Error string `json:"error,omitempty"`
}

// Prompt is one prompt of a session.
type Prompt struct {
	ID       string `json:"id"`
	ClientID string `json:"client_id,omitempty"`
	// Text is the prompt's text as the person typed it.
	Text  string `json:"text,omitempty"`
	Model string `json:"model,omitempty"`
	// StopReason, Usage, Requests, Error and FinalText are set for PromptEnded.
	StopReason string `json:"stop_reason,omitempty"`
	Usage      *Usage `json:"usage,omitempty"`
	Requests   int    `json:"requests,omitempty"`
	Error      string `json:"error,omitempty"`
	FinalText  string `json:"final_text,omitempty"`
}

// Usage is the token use of a prompt.
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
}

// Delta kinds.
const (
	DeltaText      = "text"
	DeltaThinking  = "thinking"
	DeltaToolInput = "tool_input"
)

// Delta is a piece of a streaming assistant message.
type Delta struct {
	PromptID string `json:"prompt_id"`
	// Kind is DeltaText, DeltaThinking or DeltaToolInput.
	Kind  string `json:"kind"`
	Index int    `json:"index"`
	Text  string `json:"text"`
	// ToolUseID and Name are set on the first tool_input delta of a call.
	ToolUseID string `json:"tool_use_id,omitempty"`
	Name      string `json:"name,omitempty"`
}

// Retry is one retry of a model request.
type Retry struct {
	PromptID string `json:"prompt_id"`
	Attempt  int    `json:"attempt"`
	WaitMS   int64  `json:"wait_ms"`
	Status   int    `json:"status,omitempty"`
	Reason   string `json:"reason"`
}

// Outcomes of a hook run (HookRun.Outcome).
const (
	HookOK      = "ok"      // ran, decided nothing
	HookBlocked = "blocked" // exit 2, continue:false or decision:block
	HookDenied  = "denied"  // permissionDecision deny (or a PermissionRequest deny)
	HookAsked   = "asked"   // permissionDecision ask
	HookAllowed = "allowed" // permissionDecision allow (or a PermissionRequest allow)
	HookError   = "error"   // failed to start, non-blocking exit code, invalid JSON, HTTP error
	HookTimeout = "timeout" // killed at its timeout; no decision
)

// HookRun is one run of one hook handler.
type HookRun struct {
	// Event is the hook event: PreToolUse, PostToolUse, SessionStart, ...
	Event string `json:"event"`
	// Hook names the handler: its command line, or its URL.
	Hook string `json:"hook"`
	// Tool is the tool of a tool event ("" for the others).
	Tool string `json:"tool,omitempty"`
	// Outcome is one of HookOK, HookBlocked, HookDenied, HookAsked,
	// HookAllowed, HookError, HookTimeout.
	Outcome string `json:"outcome"`
	// Reason is the hook's reason, or what went wrong.
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// Sub-agent states (SubagentInfo.Status).
const (
	SubagentRunning   = "running"
	SubagentCompleted = "completed"
	SubagentFailed    = "failed"
	SubagentKilled    = "killed"
	// SubagentBlocked: it waits for a permission answer.
	SubagentBlocked = "blocked"
)

// SubagentInfo is a sub-agent as its parent session shows it.
type SubagentInfo struct {
	// ID is the agent's id: its child session's id.
	ID              string    `json:"id"`
	ParentSessionID string    `json:"parent_session_id"`
	ParentCallID    string    `json:"parent_call_id"`
	Type            string    `json:"type"`
	Description     string    `json:"description,omitempty"`
	Status          string    `json:"status"`
	Background      bool      `json:"background,omitempty"`
	ToolUses        int       `json:"tool_uses"`
	Tokens          int64     `json:"tokens"`
	DurationMS      int64     `json:"duration_ms"`
	Started         time.Time `json:"started"`
	Depth           int       `json:"depth"`
	Model           string    `json:"model,omitempty"`
	Error           string    `json:"error,omitempty"`
	// LastTool is the tool call that made this update ("Read main.go").
	LastTool       string `json:"last_tool,omitempty"`
	WorktreePath   string `json:"worktree_path,omitempty"`
	WorktreeBranch string `json:"worktree_branch,omitempty"`
}

// ShellInfo describes a background shell of a session.
type ShellInfo struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	// Status is running, exited or killed.
	Status   string    `json:"status"`
	ExitCode int       `json:"exit_code"`
	Started  time.Time `json:"started"`
	Ended    time.Time `json:"ended,omitempty"`
	// OutputPath is the file that holds the shell's whole output.
	OutputPath  string `json:"output_path"`
	OutputBytes int64  `json:"output_bytes"`
}

// Turn lists the calls of one model turn.
type Turn struct {
	Calls []CallInfo `json:"calls"`
	// ClientID is the client that submitted the turn.
	ClientID string `json:"client_id,omitempty"`
}

// CallInfo is one call as submitted.
type CallInfo struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input,omitempty"`
}

// Result is the final result of a call, in the form clients and the model get it.
type Result struct {
	CallID  string         `json:"id"`
	Name    string         `json:"name"`
	Status  string         `json:"status"`
	IsError bool           `json:"is_error"`
	Content []tool.Content `json:"content"`
	// Display is the human rendering (e.g. a unified diff).
	Display    string `json:"display,omitempty"`
	DurationMS int64  `json:"duration_ms"`
	// Structured is an MCP tool's structuredContent, as sent.
	Structured json.RawMessage `json:"structured,omitempty"`
}

// PermissionRequest is a call waiting for a person.
type PermissionRequest struct {
	RequestID string          `json:"request_id"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	// Reason says why the call needs approval.
	Reason string `json:"reason"`
	// Deadline is when the request is denied if nobody answers.
	Deadline time.Time `json:"deadline"`
	// Options are the answers offered: allow_once, allow_always (when
	// AlwaysRule is set), deny.
	Options []string `json:"options,omitempty"`
	// AlwaysRule is the concrete rule an allow_always answer saves, e.g.
	// `Bash(npm test *)`.
	AlwaysRule string `json:"always_rule,omitempty"`
	// Preview shows people what the call would do, from the tool's Render
	// (an edit's diff, a command and its directory, a URL and its domain,
	// an MCP call's server, tool and indented input); else the input as
	// indented JSON.
	Preview string `json:"preview,omitempty"`
	// SessionID and Agent are set for a sub-agent's request, announced in
	// its root session: the child session that asks, and which agent it is.
	SessionID string    `json:"session_id,omitempty"`
	Agent     *AgentRef `json:"agent,omitempty"`
}

// AgentRef names a sub-agent to people: in its permission requests and
// its parent's events.
type AgentRef struct {
	// ID is the agent's id: its session's id.
	ID          string `json:"id"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// ParentCallID is the Agent call that started it.
	ParentCallID string `json:"parent_call_id,omitempty"`
}

// PermissionResolution ends a permission request, exactly once.
type PermissionResolution struct {
	RequestID string `json:"request_id"`
	// Decision is allow_once, allow_always, deny, timeout or cancelled.
	Decision string `json:"decision"`
	// ClientID answered (empty for a timeout or cancellation).
	ClientID string `json:"client_id,omitempty"`
	Feedback string `json:"feedback,omitempty"`
	// Scope, Rules and Path are set for allow_always: where the rules
	// were saved (session, project, user), the rules saved, and the
	// settings file written ("" for the session scope, which the daemon
	// keeps).
	Scope string   `json:"scope,omitempty"`
	Rules []string `json:"rules,omitempty"`
	Path  string   `json:"path,omitempty"`
}

// SessionChange carries the session fields that changed.
type SessionChange struct {
	Cwd            string          `json:"cwd,omitempty"`
	PermissionMode string          `json:"permission_mode,omitempty"`
	Todos          json.RawMessage `json:"todos,omitempty"`
	Note           string          `json:"note,omitempty"`
}

// Droppable reports whether a slow reader may miss this event. Only
// streaming progress and assistant deltas may be dropped; everything else
// must be delivered.
func (e *Event) Droppable() bool { return e.Type == CallProgress || e.Type == AssistantDelta }

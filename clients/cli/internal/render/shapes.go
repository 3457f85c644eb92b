package render

import (
	"encoding/json"
	"time"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// The --json shapes of the CLI contract. They are written out field by field
// (not protojson) so names are snake_case, 64-bit numbers are numbers, JSON
// carried in strings is embedded as JSON, and lists are [] rather than null.

// RawJSON embeds s as JSON when it is valid JSON, else as a JSON string, and
// def when s is empty.
func RawJSON(s, def string) json.RawMessage {
	if s == "" {
		if def == "" {
			return nil
		}
		return json.RawMessage(def)
	}
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// TimeJSON formats a timestamp as RFC 3339 ("" when unset).
func TimeJSON(t *timestamppb.Timestamp) string {
	if t == nil {
		return ""
	}
	return t.AsTime().UTC().Format(time.RFC3339Nano)
}

// ContentJSON is one content block: text or image.
type ContentJSON struct {
	Type     string  `json:"type"`
	Text     *string `json:"text,omitempty"`
	MimeType string  `json:"mime_type,omitempty"`
	Data     []byte  `json:"data,omitempty"` // base64 in JSON
	URI      string  `json:"uri,omitempty"`
}

// ResultJSON is the --json shape of a tool result.
type ResultJSON struct {
	ID         string        `json:"id"`
	Name       string        `json:"name"`
	Status     string        `json:"status"`
	IsError    bool          `json:"is_error"`
	Content    []ContentJSON `json:"content"`
	Display    string        `json:"display,omitempty"`
	DurationMS int64         `json:"duration_ms"`
	// Structured is an MCP tool's structuredContent.
	Structured json.RawMessage `json:"structured_content,omitempty"`
}

// ResultToJSON is r in its --json shape.
func ResultToJSON(r *tacklev1.ToolResult) *ResultJSON {
	if r == nil {
		return nil
	}
	out := &ResultJSON{
		ID: r.GetId(), Name: r.GetName(), Status: r.GetStatus(), IsError: r.GetIsError(),
		Content: []ContentJSON{}, Display: r.GetDisplay(), DurationMS: r.GetDurationMs(),
	}
	if j := r.GetStructuredContentJson(); j != "" && json.Valid([]byte(j)) {
		out.Structured = json.RawMessage(j)
	}
	for _, b := range r.GetContent() {
		c := ContentJSON{Type: b.GetType()}
		switch b.GetType() {
		case "image", "audio":
			c.MimeType, c.Data = b.GetMimeType(), b.GetData()
			if c.Data == nil {
				c.Data = []byte{}
			}
		default:
			t := b.GetText()
			c.Text = &t
			c.MimeType, c.URI = b.GetMimeType(), b.GetUri()
			if len(b.GetData()) > 0 {
				c.Data = b.GetData()
			}
		}
		out.Content = append(out.Content, c)
	}
	return out
}

// SessionJSON is the --json shape of a session.
type SessionJSON struct {
	ID                    string          `json:"id"`
	Cwd                   string          `json:"cwd"`
	CurrentDir            string          `json:"current_dir"`
	AdditionalDirectories []string        `json:"additional_directories"`
	PermissionMode        string          `json:"permission_mode"`
	Todos                 json.RawMessage `json:"todos"`
	CreatedAt             string          `json:"created_at,omitempty"`
	UpdatedAt             string          `json:"updated_at,omitempty"`
	LastSeq               uint64          `json:"last_seq"`
	FilesRead             uint32          `json:"files_read"`
	// Agent is set for a sub-agent's session: its parent and type.
	Agent *agentLinkJSON `json:"agent,omitempty"`
	// SettingsDirectories are the working directories its settings add
	// (permissions.additionalDirectories).
	SettingsDirectories []WorkingDirJSON `json:"settings_directories,omitempty"`
	// DefaultForCwd is set for the default session of its directory.
	DefaultForCwd bool `json:"default_for_cwd,omitempty"`
}

// WorkingDirJSON is a working directory and where it comes from.
type WorkingDirJSON struct {
	Path string `json:"path"`
	// Origin: root, session (--add-dir) or settings.
	Origin string `json:"origin"`
	// Source is the settings file that lists it, Scope that file's scope.
	Source  string `json:"source,omitempty"`
	Scope   string `json:"scope,omitempty"`
	Missing bool   `json:"missing,omitempty"`
}

// WorkingDirsToJSON is in in its --json shape.
func WorkingDirsToJSON(in []*tacklev1.WorkingDirectory) []WorkingDirJSON {
	var out []WorkingDirJSON
	for _, d := range in {
		out = append(out, WorkingDirJSON{Path: d.GetPath(), Origin: d.GetOrigin(), Source: d.GetSource(), Scope: d.GetScope(), Missing: d.GetMissing()})
	}
	return out
}

// Describe says where a working directory comes from, for people.
func (d WorkingDirJSON) Describe() string {
	var what string
	switch d.Origin {
	case "root":
		what = "the session's directory"
	case "session":
		what = "given to the session (--add-dir)"
	case "settings":
		what = "permissions.additionalDirectories"
		if d.Source != "" {
			what += " in " + d.Source
		}
	default:
		what = d.Origin
	}
	if d.Missing {
		what += "; missing: not a working directory until it exists"
	}
	return what
}

// agentLinkJSON ties a sub-agent's session to the session and the Agent
// call that started it.
type agentLinkJSON struct {
	ParentSessionID string `json:"parent_session_id"`
	ParentCallID    string `json:"parent_call_id"`
	RootSessionID   string `json:"root_session_id"`
	AgentType       string `json:"agent_type"`
	Description     string `json:"description"`
	Depth           int32  `json:"depth"`
	Background      bool   `json:"background"`
}

func agentLinkToJSON(l *tacklev1.AgentLink) *agentLinkJSON {
	if l == nil {
		return nil
	}
	return &agentLinkJSON{
		ParentSessionID: l.GetParentSessionId(), ParentCallID: l.GetParentCallId(), RootSessionID: l.GetRootSessionId(),
		AgentType: l.GetAgentType(), Description: l.GetDescription(), Depth: l.GetDepth(), Background: l.GetBackground(),
	}
}

// SubagentJSON is a sub-agent: an element of `tackle agents ps --json`, of
// `sessions show --json`'s children, and the subagent of a
// subagent_updated event.
type SubagentJSON struct {
	ID              string `json:"id"`
	ParentSessionID string `json:"parent_session_id"`
	ParentCallID    string `json:"parent_call_id"`
	AgentType       string `json:"agent_type"`
	Description     string `json:"description"`
	// Status: running, completed, failed, killed, blocked (waiting for a
	// permission answer).
	Status         string `json:"status"`
	Background     bool   `json:"background"`
	ToolUses       int32  `json:"tool_uses"`
	Tokens         int64  `json:"tokens"`
	DurationMS     int64  `json:"duration_ms"`
	Started        string `json:"started,omitempty"`
	Depth          int32  `json:"depth"`
	Model          string `json:"model,omitempty"`
	Error          string `json:"error,omitempty"`
	WorktreePath   string `json:"worktree_path,omitempty"`
	WorktreeBranch string `json:"worktree_branch,omitempty"`
}

// SubagentToJSON is sa in its --json shape.
func SubagentToJSON(sa *tacklev1.Subagent) *SubagentJSON {
	if sa == nil {
		return nil
	}
	return &SubagentJSON{
		ID: sa.GetId(), ParentSessionID: sa.GetParentSessionId(), ParentCallID: sa.GetParentCallId(),
		AgentType: sa.GetAgentType(), Description: sa.GetDescription(), Status: sa.GetStatus(), Background: sa.GetBackground(),
		ToolUses: sa.GetToolUses(), Tokens: sa.GetTokens(), DurationMS: sa.GetDurationMs(), Started: TimeJSON(sa.GetStarted()),
		Depth: sa.GetDepth(), Model: sa.GetModel(), Error: sa.GetError(),
		WorktreePath: sa.GetWorktreePath(), WorktreeBranch: sa.GetWorktreeBranch(),
	}
}

// AgentRefJSON names the sub-agent that asks a permission request.
type AgentRefJSON struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	Description  string `json:"description"`
	ParentCallID string `json:"parent_call_id"`
}

// AgentRefToJSON is r in its --json shape (nil for none).
func AgentRefToJSON(r *tacklev1.AgentRef) *AgentRefJSON {
	if r == nil {
		return nil
	}
	return &AgentRefJSON{ID: r.GetId(), Type: r.GetType(), Description: r.GetDescription(), ParentCallID: r.GetParentCallId()}
}

// SessionToJSON is s in its --json shape.
func SessionToJSON(s *tacklev1.Session) *SessionJSON {
	if s == nil {
		return nil
	}
	dirs := s.GetAdditionalDirectories()
	if dirs == nil {
		dirs = []string{}
	}
	return &SessionJSON{
		ID: s.GetId(), Cwd: s.GetCwd(), CurrentDir: s.GetCurrentDir(), AdditionalDirectories: dirs, PermissionMode: s.GetPermissionMode(),
		Todos: RawJSON(s.GetTodosJson(), "[]"), CreatedAt: TimeJSON(s.GetCreatedAt()), UpdatedAt: TimeJSON(s.GetUpdatedAt()),
		LastSeq: s.GetLastSeq(), FilesRead: s.GetFilesRead(), Agent: agentLinkToJSON(s.GetAgent()),
		SettingsDirectories: WorkingDirsToJSON(s.GetSettingsDirectories()), DefaultForCwd: s.GetDefaultForCwd(),
	}
}

// sessionChangeJSON is the session of a session_updated event (only the
// fields that changed) or of a todos_updated event (todos: the whole new
// list).
type sessionChangeJSON struct {
	Cwd            string          `json:"cwd,omitempty"`
	PermissionMode string          `json:"permission_mode,omitempty"`
	Todos          json.RawMessage `json:"todos,omitempty"`
}

// callJSON is a call as submitted.
type callJSON struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// permissionJSON is a pending permission request.
type permissionJSON struct {
	RequestID string          `json:"request_id"`
	TurnID    string          `json:"turn_id,omitempty"`
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Input     json.RawMessage `json:"input"`
	Reason    string          `json:"reason"`
	Deadline  string          `json:"deadline,omitempty"`
	// Options are the answers a client may give (see OptionJSON).
	Options    []OptionJSON `json:"options"`
	AlwaysRule string       `json:"always_rule,omitempty"`
	// SessionID and Agent are set for a sub-agent's request: the child
	// session that asks, and the agent. Answer it in the session it was
	// announced in (the root session).
	SessionID string        `json:"session_id,omitempty"`
	Agent     *AgentRefJSON `json:"agent,omitempty"`
}

// OptionJSON is one answer offered for a permission request: option is
// allow_once, allow_always (with scope and the rule it saves), deny, or
// deny_with_feedback.
type OptionJSON struct {
	Option string `json:"option"`
	Label  string `json:"label"`
	Scope  string `json:"scope,omitempty"`
	Rule   string `json:"rule,omitempty"`
}

// scopeNames maps the protobuf scopes to the CLI's names.
var scopeNames = map[tacklev1.Scope]string{
	tacklev1.Scope_SCOPE_SESSION: "session",
	tacklev1.Scope_SCOPE_PROJECT: "project",
	tacklev1.Scope_SCOPE_USER:    "user",
}

// OptionsToJSON is in in its --json shape.
func OptionsToJSON(in []*tacklev1.PermissionOption) []OptionJSON {
	out := make([]OptionJSON, 0, len(in))
	for _, o := range in {
		out = append(out, OptionJSON{Option: o.GetOption(), Label: o.GetLabel(), Scope: scopeNames[o.GetScope()], Rule: o.GetRule()})
	}
	return out
}

func permissionToJSON(p *tacklev1.PermissionRequest) *permissionJSON {
	if p == nil {
		return nil
	}
	return &permissionJSON{
		RequestID: p.GetRequestId(), TurnID: p.GetTurnId(), CallID: p.GetCallId(), Tool: p.GetTool(),
		Input: RawJSON(p.GetInputJson(), "{}"), Reason: p.GetReason(), Deadline: TimeJSON(p.GetDeadline()),
		Options: OptionsToJSON(p.GetOptions()), AlwaysRule: p.GetAlwaysRule(),
		SessionID: p.GetSessionId(), Agent: AgentRefToJSON(p.GetAgent()),
	}
}

// hookRunJSON is the hook of a hook_ran event.
type hookRunJSON struct {
	Hook       string `json:"hook"`
	Event      string `json:"event"`
	Tool       string `json:"tool,omitempty"`
	Outcome    string `json:"outcome"`
	Reason     string `json:"reason,omitempty"`
	DurationMS int64  `json:"duration_ms"`
}

// TrustJSON is the workspace trust of a snapshot and of `permissions rules`.
type TrustJSON struct {
	Dir     string   `json:"dir"`
	Trusted bool     `json:"trusted"`
	Ignored []string `json:"ignored"`
	Hint    string   `json:"hint,omitempty"`
}

// TrustToJSON is t in its --json shape.
func TrustToJSON(t *tacklev1.TrustInfo) *TrustJSON {
	if t == nil {
		return nil
	}
	out := &TrustJSON{Dir: t.GetDir(), Trusted: t.GetTrusted(), Ignored: t.GetIgnored(), Hint: t.GetHint()}
	if out.Ignored == nil {
		out.Ignored = []string{}
	}
	return out
}

// resolutionJSON ends a permission request.
type resolutionJSON struct {
	RequestID  string `json:"request_id"`
	Decision   string `json:"decision"`
	ClientID   string `json:"client_id,omitempty"`
	ClientName string `json:"client_name,omitempty"`
	Feedback   string `json:"feedback,omitempty"`
	Scope      string `json:"scope,omitempty"`
}

// runningJSON is a call that has not ended.
type runningJSON struct {
	TurnID string `json:"turn_id"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	State  string `json:"state"`
}

// ShellJSON is a background shell: an element of `tackle shells list
// --json`, of a snapshot's shells, and the shell of a shell_updated event.
type ShellJSON struct {
	ID          string `json:"id"`
	Command     string `json:"command"`
	Status      string `json:"status"`
	ExitCode    int32  `json:"exit_code"`
	Started     string `json:"started,omitempty"`
	Ended       string `json:"ended,omitempty"`
	OutputPath  string `json:"output_path"`
	OutputBytes int64  `json:"output_bytes"`
}

// ShellToJSON is s in its --json shape.
func ShellToJSON(s *tacklev1.BackgroundShell) *ShellJSON {
	if s == nil {
		return nil
	}
	return &ShellJSON{
		ID: s.GetId(), Command: s.GetCommand(), Status: s.GetStatus(), ExitCode: s.GetExitCode(),
		Started: TimeJSON(s.GetStarted()), Ended: TimeJSON(s.GetEnded()),
		OutputPath: s.GetOutputPath(), OutputBytes: s.GetOutputBytes(),
	}
}

// ShellsToJSON is in in its --json shape (never null).
func ShellsToJSON(in []*tacklev1.BackgroundShell) []*ShellJSON {
	out := make([]*ShellJSON, 0, len(in))
	for _, s := range in {
		out = append(out, ShellToJSON(s))
	}
	return out
}

// SnapshotJSON is the first line of `tackle attach --json`.
type SnapshotJSON struct {
	Seq                uint64            `json:"seq"`
	Type               string            `json:"type"`
	Session            *SessionJSON      `json:"session"`
	PendingPermissions []*permissionJSON `json:"pending_permissions"`
	RunningCalls       []runningJSON     `json:"running_calls"`
	Shells             []*ShellJSON      `json:"shells"`
	Trust              *TrustJSON        `json:"trust,omitempty"`
	// SettingsProblems are the session's settings files that do not parse
	// (omitted when none).
	SettingsProblems []SettingsProblemJSON `json:"settings_problems,omitempty"`
}

// SettingsProblemJSON is a settings file that does not parse.
type SettingsProblemJSON struct {
	Path    string `json:"path"`
	Line    int32  `json:"line"`
	Column  int32  `json:"column"`
	Message string `json:"message"`
}

// SettingsProblemsToJSON is ps in its --json shape.
func SettingsProblemsToJSON(ps []*tacklev1.SettingsProblem) []SettingsProblemJSON {
	var out []SettingsProblemJSON
	for _, p := range ps {
		out = append(out, SettingsProblemJSON{Path: p.GetPath(), Line: p.GetLine(), Column: p.GetColumn(), Message: p.GetMessage()})
	}
	return out
}

// SnapshotToJSON is s in its --json shape.
func SnapshotToJSON(s *tacklev1.Snapshot) *SnapshotJSON {
	out := &SnapshotJSON{
		Seq: s.GetSession().GetLastSeq(), Type: "snapshot", Session: SessionToJSON(s.GetSession()),
		PendingPermissions: []*permissionJSON{}, RunningCalls: []runningJSON{}, Shells: ShellsToJSON(s.GetShells()),
		Trust: TrustToJSON(s.GetTrust()), SettingsProblems: SettingsProblemsToJSON(s.GetSettingsProblems()),
	}
	for _, p := range s.GetPendingPermissions() {
		out.PendingPermissions = append(out.PendingPermissions, permissionToJSON(p))
	}
	for _, r := range s.GetRunningCalls() {
		out.RunningCalls = append(out.RunningCalls, runningJSON{TurnID: r.GetTurnId(), CallID: r.GetCallId(), Tool: r.GetTool(), State: r.GetState()})
	}
	return out
}

// EventJSON is one event line of `tackle attach --json`.
type EventJSON struct {
	Seq        uint64             `json:"seq"`
	Type       string             `json:"type"`
	SessionID  string             `json:"session_id"`
	Time       string             `json:"time,omitempty"`
	TurnID     string             `json:"turn_id,omitempty"`
	CallID     string             `json:"call_id,omitempty"`
	Tool       string             `json:"tool,omitempty"`
	State      string             `json:"state,omitempty"`
	Text       string             `json:"text,omitempty"`
	Calls      []callJSON         `json:"calls,omitempty"`
	Result     *ResultJSON        `json:"result,omitempty"`
	Permission *permissionJSON    `json:"permission,omitempty"`
	Resolution *resolutionJSON    `json:"resolution,omitempty"`
	Session    *sessionChangeJSON `json:"session,omitempty"`
	Shell      *ShellJSON         `json:"shell,omitempty"`
	Hook       *hookRunJSON       `json:"hook,omitempty"`
	Prompt     *agentPromptJSON   `json:"prompt,omitempty"`
	Delta      *deltaJSON         `json:"delta,omitempty"`
	Message    json.RawMessage    `json:"message,omitempty"`
	Retry      *retryJSON         `json:"retry,omitempty"`
	Subagent   *SubagentJSON      `json:"subagent,omitempty"`
}

// agentPromptJSON is a prompt of the query loop (prompt_started, prompt_ended, …).
type agentPromptJSON struct {
	ID         string          `json:"id"`
	ClientID   string          `json:"client_id,omitempty"`
	Text       string          `json:"text,omitempty"`
	Model      string          `json:"model,omitempty"`
	StopReason string          `json:"stop_reason,omitempty"`
	Usage      json.RawMessage `json:"usage,omitempty"`
	Requests   int32           `json:"requests,omitempty"`
	Error      string          `json:"error,omitempty"`
	FinalText  string          `json:"final_text,omitempty"`
}

// deltaJSON is a piece of a streaming answer.
type deltaJSON struct {
	PromptID  string `json:"prompt_id"`
	Kind      string `json:"kind"`
	Index     int32  `json:"index"`
	Text      string `json:"text"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	Name      string `json:"name,omitempty"`
}

// retryJSON is a retried model request.
type retryJSON struct {
	PromptID string `json:"prompt_id"`
	Attempt  int32  `json:"attempt"`
	WaitMS   int64  `json:"wait_ms"`
	Status   int32  `json:"status,omitempty"`
	Reason   string `json:"reason"`
}

// UsageJSON is a prompt's token use as JSON.
func UsageJSON(u *tacklev1.Usage) json.RawMessage {
	b, _ := json.Marshal(map[string]int64{
		"input_tokens": u.GetInputTokens(), "output_tokens": u.GetOutputTokens(),
		"cache_creation_input_tokens": u.GetCacheCreationInputTokens(), "cache_read_input_tokens": u.GetCacheReadInputTokens(),
	})
	return b
}

func eventToJSON(e *tacklev1.Event) *EventJSON {
	out := &EventJSON{
		Seq: e.GetSeq(), Type: e.GetType(), SessionID: e.GetSessionId(), Time: TimeJSON(e.GetTime()),
		TurnID: e.GetTurnId(), CallID: e.GetCallId(), Tool: e.GetTool(), State: e.GetState(), Text: e.GetText(),
		Result: ResultToJSON(e.GetResult()), Permission: permissionToJSON(e.GetPermission()),
		Shell: ShellToJSON(e.GetShell()), Subagent: SubagentToJSON(e.GetSubagent()),
	}
	for _, c := range e.GetCalls() {
		out.Calls = append(out.Calls, callJSON{ID: c.GetId(), Name: c.GetName(), Input: RawJSON(c.GetInputJson(), "{}")})
	}
	if r := e.GetResolution(); r != nil {
		out.Resolution = &resolutionJSON{RequestID: r.GetRequestId(), Decision: r.GetDecision(), ClientID: r.GetClientId(),
			ClientName: r.GetClientName(), Feedback: r.GetFeedback(), Scope: r.GetScope()}
	}
	if h := e.GetHookRun(); h != nil {
		out.Hook = &hookRunJSON{Hook: h.GetHook(), Event: h.GetHookEvent(), Tool: h.GetTool(), Outcome: h.GetOutcome(), Reason: h.GetReason(), DurationMS: h.GetDurationMs()}
	}
	if s := e.GetSession(); s != nil && (s.GetCwd() != "" || s.GetPermissionMode() != "" || s.GetTodosJson() != "") {
		out.Session = &sessionChangeJSON{Cwd: s.GetCwd(), PermissionMode: s.GetPermissionMode(), Todos: RawJSON(s.GetTodosJson(), "")}
	}
	if p := e.GetPrompt(); p != nil {
		out.Prompt = &agentPromptJSON{ID: p.GetId(), ClientID: p.GetClientId(), Text: p.GetText(), Model: p.GetModel(), StopReason: p.GetStopReason(),
			Requests: p.GetRequests(), Error: p.GetError(), FinalText: p.GetFinalText()}
		if p.GetUsage() != nil {
			out.Prompt.Usage = UsageJSON(p.GetUsage())
		}
	}
	if d := e.GetDelta(); d != nil {
		out.Delta = &deltaJSON{PromptID: d.GetPromptId(), Kind: d.GetKind(), Index: d.GetIndex(), Text: d.GetText(), ToolUseID: d.GetToolUseId(), Name: d.GetName()}
	}
	out.Message = RawJSON(e.GetMessageJson(), "")
	if r := e.GetRetry(); r != nil {
		out.Retry = &retryJSON{PromptID: r.GetPromptId(), Attempt: r.GetAttempt(), WaitMS: r.GetWaitMs(), Status: r.GetStatus(), Reason: r.GetReason()}
	}
	return out
}

// ToolJSON is one element of `tackle tools --json`.
type ToolJSON struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	Loaded      bool            `json:"loaded"`
	Attributes  attributesJSON  `json:"attributes"`
	Aliases     []string        `json:"aliases,omitempty"`
}

// attributesJSON are a tool's attributes.
type attributesJSON struct {
	ReadOnly        bool   `json:"read_only"`
	Destructive     bool   `json:"destructive"`
	ConcurrencySafe bool   `json:"concurrency_safe"`
	Interactive     bool   `json:"interactive"`
	Deferred        bool   `json:"deferred"`
	Origin          string `json:"origin"`
	MaxResultChars  int64  `json:"max_result_chars"`
}

// ToolToJSON is t in its --json shape.
func ToolToJSON(t *tacklev1.ToolInfo) ToolJSON {
	at := t.GetAttributes()
	return ToolJSON{
		Name: t.GetName(), Description: t.GetDescription(), InputSchema: RawJSON(t.GetInputSchemaJson(), ""),
		Loaded: t.GetLoaded(), Aliases: t.GetAliases(),
		Attributes: attributesJSON{
			ReadOnly: at.GetReadOnly(), Destructive: at.GetDestructive(), ConcurrencySafe: at.GetConcurrencySafe(),
			Interactive: at.GetInteractive(), Deferred: at.GetDeferred(), Origin: at.GetOrigin(), MaxResultChars: at.GetMaxResultChars(),
		},
	}
}

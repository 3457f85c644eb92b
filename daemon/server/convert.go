package server

import (
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// This file is the one place where domain values become protobuf messages
// and back.

func timeToProto(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

func sessionToProto(in session.Info) *tacklev1.Session {
	todos := string(in.Todos)
	if todos == "" {
		todos = "[]"
	}
	return &tacklev1.Session{
		Id:                    in.ID,
		Cwd:                   in.Cwd,
		CurrentDir:            in.CurrentDir,
		AdditionalDirectories: in.AdditionalDirs,
		PermissionMode:        in.PermissionMode,
		TodosJson:             todos,
		CreatedAt:             timeToProto(in.CreatedAt),
		UpdatedAt:             timeToProto(in.UpdatedAt),
		LastSeq:               in.LastSeq,
		FilesRead:             uint32(in.FilesRead),
		Agent:                 agentLinkToProto(in.Agent),
		SettingsDirectories:   workingDirsToProto(in.SettingsDirs),
		DefaultForCwd:         in.DefaultForCwd,
	}
}

func workingDirsToProto(in []session.WorkingDir) []*tacklev1.WorkingDirectory {
	if len(in) == 0 {
		return nil
	}
	out := make([]*tacklev1.WorkingDirectory, 0, len(in))
	for _, d := range in {
		out = append(out, &tacklev1.WorkingDirectory{Path: d.Path, Origin: d.Origin, Source: d.Source, Scope: d.Scope, Missing: d.Missing})
	}
	return out
}

func callsToProto(in []event.CallInfo) []*tacklev1.ToolCall {
	out := make([]*tacklev1.ToolCall, 0, len(in))
	for _, c := range in {
		out = append(out, &tacklev1.ToolCall{Id: c.ID, Name: c.Name, InputJson: string(c.Input)})
	}
	return out
}

func contentToProto(in []tool.Content) []*tacklev1.ContentBlock {
	out := make([]*tacklev1.ContentBlock, 0, len(in))
	for _, c := range in {
		out = append(out, &tacklev1.ContentBlock{Type: c.Type, Text: c.Text, MimeType: c.MimeType, Data: c.Data, Uri: c.URI})
	}
	return out
}

func resultToProto(r *event.Result) *tacklev1.ToolResult {
	if r == nil {
		return nil
	}
	return &tacklev1.ToolResult{
		Id:         r.CallID,
		Name:       r.Name,
		Status:     r.Status,
		IsError:    r.IsError,
		Content:    contentToProto(r.Content),
		Display:    r.Display,
		DurationMs: r.DurationMS,

		StructuredContentJson: string(r.Structured),
	}
}

func permissionToProto(p *event.PermissionRequest, turnID string) *tacklev1.PermissionRequest {
	if p == nil {
		return nil
	}
	return &tacklev1.PermissionRequest{
		RequestId:  p.RequestID,
		CallId:     p.CallID,
		Tool:       p.Tool,
		InputJson:  string(p.Input),
		Reason:     p.Reason,
		Deadline:   timeToProto(p.Deadline),
		TurnId:     turnID,
		Options:    optionsToProto(p.Options, p.AlwaysRule),
		AlwaysRule: p.AlwaysRule,
		SessionId:  p.SessionID,
		Agent:      agentRefToProto(p.Agent),
		Preview:    p.Preview,
	}
}

// Option names of a PermissionOption.
const (
	optionAllowOnce        = "allow_once"
	optionAllowAlways      = "allow_always"
	optionDeny             = "deny"
	optionDenyWithFeedback = "deny_with_feedback"
)

// optionsToProto expands the options of a request: allow_always once per
// scope (session, project, user) with the rule it saves, and deny also as
// deny_with_feedback. No options listed means allow_once and deny (and
// allow_always when there is a rule to save).
func optionsToProto(opts []string, always string) []*tacklev1.PermissionOption {
	if len(opts) == 0 {
		opts = []string{optionAllowOnce}
		if always != "" {
			opts = append(opts, optionAllowAlways)
		}
		opts = append(opts, optionDeny)
	}
	var out []*tacklev1.PermissionOption
	for _, o := range opts {
		switch o {
		case optionAllowOnce:
			out = append(out, &tacklev1.PermissionOption{Option: o, Label: "Yes, this once"})
		case optionAllowAlways:
			if always == "" {
				continue
			}
			out = append(out,
				&tacklev1.PermissionOption{Option: o, Scope: tacklev1.Scope_SCOPE_SESSION, Rule: always, Label: "Yes, and allow " + always + " for the rest of this session"},
				&tacklev1.PermissionOption{Option: o, Scope: tacklev1.Scope_SCOPE_PROJECT, Rule: always, Label: "Yes, and allow " + always + " in this project (.tackle/settings.local.json)"},
				&tacklev1.PermissionOption{Option: o, Scope: tacklev1.Scope_SCOPE_USER, Rule: always, Label: "Yes, and allow " + always + " everywhere (your tackle settings)"},
			)
		case optionDeny:
			out = append(out,
				&tacklev1.PermissionOption{Option: o, Label: "No"},
				&tacklev1.PermissionOption{Option: optionDenyWithFeedback, Label: "No, and tell the model what to do instead"},
			)
		default:
			out = append(out, &tacklev1.PermissionOption{Option: o, Label: o})
		}
	}
	return out
}

func resolutionToProto(r *event.PermissionResolution) *tacklev1.PermissionResolved {
	if r == nil {
		return nil
	}
	out := &tacklev1.PermissionResolved{
		RequestId: r.RequestID,
		Decision:  r.Decision,
		ClientId:  r.ClientID,
		Feedback:  r.Feedback,
		Scope:     r.Scope,
		Rules:     r.Rules,
		Path:      r.Path,
	}
	if r.ClientID != "" {
		out.ClientName = clientName(r.ClientID)
	}
	return out
}

func sessionChangeToProto(c *event.SessionChange, id string) *tacklev1.Session {
	if c == nil {
		return nil
	}
	// A changed Cwd is the current directory; cwd keeps it for older clients.
	return &tacklev1.Session{Id: id, Cwd: c.Cwd, CurrentDir: c.Cwd, PermissionMode: c.PermissionMode, TodosJson: string(c.Todos)}
}

func eventToProto(e *event.Event) *tacklev1.Event {
	out := &tacklev1.Event{
		Seq:        e.Seq,
		SessionId:  e.SessionID,
		Time:       timeToProto(e.Time),
		Type:       string(e.Type),
		TurnId:     e.TurnID,
		CallId:     e.CallID,
		Tool:       e.Tool,
		State:      e.State,
		Text:       e.Text,
		Result:     resultToProto(e.Result),
		Permission: permissionToProto(e.Permission, e.TurnID),
		Resolution: resolutionToProto(e.Resolution),
		Session:    sessionChangeToProto(e.Session, e.SessionID),
		Shell:      shellToProto(e.Shell),
		HookRun:    hookRunToProto(e.Hook),
		Prompt:     promptToProto(e.Prompt),
		Delta:      deltaToProto(e.Delta),
		Retry:      retryToProto(e.Retry),
		Subagent:   subagentToProto(e.Subagent),
		McpAuth:    mcpAuthToProto(e.MCPAuth),
	}
	if len(e.Message) > 0 {
		out.MessageJson = string(e.Message)
	}
	if e.Turn != nil {
		out.Calls = callsToProto(e.Turn.Calls)
	}
	if out.Text == "" && e.Session != nil {
		out.Text = e.Session.Note
	}
	return out
}

func hookRunToProto(in *event.HookRun) *tacklev1.HookRun {
	if in == nil {
		return nil
	}
	return &tacklev1.HookRun{
		Hook:       in.Hook,
		HookEvent:  in.Event,
		Tool:       in.Tool,
		Outcome:    in.Outcome,
		Reason:     in.Reason,
		DurationMs: in.DurationMS,
	}
}

func shellToProto(in *event.ShellInfo) *tacklev1.BackgroundShell {
	if in == nil {
		return nil
	}
	return &tacklev1.BackgroundShell{
		Id:          in.ID,
		Command:     in.Command,
		Status:      in.Status,
		ExitCode:    int32(in.ExitCode),
		Started:     timeToProto(in.Started),
		Ended:       timeToProto(in.Ended),
		OutputPath:  in.OutputPath,
		OutputBytes: in.OutputBytes,
	}
}

func shellsToProto(in []event.ShellInfo) []*tacklev1.BackgroundShell {
	out := make([]*tacklev1.BackgroundShell, 0, len(in))
	for i := range in {
		out = append(out, shellToProto(&in[i]))
	}
	return out
}

func runningToProto(in []dispatch.RunningCall) []*tacklev1.RunningCall {
	out := make([]*tacklev1.RunningCall, 0, len(in))
	for _, r := range in {
		out = append(out, &tacklev1.RunningCall{TurnId: r.TurnID, CallId: r.CallID, Tool: r.Tool, State: r.State})
	}
	return out
}

func pendingToProto(in []event.PermissionRequest) []*tacklev1.PermissionRequest {
	out := make([]*tacklev1.PermissionRequest, 0, len(in))
	for i := range in {
		out = append(out, permissionToProto(&in[i], ""))
	}
	return out
}

func attributesToProto(a tool.Attributes) *tacklev1.ToolAttributes {
	return &tacklev1.ToolAttributes{
		ReadOnly:        a.ReadOnly,
		Destructive:     a.Destructive,
		ConcurrencySafe: a.ConcurrencySafe,
		Interactive:     a.Interactive,
		Deferred:        a.Deferred,
		Origin:          a.Origin,
		MaxResultChars:  int64(a.MaxResultChars),
	}
}

// toolToProto describes a tool of a session: deferred as the session's
// tool-search setting decides, loaded when not deferred or loaded by the
// session. Its schema is included when loaded (or all).
func toolToProto(t tool.Tool, deferred, loaded, all bool) *tacklev1.ToolInfo {
	spec := t.Spec()
	attrs := t.Attributes(json.RawMessage(`{}`))
	if attrs.Origin == "" {
		attrs.Origin = tool.OriginBuiltin
	}
	attrs.Deferred = deferred
	info := &tacklev1.ToolInfo{
		Name:        spec.Name,
		Description: spec.Description,
		Loaded:      loaded,
		Attributes:  attributesToProto(attrs),
		Aliases:     spec.Aliases,
		Title:       spec.Title,
		// Empty stays empty, not "null".
		AnnotationsJson:     string(spec.Annotations),
		OutputSchemaJson:    string(spec.OutputSchema),
		OriginalDescription: spec.OriginalDescription,
	}
	if info.Loaded || all {
		info.InputSchemaJson = string(spec.InputSchema)
	}
	return info
}

var decisionFromProto = map[tacklev1.Decision]string{
	tacklev1.Decision_DECISION_ALLOW_ONCE:   permission.AllowOnce,
	tacklev1.Decision_DECISION_ALLOW_ALWAYS: permission.AllowAlways,
	tacklev1.Decision_DECISION_DENY:         permission.DenyAnswer,
}

// decisionFromOption maps PermissionOption.option names to answers.
var decisionFromOption = map[string]string{
	optionAllowOnce:        permission.AllowOnce,
	optionAllowAlways:      permission.AllowAlways,
	optionDeny:             permission.DenyAnswer,
	optionDenyWithFeedback: permission.DenyAnswer,
}

var scopeFromProto = map[tacklev1.Scope]string{
	tacklev1.Scope_SCOPE_UNSPECIFIED: "",
	tacklev1.Scope_SCOPE_SESSION:     "session",
	tacklev1.Scope_SCOPE_PROJECT:     "project",
	tacklev1.Scope_SCOPE_USER:        "user",
}

// answerFromProto converts a PermissionAnswer, checking its fields.
func answerFromProto(in *tacklev1.PermissionAnswer, clientID string) (permission.Answer, error) {
	if in == nil {
		return permission.Answer{}, invalidf("permission answer is missing")
	}
	if in.GetSessionId() == "" || in.GetRequestId() == "" {
		return permission.Answer{}, invalidf("permission answer needs session_id and request_id")
	}
	d, ok := decisionFromProto[in.GetDecision()]
	if o := in.GetOption(); o != "" {
		od, known := decisionFromOption[o]
		switch {
		case !known:
			return permission.Answer{}, invalidf("unknown permission option %q: use one of the request's options (allow_once, allow_always, deny, deny_with_feedback)", o)
		case ok && od != d:
			return permission.Answer{}, invalidf("permission answer has decision %s and option %q, which disagree: give one of them", in.GetDecision(), o)
		}
		d, ok = od, true
	}
	if !ok {
		return permission.Answer{}, invalidf("permission answer needs an option (allow_once, allow_always, deny, deny_with_feedback) or a decision")
	}
	sc, ok := scopeFromProto[in.GetScope()]
	if !ok {
		return permission.Answer{}, invalidf("unknown permission scope %d", in.GetScope())
	}
	a := permission.Answer{Decision: d, Scope: sc, Feedback: in.GetFeedback(), ClientID: clientID}
	if u := in.GetUpdatedInputJson(); u != "" {
		if !json.Valid([]byte(u)) {
			return permission.Answer{}, invalidf("updated_input_json is not valid JSON")
		}
		a.UpdatedInput = json.RawMessage(u)
	}
	return a, nil
}

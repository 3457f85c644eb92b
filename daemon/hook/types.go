package hook

import (
	"encoding/json"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// ToolEvent is the call a tool hook event is about. The pipeline passes it
// by value: building one allocates nothing.
type ToolEvent struct {
	// Env is the session.
	Env tool.Env
	// TurnID is the turn of the call, for the events the hooks append.
	TurnID string
	// Call is the call as it stands (ID, the name the model used, input).
	Call *tool.Call
	// Tool is the tool's canonical name, which matchers and `if` match.
	Tool string
	// Mode is the permission mode; when "", ModeFunc (if set) gives it. It
	// is resolved only when a hook actually runs.
	Mode     string
	ModeFunc func() string
	// Access is what the call touches (from the tool's CheckPermission),
	// for the `if` field.
	Access tool.Access
}

func (ev *ToolEvent) mode() string {
	m := ev.Mode
	if m == "" && ev.ModeFunc != nil {
		m = ev.ModeFunc()
	}
	if m == "" {
		m = permission.ModeDefault
	}
	return m
}

// PreResult is what the PreToolUse hooks decided about one call. The zero
// value lets the call proceed unchanged.
type PreResult struct {
	// Block stops the call (a hook exited 2, or said continue:false): it
	// ends with status blocked and Reason for the model.
	Block bool
	// Decision is the hooks' combined permissionDecision (deny > defer >
	// ask > allow; defer is ""): permission.Allow, Deny, Ask or "". The
	// permission engine weighs it against rules and mode.
	Decision permission.Verdict
	// Reason explains a block or deny to the model, an ask to the person.
	Reason string
	// Hook names the handlers that decided.
	Hook string
	// UpdatedInput replaces the whole input; it is validated again.
	UpdatedInput json.RawMessage
	// AdditionalContext is appended to the call's result as a text block.
	AdditionalContext string
}

// PostResult is what the PostToolUse, PostToolUseFailure or PostToolBatch
// hooks add to a result. The zero value leaves it unchanged.
type PostResult struct {
	// AdditionalContext is appended to the result as a text block for the model.
	AdditionalContext string
	// Flag marks the result as flagged by a hook (exit 2 or decision
	// block): Reason is appended for the model and the result becomes
	// is_error (its status stays).
	Flag   bool
	Reason string
	// ReplaceOutput says the text of the result is replaced by UpdatedOutput
	// (updatedToolOutput).
	ReplaceOutput bool
	UpdatedOutput string
}

// PermissionResult is a PermissionRequest hook's answer. Decision "" means
// no answer: ask people as usual.
type PermissionResult struct {
	// Decision is permission.Allow or permission.Deny, or "".
	Decision permission.Verdict
	// Message tells the model why it was denied.
	Message string
	// UpdatedInput replaces the input of an allowed call (validated again).
	UpdatedInput json.RawMessage
	// Hook names the handlers that answered.
	Hook string
}

// BatchCall is one call of a finished batch, for PostToolBatch.
type BatchCall struct {
	Call   *tool.Call
	Tool   string
	Result *event.Result
}

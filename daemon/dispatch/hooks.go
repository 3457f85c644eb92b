package dispatch

import (
	"context"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/hook"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Hooks is the hook stage of the pipeline; *hook.Hooks implements it and
// nil means no hooks. Implementations are safe for concurrent use: calls
// of a parallel run reach them concurrently. Each method runs the hooks of
// its event and returns when they are done (or ctx ends).
type Hooks interface {
	// Has reports whether any hook of the event (hook.PreToolUse, …) is
	// configured for the session; it is cheap and allocates nothing.
	Has(env tool.Env, event string) bool
	// PreToolUse runs after validation and before the permission stage.
	PreToolUse(ctx context.Context, ev ToolEvent) PreResult
	// PostToolUse runs after a handler completed, with the result as the
	// model will get it.
	PostToolUse(ctx context.Context, ev ToolEvent, res *event.Result) PostResult
	// PostToolUseFailure runs after a handler failed.
	PostToolUseFailure(ctx context.Context, ev ToolEvent, res *event.Result) PostResult
	// PostToolBatch runs once per turn, after every call has its result.
	PostToolBatch(ctx context.Context, env tool.Env, turnID string, calls []BatchCall) PostResult
	// PermissionRequest runs when a call is about to ask people; an allow
	// or deny answers the request without asking.
	PermissionRequest(ctx context.Context, ev ToolEvent, alwaysRule string) PermissionResult
	// PermissionDenied runs after a call was denied permission.
	PermissionDenied(ctx context.Context, ev ToolEvent, reason string)
	// Notification runs when something waits for people (a permission prompt).
	Notification(ctx context.Context, env tool.Env, turnID, callID, notificationType, message string)
}

var _ Hooks = (*hook.Hooks)(nil)

// The hook stage's types live in the hook package (below the pipeline in
// the import graph); these aliases keep the pipeline's vocabulary.
type (
	// ToolEvent is the call a tool hook event is about.
	ToolEvent = hook.ToolEvent
	// PreResult is what the PreToolUse hooks decided about one call.
	PreResult = hook.PreResult
	// PostResult is what the PostToolUse-like hooks add to a result.
	PostResult = hook.PostResult
	// PermissionResult is a PermissionRequest hook's answer.
	PermissionResult = hook.PermissionResult
	// BatchCall is one call of a finished turn, for PostToolBatch.
	BatchCall = hook.BatchCall
)

// AuditRecord is one permission decision, for the audit log.
type AuditRecord struct {
	CallID string
	Tool   string
	// InputSHA256 is the hex SHA-256 of the call's input as decided on.
	InputSHA256 string
	// Outcome is allow or deny when nobody was asked; for an ask, the
	// answer: allow_once, allow_always, deny, timeout or cancelled.
	Outcome string
	// DecidedBy is the stage that decided: rule, hook, mode, tool,
	// default, user, timeout or cancelled.
	DecidedBy string
	// Rule is the text of the rule that decided, if one did; for an
	// allow_always answer, the rules saved (joined by ", ").
	Rule string
	// Scope is where an allow_always answer saved its rule.
	Scope string
	// ClientID is the client that answered an ask.
	ClientID string
	Time     time.Time
}

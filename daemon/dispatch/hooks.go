package dispatch

import (
	"context"
	"encoding/json"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Hooks is the hook stage of the pipeline. The hook package implements it;
// nil means no hooks. Implementations are safe for concurrent use: calls of
// a parallel run reach them concurrently.
type Hooks interface {
	// PreToolUse runs after validation and before the permission stage.
	PreToolUse(ctx context.Context, env tool.Env, call *tool.Call) PreResult
	// PostToolUse runs after a handler ran (completed or failed), with the
	// result as the model will get it.
	PostToolUse(ctx context.Context, env tool.Env, call *tool.Call, res *event.Result) PostResult
}

// PreResult is what the PreToolUse hooks decided about one call. The zero
// value lets the call proceed unchanged.
type PreResult struct {
	// Block stops the call: it ends with status blocked and Reason for the model.
	Block bool
	// Decision is permission.Allow (skip the prompt; a policy deny still
	// wins), permission.Deny (denied with Reason), permission.Ask (ask even
	// when the policy would allow), or "" for no opinion.
	Decision permission.Verdict
	// Reason explains a block or deny to the model, an ask to the person.
	Reason string
	// UpdatedInput replaces the whole input; it is validated again.
	UpdatedInput json.RawMessage
}

// PostResult is what the PostToolUse hooks add to a result. The zero value
// leaves it unchanged.
type PostResult struct {
	// AdditionalContext is appended to the result as a text block for the model.
	AdditionalContext string
	// Flag marks the result as flagged by a hook: Reason is appended for the
	// model and the result becomes is_error (its status stays).
	Flag   bool
	Reason string
}

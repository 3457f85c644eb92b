package hook

import (
	"context"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// The hooks of the query loop (daemon/agent), as Claude Code runs them.

// PromptResult is what the UserPromptSubmit hooks decided.
type PromptResult struct {
	// Block is set when a hook refused the prompt (exit 2, or decision
	// "block"); Reason says why, for the person. The prompt never reaches
	// the model.
	Block  bool
	Reason string
	// Context is what the hooks add to the prompt for the model
	// (additionalContext, or plain stdout of a hook that exits 0).
	Context string
}

// UserPromptSubmit runs the UserPromptSubmit hooks before a prompt reaches
// the model (no matcher: every group runs).
func (h *Hooks) UserPromptSubmit(ctx context.Context, env tool.Env, prompt string) PromptResult {
	sel := h.selectHandlers(env, idxUserPromptSubmit, "", nil)
	if sel == nil {
		return PromptResult{}
	}
	in := h.baseInput(env, UserPromptSubmit, sessionMode(env))
	in.Prompt = prompt
	var res PromptResult
	var ctxts []string
	for _, r := range h.runAll(ctx, sel, in) {
		if o, why := failed(&r); o != "" {
			h.emit(sel, &r, o, why)
			continue
		}
		switch {
		case r.block:
			res.Block, res.Reason = true, blockReason(&r)
			h.emit(sel, &r, event.HookBlocked, h.limit(env, res.Reason))
			continue
		case r.out != nil && r.out.Decision == "block", r.out != nil && r.out.Continue != nil && !*r.out.Continue:
			res.Block = true
			res.Reason = orDefault(r.out.Reason, orDefault(r.out.StopReason, "a UserPromptSubmit hook blocked the prompt"))
			h.emit(sel, &r, event.HookBlocked, h.limit(env, res.Reason))
			continue
		case r.out != nil && r.out.HookSpecificOutput != nil:
			ctxts = append(ctxts, r.out.HookSpecificOutput.AdditionalContext)
		case r.out == nil && r.exitCode == 0:
			ctxts = append(ctxts, r.plain)
		}
		h.emit(sel, &r, event.HookOK, r.err)
	}
	if !res.Block {
		res.Context = h.limit(env, joinNonEmpty(ctxts, "\n"))
	}
	return res
}

// Stop runs the Stop hooks when the loop is about to end the prompt: a
// hook that blocks (exit 2 with a reason on stderr, or decision "block"
// with a reason) makes the loop go on, with the reason as the model's next
// instruction. active tells the hooks the loop already went on because of
// a Stop hook (stop_hook_active), so they can let it end.
func (h *Hooks) Stop(ctx context.Context, env tool.Env, active bool, lastMessage string) (block bool, reason string) {
	sel := h.selectHandlers(env, idxStop, "", nil)
	if sel == nil {
		return false, ""
	}
	in := h.baseInput(env, Stop, sessionMode(env))
	in.StopHookActive, in.LastAssistantMessage = &active, lastMessage
	var reasons []string
	for _, r := range h.runAll(ctx, sel, in) {
		if o, why := failed(&r); o != "" {
			h.emit(sel, &r, o, why)
			continue
		}
		switch {
		case r.block:
			reasons = append(reasons, blockReason(&r))
			h.emit(sel, &r, event.HookBlocked, h.limit(env, blockReason(&r)))
		case r.out != nil && r.out.Decision == "block":
			why := orDefault(r.out.Reason, "a Stop hook asked to go on")
			reasons = append(reasons, why)
			h.emit(sel, &r, event.HookBlocked, h.limit(env, why))
		default:
			h.emit(sel, &r, event.HookOK, r.err)
		}
	}
	if len(reasons) == 0 {
		return false, ""
	}
	return true, h.limit(env, joinNonEmpty(reasons, "\n"))
}

// PreCompact runs the PreCompact hooks (matched on the trigger: "auto" or
// "manual") before the conversation is compacted. They only observe.
func (h *Hooks) PreCompact(ctx context.Context, env tool.Env, trigger, instructions string) {
	sel := h.selectHandlers(env, idxPreCompact, trigger, nil)
	if sel == nil {
		return
	}
	in := h.baseInput(env, PreCompact, sessionMode(env))
	in.Trigger, in.CustomInstructions = trigger, instructions
	h.observe(ctx, sel, in)
}

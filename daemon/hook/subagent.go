package hook

import (
	"context"
	"encoding/json"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// The hooks of a sub-agent (agent.md section 4, "Hooks"), as Claude Code
// runs them. Both are matched on the agent type and run in the child's
// session: env is the child, so its scoped hooks (SetScoped) take part.

// emptyList is background_tasks and session_crons: Claude Code always
// sends them; tackle has neither to report.
var emptyList = json.RawMessage(`[]`)

// SubagentStart runs the SubagentStart hooks (matched on agentType) when a
// sub-agent starts, with agent_id and agent_type in their input. env is the
// child's session. They cannot block the start: an exit 2, decision
// "block" or continue:false is recorded and ignored. What they return is
// context for the child's model: hookSpecificOutput.additionalContext only;
// plain stdout is not context for this event (reference.md section 3: only
// UserPromptSubmit, UserPromptExpansion and SessionStart take it).
func (h *Hooks) SubagentStart(ctx context.Context, env tool.Env, agentID, agentType string) (context string) {
	sel := h.selectHandlers(env, idxSubagentStart, agentType, nil)
	if sel == nil {
		return ""
	}
	in := h.baseInput(env, SubagentStart, sessionMode(env))
	in.AgentID, in.AgentType = agentID, agentType
	var ctxts []string
	for _, r := range h.runAll(ctx, sel, in) {
		if o, why := failed(&r); o != "" {
			h.emit(sel, &r, o, why)
			continue
		}
		why := r.err
		switch {
		case r.block:
			why = "exit status 2 cannot block a sub-agent's start; ignored: " + blockReason(&r)
		case r.out != nil && (r.out.Decision == "block" || r.out.Continue != nil && !*r.out.Continue):
			why = "a SubagentStart hook cannot block the start; ignored"
		}
		if r.out != nil && r.out.HookSpecificOutput != nil {
			ctxts = append(ctxts, r.out.HookSpecificOutput.AdditionalContext)
		}
		h.emit(sel, &r, event.HookOK, h.limit(env, why))
	}
	return h.limit(env, joinNonEmpty(ctxts, "\n"))
}

// SubagentStopInput is what a SubagentStop hook is told about the child
// that is about to finish.
type SubagentStopInput struct {
	// Active is set when the child already went on because of a
	// SubagentStop hook (stop_hook_active).
	Active bool
	// AgentID and AgentType name the child (agent_id, agent_type; the
	// matcher is AgentType).
	AgentID, AgentType string
	// TranscriptPath is the child's own transcript (agent_transcript_path).
	TranscriptPath string
	// LastMessage is the child's last assistant text (last_assistant_message).
	LastMessage string
}

// SubagentStop runs the SubagentStop hooks (matched on the agent type)
// when a sub-agent is about to end; env is the child's session. As Stop: a
// hook that blocks (exit 2 with a reason on stderr, or decision "block"
// with a reason) keeps the child running, with reason as its next
// instruction. The caller bounds how often it goes on (in.Active).
func (h *Hooks) SubagentStop(ctx context.Context, env tool.Env, in SubagentStopInput) (block bool, reason string) {
	sel := h.selectHandlers(env, idxSubagentStop, in.AgentType, nil)
	if sel == nil {
		return false, ""
	}
	hin := h.baseInput(env, SubagentStop, sessionMode(env))
	active, path := in.Active, in.TranscriptPath
	hin.AgentID, hin.AgentType = in.AgentID, in.AgentType
	hin.StopHookActive, hin.LastAssistantMessage, hin.AgentTranscriptPath = &active, in.LastMessage, &path
	hin.BackgroundTasks, hin.SessionCrons = emptyList, emptyList
	var reasons []string
	for _, r := range h.runAll(ctx, sel, hin) {
		if o, why := failed(&r); o != "" {
			h.emit(sel, &r, o, why)
			continue
		}
		switch {
		case r.block:
			reasons = append(reasons, blockReason(&r))
			h.emit(sel, &r, event.HookBlocked, h.limit(env, blockReason(&r)))
		case r.out != nil && r.out.Decision == "block":
			why := orDefault(r.out.Reason, "a SubagentStop hook asked to go on")
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

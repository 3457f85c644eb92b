// Package permission decides whether a tool call may run, and holds the
// permission requests that wait for a person's answer.
//
// It owns the rules (ParseRule, LoadRules from the settings layers, with
// workspace trust), the Engine that decides in reference.md's order (deny
// rules, ask rules, PreToolUse hooks, mode, allow rules, the tool's check,
// ask), the "allow always" writer (SaveRule), and the Broker of pending
// requests, where the first answer wins. It does not ask anyone, append
// events or run tools: the pipeline in daemon/dispatch calls Decide, opens a
// request in the Broker when the verdict is ask, and records what happened
// in the session log. It knows tools only through tool.Access (what a call
// reads, writes, runs, reaches), never by their inputs.
package permission

import (
	"context"
	"fmt"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Verdict is the outcome of a policy decision.
type Verdict string

// Verdicts.
const (
	Allow Verdict = "allow"
	Deny  Verdict = "deny"
	Ask   Verdict = "ask"
)

// Permission modes (reference.md "tackle's decisions").
const (
	ModeDefault           = "default"
	ModeAcceptEdits       = "acceptEdits"
	ModePlan              = "plan"
	ModeDontAsk           = "dontAsk"
	ModeBypassPermissions = "bypassPermissions"
)

// Modes lists the valid permission modes.
var Modes = []string{ModeDefault, ModeAcceptEdits, ModePlan, ModeDontAsk, ModeBypassPermissions}

// ValidMode reports whether m is a known permission mode. The empty string
// is not valid; callers treat it as ModeDefault where that makes sense.
func ValidMode(m string) bool {
	for _, v := range Modes {
		if v == m {
			return true
		}
	}
	return false
}

// Request is what the policy decides about: one call of a tool.
type Request struct {
	// Tool is the tool's canonical name.
	Tool string
	// Mode is the session's permission mode for this turn. When it is "",
	// ModeFunc (if set) gives it: resolving the mode reads settings, so a
	// policy asks for it only when the decision depends on it.
	Mode     string
	ModeFunc func() string
	// Attrs are the tool's attributes for this input.
	Attrs tool.Attributes
	// Access is what the call touches, from the tool's CheckPermission.
	Access tool.Access

	// Rules are the session's permission rules (LoadRules); nil means none,
	// and then the engine decides as the interim policy did.
	Rules *Rules
	// Hook is the combined decision of the PreToolUse hooks.
	Hook HookDecision
	// Cwd is the session's current directory (`x` and `./x` rules are
	// relative to it); Root is the session root (`/x` rules of cli, session
	// and managed rules are relative to it). An empty Cwd means Root.
	Cwd, Root string
	// Home is the home directory for `~/x` rules ("" means os.UserHomeDir).
	Home string
	// WorkingDirs are the session's working directories, for checking
	// Bash's redirection targets; nil means Cwd, Root and the rules'
	// additional directories.
	WorkingDirs []string
}

// HookDecision is the combined decision of the PreToolUse hooks of a call
// (deny over ask over allow).
type HookDecision struct {
	// Decision is "" (none), Allow, Ask or Deny.
	Decision Verdict
	// Reason is the deciding hook's reason.
	Reason string
	// Hook names the deciding hook (for explain).
	Hook string
}

// EffectiveMode is Mode, else what ModeFunc returns, else default.
func (r Request) EffectiveMode() string {
	m := r.Mode
	if m == "" && r.ModeFunc != nil {
		m = r.ModeFunc()
	}
	if m == "" {
		m = ModeDefault
	}
	return m
}

// Decision is a policy's answer. Reason says why, in words for a person (ask)
// or the model (deny).
type Decision struct {
	Verdict Verdict
	Reason  string
	// By says which stage decided: "rule", "hook", "mode", "tool" or
	// "default" (dispatch adds "user" and "timeout" for answered asks).
	By string
	// Rule is the rule that decided, if a rule did.
	Rule *Rule
	// AlwaysRule is, for an ask that an allow rule could settle, what
	// "allow always" would save, e.g. `Bash(npm test *)`, `Edit(//abs/dir/**)`,
	// `WebFetch(domain:x.com)`, `mcp__srv__tool`. When several rules are
	// needed (a compound command: up to 5), they are joined by ", "; SaveRule
	// accepts that list, and AlwaysRules holds them one by one. It is empty
	// when no allow rule would help (an ask rule, a hook, a protected path).
	AlwaysRule string
	// AlwaysRules are the rules of AlwaysRule, one by one.
	AlwaysRules []string
	// Chain is every stage taken, in order, for explain.
	Chain []Step
}

// Step is one stage of a decision, for explain.
type Step struct {
	// Stage is "deny rules", "ask rules", "hook", "mode", "allow rules",
	// "tool" or "default".
	Stage string
	// Outcome is "allow", "ask", "deny" or "pass" (the stage did not decide).
	Outcome string
	// Detail says what matched or why the stage passed.
	Detail string
}

// Policy decides about tool calls. Implementations are safe for concurrent use.
type Policy interface {
	Decide(ctx context.Context, r Request) Decision
}

// NewInterimPolicy returns the policy of issue 2, used until dispatch
// switches to NewEngine (which decides the same without rules, except that
// it lets a read-only Bash command inside the working directories run):
// an interactive tool always asks (dontAsk denies it); a read-only call whose
// access stays inside the working directories is allowed; otherwise
// bypassPermissions allows, acceptEdits allows file edits inside the working
// directories, plan denies tools that are not read-only, dontAsk denies what
// would ask, and everything else asks.
func NewInterimPolicy() Policy { return interim{} }

type interim struct{}

func (interim) Decide(_ context.Context, r Request) Decision {
	if r.Attrs.ReadOnly && !r.Attrs.Interactive && insideWorkingDirs(r.Access) {
		return Decision{Verdict: Allow, Reason: "read-only, inside the working directories"}
	}
	mode := r.EffectiveMode()
	if r.Attrs.Interactive {
		if mode == ModeDontAsk {
			return Decision{Verdict: Deny, Reason: fmt.Sprintf("%s needs a person, and the permission mode is dontAsk", r.Tool)}
		}
		return Decision{Verdict: Ask, Reason: fmt.Sprintf("%s needs a person", r.Tool)}
	}
	switch mode {
	case ModeBypassPermissions:
		return Decision{Verdict: Allow, Reason: "permission mode bypassPermissions"}
	case ModeAcceptEdits:
		if r.Access.Kind == tool.AccessEdit && r.Access.InsideWorkingDirs {
			return Decision{Verdict: Allow, Reason: "permission mode acceptEdits: a file edit inside the working directories"}
		}
	case ModePlan:
		if !r.Attrs.ReadOnly {
			return Decision{Verdict: Deny, Reason: fmt.Sprintf("the session is in plan mode, where only read-only tools may run; %s is not read-only", r.Tool)}
		}
	}
	reason := askReason(r)
	if mode == ModeDontAsk {
		return Decision{Verdict: Deny, Reason: fmt.Sprintf("the permission mode is dontAsk and %s would need approval (%s)", r.Tool, reason)}
	}
	return Decision{Verdict: Ask, Reason: reason}
}

// insideWorkingDirs reports whether a read-only access stays inside the
// working directories. An access that names no path and is neither a
// command nor the network touches nothing outside (e.g. ToolSearch).
func insideWorkingDirs(a tool.Access) bool {
	switch a.Kind {
	case tool.AccessExec, tool.AccessNetwork, tool.AccessExternal:
		return false
	}
	if len(a.Paths) == 0 {
		return true
	}
	return a.InsideWorkingDirs
}

func askReason(r Request) string {
	switch {
	case r.Access.Reason != "":
		return r.Access.Reason
	case r.Access.Kind == tool.AccessExec && r.Access.Command != "":
		return fmt.Sprintf("%s wants to run: %s", r.Tool, r.Access.Command)
	case r.Access.Kind == tool.AccessNetwork && r.Access.Command != "":
		return fmt.Sprintf("%s wants to reach %s", r.Tool, r.Access.Command)
	case len(r.Access.Paths) > 0 && !r.Access.InsideWorkingDirs:
		return fmt.Sprintf("%s touches a path outside the working directories: %s", r.Tool, r.Access.Paths[0])
	case r.Access.Kind == tool.AccessEdit && len(r.Access.Paths) > 0:
		return fmt.Sprintf("%s wants to change %s", r.Tool, r.Access.Paths[0])
	case r.Access.Kind == tool.AccessExternal:
		if r.Attrs.ReadOnly {
			return fmt.Sprintf("%s is an MCP tool (its server says it is read-only; tackle cannot check that)", r.Tool)
		}
		return fmt.Sprintf("%s is an MCP tool that may change things", r.Tool)
	}
	return fmt.Sprintf("%s is not read-only", r.Tool)
}

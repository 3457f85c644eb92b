// Package permission decides whether a tool call may run, and holds the
// permission requests that wait for a person's answer.
//
// It owns the policy (modes now; rules come with the policy issue) and the
// Broker of pending requests, where the first answer wins. It does not ask
// anyone itself, append events or run tools: the pipeline in daemon/dispatch
// calls Decide, opens a request in the Broker when the verdict is ask, and
// records what happened in the session log.
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
}

// Decision is a policy's answer. Reason says why, in words for a person (ask)
// or the model (deny).
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

type Decision struct {
	Verdict Verdict
	Reason  string
}

// Policy decides about tool calls. Implementations are safe for concurrent use.
type Policy interface {
	Decide(ctx context.Context, r Request) Decision
}

// NewInterimPolicy returns the policy of issue 2, used until rules land:
// an interactive tool always asks (dontAsk denies it); a read-only call whose
// access stays inside the working directories is allowed; otherwise
// bypassPermissions allows, acceptEdits allows file edits inside the working
// directories, plan denies tools that are not read-only, dontAsk denies what
// would ask, and everything else asks.
func NewInterimPolicy() Policy { return interim{} }

type interim struct{}

func (interim) Decide(_ context.Context, r Request) Decision {
	if r.Attrs.ReadOnly && !r.Attrs.Interactive && insideWorkingDirs(r.Access) {
		return Decision{Allow, "read-only, inside the working directories"}
	}
	mode := r.EffectiveMode()
	if r.Attrs.Interactive {
		if mode == ModeDontAsk {
			return Decision{Deny, fmt.Sprintf("%s needs a person, and the permission mode is dontAsk", r.Tool)}
		}
		return Decision{Ask, fmt.Sprintf("%s needs a person", r.Tool)}
	}
	switch mode {
	case ModeBypassPermissions:
		return Decision{Allow, "permission mode bypassPermissions"}
	case ModeAcceptEdits:
		if r.Access.Kind == tool.AccessEdit && r.Access.InsideWorkingDirs {
			return Decision{Allow, "permission mode acceptEdits: a file edit inside the working directories"}
		}
	case ModePlan:
		if !r.Attrs.ReadOnly {
			return Decision{Deny, fmt.Sprintf("the session is in plan mode, where only read-only tools may run; %s is not read-only", r.Tool)}
		}
	}
	reason := askReason(r)
	if mode == ModeDontAsk {
		return Decision{Deny, fmt.Sprintf("the permission mode is dontAsk and %s would need approval (%s)", r.Tool, reason)}
	}
	return Decision{Ask, reason}
}

// insideWorkingDirs reports whether a read-only access stays inside the
// working directories. An access that names no path and is neither a
// command nor the network touches nothing outside (e.g. ToolSearch).
func insideWorkingDirs(a tool.Access) bool {
	switch a.Kind {
	case tool.AccessExec, tool.AccessNetwork:
		return false
	}
	if len(a.Paths) == 0 {
		return true
	}
	return a.InsideWorkingDirs
}

func askReason(r Request) string {
	switch {
	case r.Access.Kind == tool.AccessExec && r.Access.Command != "":
		return fmt.Sprintf("%s wants to run: %s", r.Tool, r.Access.Command)
	case r.Access.Kind == tool.AccessNetwork && r.Access.Command != "":
		return fmt.Sprintf("%s wants to reach %s", r.Tool, r.Access.Command)
	case len(r.Access.Paths) > 0 && !r.Access.InsideWorkingDirs:
		return fmt.Sprintf("%s touches a path outside the working directories: %s", r.Tool, r.Access.Paths[0])
	case r.Access.Kind == tool.AccessEdit && len(r.Access.Paths) > 0:
		return fmt.Sprintf("%s wants to change %s", r.Tool, r.Access.Paths[0])
	}
	return fmt.Sprintf("%s is not read-only", r.Tool)
}

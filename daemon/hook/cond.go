package hook

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// condition is a handler's `if`: one permission rule, matched against the
// call's tool and Access exactly as the permission engine matches rules.
type condition struct {
	rules *permission.Rules // the rule alone, as a deny rule
}

// condEngine matches conditions. The engine keeps no state between calls.
var condEngine = permission.NewEngine()

// parseCondition parses `Tool` or `Tool(spec)` with the permission rule
// parser, so an `if` reads exactly like a permission rule.
func parseCondition(text string) (*condition, error) {
	r, err := permission.ParseRule(text)
	if err != nil {
		return nil, err
	}
	r.Behavior = permission.BehaviorDeny
	r.Source = permission.Source{Scope: permission.ScopeSession}
	rules := permission.NewRules(r)
	if probs := rules.Problems(); len(probs) > 0 {
		return nil, probs[0]
	}
	return &condition{rules: rules}, nil
}

// match reports whether the rule covers the call ev: as a deny rule, it
// decides the call. (A Read rule also covers writes of its paths, as a
// Read deny rule does.)
func (c *condition) match(ev *ToolEvent) bool {
	req := permission.Request{Tool: ev.Tool, Mode: permission.ModeDefault, Access: ev.Access, Rules: c.rules,
		Cwd: cwdOf(ev.Env), Root: rootOf(ev.Env), Home: homeOf(ev.Env)}
	if ev.Tool == "Bash" && len(req.Access.Commands) == 0 && req.Access.Command == "" && ev.Call != nil {
		// No Access from the tool: the input's command line as written.
		var in struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(ev.Call.Input, &in) == nil {
			req.Access.Command = strings.Join(strings.Fields(in.Command), " ")
		}
	}
	d := condEngine.Decide(context.Background(), req)
	return d.Verdict == permission.Deny && d.By == permission.ByRule
}

func homeOf(env tool.Env) string {
	if env != nil {
		for _, kv := range env.Environ() {
			if strings.HasPrefix(kv, "HOME=") {
				return kv[5:]
			}
		}
	}
	return ""
}

func cwdOf(env tool.Env) string {
	if env == nil {
		return ""
	}
	return env.Cwd()
}

// rootOf is the session's root (project) directory.
func rootOf(env tool.Env) string {
	if env == nil {
		return ""
	}
	if r, ok := env.(interface{ Root() string }); ok {
		if root := r.Root(); root != "" {
			return root
		}
	}
	if wd := env.WorkingDirs(); len(wd) > 0 {
		return wd[0]
	}
	return env.Cwd()
}

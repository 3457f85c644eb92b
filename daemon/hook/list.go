package hook

import (
	"strings"

	"github.com/tackle-agent/tackle/daemon/config"
)

// Entry is one configured hook as `tackle hooks list` shows it.
type Entry struct {
	Event, Matcher string
	// Type is command, http or prompt; What the command line, URL or
	// prompt.
	Type, What string
	// Source is the settings file, Scope its scope; for a plugin's hook
	// the hooks file (or plugin.json) with the plugin's id in brackets,
	// "/p/hooks/hooks.json [plugin fmt@tools]", and scope "plugin".
	Source, Scope string
	// State is active, ignored (it cannot be used: Reason says why) or
	// untrusted (the project is not trusted: it would run once it is).
	State, Reason string
}

// List is every hook the settings st configure, in event and file order:
// those that run, those that are ignored (an unknown event, a bad entry,
// a plugin's hooks file that cannot be read, disableAllHooks) and an
// untrusted project's, with the reason. Plugins' hooks come after the
// settings files' (Parse).
func List(st *config.Settings) []Entry {
	c := Parse(st)
	var out []Entry
	for idx, ev := range Events {
		for _, g := range c.groups[idx] {
			for _, h := range g.Handlers {
				e := Entry{Event: ev, Matcher: g.Matcher, Type: h.Type, What: h.Name(), Source: sourceOf(h.Source, h.Plugin), Scope: h.Source.Scope, State: "active"}
				if e.Type == "" {
					e.Type = "command"
				}
				if c.disableAll && !g.managed {
					e.State, e.Reason = "ignored", "disableAllHooks is set: only managed hooks run"
				}
				out = append(out, e)
			}
		}
	}
	for _, p := range c.Problems {
		out = append(out, Entry{Event: p.Event, Source: sourceOf(p.Source, p.Plugin), Scope: p.Source.Scope, State: "ignored", Reason: p.Message})
	}
	_, probs := st.Plugins()
	for _, p := range probs {
		if p.Part == config.PartHooks {
			out = append(out, Entry{Source: p.Path + " [plugin " + p.Plugin + "]", Scope: config.ScopePlugin, State: "ignored", Reason: p.Message})
		}
	}
	if st != nil {
		for _, ig := range st.Ignored {
			if strings.Contains(ig, "hook") {
				out = append(out, Entry{State: "untrusted", Reason: ig + " (tackle trust runs them)"})
			}
		}
	}
	return out
}

// sourceOf is an entry's Source: the file, and a plugin's id.
func sourceOf(src config.Source, p *PluginRef) string {
	if p == nil {
		return src.Path
	}
	return src.Path + " [plugin " + p.Label + "]"
}

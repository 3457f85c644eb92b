package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/internal/frontmatter"
)

// sessionHooks are hooks a session added at run time: a skill's frontmatter
// `hooks` (AddSession), which run after the settings' hooks for the rest of
// the session, and a sub-agent definition's (SetScoped), which run after
// those until ClearScoped.
type sessionHooks struct {
	cfg    *Config // the skills'; never nil
	scoped *scopedHooks
	// merged caches the settings' Config of root joined with cfg and scoped.
	root   string
	base   *Config
	merged *Config
}

// scopedHooks are the hooks of an agent definition, parsed twice: as
// trusted, and as needing the workspace's trust (when the definition is a
// file inside the session's project).
type scopedHooks struct {
	source             string
	trusted, untrusted *Config
}

// forRoot returns the groups to run in a session of root: a definition
// file inside the project runs its hooks only once the project is trusted,
// as the project's settings do.
func (s *scopedHooks) forRoot(root string) *Config {
	if root != "" && filepath.IsAbs(s.source) && (s.source == root || strings.HasPrefix(s.source, root+string(filepath.Separator))) {
		return s.untrusted
	}
	return s.trusted
}

// AddSession registers hooks (the settings' "hooks" object shape) for the
// rest of session sessionID, from source (e.g. "skill review"). Untrusted
// hooks (a project's skill in an untrusted workspace) are kept but run only
// once the workspace is trusted, as project hooks do. A malformed object is
// an error and registers nothing.
func (h *Hooks) AddSession(sessionID, source string, raw json.RawMessage, trusted bool) error {
	if h == nil || len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	scope := config.ScopeUser
	if !trusted {
		scope = config.ScopeProject
	}
	cfg := Parse(&config.Settings{Layers: []config.Layer{{
		Source: config.Source{Scope: scope, Path: source},
		Raw:    map[string]json.RawMessage{"hooks": raw},
	}}})
	if len(cfg.Problems) > 0 {
		var errs []error
		for _, p := range cfg.Problems {
			errs = append(errs, errors.New(p.Error()))
		}
		return fmt.Errorf("hooks of %s: %w", source, errors.Join(errs...))
	}
	h.sessMu.Lock()
	defer h.sessMu.Unlock()
	if h.sess == nil {
		h.sess = map[string]*sessionHooks{}
	}
	sh := h.sess[sessionID]
	if sh == nil {
		sh = &sessionHooks{cfg: &Config{}}
		h.sess[sessionID] = sh
	}
	sh.cfg = joinConfigs(sh.cfg, cfg)
	sh.merged, sh.base = nil, nil
	return nil
}

// SetScoped registers the hooks of the agent definition a sub-agent's
// session sessionID runs (the `hooks` frontmatter: the settings' "hooks"
// shape), from source (the definition's file path, or a name such as
// "--agents reviewer"). They run for that session only, after the settings'
// and skills' hooks, until ClearScoped; a second SetScoped replaces them. A
// `Stop` hook there becomes a SubagentStop hook, as in Claude Code.
//
// Entries are checked as the settings' hooks are: the ones that cannot be
// used are returned as Problems and ignored, the rest are registered. The
// caller decides whether a definition's hooks may run at all (a project's
// agent in an untrusted workspace); in addition, hooks of a definition file
// inside the session's project run only once the project is trusted.
func (h *Hooks) SetScoped(sessionID string, hooks map[string]any, source string) []Problem {
	if h == nil {
		return nil
	}
	src := config.Source{Scope: config.ScopeUser, Path: source}
	var sc *scopedHooks
	var probs []Problem
	if len(hooks) > 0 {
		raw, err := json.Marshal(subagentHooks(hooks))
		if err != nil {
			return []Problem{{Source: src, Message: fmt.Sprintf("\"hooks\" cannot be read as JSON: %v; its hooks are ignored", err)}}
		}
		layer := func(scope string) *Config {
			s := src
			s.Scope = scope
			return Parse(&config.Settings{Layers: []config.Layer{{Source: s, Raw: map[string]json.RawMessage{"hooks": raw}}}})
		}
		trusted := layer(config.ScopeUser)
		probs = trusted.Problems
		if !trusted.Empty() {
			sc = &scopedHooks{source: source, trusted: trusted, untrusted: layer(config.ScopeProject)}
		}
	}
	h.sessMu.Lock()
	defer h.sessMu.Unlock()
	sh := h.sess[sessionID]
	switch {
	case sh == nil && sc == nil:
	case sh == nil:
		if h.sess == nil {
			h.sess = map[string]*sessionHooks{}
		}
		h.sess[sessionID] = &sessionHooks{cfg: &Config{}, scoped: sc}
	case sc == nil && sh.cfg.Empty():
		delete(h.sess, sessionID)
	default:
		sh.scoped = sc
		sh.merged, sh.base = nil, nil
	}
	return probs
}

// ClearScoped forgets the agent definition's hooks of session sessionID
// (SetScoped); the hooks its skills added stay.
func (h *Hooks) ClearScoped(sessionID string) {
	h.SetScoped(sessionID, nil, "")
}

// subagentHooks returns frontmatter hooks ready for JSON: a `Stop` entry
// becomes `SubagentStop` (after SubagentStop's own groups), and YAML's
// map[any]any become map[string]any.
func subagentHooks(hooks map[string]any) map[string]any {
	out := make(map[string]any, len(hooks))
	for k, v := range hooks {
		out[k] = frontmatter.JSONable(v)
	}
	if stop, ok := out[Stop]; ok {
		delete(out, Stop)
		a, aok := out[SubagentStop].([]any)
		b, bok := stop.([]any)
		switch {
		case aok && bok:
			out[SubagentStop] = append(a[:len(a):len(a)], b...)
		case !bok || out[SubagentStop] == nil:
			out[SubagentStop] = stop // a malformed Stop is reported as SubagentStop's
		}
	}
	return out
}

// DropSession forgets the hooks a session added (its skills' and its
// agent definition's).
func (h *Hooks) DropSession(sessionID string) {
	if h == nil {
		return
	}
	h.sessMu.Lock()
	delete(h.sess, sessionID)
	h.sessMu.Unlock()
}

// configOf returns the hooks in force for env's session: its project's,
// then those its skills added, then its agent definition's. A session that
// added none costs one map look-up.
func (h *Hooks) configOf(env tool.Env) *Config {
	root := rootOf(env)
	base := h.Config(root)
	h.sessMu.RLock()
	sh := h.sess[env.SessionID()]
	if sh == nil {
		h.sessMu.RUnlock()
		return base
	}
	if sh.merged != nil && sh.base == base && sh.root == root {
		m := sh.merged
		h.sessMu.RUnlock()
		return m
	}
	cfg, sc := sh.cfg, sh.scoped
	h.sessMu.RUnlock()
	m := joinConfigs(base, cfg)
	if sc != nil {
		m = joinConfigs(m, sc.forRoot(root))
	}
	h.sessMu.Lock()
	if cur := h.sess[env.SessionID()]; cur == sh && sh.cfg == cfg && sh.scoped == sc {
		sh.root, sh.base, sh.merged = root, base, m
	}
	h.sessMu.Unlock()
	return m
}

// joinConfigs returns a's groups followed by b's.
func joinConfigs(a, b *Config) *Config {
	out := &Config{}
	if a != nil {
		out.disableAll = a.disableAll
	}
	for idx := range out.groups {
		if a != nil {
			out.groups[idx] = append(out.groups[idx], a.groups[idx]...)
			out.needTrust[idx] = a.needTrust[idx]
		}
		if b != nil {
			out.groups[idx] = append(out.groups[idx], b.groups[idx]...)
			out.needTrust[idx] = out.needTrust[idx] || b.needTrust[idx]
		}
	}
	return out
}

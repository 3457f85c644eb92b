package hook

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// sessionHooks are hooks a session added at run time (a skill's frontmatter
// `hooks`): they run, after the settings' hooks, for the rest of the session.
type sessionHooks struct {
	cfg *Config
	// merged caches the settings' Config of root joined with cfg.
	root   string
	base   *Config
	merged *Config
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

// DropSession forgets the hooks a session added.
func (h *Hooks) DropSession(sessionID string) {
	if h == nil {
		return
	}
	h.sessMu.Lock()
	delete(h.sess, sessionID)
	h.sessMu.Unlock()
}

// configOf returns the hooks in force for env's session: its project's,
// then those the session added.
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
	h.sessMu.RUnlock()
	m := joinConfigs(base, sh.cfg)
	h.sessMu.Lock()
	if cur := h.sess[env.SessionID()]; cur == sh {
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

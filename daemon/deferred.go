package daemon

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"

	"github.com/tackle-agent/tackle/daemon/mcp"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/toolsearch"
)

// deferral decides which tools of a session are deferred (the toolSearch
// setting: MCP tools without alwaysLoad, unless off, or in auto only past
// a share of the context) and records the ones the session loaded.
type deferral struct {
	d *Daemon

	mu    sync.Mutex
	modes map[string]searchSettings // by session id; reset when settings change
	gen   uint64
}

// searchSettings are a session's tool-search settings.
type searchSettings struct {
	mode          toolsearch.Mode
	contextTokens int
}

func newDeferral(d *Daemon) *deferral { return &deferral{d: d, modes: map[string]searchSettings{}} }

// reset drops the cached settings (a settings file changed).
func (f *deferral) reset() {
	f.mu.Lock()
	clear(f.modes)
	f.gen++
	f.mu.Unlock()
}

// settings reads a session's toolSearch and contextTokens settings; the
// session's ENABLE_TOOL_SEARCH (Claude Code's variable) wins. A value that
// does not parse is logged and means the default (on).
func (f *deferral) settings(sess *session.Session) searchSettings {
	f.mu.Lock()
	s, ok := f.modes[sess.ID()]
	gen := f.gen
	f.mu.Unlock()
	if ok {
		return s
	}
	s = searchSettings{mode: toolsearch.Mode{Kind: toolsearch.ModeOn, Percent: toolsearch.DefaultPercent}}
	st, _ := f.d.loader.Load(sess.Root())
	if raw, ok := st.Raw["toolSearch"]; ok {
		if m, err := toolsearch.ParseMode(raw); err == nil {
			s.mode = m
		} else {
			f.d.log.Warn("toolSearch setting ignored", "session", sess.ID(), "error", err)
		}
	}
	for _, kv := range sess.Environ() {
		if v, ok := strings.CutPrefix(kv, "ENABLE_TOOL_SEARCH="); ok && v != "" {
			if m, err := toolsearch.ParseModeString(v); err == nil {
				s.mode = m
			}
		}
	}
	if raw, ok := st.Raw["contextTokens"]; ok {
		var n int
		if json.Unmarshal(raw, &n) == nil && n > 0 {
			s.contextTokens = n
		}
	}
	f.mu.Lock()
	if f.gen == gen {
		f.modes[sess.ID()] = s
	}
	f.mu.Unlock()
	return s
}

// deferred returns which of tools (a session's pool) are deferred.
func (f *deferral) deferred(sess *session.Session, tools []tool.Tool) map[string]bool {
	s := f.settings(sess)
	return toolsearch.Deferred(s.mode, tools, s.contextTokens)
}

// sessionDeferred returns the session's deferred tools, loaded or not.
func (f *deferral) sessionDeferred(sess *session.Session) []tool.Tool {
	pool := f.d.mcp.tools(sess.ID())
	set := f.deferred(sess, pool)
	var out []tool.Tool
	for _, t := range pool {
		if set[t.Spec().Name] {
			out = append(out, t)
		}
	}
	return out
}

// unloaded reports whether t is deferred for the session and not loaded.
func (f *deferral) unloaded(sessionID string, t tool.Tool) bool {
	if !toolsearch.Deferrable(t) {
		return false
	}
	sess, err := f.d.sessions.Get(context.Background(), sessionID)
	if err != nil {
		return false
	}
	name := t.Spec().Name
	if sess.Loaded(name) {
		return false
	}
	s := f.settings(sess)
	switch s.mode.Kind {
	case toolsearch.ModeOff:
		return false
	case toolsearch.ModeAuto:
		return f.deferred(sess, f.d.mcp.tools(sessionID))[name]
	}
	return true
}

// load records that the session loaded deferred tools.
func (f *deferral) load(sessionID string, names []string) {
	sess, err := f.d.sessions.Get(context.Background(), sessionID)
	if err != nil {
		return
	}
	if _, err := sess.LoadTools(names); err != nil {
		f.d.log.Warn("recording loaded tools", "session", sessionID, "tools", strconv.Itoa(len(names)), "error", err)
	}
}

// searchTool is the ToolSearch tool wired to the sessions.
func (f *deferral) searchTool() tool.Tool {
	return toolsearch.NewTool(&toolsearch.Options{
		Deferred: func(env tool.Env) []tool.Tool {
			sess, ok := env.(*session.Session)
			if !ok {
				return nil
			}
			return f.sessionDeferred(sess)
		},
		Load: func(env tool.Env, names []string) { f.load(env.SessionID(), names) },
		Servers: func(env tool.Env) (pending, failed []string) {
			for _, c := range f.d.mcp.mgr.Conns(env.SessionID()) {
				switch st := c.State(); st {
				case mcp.Pending, mcp.Connecting:
					pending = append(pending, c.Name())
				case mcp.Failed, mcp.NeedsAuth:
					failed = append(failed, c.Name())
				}
			}
			return pending, failed
		},
	})
}

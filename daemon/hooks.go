package daemon

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/hook"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
)

// This file runs the session-level hooks (SessionStart, SessionEnd,
// CwdChanged, ConfigChange) in the background, so no RPC waits for a hook,
// and applies permissions.askTimeoutSeconds.

// background runs f on the daemon's background context; Run waits for it.
func (d *Daemon) background(f func(ctx context.Context)) {
	d.bg.Add(1)
	go func() {
		defer d.bg.Done()
		f(d.bgCtx)
	}()
}

// sessionLoaded runs the SessionStart hooks the first time this run serves
// a session (startup when it was just created, resume otherwise) and
// appends the context they add as a notice.
func (d *Daemon) sessionLoaded(sess *session.Session, created bool) {
	d.mcp.sync(sess)
	d.noticeIgnoredHooks(sess)
	source := hook.SourceResume
	if created {
		source = hook.SourceStartup
	}
	d.background(func(ctx context.Context) {
		if text := d.hooks.SessionStart(ctx, sess, source); text != "" {
			if _, err := sess.Append(&event.Event{Type: event.Notice, Text: "SessionStart hook context:\n" + text}); err != nil {
				d.log.Debug("recording SessionStart hook context", "session", sess.ID(), "error", err)
			}
		}
	})
}

// sessionDeleted forgets a deleted session's rules and runs its SessionEnd
// hooks (reason "deleted"; what they log goes nowhere, the log is gone).
func (d *Daemon) sessionDeleted(sess *session.Session) {
	d.perms.forget(sess.ID())
	d.mcp.release(sess.ID())
	d.skills.release(sess.ID())
	d.background(func(ctx context.Context) { d.hooks.SessionEnd(ctx, sess, "deleted") })
}

// cwdChanged runs the CwdChanged hooks of a session whose current
// directory moved.
func (d *Daemon) cwdChanged(sess *session.Session, oldDir, newDir string) {
	d.background(func(ctx context.Context) { d.hooks.CwdChanged(ctx, sess, oldDir, newDir) })
}

// configChanged runs the ConfigChange hooks of every loaded session whose
// settings include the changed file: a project's own files, or a file
// outside every project (user or managed settings).
func (d *Daemon) configChanged(path string) {
	sessions := d.sessions.Loaded()
	d.mcp.resync()
	d.background(func(ctx context.Context) {
		d.hooks.Invalidate()
		for _, sess := range sessions {
			root := sess.Root()
			inProject := strings.HasPrefix(path, root+string(filepath.Separator))
			if inProject || !d.inAnyProject(path, sessions) {
				d.hooks.ConfigChange(ctx, sess, path)
			}
		}
	})
}

// inAnyProject reports whether path lies inside the root of one of sessions.
func (d *Daemon) inAnyProject(path string, sessions []*session.Session) bool {
	for _, s := range sessions {
		if strings.HasPrefix(path, s.Root()+string(filepath.Separator)) {
			return true
		}
	}
	return false
}

// askTimeout is permissions.askTimeoutSeconds of a project's settings (0:
// not set, the daemon's default applies).
func (d *Daemon) askTimeout(root string) time.Duration {
	st, _ := d.loader.Load(root)
	if st == nil || st.Permissions.AskTimeoutSeconds <= 0 {
		return 0
	}
	if s := st.Permissions.AskTimeoutSeconds; s > maxAskTimeoutSeconds {
		// More seconds than a Duration holds: as good as forever, not
		// the overflow's negative (an ask denied at once).
		return time.Duration(maxAskTimeoutSeconds) * time.Second
	}
	return time.Duration(st.Permissions.AskTimeoutSeconds) * time.Second
}

// maxAskTimeoutSeconds is the longest askTimeoutSeconds a time.Duration
// holds (about 292 years).
const maxAskTimeoutSeconds = int(math.MaxInt64 / int64(time.Second))

// hookList implements server.HookLister.
type hookList struct{ d *Daemon }

func (h hookList) Hooks(sess *session.Session) []server.HookEntry {
	st, _ := h.d.loader.Load(sess.Root())
	var out []server.HookEntry
	for _, e := range hook.List(st) {
		out = append(out, server.HookEntry{Event: e.Event, Matcher: e.Matcher, Type: e.Type, What: e.What, Source: e.Source, Scope: e.Scope, State: e.State, Reason: e.Reason})
	}
	return out
}

// noticeIgnoredHooks tells a session's clients of the hooks its settings
// configure that tackle does not run (like rule problems; tackle hooks
// list has them all).
func (d *Daemon) noticeIgnoredHooks(sess *session.Session) {
	st, _ := d.loader.Load(sess.Root())
	var lines []string
	for _, e := range hook.List(st) {
		if e.State != "ignored" {
			continue
		}
		where := e.Source
		if e.Event != "" {
			where += " (" + e.Event + ")"
		}
		lines = append(lines, where+": "+e.Reason)
	}
	if len(lines) == 0 {
		return
	}
	text := "hooks tackle does not run (tackle hooks list shows every hook):\n" + strings.Join(lines, "\n")
	if _, err := sess.Append(&event.Event{Type: event.Notice, Text: text}); err != nil {
		d.log.Debug("reporting ignored hooks", "session", sess.ID(), "error", err)
	}
}

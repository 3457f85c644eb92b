package server

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/session"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// This file applies the settings to sessions: the effective permission
// mode of a turn and the notices about settings files that do not parse.

// resolved is what the settings of a session's directory mean for a turn.
type resolved struct {
	// mode is the effective permission mode.
	mode string
	// notes are notices for this turn only (e.g. bypassPermissions disabled).
	notes []string
	// problems are the settings problems of the directory, one text each,
	// sorted: files that do not parse and invalid values.
	problems []string
}

// resolve returns the effective permission mode for a session in cwd with
// the explicitly set mode explicit ("" if none) and a per-batch override
// ("" if none): override, else explicit, else the settings' defaultMode,
// else default. A bypassPermissions mode becomes default when the settings
// say permissions.disableBypassPermissionsMode: "disable".
func (s *Server) resolve(cwd, explicit, override string) resolved {
	var (
		st    *config.Settings
		probs []config.Problem
	)
	if s.opts.Settings != nil && cwd != "" {
		st, probs = s.opts.Settings(cwd)
	}
	return resolveFrom(st, probs, explicit, override)
}

// resolveFrom is resolve with the settings st and their problems as read.
func resolveFrom(st *config.Settings, probs []config.Problem, explicit, override string) resolved {
	var r resolved
	for _, p := range probs {
		r.problems = append(r.problems, problemText(p))
	}
	settingsMode := ""
	if st != nil {
		if m := st.Permissions.DefaultMode; m != "" {
			if permission.ValidMode(m) {
				settingsMode = m
			} else {
				r.problems = append(r.problems, fmt.Sprintf("settings file %s: permissions.defaultMode %q is not a permission mode (use one of %s); it is ignored",
					defaultModeSource(st), m, strings.Join(permission.Modes, ", ")))
			}
		}
	}
	slices.Sort(r.problems)
	r.mode = permission.ModeDefault
	for _, m := range []string{override, explicit, settingsMode} {
		if m != "" {
			r.mode = m
			break
		}
	}
	if r.mode == permission.ModeBypassPermissions && st != nil && st.Permissions.DisableBypassPermissionsMode == "disable" {
		r.mode = permission.ModeDefault
		r.notes = append(r.notes, `permission mode bypassPermissions is disabled by the settings (permissions.disableBypassPermissionsMode is "disable"): the calls run in default mode`)
	}
	return r
}

// problemText is the notice text of a settings file that does not parse.
func problemText(p config.Problem) string {
	msg := strings.TrimSuffix(p.Message, " (the last good version stays in force)")
	loc := p.Path
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", p.Path, p.Line, p.Column)
	}
	return fmt.Sprintf("settings file %s: %s — the last good version stays in force", loc, msg)
}

// defaultModeSource returns the path of the highest settings file that sets
// permissions.defaultMode.
func defaultModeSource(st *config.Settings) string {
	for i := len(st.Layers) - 1; i >= 0; i-- {
		var p struct {
			DefaultMode *string `json:"defaultMode"`
		}
		if raw, ok := st.Layers[i].Raw["permissions"]; ok && json.Unmarshal(raw, &p) == nil && p.DefaultMode != nil {
			return st.Layers[i].Source.Path
		}
	}
	return "(unknown)"
}

// sessionProto is the protobuf Session of in, with its effective
// permission mode (the session's own, else the settings').
func (s *Server) sessionProto(in session.Info) *tacklev1.Session {
	out := sessionToProto(in)
	out.PermissionMode = s.resolve(in.Cwd, in.PermissionMode, "").mode
	return out
}

// turnMode resolves the permission mode of a turn of sess, appends the
// turn's notices and reports changed settings problems (see reportProblems).
func (s *Server) turnMode(sess *session.Session, turnID, override string) string {
	// The session read its settings for this turn already (its working
	// directories, the turn's rules): the same snapshot decides the mode.
	s.settingsMu.Lock()
	var r resolved
	if st, probs := sess.TurnSettings(); st != nil {
		r = resolveFrom(st, probs, sess.PermissionMode(), override)
	} else {
		r = s.resolve(sess.Root(), sess.PermissionMode(), override)
	}
	s.reportProblemsLocked(sess, turnID, r.problems)
	s.settingsMu.Unlock()
	for _, n := range r.notes {
		s.notice(sess, turnID, n)
	}
	return r.mode
}

// CheckSettings re-reads the settings of every loaded session and appends a
// notice to each whose settings problems changed since its last notice. The
// daemon calls it when a settings file changes.
func (s *Server) CheckSettings() {
	for _, sess := range s.sessions.Loaded() {
		s.settingsMu.Lock()
		r := s.resolve(sess.Root(), "", "")
		s.reportProblemsLocked(sess, "", r.problems)
		s.settingsMu.Unlock()
	}
}

// reportProblemsLocked appends one notice to sess when its settings
// problems differ from the ones last reported to it: the problems, or that
// they are gone. A session that never had a problem gets no notice.
// settingsMu is held, so a change is reported once.
func (s *Server) reportProblemsLocked(sess *session.Session, turnID string, problems []string) {
	key := strings.Join(problems, "\n")
	if s.reported[sess.ID()] == key {
		return
	}
	if key == "" {
		delete(s.reported, sess.ID())
		s.log.Info("settings problems resolved", "session", sess.ID(), "cwd", sess.Root())
		s.notice(sess, turnID, "the settings problems reported before are fixed: the current settings files are in force")
		return
	}
	s.reported[sess.ID()] = key
	for _, p := range problems {
		s.log.Warn("settings problem", "session", sess.ID(), "problem", p)
	}
	s.notice(sess, turnID, key)
}

// notice appends a notice event to sess, logging a failure.
func (s *Server) notice(sess *session.Session, turnID, text string) {
	if _, err := sess.Append(&event.Event{Type: event.Notice, TurnID: turnID, Text: text}); err != nil {
		s.log.Error("appending a notice", "session", sess.ID(), "error", err)
	}
}

// forgetSession drops what was reported to a deleted session.
func (s *Server) forgetSession(id string) {
	s.settingsMu.Lock()
	delete(s.reported, id)
	s.settingsMu.Unlock()
}

package session

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// RecordAudit queues one permission decision for the audit log. It is
// stored with the session log, in the same commits (so it costs no commit
// of its own); Manager.Close flushes it.
func (m *Manager) RecordAudit(row store.AuditRow) {
	if row.Time.IsZero() {
		row.Time = time.Now().UTC()
	}
	m.w.enqueue(store.Write{Audit: &row}, false)
}

// Audit returns the recorded permission decisions of a session ("" = every
// session), newest first, at most limit (0 = 1000). Queued ones are stored first.
func (m *Manager) Audit(ctx context.Context, sessionID string, limit int) ([]store.AuditRow, error) {
	if err := m.w.flush(); err != nil {
		return nil, err
	}
	return m.st.Audit(ctx, sessionID, limit)
}

// AddSessionRule stores a permission rule of the session itself (an
// "always" answer with scope session).
func (m *Manager) AddSessionRule(ctx context.Context, sessionID, rule string) error {
	if err := m.st.AddSessionRule(ctx, sessionID, rule); err != nil {
		return fmt.Errorf("saving rule %q for session %s: %w", rule, sessionID, err)
	}
	return nil
}

// SessionRules returns the session's own permission rules, oldest first.
func (m *Manager) SessionRules(ctx context.Context, sessionID string) ([]string, error) {
	return m.st.SessionRules(ctx, sessionID)
}

// Loaded reports whether the session has loaded the deferred tool name
// (ToolSearch, LoadTools, or a call that passed its schema). A database
// error counts as not loaded (the model is told to load it, nothing more).
func (s *Session) Loaded(name string) bool {
	s.loadedMu.Lock()
	defer s.loadedMu.Unlock()
	if err := s.readLoadedLocked(); err != nil {
		return false
	}
	return s.loaded[name]
}

// LoadedTools returns the names of the deferred tools the session loaded.
func (s *Session) LoadedTools() []string {
	s.loadedMu.Lock()
	defer s.loadedMu.Unlock()
	if err := s.readLoadedLocked(); err != nil {
		return nil
	}
	out := make([]string, 0, len(s.loaded))
	for n := range s.loaded {
		out = append(out, n)
	}
	return out
}

func (s *Session) readLoadedLocked() error {
	if s.loaded != nil {
		return nil
	}
	names, err := s.m.st.LoadedTools(context.Background(), s.id)
	if err != nil {
		s.log.Error("reading the session's loaded tools", "error", err)
		return err
	}
	s.loaded = make(map[string]bool, len(names))
	for _, n := range names {
		s.loaded[n] = true
	}
	return nil
}

// LoadTools marks deferred tools as loaded for the rest of the session
// (stored: they stay loaded across daemon restarts). It returns the names
// that were not loaded before.
func (s *Session) LoadTools(names []string) ([]string, error) {
	s.loadedMu.Lock()
	defer s.loadedMu.Unlock()
	if err := s.readLoadedLocked(); err != nil {
		return nil, err
	}
	var added []string
	for _, n := range names {
		if n != "" && !s.loaded[n] && !slices.Contains(added, n) {
			added = append(added, n)
		}
	}
	if len(added) == 0 {
		return nil, nil
	}
	if err := s.m.st.AddLoadedTools(context.Background(), s.id, added); err != nil {
		return nil, fmt.Errorf("recording loaded tools of session %s: %w", s.id, err)
	}
	for _, n := range added {
		s.loaded[n] = true
	}
	return added, nil
}

// RecoverText is the result text of a call that a daemon restart ended.
const recoverText = "tackled restarted while the call was %s: it was cancelled. Run it again if it is still needed."

// Recover ends the turns that a previous daemon started and never ended
// (it was killed): for each, a pending permission request gets a
// permission_resolved "cancelled", every call without a result gets a
// cancelled call_result saying the daemon restarted while it was waiting or
// running, and the turn gets its turn_ended, with a notice. It returns the
// number of turns ended. Run it once at start, before serving.
func (m *Manager) Recover(ctx context.Context) (int, error) {
	open, err := m.st.OpenTurns(ctx)
	if err != nil {
		return 0, fmt.Errorf("recovering unfinished turns: %w", err)
	}
	n := 0
	for _, ot := range open {
		s, err := m.Get(ctx, ot.SessionID)
		if err != nil {
			return n, fmt.Errorf("recovering turn %s of session %s: %w", ot.TurnID, ot.SessionID, err)
		}
		evs, err := m.st.Events(ctx, ot.SessionID, ot.StartSeq)
		if err != nil {
			return n, fmt.Errorf("recovering turn %s of session %s: %w", ot.TurnID, ot.SessionID, err)
		}
		if err := s.endTurn(ot.TurnID, evs); err != nil {
			return n, fmt.Errorf("recovering turn %s of session %s: %w", ot.TurnID, ot.SessionID, err)
		}
		n++
	}
	if n > 0 {
		if err := m.w.flush(); err != nil {
			return n, fmt.Errorf("recovering unfinished turns: %w", err)
		}
	}
	return n, nil
}

// endTurn appends what ends turn turnID, given the session's events from
// its turn_started on.
func (s *Session) endTurn(turnID string, evs []*event.Event) error {
	var (
		calls   []event.CallInfo
		state   = map[string]string{}
		results = map[string]bool{}
		pending []*event.Event // permission_requested without a resolution
		ended   bool
	)
	for _, e := range evs {
		if e.TurnID != turnID {
			continue
		}
		switch e.Type {
		case event.TurnStarted:
			if e.Turn != nil {
				calls = e.Turn.Calls
			}
		case event.CallState:
			state[e.CallID] = e.State
		case event.CallResult:
			results[e.CallID] = true
		case event.PermissionRequested:
			pending = append(pending, e)
		case event.PermissionResolved:
			if e.Resolution != nil {
				for i, p := range pending {
					if p.Permission != nil && p.Permission.RequestID == e.Resolution.RequestID {
						pending = append(pending[:i], pending[i+1:]...)
						break
					}
				}
			}
		case event.TurnEnded:
			ended = true
		}
	}
	if ended {
		// Its turn_ended is stored but the open row was not removed (an
		// older build): nothing to add.
		return s.m.st.CloseTurn(context.Background(), s.id, turnID)
	}
	for _, p := range pending {
		if _, err := s.Append(&event.Event{Type: event.PermissionResolved, TurnID: turnID, CallID: p.CallID, Tool: p.Tool,
			Resolution: &event.PermissionResolution{RequestID: p.Permission.RequestID, Decision: "cancelled"}}); err != nil {
			return err
		}
	}
	var cancelled []string
	for _, c := range calls {
		if results[c.ID] {
			continue
		}
		results[c.ID] = true // a repeated id gets one result
		how := "running"
		switch state[c.ID] {
		case "", event.StateQueued, event.StateValidating, event.StateHookPre:
			how = "waiting to run"
		case event.StateAwaitingPermission:
			how = "waiting for permission"
		}
		text := fmt.Sprintf(recoverText, how)
		if _, err := s.Append(&event.Event{Type: event.CallResult, TurnID: turnID, CallID: c.ID, Tool: c.Name, Result: &event.Result{
			CallID: c.ID, Name: c.Name, Status: event.StatusCancelled, IsError: true, Content: []tool.Content{tool.Text(text)},
		}}); err != nil {
			return err
		}
		cancelled = append(cancelled, c.ID)
	}
	if _, err := s.Append(&event.Event{Type: event.TurnEnded, TurnID: turnID}); err != nil {
		return err
	}
	note := fmt.Sprintf("tackled restarted: turn %s had not ended; it ended now", turnID)
	if len(cancelled) > 0 {
		note += fmt.Sprintf(" with %d cancelled calls (%s)", len(cancelled), strings.Join(cancelled, ", "))
	}
	_, err := s.Append(&event.Event{Type: event.Notice, TurnID: turnID, Text: note})
	return err
}

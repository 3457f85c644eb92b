package store

import (
	"context"
	"strings"
	"time"
)

// AuditRow is one permission decision of the audit log.
type AuditRow struct {
	// ID is assigned by the database (0 when inserting).
	ID        int64
	SessionID string
	CallID    string
	Tool      string
	// InputSHA256 is the hex SHA-256 of the call's input JSON.
	InputSHA256 string
	// Outcome is allow or deny.
	Outcome string
	// DecidedBy is rule, hook, mode, tool, default, user, timeout or cancelled.
	DecidedBy string
	// Rule is the rule that decided, as written ("" if none).
	Rule   string
	Reason string
	// ClientName, ClientPID and ClientUID identify the client that answered
	// a prompt (DecidedBy user).
	ClientName string
	ClientPID  int32
	ClientUID  uint32
	// Scope is where an allow_always answer saved its rule.
	Scope string
	Time  time.Time
}

const insertAudit = `INSERT INTO audit (session_id, call_id, tool, input_sha256, outcome, decided_by, rule, reason, client_name, client_pid, client_uid, scope, time)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// maxAuditRows is how many audit rows the batch writer stores with one
// statement at most (insertAudits): a statement's execution costs more
// than its rows on the busy path, where every call leaves one.
const maxAuditRows = 32

// insertAudits is insertAudit of n rows; they get their ids in order.
func insertAudits(n int) string {
	return insertAudit + strings.Repeat(", (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", n-1)
}

func (a *AuditRow) args() []any { return a.appendArgs(nil) }

// appendArgs appends the row's values for insertAudit to args.
func (a *AuditRow) appendArgs(args []any) []any {
	t := a.Time
	if t.IsZero() {
		t = time.Now()
	}
	return append(args, a.SessionID, a.CallID, a.Tool, a.InputSHA256, a.Outcome, a.DecidedBy, a.Rule, a.Reason,
		a.ClientName, int64(a.ClientPID), int64(a.ClientUID), a.Scope, t.UnixNano())
}

// InsertAudit stores one audit row at once. (The session package batches
// them with the event log through BatchWriter.)
func (s *Store) InsertAudit(ctx context.Context, a AuditRow) error {
	if _, err := s.db.ExecContext(ctx, insertAudit, a.args()...); err != nil {
		return s.explain("recording a permission decision in", err)
	}
	return nil
}

// Audit returns the audit rows of a session ("" = every session), newest
// first, at most limit (0 = 1000).
func (s *Store) Audit(ctx context.Context, sessionID string, limit int) ([]AuditRow, error) {
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT id, session_id, call_id, tool, input_sha256, outcome, decided_by, rule, reason, client_name, client_pid, client_uid, scope, time FROM audit`
	args := []any{}
	if sessionID != "" {
		q += ` WHERE session_id = ?`
		args = append(args, sessionID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, s.explain("reading the audit log from", err)
	}
	defer rows.Close()
	out := []AuditRow{}
	for rows.Next() {
		var (
			a        AuditRow
			pid, uid int64
			t        int64
		)
		if err := rows.Scan(&a.ID, &a.SessionID, &a.CallID, &a.Tool, &a.InputSHA256, &a.Outcome, &a.DecidedBy, &a.Rule, &a.Reason,
			&a.ClientName, &pid, &uid, &a.Scope, &t); err != nil {
			return nil, s.explain("reading the audit log from", err)
		}
		a.ClientPID, a.ClientUID, a.Time = int32(pid), uint32(uid), time.Unix(0, t).UTC()
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("reading the audit log from", err)
	}
	return out, nil
}

// AddSessionRule records a session's own permission rule (an "always"
// answer with scope session). Adding a rule the session has is a no-op.
func (s *Store) AddSessionRule(ctx context.Context, sessionID, rule string) error {
	if _, err := s.db.ExecContext(ctx, `INSERT OR IGNORE INTO session_rules (session_id, rule, created_at) VALUES (?, ?, ?)`,
		sessionID, rule, time.Now().UnixNano()); err != nil {
		return s.explain("recording a session rule in", err)
	}
	return nil
}

// SessionRules returns a session's own permission rules, oldest first.
func (s *Store) SessionRules(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT rule FROM session_rules WHERE session_id = ? ORDER BY created_at, rule`, sessionID)
	if err != nil {
		return nil, s.explain("reading session rules from", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, s.explain("reading session rules from", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("reading session rules from", err)
	}
	return out, nil
}

// AddLoadedTools records deferred tools a session loaded; names already
// loaded are ignored.
func (s *Store) AddLoadedTools(ctx context.Context, sessionID string, names []string) error {
	if len(names) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.explain("recording loaded tools in", err)
	}
	defer tx.Rollback()
	now := time.Now().UnixNano()
	for _, n := range names {
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO loaded_tools (session_id, name, loaded_at) VALUES (?, ?, ?)`, sessionID, n, now); err != nil {
			return s.explain("recording loaded tools in", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.explain("recording loaded tools in", err)
	}
	return nil
}

// LoadedTools returns the deferred tools a session loaded, in load order.
func (s *Store) LoadedTools(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name FROM loaded_tools WHERE session_id = ? ORDER BY loaded_at, name`, sessionID)
	if err != nil {
		return nil, s.explain("reading loaded tools from", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, s.explain("reading loaded tools from", err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("reading loaded tools from", err)
	}
	return out, nil
}

// OpenTurn is a turn whose turn_started event is stored but whose
// turn_ended event is not: after a crash, a turn that never ended.
type OpenTurn struct {
	SessionID string
	TurnID    string
	// StartSeq is the seq of its turn_started event.
	StartSeq uint64
}

// OpenTurns lists the open turns, oldest first.
func (s *Store) OpenTurns(ctx context.Context) ([]OpenTurn, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT session_id, turn_id, start_seq FROM open_turns ORDER BY session_id, start_seq`)
	if err != nil {
		return nil, s.explain("reading open turns from", err)
	}
	defer rows.Close()
	var out []OpenTurn
	for rows.Next() {
		var (
			t   OpenTurn
			seq int64
		)
		if err := rows.Scan(&t.SessionID, &t.TurnID, &seq); err != nil {
			return nil, s.explain("reading open turns from", err)
		}
		t.StartSeq = uint64(seq)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("reading open turns from", err)
	}
	return out, nil
}

// CloseTurn removes a turn from the open turns (its turn_ended is stored).
func (s *Store) CloseTurn(ctx context.Context, sessionID, turnID string) error {
	if _, err := s.db.ExecContext(ctx, deleteOpenTurn, sessionID, turnID); err != nil {
		return s.explain("closing an open turn in", err)
	}
	return nil
}

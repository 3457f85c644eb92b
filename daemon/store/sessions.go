package store

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	fastjson "github.com/segmentio/encoding/json"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// SessionRow is one row of the sessions table.
type SessionRow struct {
	ID string
	// Cwd is the session's root directory: it never moves.
	Cwd string
	// CurrentDir is the current directory (moved by Bash's cd); "" means Cwd.
	CurrentDir     string
	AdditionalDirs []string
	PermissionMode string
	Env            []string
	// Todos is the todo list as JSON; nil when never set.
	Todos         json.RawMessage
	CreatedAt     time.Time
	UpdatedAt     time.Time
	DefaultForCwd bool
	// MCPConfig are the MCP configuration files given when the session was
	// created (absolute paths).
	MCPConfig []string
	// Agent is set for a sub-agent's session (its parent and type); nil
	// for a session a client created.
	Agent *AgentLink
	// LastSeq and FilesRead are computed (read-only): the highest event
	// sequence number and the number of read-state entries.
	LastSeq   uint64
	FilesRead int
}

// AgentLink ties a sub-agent's session to the session and the call that
// started it.
type AgentLink struct {
	ParentSessionID string `json:"parent_session_id"`
	ParentCallID    string `json:"parent_call_id"`
	// RootSessionID is the session at the top of the tree: its clients
	// answer the child's permission requests, its rules apply.
	RootSessionID string `json:"root_session_id"`
	AgentType     string `json:"agent_type"`
	Description   string `json:"description,omitempty"`
	// Depth is 1 for a child of a client's session.
	Depth      int  `json:"depth"`
	Background bool `json:"background,omitempty"`
}

const sessionColumns = `id, cwd, current_dir, additional_dirs, permission_mode, env, todos, created_at, updated_at, is_default_for_cwd, mcp_config, agent,
	COALESCE((SELECT last_seq FROM event_chunks WHERE session_id = sessions.id ORDER BY first_seq DESC LIMIT 1), 0),
	(SELECT COUNT(*) FROM read_state WHERE session_id = sessions.id)`

type rowScanner interface{ Scan(dest ...any) error }

func scanSession(r rowScanner) (SessionRow, error) {
	var (
		row                 SessionRow
		dirs, env, mcpCfg   string
		todos, agent        sql.NullString
		created, updated    int64
		isDefault           bool
		lastSeq, filesCount int64
	)
	if err := r.Scan(&row.ID, &row.Cwd, &row.CurrentDir, &dirs, &row.PermissionMode, &env, &todos, &created, &updated, &isDefault, &mcpCfg, &agent, &lastSeq, &filesCount); err != nil {
		return row, err
	}
	if err := json.Unmarshal([]byte(dirs), &row.AdditionalDirs); err != nil {
		return row, fmt.Errorf("decoding additional_dirs of session %s: %w", row.ID, err)
	}
	if err := json.Unmarshal([]byte(env), &row.Env); err != nil {
		return row, fmt.Errorf("decoding env of session %s: %w", row.ID, err)
	}
	if err := json.Unmarshal([]byte(mcpCfg), &row.MCPConfig); err != nil {
		return row, fmt.Errorf("decoding mcp_config of session %s: %w", row.ID, err)
	}
	if todos.Valid {
		row.Todos = json.RawMessage(todos.String)
	}
	if agent.Valid {
		row.Agent = &AgentLink{}
		if err := json.Unmarshal([]byte(agent.String), row.Agent); err != nil {
			return row, fmt.Errorf("decoding agent of session %s: %w", row.ID, err)
		}
	}
	row.CreatedAt = time.Unix(0, created).UTC()
	row.UpdatedAt = time.Unix(0, updated).UTC()
	row.DefaultForCwd = isDefault
	row.LastSeq = uint64(lastSeq)
	row.FilesRead = int(filesCount)
	return row, nil
}

func jsonList(l []string) string {
	if l == nil {
		l = []string{}
	}
	b, _ := json.Marshal(l) // cannot fail for strings
	return string(b)
}

func nullJSON(r json.RawMessage) sql.NullString {
	if len(r) == 0 {
		return sql.NullString{}
	}
	return sql.NullString{String: string(r), Valid: true}
}

// InsertSession adds a session. If r.DefaultForCwd is set and the directory
// already has a default session, it returns ErrDefaultExists and adds nothing.
func (s *Store) InsertSession(ctx context.Context, r SessionRow) error {
	var agent sql.NullString
	if r.Agent != nil {
		b, _ := json.Marshal(r.Agent) // cannot fail: strings and numbers
		agent = sql.NullString{String: string(b), Valid: true}
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO sessions (id, cwd, current_dir, additional_dirs, permission_mode, env, todos, created_at, updated_at, is_default_for_cwd, mcp_config, agent)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Cwd, r.CurrentDir, jsonList(r.AdditionalDirs), r.PermissionMode, jsonList(r.Env), nullJSON(r.Todos),
		r.CreatedAt.UnixNano(), r.UpdatedAt.UnixNano(), r.DefaultForCwd, jsonList(r.MCPConfig), agent)
	if err != nil {
		if r.DefaultForCwd && isConstraint(err) {
			return ErrDefaultExists
		}
		return s.explain("inserting session into", err)
	}
	return nil
}

// UpdateSession stores the mutable fields of a session (current directory,
// additional directories, permission mode, todos, updated_at). The root
// directory (Cwd) never changes.
func (s *Store) UpdateSession(ctx context.Context, r SessionRow) error {
	res, err := s.db.ExecContext(ctx, `UPDATE sessions SET current_dir = ?, additional_dirs = ?, permission_mode = ?, todos = ?, updated_at = ? WHERE id = ?`,
		r.CurrentDir, jsonList(r.AdditionalDirs), r.PermissionMode, nullJSON(r.Todos), r.UpdatedAt.UnixNano(), r.ID)
	if err != nil {
		return s.explain("updating session in", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("updating session %s: %w", r.ID, ErrNotFound)
	}
	return nil
}

// GetSession returns one session, or an error wrapping ErrNotFound.
func (s *Store) GetSession(ctx context.Context, id string) (SessionRow, error) {
	r, err := scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return r, s.explain("reading session from", err)
	}
	return r, nil
}

// DefaultSession returns the default session of directory cwd, or an error
// wrapping ErrNotFound.
func (s *Store) DefaultSession(ctx context.Context, cwd string) (SessionRow, error) {
	r, err := scanSession(s.db.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE cwd = ? AND is_default_for_cwd`, cwd))
	if errors.Is(err, sql.ErrNoRows) {
		return r, fmt.Errorf("default session of %s: %w", cwd, ErrNotFound)
	}
	if err != nil {
		return r, s.explain("reading session from", err)
	}
	return r, nil
}

// ListSessions returns every session, newest first.
func (s *Store) ListSessions(ctx context.Context) ([]SessionRow, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+sessionColumns+` FROM sessions ORDER BY created_at DESC, id`)
	if err != nil {
		return nil, s.explain("listing sessions in", err)
	}
	defer rows.Close()
	var out []SessionRow
	for rows.Next() {
		r, err := scanSession(rows)
		if err != nil {
			return nil, s.explain("listing sessions in", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("listing sessions in", err)
	}
	return out, nil
}

// CountSessions returns the number of sessions.
func (s *Store) CountSessions(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions`).Scan(&n); err != nil {
		return 0, s.explain("counting sessions in", err)
	}
	return n, nil
}

// DeleteSession removes a session with its events and read-state. It
// returns an error wrapping ErrNotFound if there is no such session.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
	if err != nil {
		return s.explain("deleting session from", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("deleting session %s: %w", id, ErrNotFound)
	}
	return nil
}

// AppendEvent stores one event of a session's log. Its SessionID and Seq
// must be set and follow the stored ones; a sequence number already stored
// is an error. (The session package writes through BatchWriter.)
func (s *Store) AppendEvent(ctx context.Context, e *event.Event) error {
	last, err := s.LastSeq(ctx, e.SessionID)
	if err != nil {
		return err
	}
	if e.Seq <= last {
		return fmt.Errorf("appending event %d of session %s: sequence number %d is already stored", e.Seq, e.SessionID, last)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encoding event %d of session %s: %w", e.Seq, e.SessionID, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return s.explain("writing to", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	if _, err := tx.ExecContext(ctx, insertChunk, e.SessionID, int64(e.Seq), int64(e.Seq), "["+string(b)+"]"); err != nil {
		return s.explain(fmt.Sprintf("appending event %d of session %s to", e.Seq, e.SessionID), err)
	}
	if q, args := openTurnWrite(e); q != "" {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return s.explain("recording an open turn in", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return s.explain("writing to", err)
	}
	return nil
}

const (
	insertOpenTurn = `INSERT OR REPLACE INTO open_turns (session_id, turn_id, start_seq) VALUES (?, ?, ?)`
	deleteOpenTurn = `DELETE FROM open_turns WHERE session_id = ? AND turn_id = ?`
)

// openTurnWrite is the open_turns statement an event implies: a row for
// turn_started, its removal for turn_ended, else none.
func openTurnWrite(e *event.Event) (string, []any) {
	switch {
	case e.TurnID == "":
	case e.Type == event.TurnStarted:
		return insertOpenTurn, []any{e.SessionID, e.TurnID, int64(e.Seq)}
	case e.Type == event.TurnEnded:
		return deleteOpenTurn, []any{e.SessionID, e.TurnID}
	}
	return "", nil
}

const insertChunk = `INSERT INTO event_chunks (session_id, first_seq, last_seq, json) VALUES (?, ?, ?, ?)`

// eventsFromQuery selects the chunks of session ?1 that hold events with seq >=
// ?2, in order. A session's chunks hold disjoint runs of seq in order: the
// rows wanted start at the chunk that holds ?2, if one does (the last that
// starts at or before it), else at the first that starts after it. The key
// (session_id, first_seq) finds both and gives the rows in order with no
// sort, which would read them all first.
const eventsFromQuery = `SELECT json FROM event_chunks WHERE session_id = ?1 AND first_seq >= COALESCE(
	(SELECT CASE WHEN last_seq >= ?2 THEN first_seq ELSE ?2 END FROM event_chunks
		WHERE session_id = ?1 AND first_seq <= ?2 ORDER BY first_seq DESC LIMIT 1), ?2)
	ORDER BY first_seq`

// lastSeqQuery selects the highest stored seq of session ?1 (0 if none): the
// last_seq of its last chunk.
const lastSeqQuery = `SELECT COALESCE((SELECT last_seq FROM event_chunks WHERE session_id = ?1 ORDER BY first_seq DESC LIMIT 1), 0)`

// Events returns the stored events of a session with seq >= fromSeq, in order.
func (s *Store) Events(ctx context.Context, sessionID string, fromSeq uint64) ([]*event.Event, error) {
	out, _, err := s.EventsPage(ctx, sessionID, fromSeq, 0)
	return out, err
}

// EventsPage returns the stored events of a session with seq >= fromSeq,
// in order, reading rows until they hold maxBytes of JSON (0: no bound)
// and at least one; more reports that rows were left unread. A replay
// pages through a long log so, holding one page in memory at a time.
func (s *Store) EventsPage(ctx context.Context, sessionID string, fromSeq uint64, maxBytes int) (out []*event.Event, more bool, err error) {
	rows, err := s.db.QueryContext(ctx, eventsFromQuery, sessionID, int64(fromSeq))
	if err != nil {
		return nil, false, s.explain("reading events from", err)
	}
	defer rows.Close()
	read := 0
	for rows.Next() {
		if maxBytes > 0 && read >= maxBytes {
			return out, true, nil
		}
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, false, s.explain("reading events from", err)
		}
		read += len(b)
		var chunk []*event.Event
		if err := json.Unmarshal(b, &chunk); err != nil {
			return nil, false, fmt.Errorf("decoding events of session %s: %w", sessionID, err)
		}
		for _, e := range chunk {
			if e.Seq >= fromSeq {
				out = append(out, e)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, s.explain("reading events from", err)
	}
	return out, false, nil
}

// LastSeq returns the highest stored sequence number of a session (0 if none).
func (s *Store) LastSeq(ctx context.Context, sessionID string) (uint64, error) {
	var n int64
	if err := s.db.QueryRowContext(ctx, lastSeqQuery, sessionID).Scan(&n); err != nil {
		return 0, s.explain("reading events from", err)
	}
	return uint64(n), nil
}

// PutFileState records (replaces) the read-state of one file of a session.
func (s *Store) PutFileState(ctx context.Context, sessionID string, fs tool.FileState) error {
	b, err := json.Marshal(fs)
	if err != nil {
		return fmt.Errorf("encoding read-state of %q: %w", fs.Path, err)
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO read_state (session_id, path, json) VALUES (?, ?, ?)
		ON CONFLICT (session_id, path) DO UPDATE SET json = excluded.json`, sessionID, fs.Path, string(b)); err != nil {
		return s.explain("recording read-state in", err)
	}
	return nil
}

// FileStates returns the read-state of every file a session recorded, by path.
func (s *Store) FileStates(ctx context.Context, sessionID string) (map[string]tool.FileState, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT json FROM read_state WHERE session_id = ?`, sessionID)
	if err != nil {
		return nil, s.explain("reading read-state from", err)
	}
	defer rows.Close()
	out := map[string]tool.FileState{}
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, s.explain("reading read-state from", err)
		}
		var fs tool.FileState
		if err := json.Unmarshal(b, &fs); err != nil {
			return nil, fmt.Errorf("decoding read-state of session %s: %w", sessionID, err)
		}
		out[fs.Path] = fs
	}
	if err := rows.Err(); err != nil {
		return nil, s.explain("reading read-state from", err)
	}
	return out, nil
}

// Write is one row of a batch written by WriteBatch: an event, an audit
// row (Audit set), or the read-state of a file (Event and Audit nil,
// SessionID and File set).
type Write struct {
	Event     *event.Event
	Audit     *AuditRow
	SessionID string
	File      tool.FileState
}

// BatchWriter writes batches on one dedicated connection with statements
// prepared once, for the session log's background writer. It is not safe for
// concurrent use.
type BatchWriter struct {
	s                              *Store
	conn                           *sql.Conn
	ev, file, audit, open, closing *sql.Stmt
	audits                         map[int]*sql.Stmt // insertAudits(n), prepared on first use
	begin, commit                  *sql.Stmt
	args                           []any // audit rows' values, reused
	// spare are the chunk buffers of the last Write, for the next.
	spare []*bytes.Buffer
}

// maxSpare bounds a chunk buffer kept for the next Write.
const maxSpare = 1 << 20

// NewBatchWriter reserves a connection for batched writes. Close releases it.
func (s *Store) NewBatchWriter(ctx context.Context) (*BatchWriter, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, s.explain("writing to", err)
	}
	w := &BatchWriter{s: s, conn: conn}
	if w.ev, err = conn.PrepareContext(ctx, insertChunk); err == nil {
		w.file, err = conn.PrepareContext(ctx, `INSERT INTO read_state (session_id, path, json) VALUES (?, ?, ?)
			ON CONFLICT (session_id, path) DO UPDATE SET json = excluded.json`)
	}
	if err == nil {
		w.audit, err = conn.PrepareContext(ctx, insertAudit)
	}
	if err == nil {
		w.open, err = conn.PrepareContext(ctx, insertOpenTurn)
	}
	if err == nil {
		w.closing, err = conn.PrepareContext(ctx, deleteOpenTurn)
	}
	if err == nil {
		w.begin, err = conn.PrepareContext(ctx, "BEGIN IMMEDIATE")
	}
	if err == nil {
		w.commit, err = conn.PrepareContext(ctx, "COMMIT")
	}
	if err != nil {
		w.Close()
		return nil, s.explain("writing to", err)
	}
	return w, nil
}

// writeAudits inserts the rows in order, up to maxAuditRows with one
// statement.
func (w *BatchWriter) writeAudits(ctx context.Context, rows []*AuditRow) error {
	defer func() { clear(w.args[:cap(w.args)]); w.args = w.args[:0] }()
	for len(rows) > 0 {
		n := min(len(rows), maxAuditRows)
		st := w.audit
		if n > 1 {
			if st = w.audits[n]; st == nil {
				var err error
				if st, err = w.conn.PrepareContext(ctx, insertAudits(n)); err != nil {
					return err
				}
				if w.audits == nil {
					w.audits = map[int]*sql.Stmt{}
				}
				w.audits[n] = st
			}
		}
		w.args = w.args[:0]
		for _, a := range rows[:n] {
			w.args = a.appendArgs(w.args)
		}
		if _, err := st.ExecContext(ctx, w.args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// Close releases the connection. It is idempotent.
func (w *BatchWriter) Close() error {
	for _, st := range []*sql.Stmt{w.ev, w.file, w.audit, w.open, w.closing, w.begin, w.commit} {
		if st != nil {
			st.Close()
		}
	}
	for _, st := range w.audits {
		st.Close()
	}
	w.ev, w.file, w.audit, w.audits, w.open, w.closing, w.begin, w.commit = nil, nil, nil, nil, nil, nil, nil, nil
	if w.conn == nil {
		return nil
	}
	err := w.conn.Close()
	w.conn = nil
	return err
}

// Write stores the writes in one transaction: all or none. The events of
// each session become one chunk, or one per gapless run of them (the
// session package leaves a gap where it could not queue an event); they
// must be in seq order. Of several read-states of one file, the
// last is kept. A turn_started event records its turn as open, a
// turn_ended event closes it (see OpenTurns).
func (w *BatchWriter) Write(ctx context.Context, ws []Write) (err error) {
	type chunk struct {
		first, last uint64
		buf         *bytes.Buffer
		enc         *fastjson.Encoder
	}
	spare := w.spare
	w.spare = w.spare[:0]
	newBuf := func() *bytes.Buffer {
		if n := len(spare); n > 0 {
			b := spare[n-1]
			spare = spare[:n-1]
			b.Reset()
			return b
		}
		return new(bytes.Buffer)
	}
	chunks := map[string]*chunk{} // the last chunk of each session
	var order []*chunk
	var sessionOf []string // of each chunk in order
	type fileKey struct{ session, path string }
	files := map[fileKey]tool.FileState{}
	var fileOrder []fileKey
	// Open turns: a turn that starts and ends within the batch needs no row.
	type turnKey struct{ session, turn string }
	opened := map[turnKey]int64{}
	var openOrder []turnKey
	var closed []turnKey
	var audits []*AuditRow
	for _, x := range ws {
		if x.Audit != nil {
			audits = append(audits, x.Audit)
			continue
		}
		if e := x.Event; e != nil {
			if e.TurnID != "" {
				k := turnKey{e.SessionID, e.TurnID}
				switch e.Type {
				case event.TurnStarted:
					opened[k] = int64(e.Seq)
					openOrder = append(openOrder, k)
				case event.TurnEnded:
					if _, ok := opened[k]; ok {
						delete(opened, k)
					} else {
						closed = append(closed, k)
					}
				}
			}
			c := chunks[e.SessionID]
			if c != nil && e.Seq <= c.last {
				return fmt.Errorf("storing events of session %s: event %d follows %d", e.SessionID, e.Seq, c.last)
			}
			if c == nil || e.Seq != c.last+1 {
				c = &chunk{first: e.Seq, buf: newBuf()}
				c.enc = fastjson.NewEncoder(c.buf)
				c.buf.WriteByte('[')
				chunks[e.SessionID] = c
				order = append(order, c)
				sessionOf = append(sessionOf, e.SessionID)
			} else {
				c.buf.WriteByte(',')
			}
			c.last = e.Seq
			// Encoded into the chunk (a newline after each: JSON space).
			if err := c.enc.Encode(e); err != nil {
				return fmt.Errorf("encoding event %d of session %s: %w", e.Seq, e.SessionID, err)
			}
			continue
		}
		k := fileKey{x.SessionID, x.File.Path}
		if _, ok := files[k]; !ok {
			fileOrder = append(fileOrder, k)
		}
		files[k] = x.File
	}
	if _, err := w.begin.ExecContext(ctx); err != nil {
		return w.s.explain("writing to", err)
	}
	defer func() {
		if err != nil {
			w.conn.ExecContext(ctx, "ROLLBACK") //nolint:errcheck // the error that matters is err
		}
	}()
	defer func() {
		for _, c := range order {
			if c.buf.Cap() <= maxSpare {
				w.spare = append(w.spare, c.buf)
			}
		}
	}()
	for i, c := range order {
		id := sessionOf[i]
		c.buf.WriteByte(']')
		if _, err := w.ev.ExecContext(ctx, id, int64(c.first), int64(c.last), c.buf.String()); err != nil {
			return w.s.explain(fmt.Sprintf("appending events %d-%d of session %s to", c.first, c.last, id), err)
		}
	}
	for _, k := range fileOrder {
		f := files[k]
		b, err := fastjson.Marshal(f)
		if err != nil {
			return fmt.Errorf("encoding read-state of %q: %w", f.Path, err)
		}
		if _, err := w.file.ExecContext(ctx, k.session, f.Path, string(b)); err != nil {
			return w.s.explain("recording read-state in", err)
		}
	}
	for _, k := range openOrder {
		if seq, ok := opened[k]; ok {
			if _, err := w.open.ExecContext(ctx, k.session, k.turn, seq); err != nil {
				return w.s.explain("recording an open turn in", err)
			}
		}
	}
	for _, k := range closed {
		if _, err := w.closing.ExecContext(ctx, k.session, k.turn); err != nil {
			return w.s.explain("recording an open turn in", err)
		}
	}
	if err := w.writeAudits(ctx, audits); err != nil {
		return w.s.explain("recording a permission decision in", err)
	}
	if _, err := w.commit.ExecContext(ctx); err != nil {
		return w.s.explain("writing to", err)
	}
	return nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// migrations is the schema history. Entry i brings the schema from version i
// to version i+1; each runs in one transaction together with the version
// bump. Never edit an entry that has shipped: append a new one (the
// permission issue adds pending_requests and audit tables this way).
var migrations = []string{
	// 1: sessions, their event logs and read-state.
	`
CREATE TABLE sessions (
	id                 TEXT PRIMARY KEY,
	cwd                TEXT NOT NULL,
	additional_dirs    TEXT NOT NULL DEFAULT '[]', -- JSON array of absolute paths
	permission_mode    TEXT NOT NULL DEFAULT 'default',
	env                TEXT NOT NULL DEFAULT '[]', -- JSON array of KEY=VALUE
	todos              TEXT,                       -- JSON, NULL when never set
	created_at         INTEGER NOT NULL,           -- unix nanoseconds
	updated_at         INTEGER NOT NULL,
	is_default_for_cwd INTEGER NOT NULL DEFAULT 0
);
-- At most one default session per directory: this makes "the session of
-- this directory" race-free across goroutines and processes.
CREATE UNIQUE INDEX sessions_default_for_cwd ON sessions (cwd) WHERE is_default_for_cwd;
CREATE INDEX sessions_created_at ON sessions (created_at);

CREATE TABLE events (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	type       TEXT NOT NULL,
	time       INTEGER NOT NULL, -- unix nanoseconds
	json       TEXT NOT NULL,    -- the whole event.Event
	PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

CREATE TABLE read_state (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	path       TEXT NOT NULL,
	json       TEXT NOT NULL, -- tool.FileState
	PRIMARY KEY (session_id, path)
) WITHOUT ROWID;
`,
	// 2: the event log in chunks: one row holds the events a session logged
	// in one commit (a JSON array, seq first_seq..last_seq, gapless), so a
	// tool call's handful of events costs one row, not one each.
	`
CREATE TABLE event_chunks (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	first_seq  INTEGER NOT NULL,
	last_seq   INTEGER NOT NULL,
	json       TEXT NOT NULL, -- JSON array of event.Event, in seq order
	PRIMARY KEY (session_id, first_seq)
) WITHOUT ROWID;
CREATE INDEX event_chunks_last_seq ON event_chunks (session_id, last_seq);
INSERT INTO event_chunks (session_id, first_seq, last_seq, json)
	SELECT session_id, seq, seq, '[' || json || ']' FROM events;
DROP TABLE events;
`,
	// 3: the session's current directory, moved by Bash's cd; cwd stays the
	// root (the default-session key and the first working directory). ''
	// means the root.
	`
ALTER TABLE sessions ADD COLUMN current_dir TEXT NOT NULL DEFAULT '';
`,
	// 4: permissions: a session's own "always" rules, the audit log of
	// every permission decision (kept when its session is deleted), and the
	// turns that have started but not ended, maintained with the event log
	// (see BatchWriter.Write) so that a daemon killed mid-turn can end them
	// at its next start.
	`
CREATE TABLE session_rules (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	rule       TEXT NOT NULL,
	created_at INTEGER NOT NULL, -- unix nanoseconds
	PRIMARY KEY (session_id, rule)
) WITHOUT ROWID;

CREATE TABLE audit (
	id           INTEGER PRIMARY KEY,
	session_id   TEXT NOT NULL,
	call_id      TEXT NOT NULL,
	tool         TEXT NOT NULL,
	input_sha256 TEXT NOT NULL,
	outcome      TEXT NOT NULL, -- allow, deny
	decided_by   TEXT NOT NULL, -- rule, hook, mode, tool, default, user, timeout, cancelled
	rule         TEXT NOT NULL DEFAULT '',
	reason       TEXT NOT NULL DEFAULT '',
	client_name  TEXT NOT NULL DEFAULT '',
	client_pid   INTEGER NOT NULL DEFAULT 0,
	client_uid   INTEGER NOT NULL DEFAULT 0,
	scope        TEXT NOT NULL DEFAULT '',
	time         INTEGER NOT NULL -- unix nanoseconds
);
CREATE INDEX audit_session ON audit (session_id, id);

CREATE TABLE open_turns (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	turn_id    TEXT NOT NULL,
	start_seq  INTEGER NOT NULL, -- seq of the turn_started event
	PRIMARY KEY (session_id, turn_id)
) WITHOUT ROWID;
`,
	// 5: the MCP configuration files a session was created with
	// (--mcp-config), a JSON array of absolute paths.
	`
ALTER TABLE sessions ADD COLUMN mcp_config TEXT NOT NULL DEFAULT '[]';
`,
	// 6: the deferred tools a session has loaded (ToolSearch, LoadTools, or
	// a call that passed the tool's schema): they stay loaded.
	`
CREATE TABLE loaded_tools (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	loaded_at  INTEGER NOT NULL, -- unix nanoseconds
	PRIMARY KEY (session_id, name)
) WITHOUT ROWID;
`,
	// 7: a sub-agent's session names its parent: a JSON object
	// (AgentLink), NULL for a session a client created.
	`
ALTER TABLE sessions ADD COLUMN agent TEXT;
`,
	// 8: event_chunks as a rowid table with its key in an index. As a
	// WITHOUT ROWID table its rows (a few kB of JSON) overflowed the key
	// b-tree, whose every seek then read and compared whole rows, the
	// overflow pages of old ones included: about a fifth of the writer's
	// time per tool call. The key (session_id, first_seq) stays unique.
	`
CREATE TABLE event_chunks_rowid (
	id         INTEGER PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	first_seq  INTEGER NOT NULL,
	last_seq   INTEGER NOT NULL,
	json       TEXT NOT NULL -- JSON array of event.Event, in seq order
);
INSERT INTO event_chunks_rowid (session_id, first_seq, last_seq, json)
	SELECT session_id, first_seq, last_seq, json FROM event_chunks ORDER BY session_id, first_seq;
DROP TABLE event_chunks;
ALTER TABLE event_chunks_rowid RENAME TO event_chunks;
CREATE UNIQUE INDEX event_chunks_key ON event_chunks (session_id, first_seq);
CREATE INDEX event_chunks_last_seq ON event_chunks (session_id, last_seq);
`,
	// 9: no index on last_seq: chunks hold disjoint runs of seq in order,
	// so the key finds the chunk that holds a seq, or the last one; the
	// index was a page more in every commit of the log (~10 % of it).
	`
DROP INDEX event_chunks_last_seq;
`,
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrations) }

// migrate applies pending migrations. It always takes the write lock (an
// immediate transaction), so a database held locked by another process is
// reported at open time rather than at the first write.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (see _txlock)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return err
	}
	var v int
	switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version) VALUES (0)`); err != nil {
			return err
		}
	case err != nil:
		return err
	}
	if v > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this tackled knows (%d): use a newer tackled", v, len(migrations))
	}
	for i := v; i < len(migrations); i++ {
		if _, err := tx.ExecContext(ctx, migrations[i]); err != nil {
			return fmt.Errorf("applying migration %d: %w", i+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, len(migrations)); err != nil {
		return err
	}
	return tx.Commit()
}

// Package store owns tackle's state database: one SQLite file (WAL mode)
// holding sessions, each session's append-only event log and its file
// read-state. It opens the database, applies schema migrations and offers
// typed queries to package session, its only user. It also keeps the state
// directory private to the user (dir.go): the directory 0700, the database,
// SQLite's files and what tackle keeps beside them 0600.
//
// It knows nothing of how sessions behave (sequence numbering, buses, tool
// environments): that belongs to package session. It never deletes or
// overwrites a database file it cannot read; it reports the path and what to
// do instead.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultBusyTimeout is how long a statement waits for a lock held by
// another connection or process before it fails.
const DefaultBusyTimeout = 5 * time.Second

// ErrNotFound is returned when a row (e.g. a session) does not exist.
var ErrNotFound = errors.New("not found")

// ErrDefaultExists is returned by InsertSession when the directory already
// has a default session (the unique index on default sessions per cwd).
var ErrDefaultExists = errors.New("directory already has a default session")

// ErrCorrupt is wrapped by errors for a database file SQLite cannot read.
var ErrCorrupt = errors.New("state database is corrupt")

// ErrLocked is wrapped by errors for a database another process holds locked
// for longer than the busy timeout.
var ErrLocked = errors.New("state database is locked")

// Options configures Open. A nil *Options means defaults.
type Options struct {
	// BusyTimeout is how long to wait for another connection's lock (default DefaultBusyTimeout).
	BusyTimeout time.Duration
	// Logger receives a warning for each file mode OpenWith tightened (default: none).
	Logger hclog.Logger
}

// Store is an open state database. It is safe for concurrent use.
type Store struct {
	db          *sql.DB
	path        string
	busyTimeout time.Duration
}

// Open opens (creating if needed) the state database at path with default
// options. See OpenWith.
func Open(path string) (*Store, error) { return OpenWith(path, nil) }

// OpenWith opens (creating if needed) the state database at path, switches
// it to WAL mode and applies pending migrations. The database is created
// with FileMode before SQLite opens it, so that its -wal and -shm files get
// that mode too, and an existing one (with those files) open to other users
// is changed to FileMode; a missing directory is created with DirMode (an
// existing one is the caller's: see PrepareDir). A file that is not a
// database, or a damaged one, gives an error wrapping ErrCorrupt that names
// the path and says to move it aside; a database locked by another process
// for longer than the busy timeout gives an error wrapping ErrLocked. In
// neither case are the file's contents changed.
func OpenWith(path string, opts *Options) (*Store, error) {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("opening state database %q: %w", path, err)
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(filepath.Dir(abs), DirMode); err != nil {
		return nil, fmt.Errorf("creating state directory for %q: %w", abs, err)
	}
	changes, err := createPrivate(abs)
	if err != nil {
		return nil, err
	}
	for _, c := range changes {
		c.Log(o.Logger)
	}
	q := url.Values{}
	q.Set("_busy_timeout", fmt.Sprint(o.BusyTimeout.Milliseconds()))
	q.Set("_foreign_keys", "1")
	q.Set("_synchronous", "NORMAL")
	q.Set("_txlock", "immediate")
	q.Set("_journal_mode", "WAL")
	// Each connection's page cache: SQLite's default of 2 MB per
	// connection is memory a long-lived daemon keeps after a burst (the
	// allocator does not return it); the log appends at the right edge of
	// its B-trees and the kernel caches the file, so 256 KB is enough.
	q.Add("_pragma", "cache_size(-256)")
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening state database %q: %w", abs, err)
	}
	s := &Store{db: db, path: abs, busyTimeout: o.BusyTimeout}
	if err := s.migrate(context.Background()); err != nil {
		db.Close()
		return nil, s.explain("opening", err)
	}
	return s, nil
}

// Path returns the absolute path of the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database. Committed writes are already on disk.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("closing state database %q: %w", s.path, err)
	}
	return nil
}

// DB returns the underlying handle, for packages that add their own tables
// through a migration (see Migrations). Use it with care.
func (s *Store) DB() *sql.DB { return s.db }

// explain turns SQLite's corrupt and busy errors into errors that say which
// file and what to do. Other errors are wrapped with the action.
func (s *Store) explain(action string, err error) error {
	switch code(err) {
	case sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT:
		return &stateError{ErrCorrupt, err, fmt.Sprintf(
			"state database %s is corrupt (%v): stop tackled and move it aside (mv %s %s.bad); a new one is created on the next start",
			s.path, err, s.path, s.path)}
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return &stateError{ErrLocked, err, fmt.Sprintf(
			"state database %s is locked by another process (waited %s: %v): stop the other process (another tackled?) and try again",
			s.path, s.busyTimeout, err)}
	}
	return fmt.Errorf("%s state database %s: %w", action, s.path, err)
}

// code returns the primary SQLite result code of err, or 0.
func code(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	// Errors from opening a connection are sometimes only text.
	msg := err.Error()
	switch {
	case strings.Contains(msg, "file is not a database"), strings.Contains(msg, "malformed"):
		return sqlite3.SQLITE_NOTADB
	case strings.Contains(msg, "database is locked"):
		return sqlite3.SQLITE_BUSY
	}
	return 0
}

// isConstraint reports whether err is a constraint violation.
func isConstraint(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_CONSTRAINT
}

// stateError is a corrupt or locked database: it matches its sentinel and
// the SQLite error with errors.Is and errors.As.
type stateError struct {
	sentinel error
	err      error
	msg      string
}

func (e *stateError) Error() string   { return e.msg }
func (e *stateError) Unwrap() []error { return []error{e.sentinel, e.err} }

// Package session owns tackle's sessions: one conversation's tool state
// (working directory, additional directories, permission mode, environment,
// todo list, file read-state) and its append-only event log with gapless
// per-session sequence numbers, persisted in the state database (package
// store) before being published on the session's event.Bus.
//
// A *Session is what tools see as tool.Env and what context modifiers change
// as tool.Mutator. This package does not run tools, decide permissions or
// speak protobuf.
package session

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// ErrNotFound is returned (wrapped) for a session that does not exist.
var ErrNotFound = errors.New("session not found")

// ErrInvalid is wrapped by errors for bad CreateOptions or settings (a
// relative cwd, a missing directory, an unknown permission mode).
var ErrInvalid = errors.New("invalid session settings")

// validateMode returns mode, or an error wrapping ErrInvalid that lists the
// valid modes (permission.Modes). The empty string is valid: it means "not
// set", and the session follows the permissions.defaultMode of its settings.
func validateMode(mode string) (string, error) {
	if mode == "" || permission.ValidMode(mode) {
		return mode, nil
	}
	return "", fmt.Errorf("%w: unknown permission mode %q (use one of %s)", ErrInvalid, mode, strings.Join(permission.Modes, ", "))
}

// CreateOptions describes a new session.
type CreateOptions struct {
	// Cwd is the working directory: absolute, an existing directory. It is
	// stored cleaned with symlinks resolved.
	Cwd string
	// AdditionalDirs are further working directories (absolute, or relative to Cwd).
	AdditionalDirs []string
	// PermissionMode is one of permission.Modes; empty means "not set": the
	// session follows its settings' defaultMode (resolved by the server at
	// every turn) and is stored as "".
	PermissionMode string
	// Env is the environment of the creating client (KEY=VALUE).
	Env []string
	// DefaultForCwd asks for the default session of Cwd: the existing one is
	// returned (created false, the other options ignored) or it is created.
	DefaultForCwd bool
	// MCPConfig are MCP configuration files for this session (--mcp-config),
	// absolute or relative to Cwd; each must exist.
	MCPConfig []string
	// CurrentDir, if set, is the current directory to start in (absolute, an
	// existing directory): a sub-agent starts where its parent is.
	CurrentDir string
	// Agent makes the session a sub-agent's: the session and call that
	// started it, and its type.
	Agent *store.AgentLink
}

// Info is a snapshot of a session's state.
type Info struct {
	ID string
	// Cwd is the root directory: where the session was created, the first
	// working directory and the key of the default session of a directory.
	// It never moves.
	Cwd string
	// CurrentDir is the current directory (Bash's cd moves it; tool.Env.Cwd).
	CurrentDir string
	// AdditionalDirs are the session's own further working directories
	// (CreateOptions.AdditionalDirs).
	AdditionalDirs []string
	// SettingsDirs are the directories its settings add
	// (permissions.additionalDirectories), as they apply now; nil in List.
	SettingsDirs   []WorkingDir
	PermissionMode string
	// Todos is the todo list as JSON, nil when never set.
	Todos     json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// LastSeq is the sequence number of the last event (0 for none).
	LastSeq uint64
	// FilesRead counts the files with a recorded read-state.
	FilesRead int
	// Env is the environment of the client that created the session, as
	// it gave it (without the settings' env; see Session.Environ).
	Env []string
	// DefaultForCwd is true for the default session of its directory.
	DefaultForCwd bool
	// MCPConfig are the session's own MCP configuration files (absolute).
	MCPConfig []string
	// Agent is set for a sub-agent's session.
	Agent *store.AgentLink
}

// Options configures a Manager. A nil *Options means defaults.
type Options struct {
	// StateDir holds outputs/<session id>/ (default: the database's directory).
	StateDir string
	// Logger receives errors the tool.Mutator methods cannot return (default: none).
	Logger hclog.Logger
	// OnCwdChange, if set, is called after a session's current directory
	// moved (Bash's cd), with the old and the new directory.
	OnCwdChange func(s *Session, oldDir, newDir string)
	// OnFileRecorded, if set, is called after a tool recorded the state of a
	// file it read, wrote or edited (nested skill discovery). It runs on the
	// caller's goroutine and must be quick.
	OnFileRecorded func(s *Session, path string)
	// Settings, if set, returns the settings in force for a session's root
	// directory and the problems of its settings files (config.Loader.Load):
	// their permissions.additionalDirectories
	// join the session's working directories and their env applies over its
	// environment. A session calls it at the first WorkingDirs or Environ
	// of every turn, after Manager.SettingsChanged, at least every second,
	// and at every Info and WorkingDirSources; it works the directories and
	// variables out again only when the *config.Settings it returns changes
	// (the loader returns the same one while no file changed). It must be
	// safe for concurrent use.
	Settings func(root string) (*config.Settings, []config.Problem)
	// Home is the home directory "~" means in additionalDirectories, to tell
	// which settings file lists a directory (default: $HOME; the loader's
	// Options.Home).
	Home string
}

// Manager creates, loads and deletes sessions. It is safe for concurrent use.
// It caches each loaded *Session, so every caller shares one Session (and one
// event.Bus) per id.
type Manager struct {
	st   *store.Store
	opts Options
	w    *writer // stores every session's log, batched

	// settingsGen counts SettingsChanged calls: a session whose settings
	// were read at an older one reads them again.
	settingsGen atomic.Uint64

	mu       sync.Mutex // guards the fields below; lock order: Manager.mu before Session.appendMu
	sessions map[string]*Session
	closed   bool
}

// NewManager returns a manager of the sessions stored in st. It does not
// close st.
func NewManager(st *store.Store, opts *Options) *Manager {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.StateDir == "" {
		o.StateDir = filepath.Dir(st.Path())
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	m := &Manager{st: st, opts: o, w: newWriter(st, o.Logger), sessions: map[string]*Session{}}
	m.w.onLost, m.w.onRecovered = m.lost, m.recovered
	return m
}

// seqSpan is a range of sequence numbers.
type seqSpan struct{ first, last uint64 }

func (sp seqSpan) String() string {
	if sp.first == sp.last {
		return fmt.Sprint(sp.first)
	}
	return fmt.Sprintf("%d to %d", sp.first, sp.last)
}

// recovered stores, once the database takes writes again, a notice in
// each session that lost events, listing them: so that a replay, too,
// meets no gap without a notice (the notices published while the log
// failed may have been lost themselves).
//
// The spans are listed again by the next recovery if this notice is not
// stored after all (the writer lost or dropped it).
func (m *Manager) recovered() {
	for _, s := range m.Loaded() {
		s.lossMu.Lock()
		spans := s.unstored
		s.unstored = nil
		s.lossMu.Unlock()
		if len(spans) == 0 {
			continue
		}
		slices.SortFunc(spans, func(a, b seqSpan) int { return cmp.Compare(a.first, b.first) })
		parts := make([]string, len(spans))
		for i, sp := range spans {
			parts[i] = sp.String()
		}
		text := fmt.Sprintf("The session log is written again. While it could not be written, the events of this session with seq %s were lost: a replay skips them.", strings.Join(parts, ", "))
		_, w, err := s.appendWrite(&event.Event{Type: event.Notice, Text: text}, true)
		if err == nil {
			err = w.wait()
		}
		if err != nil {
			m.opts.Logger.Error("storing the notice of lost events", "session", s.id, "error", err)
			s.lossMu.Lock()
			s.unstored = append(spans, s.unstored...)
			s.lossMu.Unlock()
		}
	}
}

// lost turns the published events of a batch the writer could not store
// into a notice to every client of each session they belong to (a notice
// of a loss that was itself lost is only logged): no gap in seq reaches a
// client without one. The notice names the calls among them whose result
// was shown without telling of the loss (see Session.CallLogFailure).
func (m *Manager) lost(ws []*write, err error) {
	type span struct {
		first, last uint64
		n           int
		notices     bool // only loss notices
		ws          []*write
	}
	spans := map[string]*span{}
	var order []string
	for _, it := range ws {
		e := it.w.Event
		if e == nil {
			continue
		}
		sp := spans[e.SessionID]
		if sp == nil {
			sp = &span{first: e.Seq, notices: true}
			spans[e.SessionID] = sp
			order = append(order, e.SessionID)
		}
		sp.first, sp.last = min(sp.first, e.Seq), max(sp.last, e.Seq)
		sp.n++
		sp.notices = sp.notices && it.notice
		sp.ws = append(sp.ws, it)
	}
	for _, id := range order {
		sp := spans[id]
		m.opts.Logger.Error("session log: events lost", "session", id, "first_seq", sp.first, "last_seq", sp.last, "events", sp.n, "error", err)
		m.mu.Lock()
		s := m.sessions[id]
		m.mu.Unlock()
		if s == nil {
			continue
		}
		s.lossMu.Lock()
		s.unstored = append(s.unstored, seqSpan{sp.first, sp.last})
		s.lossMu.Unlock()
		if sp.notices {
			continue
		}
		text := fmt.Sprintf("The session log could not be written: %d event(s) of this session (seq %d to %d) were shown but are missing from the stored log, so a replay skips them (%v).",
			sp.n, sp.first, sp.last, err)
		if calls := s.shownCalls(sp.ws); len(calls) > 0 {
			text += fmt.Sprintf(" Among them are events of calls %s, whose results were shown before this was known.", strings.Join(calls, ", "))
		}
		text += " A call still running whose events were among them ends with an error saying so."
		if _, aerr := s.append(&event.Event{Type: event.Notice, Text: text}, true); aerr != nil {
			m.opts.Logger.Error("telling clients of lost events", "session", id, "error", aerr)
		}
	}
}

// resolveDir returns dir cleaned, absolute (relative to base if base is
// set) and with symlinks resolved, or an error if it is not a directory.
func resolveDir(what, dir, base string) (string, error) {
	if dir == "" {
		return "", fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if !filepath.IsAbs(dir) {
		if base == "" {
			return "", fmt.Errorf("%w: %s %q is not an absolute path", ErrInvalid, what, dir)
		}
		dir = filepath.Join(base, dir)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return "", fmt.Errorf("%w: %s %q: %v", ErrInvalid, what, dir, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%w: %s %q: %v", ErrInvalid, what, dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: %s %q is not a directory", ErrInvalid, what, dir)
	}
	return real, nil
}

func newID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return "s_" + hex.EncodeToString(b[:])
}

// Create makes a new session, or with DefaultForCwd returns the default
// session of the directory (creating it on first use). created reports
// whether a session was created. Two concurrent calls for the same
// directory's default session get the same session, also across processes
// sharing the database.
func (m *Manager) Create(ctx context.Context, o CreateOptions) (s *Session, created bool, err error) {
	cwd, err := resolveDir("cwd", o.Cwd, "")
	if err != nil {
		return nil, false, err
	}
	if o.DefaultForCwd {
		row, err := m.st.DefaultSession(ctx, cwd)
		if err == nil {
			s, err := m.Get(ctx, row.ID)
			return s, false, err
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, false, err
		}
	}
	mode, err := validateMode(o.PermissionMode)
	if err != nil {
		return nil, false, err
	}
	var dirs []string
	for _, d := range o.AdditionalDirs {
		r, err := resolveDir("additional directory", d, cwd)
		if err != nil {
			return nil, false, err
		}
		dirs = append(dirs, r)
	}
	var mcpFiles []string
	for _, f := range o.MCPConfig {
		if !filepath.IsAbs(f) {
			f = filepath.Join(cwd, f)
		}
		st, err := os.Stat(f)
		if err != nil {
			return nil, false, fmt.Errorf("MCP configuration file: %w", err)
		}
		if st.IsDir() {
			return nil, false, fmt.Errorf("MCP configuration file %q is a directory", f)
		}
		mcpFiles = append(mcpFiles, filepath.Clean(f))
	}
	var current string
	if o.CurrentDir != "" {
		if current, err = resolveDir("current directory", o.CurrentDir, cwd); err != nil {
			return nil, false, err
		}
		if current == cwd {
			current = ""
		}
	}
	var agent *store.AgentLink
	if o.Agent != nil {
		a := *o.Agent
		agent = &a
	}
	now := time.Now().UTC()
	row := store.SessionRow{
		ID: newID(), Cwd: cwd, CurrentDir: current, AdditionalDirs: dirs, PermissionMode: mode,
		Env: append([]string(nil), o.Env...), CreatedAt: now, UpdatedAt: now, DefaultForCwd: o.DefaultForCwd,
		MCPConfig: mcpFiles, Agent: agent,
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, false, errors.New("creating session: the session manager is closed")
	}
	if err := m.st.InsertSession(ctx, row); err != nil {
		if errors.Is(err, store.ErrDefaultExists) {
			// Lost the race for this directory's default session: use the winner's.
			existing, err := m.st.DefaultSession(ctx, cwd)
			if err != nil {
				return nil, false, err
			}
			s, err := m.Get(ctx, existing.ID)
			return s, false, err
		}
		return nil, false, fmt.Errorf("creating session: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[row.ID]; ok {
		// A concurrent Create of the same default session found and loaded it first.
		return s, true, nil
	}
	s = m.newSession(row, nil)
	m.sessions[s.id] = s
	return s, true, nil
}

// Get returns the session with this id, loading it from the database on
// first use. An unknown id gives an error wrapping ErrNotFound.
func (m *Manager) Get(ctx context.Context, id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[id]; ok {
		return s, nil
	}
	if m.closed {
		return nil, fmt.Errorf("loading session %s: the session manager is closed", id)
	}
	row, err := m.st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("loading session %s: %w", id, err)
	}
	files, err := m.st.FileStates(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("loading session %s: %w", id, err)
	}
	s := m.newSession(row, files)
	m.sessions[id] = s
	return s, nil
}

func (m *Manager) newSession(row store.SessionRow, files map[string]tool.FileState) *Session {
	if files == nil {
		files = map[string]tool.FileState{}
	}
	return &Session{
		m:       m,
		id:      row.ID,
		bus:     event.NewBus(),
		lastSeq: row.LastSeq,
		row:     row,
		files:   files,
		log:     m.opts.Logger.With("session", row.ID),
	}
}

func infoFromRow(r store.SessionRow) Info {
	return Info{
		ID: r.ID, Cwd: r.Cwd, CurrentDir: currentDir(r), AdditionalDirs: r.AdditionalDirs, PermissionMode: r.PermissionMode,
		Todos: r.Todos, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, LastSeq: r.LastSeq,
		FilesRead: r.FilesRead, Env: r.Env, DefaultForCwd: r.DefaultForCwd, MCPConfig: r.MCPConfig, Agent: r.Agent,
	}
}

// Loaded returns the sessions loaded in memory (created or fetched since the
// manager started and not deleted), in no particular order.
func (m *Manager) Loaded() []*Session {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		out = append(out, s)
	}
	return out
}

// List returns every stored session, newest first.
func (m *Manager) List(ctx context.Context) ([]Info, error) {
	rows, err := m.st.ListSessions(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Info, 0, len(rows))
	for _, r := range rows {
		out = append(out, infoFromRow(r))
	}
	return out, nil
}

// Delete removes a session: its row, events, read-state and outputs
// directory. Its subscribers are cut off (channel closed, Err nil) and later
// Appends on it fail. An unknown id gives an error wrapping ErrNotFound.
func (m *Manager) Delete(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s != nil {
		s.appendMu.Lock()
		defer s.appendMu.Unlock()
	}
	if err := m.w.flush(); err != nil {
		return fmt.Errorf("deleting session %s: %w", id, err)
	}
	if err := m.st.DeleteSession(ctx, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNotFound, id)
		}
		return err
	}
	if s != nil {
		s.deleted = true
		s.bus.Close()
		delete(m.sessions, id)
	}
	if err := os.RemoveAll(m.outputDir(id)); err != nil {
		return fmt.Errorf("removing outputs of session %s: %w", id, err)
	}
	return nil
}

// Count returns the number of stored sessions (the loaded ones if the
// database cannot be read).
func (m *Manager) Count() int {
	n, err := m.st.CountSessions(context.Background())
	if err != nil {
		m.opts.Logger.Error("counting sessions", "error", err)
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.sessions)
	}
	return n
}

// Close cuts off every subscriber of every loaded session. Later Get and
// Create calls fail. It does not close the store. It is idempotent.
func (m *Manager) Close() error {
	m.w.close()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, s := range m.sessions {
		s.bus.Close()
	}
	return nil
}

func (m *Manager) outputDir(id string) string {
	return filepath.Join(m.opts.StateDir, "outputs", id)
}

package session

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Session is one session's state and event log. It implements tool.Env and
// tool.Mutator and is safe for concurrent use.
//
// Lock order: appendMu before mu. Append and Subscribe hold appendMu, so a
// subscriber's replay and live events meet without gap or duplicate.
type Session struct {
	m   *Manager
	id  string
	bus *event.Bus
	log hclog.Logger

	appendMu sync.Mutex // guards the fields below; serialises Append, Subscribe and Delete
	lastSeq  uint64
	deleted  bool
	// calls are the writes of the calls whose result is not appended yet
	// (see CallLogFailure); nil until the first.
	calls map[callKey]*callWrites

	mu    sync.RWMutex // guards the fields below; held across the database write of a change
	row   store.SessionRow
	files map[string]tool.FileState // by cleaned path

	lossMu sync.Mutex // guards unstored
	// unstored are the events published but lost by the writer, not yet
	// listed by a notice stored after them (Manager.recovered).
	unstored []seqSpan

	loadedMu sync.Mutex      // guards loaded
	loaded   map[string]bool // deferred tools loaded; nil until read from the database

	settingsMu sync.Mutex // guards fromSettings; never held together with mu
	// fromSettings is what the settings seen last add (nil until asked):
	// replaced, never modified, so a caller may keep reading one.
	fromSettings *fromSettings
	// turns counts the turns and prompts started (TurnStarted and
	// PromptStarted appended): the settings are read again at every turn.
	turns atomic.Uint64
}

// settingsRecheck bounds how long a session uses the settings it read
// last without asking Options.Settings again, outside turns and with no
// SettingsChanged: for the changes nobody reports (another process
// editing the trust file, Claude Code its ~/.claude.json).
const settingsRecheck = time.Second

// fromSettings is what one version of a session's settings adds to it,
// and when it was read.
type fromSettings struct {
	st       *config.Settings
	problems []config.Problem // of the settings files that do not parse
	// dirs are the settings' additional directories (OriginSettings), in
	// order, the missing ones included.
	dirs    []WorkingDir
	missing bool // some of dirs is missing: looked at again at every read
	// env is the session's environment with the settings' env applied; nil
	// when they set no variable (the client's environment applies as is).
	env []string

	gen, turns uint64    // Manager.settingsGen and Session.turns when read
	at         time.Time // when read
}

// Origins of a working directory (WorkingDir.Origin).
const (
	// OriginRoot is the session's root directory.
	OriginRoot = "root"
	// OriginSession is a directory given when the session was created
	// (--add-dir, a sub-agent's worktree).
	OriginSession = "session"
	// OriginSettings is a directory of permissions.additionalDirectories
	// in a settings file.
	OriginSettings = "settings"
)

// WorkingDir is one working directory of a session and where it comes from.
type WorkingDir struct {
	Path string
	// Origin is OriginRoot, OriginSession or OriginSettings.
	Origin string
	// Source is the settings file that lists the directory, Scope its
	// scope (config.ScopeUser, …); both "" unless Origin is OriginSettings
	// (and Source "" when the file cannot be told).
	Source, Scope string
	// Missing is set for a settings directory that is not an existing
	// directory: it is no working directory until it is one.
	Missing bool
}

var (
	_ tool.Env     = (*Session)(nil)
	_ tool.Mutator = (*Session)(nil)
)

// ID returns the session id.
func (s *Session) ID() string { return s.id }

// SessionID returns the session id (tool.Env).
func (s *Session) SessionID() string { return s.id }

// Info returns a snapshot of the session's state.
func (s *Session) Info() Info {
	s.appendMu.Lock()
	last := s.lastSeq
	s.appendMu.Unlock()
	fs := s.settingsNow(true)
	s.mu.RLock()
	defer s.mu.RUnlock()
	i := infoFromRow(s.row)
	for _, d := range workingDirs(s.row, fs) {
		if d.Origin == OriginSettings {
			i.SettingsDirs = append(i.SettingsDirs, d)
		}
	}
	i.AdditionalDirs = append([]string(nil), i.AdditionalDirs...)
	i.Env = append([]string(nil), i.Env...)
	i.Todos = append(json.RawMessage(nil), i.Todos...)
	if len(i.Todos) == 0 {
		i.Todos = nil
	}
	i.LastSeq = last
	i.FilesRead = len(s.files)
	return i
}

// Bus returns the session's event bus. Subscribe through Subscribe, which
// also replays stored events; Bus is for tests and diagnostics.
func (s *Session) Bus() *event.Bus { return s.bus }

// Append gives e the session's id, the next sequence number and (if zero)
// the current time, bounds its size (see boundEvent), queues it for
// storage, and publishes it on the session's bus: a durable event (see
// writer) only once it is committed, every other at once, always in
// sequence order.
// It returns the stored event (a copy of e; e is not changed). A durable
// event that cannot be stored (or queued: see writer) gives an error and
// leaves its sequence number unused; an event published before it is
// stored that is lost, or not queued the queue being full, is told to
// every client by a notice (Manager.lost, dropped) and to a later replay
// by one in its place (withLosses). Safe for concurrent use. Events
// handed out must not be modified.
func (s *Session) Append(e *event.Event) (*event.Event, error) {
	return s.append(e, false)
}

// append is Append; lossNotice marks the notice of lost events, which is
// published first (it must reach the clients while the database takes no
// writes) and whose own loss is only logged.
func (s *Session) append(e *event.Event, lossNotice bool) (*event.Event, error) {
	c, _, err := s.appendWrite(e, lossNotice)
	return c, err
}

// appendWrite is append; it also returns the event's write, to wait for
// its commit.
func (s *Session) appendWrite(e *event.Event, lossNotice bool) (*event.Event, *write, error) {
	if e.Type == event.TurnStarted || e.Type == event.PromptStarted {
		s.turns.Add(1) // the settings are read again at every turn
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.deleted {
		return nil, nil, fmt.Errorf("appending to session %s: %w (deleted)", s.id, ErrNotFound)
	}
	c := *e
	c.SessionID = s.id
	c.Seq = s.lastSeq + 1
	if c.Time.IsZero() {
		c.Time = time.Now().UTC()
	}
	s.boundEvent(&c)
	persistFirst := durable(c.Type) && !lossNotice
	w := s.m.w.enqueueWrite(&write{
		w:      store.Write{Event: &c},
		urgent: persistFirst || lossNotice || publishFirst(c.Type), published: !persistFirst, notice: lossNotice,
	})
	if persistFirst || w.rejected {
		if err := w.wait(); err != nil {
			s.durableLostLocked(&c, err)
			return nil, nil, fmt.Errorf("appending %s to session %s: %w", c.Type, s.id, err)
		}
	}
	s.lastSeq = c.Seq
	if !persistFirst && !lossNotice && c.CallID != "" {
		s.trackLocked(&c, w)
	}
	if w.dropped {
		s.dropped(c.Seq, lossNotice, w.err)
	}
	s.bus.Publish(&c)
	return &c, w, nil
}

// dropped records that the event seq was published but not stored, the
// writer's queue being full (err). The first of a run of such events is
// told to every client by a notice, appended after it; the notice is
// dropped too while the queue stays full, and so joins the run. appendMu
// is held.
func (s *Session) dropped(seq uint64, lossNotice bool, err error) {
	s.lossMu.Lock()
	n := len(s.unstored)
	first := n == 0 || s.unstored[n-1].last+1 != seq
	if first {
		s.unstored = append(s.unstored, seqSpan{seq, seq})
	} else {
		s.unstored[n-1].last = seq
	}
	s.lossMu.Unlock()
	if !first || lossNotice {
		return
	}
	s.log.Error("session log: events not stored, the queue being full", "session", s.id, "first_seq", seq, "error", err)
	text := fmt.Sprintf("The session log could not be written: events of this session from seq %d on are shown but not stored until the state database takes writes again, so a replay will skip them (%v). Calls running meanwhile end with an error.", seq, err)
	go func() {
		if _, err := s.append(&event.Event{Type: event.Notice, Text: text}, true); err != nil {
			s.log.Error("telling clients of lost events", "session", s.id, "error", err)
		}
	}()
}

// Subscribe returns the stored events with seq >= fromSeq (none if
// liveOnly) and a subscription that receives every event appended after
// them, with no gap and no duplicate. The events still queued for the
// database are replayed from memory, so a subscriber never waits for a
// commit (the database may be locked by another process). buf is the
// subscription's buffer (see event.Bus for what happens when it fills
// up). The caller must Close sub.
func (s *Session) Subscribe(fromSeq uint64, liveOnly bool, buf int) (replay []*event.Event, sub *event.Subscription, err error) {
	return s.SubscribeTypes(fromSeq, liveOnly, buf, nil)
}

// SubscribeTypes is Subscribe with a subscription that receives only the
// events of types (none given: all; see event.Bus.SubscribeTypes). The
// replay is not filtered.
func (s *Session) SubscribeTypes(fromSeq uint64, liveOnly bool, buf int, types []event.Type) (replay []*event.Event, sub *event.Subscription, err error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.deleted {
		return nil, nil, fmt.Errorf("subscribing to session %s: %w (deleted)", s.id, ErrNotFound)
	}
	if !liveOnly && fromSeq <= s.lastSeq {
		if replay, err = s.eventsLocked(context.Background(), fromSeq); err != nil {
			return nil, nil, err
		}
	}
	return replay, s.bus.SubscribeTypes(buf, types), nil
}

// eventsLocked returns the stored events with seq >= fromSeq followed by
// those still queued, without waiting for the writer. appendMu is held, so
// no event of the session is appended meanwhile.
func (s *Session) eventsLocked(ctx context.Context, fromSeq uint64) ([]*event.Event, error) {
	// The queue first: a batch committed between the two reads is then
	// in both (and taken from the queue's copy), never in neither.
	pend := s.m.w.pending(s.id, fromSeq)
	stored, err := s.m.st.Events(ctx, s.id, fromSeq)
	if err != nil {
		return nil, err
	}
	if len(pend) > 0 {
		cut := len(stored)
		for cut > 0 && stored[cut-1].Seq >= pend[0].Seq {
			cut--
		}
		stored = append(stored[:cut], pend...)
	}
	return s.withLosses(stored, fromSeq, math.MaxUint64), nil
}

// withLosses returns evs, the events of the log with seq from fromSeq to
// upTo, with a notice in each gap the writer left that no stored notice
// lists yet (unstored): a replay meets no gap without a notice, even
// before the log is written again. The notice takes the seq of the last
// event lost, so that a replay that pages on after it does not meet it
// again.
func (s *Session) withLosses(evs []*event.Event, fromSeq, upTo uint64) []*event.Event {
	s.lossMu.Lock()
	var spans []seqSpan
	for _, sp := range s.unstored {
		if sp.last >= fromSeq && sp.last <= upTo {
			spans = append(spans, sp)
		}
	}
	s.lossMu.Unlock()
	if len(spans) == 0 {
		return evs
	}
	slices.SortFunc(spans, func(a, b seqSpan) int { return cmp.Compare(a.last, b.last) })
	out := make([]*event.Event, 0, len(evs)+len(spans))
	for _, e := range evs {
		for len(spans) > 0 && spans[0].last <= e.Seq {
			if spans[0].last < e.Seq {
				out = append(out, s.lossNotice(spans[0]))
			}
			spans = spans[1:]
		}
		out = append(out, e)
	}
	for _, sp := range spans {
		out = append(out, s.lossNotice(sp))
	}
	return out
}

// lossNotice is the notice a replay shows in place of the events of sp,
// which were shown but could not be stored.
func (s *Session) lossNotice(sp seqSpan) *event.Event {
	return &event.Event{
		SessionID: s.id, Seq: sp.last, Time: time.Now().UTC(), Type: event.Notice,
		Text: fmt.Sprintf("The events of this session with seq %s were shown but could not be written to the session log: they are lost, and this replay skips them.", sp),
	}
}

// StoredPage returns the stored events with seq >= fromSeq, in order, up
// to about maxBytes of them (at least one row of the log); more reports
// that stored events were left. It takes no lock: a replay pages through
// a long log with it, then subscribes from the seq after the last page.
//
// The gaps of lost events within the page get a notice (see withLosses).
func (s *Session) StoredPage(ctx context.Context, fromSeq uint64, maxBytes int) (events []*event.Event, more bool, err error) {
	events, more, err = s.m.st.EventsPage(ctx, s.id, fromSeq, maxBytes)
	if err != nil || len(events) == 0 {
		return events, more, err
	}
	return s.withLosses(events, fromSeq, events[len(events)-1].Seq), more, nil
}

// Events returns the events with seq >= fromSeq, in order: the stored
// ones and those still queued.
func (s *Session) Events(ctx context.Context, fromSeq uint64) ([]*event.Event, error) {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	return s.eventsLocked(ctx, fromSeq)
}

// Apply runs a context modifier against the session (as tool.Mutator). A nil
// modifier does nothing.
func (s *Session) Apply(m tool.Modifier) {
	if m != nil {
		m(s)
	}
}

// Cwd returns the current working directory (tool.Env): where Bash's last
// cd left it, else the root directory (Info.Cwd).
func (s *Session) Cwd() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return currentDir(s.row)
}

// Agent returns the link of a sub-agent's session to its parent, nil for
// a session a client created.
func (s *Session) Agent() *store.AgentLink {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.row.Agent == nil {
		return nil
	}
	a := *s.row.Agent
	return &a
}

// AgentID is the id a sub-agent's session goes by (its session id), ""
// for a session a client created (hook inputs' agent_id).
func (s *Session) AgentID() string {
	if s.Agent() == nil {
		return ""
	}
	return s.id
}

// AgentType is a sub-agent's type, "" for a session a client created.
func (s *Session) AgentType() string {
	if a := s.Agent(); a != nil {
		return a.AgentType
	}
	return ""
}

// RootSessionID is the session at the top of a sub-agent's tree: itself
// for a session a client created.
func (s *Session) RootSessionID() string {
	if a := s.Agent(); a != nil && a.RootSessionID != "" {
		return a.RootSessionID
	}
	return s.id
}

// Root returns the session's root directory (Info.Cwd): the project whose
// settings apply, and the first working directory. It never moves.
func (s *Session) Root() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.row.Cwd
}

func currentDir(r store.SessionRow) string {
	if r.CurrentDir != "" {
		return r.CurrentDir
	}
	return r.Cwd
}

// WorkingDirs returns the root directory, then the session's own
// additional directories, then those its settings add (existing ones, in
// order, each once) (tool.Env). The current directory does not change
// them. The settings are read once a turn (an edited file applies to the
// next turn, as permission rules do), at once after SettingsChanged, and
// at least every second.
func (s *Session) WorkingDirs() []string {
	fs := s.settingsNow(false)
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := 1 + len(s.row.AdditionalDirs)
	if fs != nil {
		n += len(fs.dirs)
	}
	out := make([]string, 0, n)
	out = append(out, s.row.Cwd)
	for _, d := range s.row.AdditionalDirs {
		if !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if fs != nil {
		for _, d := range fs.dirs {
			if !d.Missing && !slices.Contains(out, d.Path) {
				out = append(out, d.Path)
			}
		}
	}
	return out
}

// WorkingDirSources returns every working directory with where it comes
// from, in WorkingDirs' order, the settings' directories that are missing
// included (Missing set). It reads the settings now (and so brings
// WorkingDirs and Environ up to date too).
func (s *Session) WorkingDirSources() []WorkingDir {
	fs := s.settingsNow(true)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return workingDirs(s.row, fs)
}

func workingDirs(r store.SessionRow, fs *fromSettings) []WorkingDir {
	out := []WorkingDir{{Path: r.Cwd, Origin: OriginRoot}}
	seen := map[string]bool{r.Cwd: true}
	for _, d := range r.AdditionalDirs {
		if !seen[d] {
			seen[d] = true
			out = append(out, WorkingDir{Path: d, Origin: OriginSession})
		}
	}
	if fs != nil {
		for _, d := range fs.dirs {
			if !seen[d.Path] {
				seen[d.Path] = true
				out = append(out, d)
			}
		}
	}
	return out
}

// AdditionalDirs returns the session's own additional directories
// (CreateOptions.AdditionalDirs), not its settings'.
func (s *Session) AdditionalDirs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.row.AdditionalDirs...)
}

// Environ returns the session's environment (tool.Env): the one of the
// client that created the session with the env of its settings applied
// on top (a variable the settings set replaces the client's). A session
// whose client gave no environment gets the daemon's under the settings'
// variables (as its commands would without them); with no settings
// variable either it is empty. The settings are read as for WorkingDirs.
// The slice is the caller's.
func (s *Session) Environ() []string {
	if fs := s.settingsNow(false); fs != nil && fs.env != nil {
		return append([]string(nil), fs.env...)
	}
	return s.ClientEnviron()
}

// Settings returns the merged settings in force for the session (nil
// without Options.Settings), read as for WorkingDirs: once a turn, at once
// after SettingsChanged and at least every second. The permission stage
// takes its rules from them, so a turn reads its settings files once, not
// once for its directories and again for its rules.
func (s *Session) Settings() *config.Settings {
	st, _ := s.TurnSettings()
	return st
}

// TurnSettings is Settings with the problems of the settings files that
// do not parse, as read for the current turn (nil, nil without
// Options.Settings): a turn that needs them twice reads the files once.
func (s *Session) TurnSettings() (*config.Settings, []config.Problem) {
	if fs := s.settingsNow(false); fs != nil {
		return fs.st, fs.problems
	}
	return nil, nil
}

// ClientEnviron returns the environment of the client that created the
// session, as it gave it: without the settings' env. A sub-agent's
// session starts from it (its own settings apply again).
func (s *Session) ClientEnviron() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.row.Env...)
}

// SettingsChanged makes every session read its settings again at its
// next WorkingDirs or Environ: a settings file or the workspace trust
// changed. Safe for concurrent use.
func (m *Manager) SettingsChanged() { m.settingsGen.Add(1) }

// settingsNow returns what the settings in force add to the session (nil
// without Options.Settings). It asks Options.Settings when force is set,
// at the first call of a turn, after SettingsChanged and when its last
// read is settingsRecheck old (Load stats every settings file: too dear
// for every call), and works the directories and environment out again
// only when the settings changed or a directory listed was missing.
func (s *Session) settingsNow(force bool) *fromSettings {
	f := s.m.opts.Settings
	if f == nil {
		return nil
	}
	gen, turns := s.m.settingsGen.Load(), s.turns.Load()
	s.settingsMu.Lock()
	cur := s.fromSettings
	s.settingsMu.Unlock()
	if !force && cur != nil && cur.gen == gen && cur.turns == turns && time.Since(cur.at) < settingsRecheck {
		return cur
	}
	s.mu.RLock()
	root, clientEnv := s.row.Cwd, s.row.Env // row.Env never changes
	s.mu.RUnlock()
	st, problems := f(root)
	if st == nil {
		return nil
	}
	next := &fromSettings{st: st, problems: problems, gen: gen, turns: turns, at: time.Now()}
	if cur != nil && cur.st == st && !cur.missing {
		next.dirs, next.env = cur.dirs, cur.env
	} else {
		next.dirs = settingsDirs(st, root, s.m.opts.Home)
		if len(st.Env()) > 0 {
			base := clientEnv
			if len(base) == 0 {
				base = os.Environ()
			}
			next.env = st.Environ(base)
		}
	}
	for _, d := range next.dirs {
		next.missing = next.missing || d.Missing
	}
	s.settingsMu.Lock()
	defer s.settingsMu.Unlock()
	if old := s.fromSettings; old != nil && old != cur && old.at.After(next.at) {
		return old // a later read got there first
	}
	s.fromSettings = next
	return next
}

// settingsDirs are the additional directories of st for a session rooted
// at root, with the file each comes from (the first, lowest precedence,
// that lists it).
func settingsDirs(st *config.Settings, root, home string) []WorkingDir {
	paths := st.AdditionalDirectories(root)
	if len(paths) == 0 {
		return nil
	}
	from := map[string]config.Source{}
	for _, ly := range st.Layers {
		raw, ok := ly.Raw["permissions"]
		if !ok {
			continue
		}
		var p struct {
			AdditionalDirectories []string `json:"additionalDirectories"`
		}
		if json.Unmarshal(raw, &p) != nil {
			continue
		}
		for _, d := range p.AdditionalDirectories {
			if abs := config.AdditionalDirectory(d, ly.Source, root, home); abs != "" {
				if _, ok := from[abs]; !ok {
					from[abs] = ly.Source
				}
			}
		}
	}
	out := make([]WorkingDir, 0, len(paths))
	for _, p := range paths {
		src := from[p]
		out = append(out, WorkingDir{Path: p, Origin: OriginSettings, Source: src.Path, Scope: src.Scope, Missing: !isDir(p)})
	}
	return out
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// MCPConfig returns the session's own MCP configuration files (--mcp-config).
func (s *Session) MCPConfig() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.row.MCPConfig...)
}

// PermissionMode returns the session's stored permission mode: "" when
// none was set explicitly (the session follows its settings).
func (s *Session) PermissionMode() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.row.PermissionMode
}

// FileState returns the recorded read-state of path (tool.Env).
func (s *Session) FileState(path string) (tool.FileState, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	fs, ok := s.files[filepath.Clean(path)]
	return fs, ok
}

// OutputDir returns StateDir/outputs/<id>, creating it if needed (tool.Env).
func (s *Session) OutputDir() string {
	dir := s.m.outputDir(s.id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		s.log.Error("creating output directory", "dir", dir, "error", err)
	}
	return dir
}

// TranscriptPath is the session's transcript in Claude Code's JSONL
// format (hook inputs' transcript_path); the daemon keeps it up to date.
func (s *Session) TranscriptPath() string {
	return filepath.Join(s.m.opts.StateDir, "transcripts", s.id+".jsonl")
}

// update changes the row under mu, stores it and appends a session_updated
// event with change. It returns the error for callers that can report it.
func (s *Session) update(what string, change *event.SessionChange, f func(r *store.SessionRow)) error {
	return s.updateAs(event.SessionUpdated, what, change, f)
}

// updateAs is update with the event type to append.
func (s *Session) updateAs(typ event.Type, what string, change *event.SessionChange, f func(r *store.SessionRow)) error {
	s.mu.Lock()
	old := s.row
	f(&s.row)
	s.row.UpdatedAt = time.Now().UTC()
	if err := s.m.st.UpdateSession(context.Background(), s.row); err != nil {
		s.row = old
		s.mu.Unlock()
		return fmt.Errorf("%s of session %s: %w", what, s.id, err)
	}
	s.mu.Unlock()
	if _, err := s.Append(&event.Event{Type: typ, Session: change}); err != nil {
		return fmt.Errorf("%s of session %s: %w", what, s.id, err)
	}
	return nil
}

// SetCwd changes the current directory (tool.Mutator); the root directory
// (Info.Cwd) and so WorkingDirs never move. A relative dir is taken relative
// to the current one; a dir that is not an existing directory is logged and
// ignored. The session_updated event carries the new current directory in
// SessionChange.Cwd.
func (s *Session) SetCwd(dir string) {
	if err := s.ChangeCwd(dir); err != nil {
		s.log.Error("changing cwd", "dir", dir, "error", err)
	}
}

// ChangeCwd is SetCwd with an error.
func (s *Session) ChangeCwd(dir string) error {
	old := s.Cwd()
	real, err := resolveDir("cwd", dir, old)
	if err != nil {
		return err
	}
	err = s.update("changing cwd", &event.SessionChange{Cwd: real}, func(r *store.SessionRow) {
		r.CurrentDir = real
		if real == r.Cwd {
			r.CurrentDir = ""
		}
	})
	if err == nil && real != old && s.m.opts.OnCwdChange != nil {
		s.m.opts.OnCwdChange(s, old, real)
	}
	return err
}

// SetPermissionMode changes the stored permission mode (one of
// permission.Modes, or "" to follow the settings again).
func (s *Session) SetPermissionMode(mode string) error {
	mode, err := validateMode(mode)
	if err != nil {
		return err
	}
	return s.update("changing permission mode", &event.SessionChange{PermissionMode: mode}, func(r *store.SessionRow) { r.PermissionMode = mode })
}

// SetTodos replaces the todo list (tool.Mutator) and appends a
// todos_updated event whose Session.Todos holds the new list. Invalid JSON
// is logged and ignored.
func (s *Session) SetTodos(todos json.RawMessage) {
	if !json.Valid(todos) {
		s.log.Error("setting todos: not valid JSON", "todos", string(todos))
		return
	}
	t := append(json.RawMessage(nil), todos...)
	if err := s.updateAs(event.TodosUpdated, "setting todos", &event.SessionChange{Todos: t}, func(r *store.SessionRow) { r.Todos = t }); err != nil {
		s.log.Error("setting todos", "error", err)
	}
}

// RecordFile records the read-state of a file (tool.Mutator): kept in memory
// for FileState and stored in the background with the session log (so it is
// committed before the call's result is published).
func (s *Session) RecordFile(fs tool.FileState) {
	fs.Path = filepath.Clean(fs.Path)
	s.mu.Lock()
	s.files[fs.Path] = fs
	s.mu.Unlock()
	s.m.w.enqueue(store.Write{SessionID: s.id, File: fs}, false)
	if f := s.m.opts.OnFileRecorded; f != nil {
		f(s, fs.Path)
	}
}

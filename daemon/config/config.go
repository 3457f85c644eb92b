// Package config reads tackle's settings: the one list of settings sources
// (managed, user, project, local; tackle's own files and Claude Code's), their
// merge into one Settings per project directory, and re-reading them when
// they change. It also reads the MCP server configuration (MCPServers:
// settings files, .mcp.json, ~/.claude.json, --mcp-config files) and Claude
// Code's plugins (Settings.Plugins: enabledPlugins resolved through
// ~/.claude/plugins, and tackle's "plugins" directories) through the same
// cache and watcher.
//
// It only reads settings. Writing them ("always allow" rules) belongs to
// the packages that own those decisions; it does own the workspace trust
// store (Trust, which also counts Claude Code's trust dialog, read from
// ~/.claude.json), the MCP server entries and approvals tackle writes
// (AddMCPServer, RemoveMCPServer, ApproveMCPServers), and the atomic, locked
// file writes they share (LockFile, WriteFileAtomic). It never writes a
// Claude Code file. It knows nothing of sessions or permissions beyond the
// shape of the permissions block.
package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Source scopes, lowest precedence first.
const (
	ScopeUser    = "user"
	ScopeProject = "project"
	ScopeLocal   = "local"
	ScopeManaged = "managed"
)

// DefaultManagedPath is the managed (administrator) settings file.
const DefaultManagedPath = "/etc/tackle/managed-settings.json"

// sources is THE settings source list, lowest precedence first: a later
// entry wins for scalars. Within a scope tackle's own file comes after (wins
// over) Claude Code's. Adding a location is one line here. A function
// returns "" when its base directory is unknown.
var sources = []struct {
	scope string
	path  func(o *Options, project string) string
}{
	{ScopeUser, func(o *Options, _ string) string { return join(o.Home, ".claude", "settings.json") }},
	{ScopeUser, func(o *Options, _ string) string { return join(o.ConfigHome, "tackle", "settings.json") }},
	{ScopeProject, func(_ *Options, p string) string { return join(p, ".claude", "settings.json") }},
	{ScopeProject, func(_ *Options, p string) string { return join(p, ".tackle", "settings.json") }},
	{ScopeLocal, func(_ *Options, p string) string { return join(p, ".claude", "settings.local.json") }},
	{ScopeLocal, func(_ *Options, p string) string { return join(p, ".tackle", "settings.local.json") }},
	{ScopeManaged, func(o *Options, _ string) string { return o.ManagedPath }},
}

func join(base string, elem ...string) string {
	if base == "" {
		return ""
	}
	return filepath.Join(append([]string{base}, elem...)...)
}

// Settings is the merged view of every settings source for one project
// directory, as it applies: the project's files contribute what the
// workspace trust lets them (trustkeys.go). A *Settings returned by Load is
// shared: do not modify it.
type Settings struct {
	// Trusted is set when the project directory is trusted (Options.Trust).
	Trusted bool
	// Ignored lists what the settings files set that does not apply, one
	// line per file and setting ("3 allow rules in /p/.claude/settings.json"):
	// everything that widens while the project is untrusted, a
	// bypassPermissions mode the person has not consented to, and keys no
	// tool reads from the file they are in, whatever the trust ("mcpServers"
	// in a settings file other than tackle's; "trust" in a project's file):
	// their line says so and where the setting belongs.
	Ignored     []string
	Permissions Permissions
	// Raw holds the merged top-level keys (the highest source that has a key wins).
	Raw map[string]json.RawMessage
	// Layers are the parsed files that contributed, lowest precedence first,
	// for keys that merge in their own way (hooks, env).
	Layers []Layer

	root string // the project directory Load was given, absolute ("" for none)
	home string // Options.Home

	registry *pluginRegistry // Claude Code's installed plugins and marketplaces, as Load read them
	plugins  *pluginsMemo    // Plugins, computed once
}

// ProjectDir returns the project directory the settings were loaded for
// (absolute; "" when Load had none).
func (s *Settings) ProjectDir() string {
	if s == nil {
		return ""
	}
	return s.root
}

// Layer is the content of one settings file.
type Layer struct {
	Source Source
	Raw    map[string]json.RawMessage
}

// Permissions is the merged "permissions" block. Lists are concatenated
// across files (lowest precedence first, duplicates dropped); each scalar
// comes from the highest source that sets it.
type Permissions struct {
	DefaultMode           string
	AdditionalDirectories []string
	Allow, Ask, Deny      []string
	// AskTimeoutSeconds is how long an ask waits for an answer (0: not set).
	AskTimeoutSeconds            int
	DisableBypassPermissionsMode string
}

// Problem is a settings file that does not parse (or has a wrong type).
// The last good version of the file stays in force.
type Problem struct {
	Path         string
	Line, Column int
	Message      string
}

// Error returns "path:line:col: message".
func (p Problem) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", p.Path, p.Line, p.Column, p.Message)
}

// Source is one settings file.
type Source struct {
	// Scope is ScopeManaged, ScopeUser, ScopeProject or ScopeLocal.
	Scope string
	Path  string
}

// Options configures a Loader. A nil *Options means defaults.
type Options struct {
	// Home is the user's home directory (default os.UserHomeDir).
	Home string
	// ConfigHome is $XDG_CONFIG_HOME (default that variable, else Home/.config).
	ConfigHome string
	// ManagedPath is the managed settings file (default DefaultManagedPath).
	ManagedPath string
	// Logger receives parse problems and watch errors (default: none).
	Logger hclog.Logger
	// Trust is the workspace trust store: a project's files may widen what
	// tackle does only in a trusted project (nil: no project is trusted).
	// NewLoader points it at Home's Claude Code files (Trust.UseClaudeCode),
	// so Claude Code's trust dialog counts too unless trust.importClaude is
	// false in the user's settings.
	Trust *Trust
	// PluginsDir is Claude Code's plugins root, holding installed_plugins.json
	// and known_marketplaces.json (default PluginsRoot(Home)).
	PluginsDir string
}

// Loader reads and merges settings files and watches them. It is safe for
// concurrent use. It caches each file by path and re-reads a file only when
// it changed (stat or a watch event).
type Loader struct {
	opts    Options
	changes chan string
	ready   chan struct{}

	mu      sync.Mutex            // guards the fields below
	files   map[string]*fileEntry // by path
	gen     uint64                // bumped whenever a file's content or problem changes
	merged  map[string]*mergedEntry
	dirs    map[string]bool         // directories of every source consulted so far
	sources map[string]*loadSources // by project directory, bounded
	running bool
	addReq  chan chan struct{} // Load asks a running Run to watch new dirs; nil when not running
	done    chan struct{}      // closed when Run ends; nil when not running
}

type fileEntry struct {
	stamp   stamp
	fresh   bool // stamp was checked against the file since the last invalidation
	good    *parsed
	problem *Problem
	// empty is set while the file is empty: it contributes nothing, but
	// good is kept, so a file caught between truncate and write (or being
	// rewritten) does not lose its last good version.
	empty bool
	// rawOnly marks a file that is not a settings file (.mcp.json,
	// ~/.claude.json): only its top-level keys are decoded.
	rawOnly bool
}

type stamp struct {
	exists  bool
	modTime time.Time
	size    int64
	ino     uint64
	ctime   int64
	// errno is why a path that is there in some form could not be
	// statted (a symlink loop, a directory on the way that may not be
	// searched): it counts as existing, so that reading it reports the
	// problem instead of its rules silently going away.
	errno syscall.Errno
}

type parsed struct {
	raw   map[string]json.RawMessage
	perms filePermissions
}

type mergedEntry struct {
	gen      uint64
	trust    trustState
	settings *Settings
}

// filePermissions is the permissions block of one file. Scalars are
// pointers so "not set" differs from "set to the zero value".
type filePermissions struct {
	DefaultMode                  *string  `json:"defaultMode"`
	AdditionalDirectories        []string `json:"additionalDirectories"`
	Allow                        []string `json:"allow"`
	Ask                          []string `json:"ask"`
	Deny                         []string `json:"deny"`
	AskTimeoutSeconds            *int     `json:"askTimeoutSeconds"`
	DisableBypassPermissionsMode *string  `json:"disableBypassPermissionsMode"`
}

// NewLoader returns a loader. It starts nothing; see Run.
func NewLoader(opts *Options) *Loader {
	o := Options{}
	if opts != nil {
		o = *opts
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	if o.ConfigHome == "" {
		o.ConfigHome = os.Getenv("XDG_CONFIG_HOME")
	}
	if o.ConfigHome == "" {
		o.ConfigHome = join(o.Home, ".config")
	}
	if o.ManagedPath == "" {
		o.ManagedPath = DefaultManagedPath
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.PluginsDir == "" {
		o.PluginsDir = PluginsRoot(o.Home)
	}
	if o.Trust != nil {
		o.Trust.UseClaudeCode(o.Home, o.ManagedPath)
	}
	return &Loader{
		opts:    o,
		changes: make(chan string, 64),
		ready:   make(chan struct{}),
		files:   map[string]*fileEntry{},
		merged:  map[string]*mergedEntry{},
		dirs:    map[string]bool{},
		sources: map[string]*loadSources{},
	}
}

// Sources returns THE settings source list for projectDir, lowest
// precedence first (user, project, local, managed; within a scope Claude
// Code's file before tackle's own). An empty projectDir gives no project or
// local sources. A path listed twice (a project in the home directory) is
// kept once, at its higher position.
func (l *Loader) Sources(projectDir string) []Source {
	if projectDir != "" {
		if abs, err := filepath.Abs(projectDir); err == nil {
			projectDir = abs
		}
	}
	var out []Source
	for _, s := range sources {
		p := s.path(&l.opts, projectDir)
		if p == "" {
			continue
		}
		for i := 0; i < len(out); i++ {
			if out[i].Path == p {
				out = append(out[:i], out[i+1:]...)
				i--
			}
		}
		out = append(out, Source{Scope: s.scope, Path: p})
	}
	return out
}

// Load returns the merged settings for projectDir and the problems of the
// files that do not parse; for those, the last good version (if any) stays
// in force. A missing file contributes nothing. Load is cheap when no file
// changed: it returns the same *Settings.
func (l *Loader) Load(projectDir string) (*Settings, []Problem) {
	// The trust store reads the user and managed settings files too (for
	// trust.importClaude): one stat of each serves both.
	memo := memos.Get().(*statMemo)
	defer func() {
		*memo = statMemo{}
		memos.Put(memo)
	}()
	var ts trustState
	if l.opts.Trust != nil && projectDir != "" {
		by, _, bypass := l.opts.Trust.lookupWith(projectDir, memo)
		ts = trustState{trusted: by != "", bypass: bypass}
	}
	l.mu.Lock()
	ls := l.sourcesLocked(projectDir)
	srcs := ls.srcs
	newDirs := false
	if !ls.watched {
		for _, s := range srcs {
			newDirs = l.watchDirLocked(s.Path) || newDirs
		}
		ls.watched = true
	}
	for _, s := range srcs {
		l.refreshLockedWith(s.Path, memo)
	}
	reg, regDirs := l.refreshPluginRegistryLocked(memo)
	newDirs = regDirs || newDirs
	mcpPath := ""
	if !ts.trusted && projectDir != "" {
		// An untrusted project's .mcp.json servers are listed as ignored.
		mcpPath = join(ls.root, MCPProjectFile)
		newDirs = l.watchDirLocked(mcpPath) || newDirs
		if l.files[mcpPath] == nil {
			l.files[mcpPath] = &fileEntry{rawOnly: true}
		}
		l.refreshLockedWith(mcpPath, memo)
	}
	var problems []Problem
	for _, s := range srcs {
		if p := l.files[s.Path].problem; p != nil {
			problems = append(problems, *p)
		}
	}
	m := l.merged[ls.key]
	if m == nil || m.gen != l.gen || m.trust != ts {
		st := l.mergeLocked(srcs, ts, ls.root, mcpPath)
		st.registry, st.plugins = reg, &pluginsMemo{}
		m = &mergedEntry{gen: l.gen, trust: ts, settings: st}
		l.merged[ls.key] = m
	}
	addReq, done := l.addReq, l.done
	l.mu.Unlock()

	if newDirs {
		syncWatch(addReq, done)
	}
	return m.settings, problems
}

// watchDirLocked adds the directory of the file path to the directories
// Run watches and reports whether it is new.
func (l *Loader) watchDirLocked(path string) bool {
	d := filepath.Dir(path)
	if l.dirs[d] {
		return false
	}
	l.dirs[d] = true
	return true
}

// syncWatch lets a running Run (addReq and done as read under l.mu; nil
// when Run is not running) pick up new directories before returning, so a
// change right after a read is seen. Call it without l.mu held.
func syncWatch(addReq chan chan struct{}, done chan struct{}) {
	if addReq == nil {
		return
	}
	ack := make(chan struct{})
	select {
	case addReq <- ack:
		select {
		case <-ack:
		case <-done:
		}
	case <-done:
	}
}

// loadSources is the source list of one project directory, as Load uses it.
type loadSources struct {
	root    string // the project directory, absolute ("" for none)
	srcs    []Source
	key     string // the paths joined: the key of merged
	watched bool   // their directories were added to dirs
}

// sourcesLocked returns the (cached) source list of projectDir: it depends
// only on the directory and the options, and Load runs at every turn.
func (l *Loader) sourcesLocked(projectDir string) *loadSources {
	if ls := l.sources[projectDir]; ls != nil {
		return ls
	}
	if len(l.sources) >= 1024 {
		clear(l.sources)
	}
	ls := &loadSources{srcs: l.Sources(projectDir)}
	if projectDir != "" {
		ls.root, _ = filepath.Abs(projectDir)
	}
	for _, s := range ls.srcs {
		ls.key += s.Path + "\x00"
	}
	l.sources[projectDir] = ls
	return ls
}

// refreshLocked brings the cache entry of path up to date with the file.
func (l *Loader) refreshLocked(path string) { l.refreshLockedWith(path, nil) }

// refreshLockedWith is refreshLocked with the stats of memo (nil: none).
func (l *Loader) refreshLockedWith(path string, memo *statMemo) {
	e := l.files[path]
	if e == nil {
		e = &fileEntry{}
		l.files[path] = e
	}
	st := memo.stat(path)
	if e.fresh && st == e.stamp {
		return
	}
	e.fresh = true
	e.stamp = st
	oldGood, oldProblem, oldEmpty := e.good, e.problem, e.empty
	e.empty = false
	if !st.exists {
		e.good, e.problem = nil, nil
	} else if data, err := readConfigFile(path); err != nil {
		e.problem = &Problem{Path: path, Message: "cannot be read: " + readReason(err)}
	} else if data = bytes.TrimPrefix(data, utf8BOM); len(bytes.TrimSpace(data)) == 0 {
		e.empty, e.problem = true, nil
	} else if p, prob := parseFile(path, data, e.rawOnly); prob != nil {
		if e.good != nil {
			prob.Message += " (the last good version stays in force)"
		}
		e.problem = prob
		l.opts.Logger.Warn("settings file does not parse", "problem", prob.Error())
	} else {
		e.good, e.problem = p, nil
	}
	if e.good != oldGood || e.empty != oldEmpty || !sameProblem(e.problem, oldProblem) {
		l.gen++
	}
}

func sameProblem(a, b *Problem) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// utf8BOM starts a file some Windows editors save: not JSON, and skipped,
// as SKILL.md files skip it.
var utf8BOM = []byte("\xef\xbb\xbf")

// statMemo holds the stats of one Load, so that a file two of its readers
// look at (the trust store and the loader) is statted once, and asks the
// gate for them: its first stat syncs the gate, so every change made
// before that is seen. A nil *statMemo stats every time. It is not safe
// for concurrent use.
type statMemo struct {
	synced bool
	paths  []string
	stamps []stamp
	// The first stats of a Load are kept here (a Load stats about a
	// dozen files), not in slices that grow.
	pathBuf  [16]string
	stampBuf [16]stamp
}

// memos are Load's statMemos, reused (one is about 1 KB, and Load runs at
// every turn); nothing keeps one past its Load.
var memos = sync.Pool{New: func() any { return new(statMemo) }}

// stat returns the stamp of path, statting it the first time.
func (m *statMemo) stat(path string) stamp {
	if m == nil {
		return statFile(path)
	}
	for i, p := range m.paths {
		if p == path {
			return m.stamps[i]
		}
	}
	g := gate()
	if !m.synced {
		g.sync()
		m.synced = true
	}
	st := g.stat(path)
	if m.paths == nil {
		m.paths, m.stamps = m.pathBuf[:0], m.stampBuf[:0]
	}
	m.paths = append(m.paths, path)
	m.stamps = append(m.stamps, st)
	return st
}

// statFile is os.Stat's stamp of path, without its allocations (a stat
// per settings file per turn: this is on every tool call's path).
func statFile(path string) stamp {
	var sys syscall.Stat_t
	for {
		err := syscall.Stat(path, &sys)
		if err == nil {
			break
		}
		switch errno, _ := err.(syscall.Errno); errno {
		case syscall.EINTR:
			continue
		case syscall.ENOENT, syscall.ENOTDIR:
			return stamp{}
		default:
			return stamp{exists: true, errno: errno}
		}
	}
	return stamp{exists: true, modTime: time.Unix(sys.Mtim.Unix()), size: sys.Size, ino: sys.Ino, ctime: sys.Ctim.Nano()}
}

// parseFile decodes one file: a settings file, or with rawOnly any JSON
// object whose top-level keys are all that is needed.
func parseFile(path string, data []byte, rawOnly bool) (*parsed, *Problem) {
	if !rawOnly {
		return parse(path, data)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, problemOf(path, data, err)
	}
	if raw == nil {
		raw = map[string]json.RawMessage{}
	}
	return &parsed{raw: raw}, nil
}

// parse decodes one settings file.
func parse(path string, data []byte) (*parsed, *Problem) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, problemOf(path, data, err)
	}
	if raw == nil { // the file is "null"
		raw = map[string]json.RawMessage{}
	}
	p := &parsed{raw: raw}
	if prob := decodePermissions(path, data, raw["permissions"], &p.perms); prob != nil {
		return nil, prob
	}
	return p, nil
}

// decodePermissions reads the permissions block v (raw["permissions"] of
// the file data) into out, by exact key and the last of a repeated key, as
// the raw map and applyTrust read it. encoding/json's struct decoding
// matches keys regardless of case (Unicode folding included) and merges a
// repeated key: "DefaultMode", "Permissions" or a second "permissions"
// would then reach the permissions in force without passing applyTrust,
// which looks at the exact keys. A value of the wrong type is a problem at
// its key.
func decodePermissions(path string, data []byte, v json.RawMessage, out *filePermissions) *Problem {
	if v == nil || string(v) == "null" {
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil {
		p := &Problem{Path: path, Message: fmt.Sprintf("permissions: expected an object, found %s", jsonKind(v))}
		if off := memberOffset(data, 0, "permissions"); off >= 0 {
			p.Line, p.Column = lineCol(data, int(off))
		}
		return p
	}
	fields := []struct {
		key string
		dst any
	}{
		{"defaultMode", &out.DefaultMode},
		{"additionalDirectories", &out.AdditionalDirectories},
		{"allow", &out.Allow},
		{"ask", &out.Ask},
		{"deny", &out.Deny},
		{"askTimeoutSeconds", &out.AskTimeoutSeconds},
		{"disableBypassPermissionsMode", &out.DisableBypassPermissionsMode},
	}
	for _, f := range fields {
		raw, ok := m[f.key]
		if !ok {
			continue
		}
		if err := json.Unmarshal(raw, f.dst); err != nil {
			msg := err.Error()
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				msg = fmt.Sprintf("permissions.%s: expected %s, found a JSON %s", f.key, te.Type, te.Value)
			}
			p := &Problem{Path: path, Message: msg}
			if off := memberOffset(data, memberOffset(data, 0, "permissions"), f.key); off >= 0 {
				p.Line, p.Column = lineCol(data, int(off))
			}
			return p
		}
	}
	// A negative timeout is no timeout anyone means: refused like a wrong
	// type rather than read silently as the default.
	if v := out.AskTimeoutSeconds; v != nil && *v < 0 {
		p := &Problem{Path: path, Message: fmt.Sprintf("permissions.askTimeoutSeconds: expected the seconds an ask waits for an answer (0 or more), found %d", *v)}
		if off := memberOffset(data, memberOffset(data, 0, "permissions"), "askTimeoutSeconds"); off >= 0 {
			p.Line, p.Column = lineCol(data, int(off))
		}
		return p
	}
	return nil
}

// memberOffset returns the offset in data of the value of the last member
// named key (exactly) of the object that starts at offset start, or -1
// (also for a negative start, or when data there is not an object).
func memberOffset(data []byte, start int64, key string) int64 {
	if start < 0 || start >= int64(len(data)) {
		return -1
	}
	dec := json.NewDecoder(bytes.NewReader(data[start:]))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return -1
	}
	found := int64(-1)
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return found
		}
		k, _ := t.(string)
		var v json.RawMessage
		at := dec.InputOffset()
		if err := dec.Decode(&v); err != nil {
			return found
		}
		if k == key {
			// InputOffset is just after the key; the value starts after
			// the colon and any space.
			off := start + at
			for off < int64(len(data)) && (data[off] == ':' || data[off] == ' ' || data[off] == '\t' || data[off] == '\n' || data[off] == '\r') {
				off++
			}
			found = off
		}
	}
	return found
}

// problemOf turns a decoding error into a Problem with a 1-based line and
// column (in bytes).
func problemOf(path string, data []byte, err error) *Problem {
	var (
		off int64 = -1
		msg       = err.Error()
		se  *json.SyntaxError
		te  *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &se):
		off = se.Offset - 1 // Offset is just after the offending byte
		if se.Offset >= int64(len(data)) {
			off = int64(len(data)) // unexpected end: point after the last byte
		}
		if off < 0 {
			off = 0
		}
	case errors.As(err, &te):
		off = tokenStart(data, te.Offset)
		if te.Field != "" {
			msg = fmt.Sprintf("%s: expected %s, found a JSON %s", te.Field, te.Type, te.Value)
		} else {
			msg = fmt.Sprintf("settings must be a JSON object, found a JSON %s", te.Value)
		}
	}
	p := &Problem{Path: path, Message: msg}
	if off >= 0 {
		p.Line, p.Column = lineCol(data, int(off))
	}
	return p
}

// tokenStart returns the offset where the JSON token ending at end starts
// (a type error's Offset is just after the value, or after the opening
// delimiter of an object or array). If no token ends there, end is returned.
func tokenStart(data []byte, end int64) int64 {
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		before := dec.InputOffset()
		if _, err := dec.Token(); err != nil {
			return end
		}
		after := dec.InputOffset()
		if after == end {
			start := before
			for start < after && bytes.IndexByte([]byte(" \t\r\n:,"), data[start]) >= 0 {
				start++
			}
			return start
		}
		if after > end {
			return end
		}
	}
}

// lineCol returns the 1-based line and column of byte offset off.
func lineCol(data []byte, off int) (line, col int) {
	if off > len(data) {
		off = len(data)
	}
	before := data[:off]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// mergeLocked merges the cached files of srcs (lowest precedence first),
// the project's files as the trust ts of projectDir lets them apply; the
// servers of the project's .mcp.json at mcpPath (if set) are listed as
// ignored.
func (l *Loader) mergeLocked(srcs []Source, ts trustState, projectDir, mcpPath string) *Settings {
	s := &Settings{Raw: map[string]json.RawMessage{}, Trusted: ts.trusted, root: projectDir, home: l.opts.Home}
	consent := ts.bypass || l.consentedLocked(srcs)
	seen := map[*[]string]map[string]bool{}
	add := func(dst *[]string, src []string) {
		if seen[dst] == nil {
			seen[dst] = map[string]bool{}
		}
		for _, v := range src {
			if !seen[dst][v] {
				seen[dst][v] = true
				*dst = append(*dst, v)
			}
		}
	}
	p := &s.Permissions
	for _, src := range srcs {
		e := l.files[src.Path]
		f := e.good
		if f == nil || e.empty {
			continue
		}
		// Keys no tool reads from this file are reported as such, not as
		// waiting for trust.
		for _, k := range l.unreadKeys(src, projectDir) {
			if raw, ok := f.raw[k.key]; ok {
				s.Ignored = append(s.Ignored, k.line(src.Path, raw))
				f = withoutKey(f, k.key)
			}
		}
		if workspaceFile(src.Scope) {
			var ignored []string
			f, ignored = applyTrust(src, f, ts, consent, projectDir)
			s.Ignored = append(s.Ignored, ignored...)
		}
		s.Layers = append(s.Layers, Layer{Source: src, Raw: f.raw})
		for k, v := range f.raw {
			s.Raw[k] = v
		}
		fp := f.perms
		add(&p.Allow, fp.Allow)
		add(&p.Ask, fp.Ask)
		add(&p.Deny, fp.Deny)
		add(&p.AdditionalDirectories, fp.AdditionalDirectories)
		if fp.DefaultMode != nil {
			p.DefaultMode = *fp.DefaultMode
		}
		if fp.AskTimeoutSeconds != nil {
			p.AskTimeoutSeconds = *fp.AskTimeoutSeconds
		}
		if fp.DisableBypassPermissionsMode != nil {
			p.DisableBypassPermissionsMode = *fp.DisableBypassPermissionsMode
		}
	}
	if e := l.files[mcpPath]; mcpPath != "" && e != nil && e.good != nil && !e.empty {
		if raw, ok := e.good.raw["mcpServers"]; ok {
			s.Ignored = append(s.Ignored, describeKey("mcpServers", raw)+" in "+mcpPath)
		}
	}
	return s
}

// invalidate forces the next look at path to re-read it, re-reads it now
// and reports whether it is a known source file.
func (l *Loader) invalidate(path string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.files[path]
	if !ok {
		return false
	}
	e.fresh = false
	l.refreshLocked(path)
	return true
}

// Changes returns the paths of settings files that changed while Run
// watches. It is buffered; a reader that falls behind misses paths (call
// Load to see the current state). It is closed when Run returns.
func (l *Loader) Changes() <-chan string { return l.changes }

// Ready is closed once Run watches the directories of the sources loaded
// before it started.
func (l *Loader) Ready() <-chan struct{} { return l.ready }

func (l *Loader) emit(path string) {
	select {
	case l.changes <- path:
	default:
	}
}

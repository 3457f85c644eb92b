package agentdef

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/internal/safefile"
)

// Limits of the walk of one agents directory: far above any real tree
// (Claude Code users keep tens of agents, in a level or two of folders),
// low enough that a planted tree cannot make every Load slow.
const (
	// MaxDepth is how many levels of subdirectories below an agents
	// directory are read.
	MaxDepth = 8
	// MaxFiles is how many .md files of one agents directory are read.
	MaxFiles = 1000
)

// untrusted is the reason for what an untrusted project may not set.
const untrusted = "ignored: the project is not trusted (tackle trust)"

// Sources says where one session's agents come from. Empty fields are
// skipped.
type Sources struct {
	// Root is the session's project root; Cwd its current directory.
	// Project agents are read from Cwd up to the repository root (the
	// nearest directory holding .git, else Root).
	Root, Cwd string
	// AdditionalDirs are the session's additional working directories:
	// their .tackle/agents and .claude/agents hold "additional" agents.
	AdditionalDirs []string
	// ConfigHome ($XDG_CONFIG_HOME) holds tackle/agents and Home holds
	// .claude/agents: "user" agents.
	ConfigHome, Home string
	// ManagedDir is a directory of managed agents (such as
	// /etc/tackle/agents), above all others.
	ManagedDir string
	// Plugins are the session's plugins (config.Settings.Plugins): the
	// agents of their Agents paths (files, or directories read as agents
	// directories are) are named "plugin:name", plugin being Plugin.Name,
	// and get ${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_PLUGIN_DATA} in their
	// prompt replaced by its directory and its data directory.
	Plugins []config.Plugin
	// Trusted is set when the project is trusted. It covers the additional
	// directories too: pass false unless every one of them is trusted.
	Trusted bool
}

// Options configures a Catalog. A nil *Options means the defaults.
type Options struct {
	// Logger receives debug messages (default: none).
	Logger hclog.Logger
	// Builtins are the built-in agents, the lowest of all sources
	// (default: Builtins(); a non-nil empty slice for none).
	Builtins []*Definition
}

// Catalog discovers agent definitions and caches parsed files
// daemon-wide, by path, modification time and size: every Load looks at
// every directory and file again, and parses only the files that
// changed. It is safe for concurrent use.
type Catalog struct {
	log      hclog.Logger
	builtins []*Definition

	mu    sync.Mutex // guards cache and the memo fields of its entries
	cache map[string]*cacheEntry
}

// cacheEntry is one parsed file, and the definition last made of it for
// a source (memo), so that an unchanged file gives the same *Definition.
type cacheEntry struct {
	mod    time.Time
	size   int64
	plugin bool
	def    *Definition // nil when the file did not load
	probs  []Problem

	memoKey   string
	memo      *Definition
	memoProbs []Problem
}

// NewCatalog returns an empty catalog.
func NewCatalog(opts *Options) *Catalog {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.Builtins == nil {
		o.Builtins = Builtins()
	}
	return &Catalog{log: o.Logger, builtins: o.Builtins, cache: map[string]*cacheEntry{}}
}

// Set is the result of a discovery. It is not modified after Load returns.
type Set struct {
	// Agents are the winners, sorted by name.
	Agents []*Definition
	// Problems are the directories that could not be read, then the files
	// that did not load and the fields that were ignored, in priority
	// order of their files.
	Problems []Problem
	// Shadowed are definitions that lost to another of the same name, in
	// priority order.
	Shadowed []*Definition
	// Dirs are the agents directories looked at, highest priority first,
	// whether or not they exist (what a watcher would watch).
	Dirs []string
	// Signature changes whenever a directory or file read changes (a file
	// added, removed, modified, a directory created), or the trust does:
	// the daemon compares it to know the list of agents changed.
	Signature string
}

// Lookup returns the agent named name.
func (s *Set) Lookup(name string) (*Definition, bool) {
	i := sort.Search(len(s.Agents), func(i int) bool { return s.Agents[i].Name >= name })
	if i < len(s.Agents) && s.Agents[i].Name == name {
		return s.Agents[i], true
	}
	return nil, false
}

// agentsDir is one directory to read, in priority order.
type agentsDir struct {
	dir    string
	source string
	plugin string // the plugin's name, for plugin directories
	root   string // the plugin's directory, for plugin directories
	data   string // the plugin's data directory, for plugin directories
}

// AgentsDirs returns the agents directories of src, highest priority
// first (agent.md section 5): the managed directory; .tackle/agents and
// .claude/agents of each project directory (ProjectDirs, nearest first);
// those of the additional directories; $ConfigHome/tackle/agents and
// $Home/.claude/agents; each plugin's agents. A project directory's
// agents directory that is also the user's (a home directory inside the
// project walk) is read as the user's, at its place.
func AgentsDirs(src Sources) []string {
	var out []string
	for _, d := range agentsDirs(src) {
		out = append(out, d.dir)
	}
	return out
}

func agentsDirs(src Sources) []agentsDir {
	var dirs []agentsDir
	seen := map[string]bool{}
	add := func(dir, source, plugin string) {
		dir = filepath.Clean(dir)
		if !seen[dir] {
			seen[dir] = true
			dirs = append(dirs, agentsDir{dir: dir, source: source, plugin: plugin})
		}
	}
	addPlugin := func(path string, p config.Plugin) {
		path = filepath.Clean(path)
		if !seen[path] {
			seen[path] = true
			dirs = append(dirs, agentsDir{dir: path, source: SourcePlugin, plugin: p.Name, root: p.Dir, data: p.DataDir})
		}
	}
	// The managed and user directories keep their own place, even when the
	// project walk passes through them.
	var managed, user []string
	if src.ManagedDir != "" {
		managed = append(managed, filepath.Clean(src.ManagedDir))
	}
	if src.ConfigHome != "" {
		user = append(user, filepath.Join(src.ConfigHome, "tackle", "agents"))
	}
	if src.Home != "" {
		user = append(user, filepath.Join(src.Home, ".claude", "agents"))
	}
	for _, d := range managed {
		add(d, SourceManaged, "")
	}
	var users []string
	for _, d := range user {
		if !seen[d] {
			seen[d] = true
			users = append(users, d)
		}
	}
	for _, d := range ProjectDirs(src) {
		add(filepath.Join(d, ".tackle", "agents"), SourceProject, "")
		add(filepath.Join(d, ".claude", "agents"), SourceProject, "")
	}
	for _, d := range src.AdditionalDirs {
		if d == "" {
			continue
		}
		add(filepath.Join(d, ".tackle", "agents"), SourceAdditional, "")
		add(filepath.Join(d, ".claude", "agents"), SourceAdditional, "")
	}
	for _, d := range users {
		dirs = append(dirs, agentsDir{dir: d, source: SourceUser})
	}
	for _, p := range src.Plugins {
		if p.Name == "" {
			continue
		}
		for _, a := range p.Agents {
			addPlugin(a, p)
		}
	}
	return dirs
}

// ProjectDirs are the directories whose .tackle/agents and .claude/agents
// hold project agents: src.Cwd (else src.Root) and its parents up to the
// repository root — the nearest one holding .git (a directory, or a
// worktree's file) — or, outside a repository, up to src.Root when Root
// holds Cwd. Nearest first.
func ProjectDirs(src Sources) []string {
	start := src.Cwd
	if start == "" {
		start = src.Root
	}
	if start == "" {
		return nil
	}
	start = filepath.Clean(start)
	var dirs []string
	for d := start; ; {
		dirs = append(dirs, d)
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return dirs
		}
		parent := filepath.Dir(d)
		if parent == d {
			break
		}
		d = parent
	}
	if src.Root != "" {
		root := filepath.Clean(src.Root)
		for i, d := range dirs {
			if d == root {
				return dirs[:i+1]
			}
		}
	}
	return dirs[:1]
}

// candidate is one file to read, in priority order.
type candidate struct {
	path   string
	dir    int    // index of its agents directory
	source string // a Source constant
	prefix string // "plugin:sub:" for a plugin's file
	root   string // the plugin's directory, for a plugin's file
	data   string // the plugin's data directory, for a plugin's file
	info   fs.FileInfo
	prob   *Problem // set when the file cannot even be looked at
	entry  *cacheEntry
}

// scan is what one look at the directories found.
type scan struct {
	dirs  []agentsDir
	state []string // per directory: "" when read, else why not
	cands []candidate
	probs []Problem // of directories, in order
}

// scan walks every agents directory of src, stat-ing each file.
func scanSources(src Sources) *scan {
	sc := &scan{dirs: agentsDirs(src)}
	sc.state = make([]string, len(sc.dirs))
	for i, d := range sc.dirs {
		sc.walkRoot(i, d)
	}
	return sc
}

// walkRoot reads one agents directory and its subdirectories. It never
// opens what is not a directory, so a FIFO planted as .claude/agents
// cannot block it.
func (sc *scan) walkRoot(i int, d agentsDir) {
	fi, err := os.Stat(d.dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		sc.state[i] = "absent"
		return
	case err != nil:
		sc.state[i] = err.Error()
		sc.probs = append(sc.probs, Problem{Path: d.dir, Message: "reading the agents directory: " + unwrapPath(err).Error()})
		return
	case !fi.IsDir() && d.plugin != "" && fi.Mode().IsRegular():
		// A plugin's manifest may name agent files.
		if strings.EqualFold(filepath.Ext(d.dir), ".md") {
			sc.cands = append(sc.cands, candidate{path: d.dir, dir: i, source: d.source, prefix: d.plugin + ":", root: d.root, data: d.data, info: fi})
		}
		return
	case !fi.IsDir():
		sc.state[i] = "not a directory"
		sc.probs = append(sc.probs, Problem{Path: d.dir, Message: "reading the agents directory: not a directory"})
		return
	}
	real, err := filepath.EvalSymlinks(d.dir)
	if err != nil {
		real = d.dir
	}
	w := &walker{sc: sc, root: i, d: d, visited: map[string]bool{real: true}}
	prefix := ""
	if d.plugin != "" {
		prefix = d.plugin + ":"
	}
	w.walk(d.dir, real, prefix, 0)
}

// walker walks one agents directory.
type walker struct {
	sc      *scan
	root    int
	d       agentsDir
	visited map[string]bool // real paths of the directories walked
	files   int
	capped  bool // MaxFiles reached (reported once)
	deep    bool // MaxDepth reached (reported once)
}

func (w *walker) walk(dir, real, prefix string, depth int) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		w.sc.probs = append(w.sc.probs, Problem{Path: dir, Message: "reading the agents directory: " + unwrapPath(err).Error()})
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue // hidden, like .git and editors' files
		}
		p := filepath.Join(dir, name)
		isDir := e.IsDir()
		subReal := filepath.Join(real, name)
		if e.Type()&fs.ModeSymlink != 0 {
			if fi, err := os.Stat(p); err == nil && fi.IsDir() {
				isDir = true
				if r, err := filepath.EvalSymlinks(p); err == nil {
					subReal = r
				}
			}
		}
		if isDir {
			switch {
			case w.visited[subReal]:
				// a symlink back into the tree: already read
			case depth >= MaxDepth:
				if !w.deep {
					w.deep = true
					w.sc.probs = append(w.sc.probs, Problem{Path: p, Message: fmt.Sprintf("directories more than %d levels below %s are not read", MaxDepth, w.d.dir)})
				}
			default:
				w.visited[subReal] = true
				sub := prefix
				if w.d.plugin != "" {
					sub += name + ":"
				}
				w.walk(p, subReal, sub, depth+1)
			}
			continue
		}
		if !strings.EqualFold(filepath.Ext(name), ".md") {
			continue
		}
		if w.files >= MaxFiles {
			if !w.capped {
				w.capped = true
				w.sc.probs = append(w.sc.probs, Problem{Path: w.d.dir, Message: fmt.Sprintf("more than %d agent files: the rest, from %s on, are not read", MaxFiles, p)})
			}
			continue
		}
		w.files++
		cd := candidate{path: p, dir: w.root, source: w.d.source, prefix: prefix, root: w.d.root, data: w.d.data}
		fi, err := os.Stat(p) // what is not a regular file, safefile refuses
		switch {
		case err == nil:
			cd.info = fi
		case errors.Is(err, fs.ErrNotExist):
			target, _ := os.Readlink(p)
			cd.prob = &Problem{Path: p, Message: fmt.Sprintf("the agent file is a symlink to %q, which does not exist", target), Skipped: true}
		default:
			cd.prob = &Problem{Path: p, Message: "reading the file: " + unwrapPath(err).Error(), Skipped: true}
		}
		w.sc.cands = append(w.sc.cands, cd)
	}
}

// signature digests what the scan saw, and the trust.
func (sc *scan) signature(trusted bool) string {
	h := fnv.New64a()
	w := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(p))
			h.Write([]byte{0})
		}
	}
	w(strconv.FormatBool(trusted))
	for i, d := range sc.dirs {
		w("dir", d.dir, d.source, d.plugin, d.root, d.data, sc.state[i])
	}
	for _, p := range sc.probs {
		w("problem", p.Error())
	}
	for _, cd := range sc.cands {
		w("file", cd.path, cd.prefix)
		switch {
		case cd.prob != nil:
			w(cd.prob.Message)
		default:
			w(strconv.FormatInt(cd.info.ModTime().UnixNano(), 10), strconv.FormatInt(cd.info.Size(), 10), cd.info.Mode().String())
		}
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// Load discovers the agents of src: the files of every directory of
// AgentsDirs (each scanned recursively for *.md, hidden entries skipped,
// at most MaxDepth levels and MaxFiles files, symlinks followed but never
// round a loop), then the built-ins. For each name the first in that
// order wins; the others are Set.Shadowed, and two files of one agents
// directory with the same name are a Problem as well. Plugin agents are
// named "plugin:name" and do not get hooks, mcpServers, permissionMode or
// initialPrompt. When src.Trusted is false, project and additional agents
// lose their hooks, inline MCP servers and a permissionMode other than
// default or plan, each with a Problem.
//
// Every call looks at every file again and parses only those whose
// modification time or size changed, so edits show without a restart.
func (c *Catalog) Load(src Sources) *Set {
	sc := scanSources(src)
	c.parseAll(sc.cands)

	set := &Set{Signature: sc.signature(src.Trusted)}
	for _, d := range sc.dirs {
		set.Dirs = append(set.Dirs, d.dir)
	}
	set.Problems = append(set.Problems, sc.probs...)
	type winner struct {
		dir  int
		path string
	}
	won := map[string]winner{}
	for i := range sc.cands {
		cd := &sc.cands[i]
		if cd.prob != nil {
			set.Problems = append(set.Problems, *cd.prob)
			continue
		}
		def, probs := c.finish(cd, src.Trusted)
		set.Problems = append(set.Problems, probs...)
		if def == nil {
			continue
		}
		if w, dup := won[def.Name]; dup {
			set.Shadowed = append(set.Shadowed, def)
			if w.dir == cd.dir {
				at := def.pos["name"]
				set.Problems = append(set.Problems, Problem{Path: cd.path, Line: at.line, Column: at.col, Skipped: true,
					Message: fmt.Sprintf("agent %q is also defined by %s, which is used: give each file of an agents directory its own name", def.Name, w.path)})
			}
			continue
		}
		won[def.Name] = winner{dir: cd.dir, path: cd.path}
		set.Agents = append(set.Agents, def)
	}
	for _, def := range c.builtins {
		if _, dup := won[def.Name]; dup {
			set.Shadowed = append(set.Shadowed, def)
			continue
		}
		won[def.Name] = winner{dir: -1}
		set.Agents = append(set.Agents, def)
	}
	sort.Slice(set.Agents, func(i, j int) bool { return set.Agents[i].Name < set.Agents[j].Name })
	c.prune(sc)
	return set
}

// Changed reports whether a Load of src now would differ from set: it
// looks at the directories and files again, reading and parsing none.
func (c *Catalog) Changed(src Sources, set *Set) bool {
	return set == nil || scanSources(src).signature(src.Trusted) != set.Signature
}

// parseAll gives every candidate its cache entry, parsing the files that
// are new or changed.
func (c *Catalog) parseAll(cands []candidate) {
	var todo []int
	c.mu.Lock()
	for i := range cands {
		cd := &cands[i]
		if cd.prob != nil {
			continue
		}
		if e, ok := c.cache[cd.path]; ok && e.mod.Equal(cd.info.ModTime()) && e.size == cd.info.Size() && e.plugin == (cd.source == SourcePlugin) {
			cd.entry = e
			continue
		}
		todo = append(todo, i)
	}
	c.mu.Unlock()
	for _, i := range todo {
		c.parseOne(&cands[i])
	}
}

// parseOne reads and parses one candidate's file and caches the result.
// The file is read with safefile: one that is not a regular file (a FIFO,
// a symlink to a device) or is over MaxFileSize is a Problem, found
// without blocking or reading it, and is not cached (it is tried again
// next time).
func (c *Catalog) parseOne(cd *candidate) {
	data, err := safefile.Read(cd.path, MaxFileSize)
	if err != nil {
		cd.prob = readProblem(cd.path, err)
		return
	}
	plugin := cd.source == SourcePlugin
	def, probs := parse(cd.path, data, plugin)
	for _, p := range probs {
		c.log.Debug("agent file problem", "problem", p.Error())
	}
	e := &cacheEntry{mod: cd.info.ModTime(), size: cd.info.Size(), plugin: plugin, def: def, probs: probs}
	c.mu.Lock()
	c.cache[cd.path] = e
	c.mu.Unlock()
	cd.entry = e
}

// readProblem is the Problem for a file safefile refused or could not
// read: "the agent file is a FIFO, not a regular file", "the agent file
// is 2 MiB, over the limit of 1 MiB", "reading the file: permission
// denied".
func readProblem(path string, err error) *Problem {
	reason := unwrapPath(err).Error()
	var se *safefile.Error
	if errors.As(err, &se) {
		reason = se.Reason
	}
	if errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, safefile.ErrTooLarge) {
		return &Problem{Path: path, Message: "the agent file " + reason, Skipped: true}
	}
	return &Problem{Path: path, Message: "reading the file: " + reason, Skipped: true}
}

// unwrapPath drops the path from a *fs.PathError (the Problem has it).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// finish makes the definition a candidate's file gives at its place: its
// name in the plugin's namespace, its source, and without what a plugin
// or an untrusted project may not set. The result is memoised in the
// cache entry, so an unchanged file yields the same *Definition.
func (c *Catalog) finish(cd *candidate, trusted bool) (*Definition, []Problem) {
	e := cd.entry
	if e.def == nil {
		return nil, e.probs
	}
	restricted := !trusted && (cd.source == SourceProject || cd.source == SourceAdditional)
	key := cd.source + "\x00" + cd.prefix + "\x00" + cd.root + "\x00" + cd.data + "\x00" + strconv.FormatBool(restricted)
	c.mu.Lock()
	if e.memoKey == key {
		def, probs := e.memo, e.memoProbs
		c.mu.Unlock()
		return def, probs
	}
	c.mu.Unlock()

	d := e.def.Clone()
	d.Name = cd.prefix + d.Name
	d.Source = cd.source
	probs := append([]Problem(nil), e.probs...)
	drop := func(key, format string, args ...any) {
		at := d.pos[key]
		probs = append(probs, Problem{Path: d.Path, Line: at.line, Column: at.col, Message: fmt.Sprintf(format, args...)})
	}
	switch {
	case cd.source == SourcePlugin:
		if cd.root != "" {
			d.Prompt = strings.ReplaceAll(d.Prompt, "${CLAUDE_PLUGIN_ROOT}", cd.root)
		}
		if cd.data != "" && strings.Contains(d.Prompt, "${CLAUDE_PLUGIN_DATA}") {
			// Made when named, as Claude Code makes it; a failure shows
			// when the agent uses it.
			_ = os.MkdirAll(cd.data, 0o755)
			d.Prompt = strings.ReplaceAll(d.Prompt, "${CLAUDE_PLUGIN_DATA}", cd.data)
		}
		const why = "ignored: plugin agents may not set it (copy the file to .claude/agents to use it)"
		if d.Hooks != nil {
			drop("hooks", "hooks: %s", why)
			d.Hooks = nil
		}
		if d.MCPServers != nil {
			drop("mcpServers", "mcpServers: %s", why)
			d.MCPServers, d.mcpPos = nil, nil
		}
		if d.PermissionMode != "" {
			drop("permissionMode", "permissionMode %q: %s", d.PermissionMode, why)
			d.PermissionMode = ""
		}
		if d.InitialPrompt != "" {
			drop("initialPrompt", "initialPrompt: %s", why)
			d.InitialPrompt = ""
		}
	case restricted:
		if d.Hooks != nil {
			drop("hooks", "hooks: %s", untrusted)
			d.Hooks = nil
		}
		if d.PermissionMode != "" && d.PermissionMode != PermissionDefault && d.PermissionMode != PermissionPlan {
			drop("permissionMode", "permissionMode %q: %s", d.PermissionMode, untrusted)
			d.PermissionMode = ""
		}
		var keep []MCPServer
		var keepPos []position
		for i, s := range d.MCPServers {
			if s.Inline() {
				at := d.mcpPos[i]
				probs = append(probs, Problem{Path: d.Path, Line: at.line, Column: at.col,
					Message: fmt.Sprintf("mcpServers: inline server %q: %s", s.Name, untrusted)})
				continue
			}
			keep = append(keep, s)
			keepPos = append(keepPos, d.mcpPos[i])
		}
		if len(keep) != len(d.MCPServers) {
			d.MCPServers, d.mcpPos = keep, keepPos
		}
	}
	// What was dropped is reported in the file's order.
	added := probs[len(e.probs):]
	sort.SliceStable(added, func(i, j int) bool {
		a, b := added[i], added[j]
		return a.Line < b.Line || a.Line == b.Line && a.Column < b.Column
	})
	c.mu.Lock()
	e.memoKey, e.memo, e.memoProbs = key, d, probs
	c.mu.Unlock()
	return d, probs
}

// prune forgets cached files below the directories of sc that sc no
// longer saw (deleted or renamed), so the cache does not grow with every
// file that ever existed.
func (c *Catalog) prune(sc *scan) {
	seen := make(map[string]bool, len(sc.cands))
	for _, cd := range sc.cands {
		seen[cd.path] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for p := range c.cache {
		if seen[p] {
			continue
		}
		for _, d := range sc.dirs {
			if strings.HasPrefix(p, d.dir+string(filepath.Separator)) {
				delete(c.cache, p)
				break
			}
		}
	}
}

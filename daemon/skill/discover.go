package skill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/internal/procs"
	"github.com/tackle-agent/tackle/internal/safefile"
)

// Sources says where one session's skills come from. Empty fields are
// skipped.
type Sources struct {
	// Root is the session's project root; Cwd its current directory. Project
	// skills are read from Cwd up to the repository root (the nearest
	// directory holding .git, else Root).
	Root, Cwd string
	// AdditionalDirs are the session's additional working directories: their
	// .tackle/skills and .claude/skills are "additional" skills.
	AdditionalDirs []string
	// ConfigHome ($XDG_CONFIG_HOME) holds tackle/skills and tackle/commands;
	// Home holds .claude/skills and .claude/commands: "user" skills.
	ConfigHome, Home string
	// ManagedDir is a directory of managed skills (such as /etc/tackle/skills).
	ManagedDir string
	// Plugins are the session's plugins (config.Settings.Plugins): the
	// skills of their Skills directories and the commands of their
	// Commands paths are named "plugin:name", plugin being Plugin.Name.
	Plugins []config.Plugin
}

// Options configures a Catalog. A nil *Options means the defaults.
type Options struct {
	// Logger receives debug messages (default: none).
	Logger hclog.Logger
	// Builtin holds the built-in skills as <name>/SKILL.md (default: the
	// skills embedded in this package).
	Builtin fs.FS
}

// Catalog discovers skills and caches parsed files daemon-wide, by path,
// modification time and size. It is safe for concurrent use.
type Catalog struct {
	log     hclog.Logger
	builtin fs.FS

	builtinOnce     sync.Once
	builtins        []*Skill // parsed built-ins, Source set
	builtinProblems []Problem

	mu    sync.Mutex // guards cache
	cache map[string]cacheEntry
}

type cacheEntry struct {
	mod      time.Time
	size     int64
	skill    *Skill
	problems []Problem
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
	if o.Builtin == nil {
		o.Builtin = Builtin()
	}
	return &Catalog{log: o.Logger, builtin: o.Builtin, cache: map[string]cacheEntry{}}
}

// Set is the result of a discovery.
type Set struct {
	// Skills are the winners, sorted by name.
	Skills []*Skill
	// Problems are the files that could not be read as skills (each hides
	// no other skill).
	Problems []Problem
	// Shadowed are skills that lost to another of the same name, in
	// precedence order.
	Shadowed []*Skill

	dirs map[string]bool // the skills directories read
}

// Lookup returns the skill named name.
func (s *Set) Lookup(name string) (*Skill, bool) {
	i := sort.Search(len(s.Skills), func(i int) bool { return s.Skills[i].Name >= name })
	if i < len(s.Skills) && s.Skills[i].Name == name {
		return s.Skills[i], true
	}
	return nil, false
}

// candidate is one file to read as a skill, in precedence order.
type candidate struct {
	path   string
	name   string // invocation name
	source string
	// alt is the name a nested command takes when name is taken
	// ("fe:component"); "" for the others.
	alt string
	// scope is what a nested command's description ends with, in
	// parentheses ("project:fe"); "" for the others.
	scope string
	// pluginRoot and pluginData are ${CLAUDE_PLUGIN_ROOT} and
	// ${CLAUDE_PLUGIN_DATA} for a plugin's skill.
	pluginRoot, pluginData string
	// labelled: the skill is named after its frontmatter name when it has
	// one (a plugin's skills path that is a skill directory itself).
	labelled bool
	info     fs.FileInfo
	prob     *Problem // set when the file cannot even be read
	skill    *Skill   // after parsing: the cached skill (shared)
	probs    []Problem
}

// scanner collects candidates, each skills or commands directory once.
type scanner struct {
	cands []candidate
	dirs  map[string]bool
	probs []Problem
}

// Static discovers the static skills of src, in this precedence for a name
// (reference.md section 6): managed, user (tackle's dir, then ~/.claude),
// project (nearest directory first; .tackle before .claude), additional
// directories, plugins (in their own "plugin:" namespace), built-in; then
// legacy command files (user, then project nearest first), which any skill
// of the same name beats. Losers are listed in Set.Shadowed.
//
// A command in a subdirectory of a commands directory is named after its
// file, as Claude Code names it: fe/component.md (at any depth: a/b/c.md is
// "c") is "component", and its description ends with "(project:fe)"
// ("(user:fe)" for a user command, "(project:a:b)" for a/b/c.md). The files
// of one commands directory are taken fewest directory levels first, then
// in byte order of their slash-separated path below it; when a nested
// command's name is already taken there or by anything earlier in
// precedence, it is named with its directories joined by ":" instead
// ("fe:component", "a:b:c") and carries a warning naming the other file;
// when that name is taken too, it is shadowed.
func (c *Catalog) Static(src Sources) *Set {
	sc := &scanner{dirs: map[string]bool{}}
	if src.ManagedDir != "" {
		sc.skillsDir(src.ManagedDir, SourceManaged, "")
	}
	if src.ConfigHome != "" {
		sc.skillsDir(filepath.Join(src.ConfigHome, "tackle", "skills"), SourceUser, "")
	}
	if src.Home != "" {
		sc.skillsDir(filepath.Join(src.Home, ".claude", "skills"), SourceUser, "")
	}
	project := ProjectDirs(src)
	for _, d := range project {
		sc.skillsDir(filepath.Join(d, ".tackle", "skills"), SourceProject, "")
		sc.skillsDir(filepath.Join(d, ".claude", "skills"), SourceProject, "")
	}
	for _, d := range src.AdditionalDirs {
		sc.skillsDir(filepath.Join(d, ".tackle", "skills"), SourceAdditional, "")
		sc.skillsDir(filepath.Join(d, ".claude", "skills"), SourceAdditional, "")
	}
	for _, p := range src.Plugins {
		sc.plugin(p)
	}
	c.loadBuiltins()
	for _, sk := range c.builtins {
		sc.cands = append(sc.cands, candidate{name: sk.Name, source: SourceBuiltin, skill: sk})
	}
	sc.probs = append(sc.probs, c.builtinProblems...)
	if src.ConfigHome != "" {
		sc.commandsDir(filepath.Join(src.ConfigHome, "tackle", "commands"), SourceCommand, "user", "")
	}
	if src.Home != "" {
		sc.commandsDir(filepath.Join(src.Home, ".claude", "commands"), SourceCommand, "user", "")
	}
	for _, d := range project {
		sc.commandsDir(filepath.Join(d, ".tackle", "commands"), SourceCommand, "project", "")
		sc.commandsDir(filepath.Join(d, ".claude", "commands"), SourceCommand, "project", "")
	}
	c.parseAll(sc.cands) // built-ins have no file info: already parsed

	set := &Set{dirs: sc.dirs}
	names := map[string]*Skill{} // the winner of each name
	set.Problems = append(set.Problems, sc.probs...)
	for i := range sc.cands {
		cd := &sc.cands[i]
		sk := cd.resolve(set)
		if sk == nil {
			continue
		}
		if winner, taken := names[sk.Name]; taken {
			if _, altTaken := names[cd.alt]; cd.alt == "" || altTaken {
				set.Shadowed = append(set.Shadowed, sk)
				continue
			}
			plain := sk.Name
			sk = sk.Clone()
			sk.Name = cd.alt
			sk.Warnings = append(sk.Warnings[:len(sk.Warnings):len(sk.Warnings)], fmt.Sprintf(
				"the command name %q is taken by %s: this command is named %q (rename the file to have both under plain names)",
				plain, describe(winner), cd.alt))
		}
		names[sk.Name] = sk
		set.Skills = append(set.Skills, sk)
	}
	sortSkills(set.Skills)
	return set
}

// resolve turns a parsed candidate into the skill it gives (a copy with the
// candidate's name and source), recording its problems in set.
func (cd *candidate) resolve(set *Set) *Skill {
	if cd.prob != nil {
		set.Problems = append(set.Problems, *cd.prob)
		return nil
	}
	set.Problems = append(set.Problems, cd.probs...)
	if cd.skill == nil {
		return nil
	}
	sk := cd.skill
	name := cd.name
	if cd.labelled && sk.Label != "" {
		if pre, _, ok := strings.Cut(cd.name, ":"); ok {
			name = pre + ":" + sk.Label
		}
	}
	if sk.Name != name || sk.Source != cd.source || cd.scope != "" || sk.PluginRoot != cd.pluginRoot || sk.PluginData != cd.pluginData {
		sk = sk.Clone()
		sk.Name, sk.Source, sk.PluginRoot, sk.PluginData = name, cd.source, cd.pluginRoot, cd.pluginData
		if cd.scope != "" {
			sk.Description = strings.TrimSpace(sk.Description + " (" + cd.scope + ")")
		}
	}
	return sk
}

// plugin adds a plugin's skills, then its commands, named "name:x" after
// the plugin's name. A skills path holding a SKILL.md itself is one skill,
// named after its frontmatter name, else the directory (as Claude Code
// names it); a commands path that is a file is one command.
func (sc *scanner) plugin(p config.Plugin) {
	prefix := p.Name + ":"
	from := len(sc.cands)
	for _, d := range p.Skills {
		d = filepath.Clean(d)
		if fi, err := os.Stat(filepath.Join(d, "SKILL.md")); err == nil && !fi.IsDir() {
			// A skill the plugin's skills/ already gave (a manifest listing
			// ./skills/x) is read once.
			path := filepath.Join(d, "SKILL.md")
			if !sc.dirs[d] && !slices.ContainsFunc(sc.cands[from:], func(c candidate) bool { return c.path == path }) {
				sc.cands = append(sc.cands, candidate{path: path, name: prefix + filepath.Base(d), source: SourcePlugin, labelled: true, info: fi})
			}
			sc.dirs[d] = true
			continue
		}
		sc.skillsDir(d, SourcePlugin, prefix)
	}
	for _, c := range p.Commands {
		c = filepath.Clean(c)
		fi, err := os.Stat(c)
		switch {
		case err == nil && !fi.IsDir():
			if sc.dirs[c] || !strings.HasSuffix(c, ".md") {
				continue
			}
			sc.dirs[c] = true
			sc.cands = append(sc.cands, candidate{path: c, name: prefix + strings.TrimSuffix(filepath.Base(c), ".md"), source: SourcePlugin, info: fi})
		case err == nil || errors.Is(err, fs.ErrNotExist):
			sc.commandsDir(c, SourcePlugin, "", prefix)
		default:
			sc.probs = append(sc.probs, Problem{Path: c, Message: fmt.Sprintf("reading the plugin's commands: %v", unwrapPath(err))})
		}
	}
	for i := from; i < len(sc.cands); i++ {
		sc.cands[i].pluginRoot, sc.cands[i].pluginData = p.Dir, p.DataDir
	}
}

// describe names a skill for a warning: "the project skill /p/SKILL.md",
// "the command /p/.claude/commands/fe/x.md", "the builtin skill x".
func describe(sk *Skill) string {
	what := "the " + sk.Source + " skill"
	if sk.Source == SourceCommand {
		what = "the command"
	}
	if sk.Path != "" {
		return what + " " + sk.Path
	}
	return what + " " + sk.Name
}

func sortSkills(s []*Skill) {
	sort.Slice(s, func(i, j int) bool { return s[i].Name < s[j].Name })
}

// ProjectDirs are the directories whose .tackle and .claude skills are
// project skills: src.Cwd (else src.Root) and its parents up to the
// repository root — the nearest one holding .git — or, outside a
// repository, up to src.Root when Root holds Cwd. Nearest first.
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
	// No repository: up to Root when it holds the start.
	root := filepath.Clean(src.Root)
	if src.Root == "" || !within(root, start) {
		return dirs[:1]
	}
	for i, d := range dirs {
		if d == root {
			return dirs[:i+1]
		}
	}
	return dirs[:1]
}

// within reports whether p is dir or below it (both clean).
func within(dir, p string) bool {
	if dir == p {
		return true
	}
	if dir == string(filepath.Separator) {
		return strings.HasPrefix(p, dir)
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// docFiles are file names (lower case, without .md) that are documentation
// of a skills directory, not a skill written as a flat file.
var docFiles = map[string]bool{"readme": true, "changelog": true, "changes": true, "license": true,
	"contributing": true, "notice": true, "agents": true, "claude": true}

// skillsDir adds the <name>/SKILL.md files of dir. A link in dir whose
// target does not exist, and a flat <name>.md file in dir (a skill is a
// directory holding SKILL.md; README.md and the like are not taken for
// skills), are Problems; neither loads, as in Claude Code.
func (sc *scanner) skillsDir(dir, source, prefix string) {
	dir = filepath.Clean(dir)
	if sc.dirs[dir] {
		return
	}
	sc.dirs[dir] = true
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sc.probs = append(sc.probs, Problem{Path: dir, Message: fmt.Sprintf("reading the skills directory: %v", unwrapPath(err))})
		}
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		isDir := e.IsDir()
		if e.Type()&fs.ModeSymlink != 0 {
			link := filepath.Join(dir, name)
			fi, err := os.Stat(link)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				target, _ := os.Readlink(link)
				sc.probs = append(sc.probs, Problem{Path: link, Message: fmt.Sprintf(
					"the skill is a symlink to %q, which does not exist: fix the link or remove it", target)})
				continue
			case err != nil:
				sc.probs = append(sc.probs, Problem{Path: link, Message: fmt.Sprintf("reading the skill directory: %v", unwrapPath(err))})
				continue
			}
			isDir = fi.IsDir()
		}
		if !isDir {
			if p := flatSkill(dir, name); p != nil {
				sc.probs = append(sc.probs, *p)
			}
			continue
		}
		p := filepath.Join(dir, name, "SKILL.md")
		cd := candidate{path: p, name: prefix + name, source: source}
		fi, err := os.Stat(p) // what is not a regular file, parseOne refuses
		switch {
		case err == nil:
			cd.info = fi
		case errors.Is(err, fs.ErrNotExist):
			if target, lerr := os.Readlink(p); lerr == nil {
				cd.prob = &Problem{Path: p, Message: fmt.Sprintf("SKILL.md is a symlink to %q, which does not exist", target)}
			} else if other := misnamed(filepath.Join(dir, name)); other != "" {
				cd.prob = &Problem{Path: filepath.Join(dir, name, other), Message: fmt.Sprintf("the skill file must be named SKILL.md, not %s", other)}
			} else {
				continue // a directory without a skill
			}
		default:
			cd.prob = &Problem{Path: p, Message: fmt.Sprintf("reading the file: %v", unwrapPath(err))}
		}
		sc.cands = append(sc.cands, cd)
	}
}

// flatSkill is the Problem for a file name.md directly in the skills
// directory dir, which Claude Code does not load: skills are directories
// holding SKILL.md. Files that are not .md and documentation (docFiles) are
// no problem (nil).
func flatSkill(dir, name string) *Problem {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if !strings.EqualFold(ext, ".md") || stem == "" || docFiles[strings.ToLower(stem)] {
		return nil
	}
	p := &Problem{Path: filepath.Join(dir, name)}
	if strings.EqualFold(stem, "SKILL") {
		p.Message = fmt.Sprintf("a SKILL.md directly in the skills directory is not loaded: a skill is a directory holding SKILL.md; move it to %s",
			filepath.Join(dir, "<skill-name>", "SKILL.md"))
	} else {
		p.Message = fmt.Sprintf("a flat .md file in the skills directory is not loaded: a skill is a directory holding SKILL.md; move it to %s",
			filepath.Join(dir, stem, "SKILL.md"))
	}
	return p
}

// misnamed returns the name of a file in dir spelled like SKILL.md in
// another case ("skill.md"), or "".
func misnamed(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if strings.EqualFold(e.Name(), "SKILL.md") {
			return e.Name()
		}
	}
	return ""
}

// commandsDir adds the *.md files of dir and of its subdirectories, at any
// depth, as legacy commands (named as Static says: "component" for
// fe/component.md with the alternative name "fe:component" and the scope
// "<scope>:fe", or "plugin:fe:component" for a plugin's, prefix being
// "plugin:"), fewest directory levels first, then in byte order of their
// slash-separated path below dir. Symlinked subdirectories are not
// followed.
func (sc *scanner) commandsDir(dir, source, scope, prefix string) {
	dir = filepath.Clean(dir)
	if sc.dirs[dir] {
		return
	}
	sc.dirs[dir] = true
	var cands []commandCand
	sc.commandFiles(dir, source, scope, prefix, nil, &cands)
	sort.SliceStable(cands, func(i, j int) bool {
		di, dj := strings.Count(cands[i].rel, "/"), strings.Count(cands[j].rel, "/")
		if di != dj {
			return di < dj
		}
		return cands[i].rel < cands[j].rel
	})
	for _, cd := range cands {
		sc.cands = append(sc.cands, cd.candidate)
	}
}

// commandCand is a command file with its path below the commands directory.
type commandCand struct {
	candidate
	rel string // slash-separated, below the commands directory
}

// commandFiles adds the command files of dir, ns being the directories
// from the commands directory down to dir.
func (sc *scanner) commandFiles(dir, source, scope, prefix string, ns []string, out *[]commandCand) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			sc.probs = append(sc.probs, Problem{Path: dir, Message: fmt.Sprintf("reading the commands directory: %v", unwrapPath(err))})
		}
		return
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") {
			continue
		}
		p := filepath.Join(dir, name)
		if e.IsDir() {
			sc.commandFiles(p, source, scope, prefix, append(ns[:len(ns):len(ns)], name), out)
			continue
		}
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		base := strings.TrimSuffix(name, ".md")
		cd := candidate{path: p, name: prefix + base, source: source}
		if len(ns) > 0 {
			path := strings.Join(ns, ":")
			if prefix != "" { // a plugin's commands are namespaced anyway
				cd.name = prefix + path + ":" + base
			} else {
				cd.alt = path + ":" + base
				cd.scope = scope + ":" + path
			}
		}
		fi, err := os.Stat(p) // what is not a regular file, parseOne refuses
		switch {
		case err == nil:
			cd.info = fi
		case errors.Is(err, fs.ErrNotExist):
			target, _ := os.Readlink(p)
			cd.prob = &Problem{Path: p, Message: fmt.Sprintf("the command file is a symlink to %q, which does not exist", target)}
		default:
			cd.prob = &Problem{Path: p, Message: fmt.Sprintf("reading the file: %v", unwrapPath(err))}
		}
		*out = append(*out, commandCand{candidate: cd, rel: strings.Join(append(ns[:len(ns):len(ns)], name), "/")})
	}
}

// readProblem is the Problem for a skill or command file safefile.Read
// refused or could not read: "SKILL.md is a FIFO, not a regular file",
// "the command file is 16 MiB, over the limit of 8 MiB", "reading the
// file: permission denied".
func readProblem(path string, err error) *Problem {
	reason := unwrapPath(err).Error()
	var se *safefile.Error
	if errors.As(err, &se) {
		reason = se.Reason
	}
	if !errors.Is(err, safefile.ErrNotRegular) && !errors.Is(err, safefile.ErrTooLarge) {
		return &Problem{Path: path, Message: "reading the file: " + reason}
	}
	what := "the command file"
	if filepath.Base(path) == "SKILL.md" {
		what = "SKILL.md"
	}
	return &Problem{Path: path, Message: what + " " + reason}
}

// unwrapPath drops the path from a *fs.PathError (the Problem has it).
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// parseAll fills in the skill (or problems) of every candidate with a file,
// from the cache when the file is unchanged, parsing the rest in parallel.
func (c *Catalog) parseAll(cands []candidate) {
	var todo []int
	c.mu.Lock()
	for i := range cands {
		cd := &cands[i]
		if cd.prob != nil || cd.info == nil {
			continue
		}
		if e, ok := c.cache[cd.path]; ok && e.mod.Equal(cd.info.ModTime()) && e.size == cd.info.Size() {
			cd.skill, cd.probs = e.skill, e.problems
			continue
		}
		todo = append(todo, i)
	}
	c.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	workers := min(procs.Width(), (len(todo)+15)/16)
	if workers <= 1 {
		for _, i := range todo {
			c.parseOne(&cands[i])
		}
		return
	}
	defer procs.Wide()()
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c.parseOne(&cands[i])
			}
		}()
	}
	for _, i := range todo {
		next <- i
	}
	close(next)
	wg.Wait()
}

// parseOne reads and parses one candidate's file and caches the result. The
// file is read with safefile: one that is not a regular file (a FIFO, a
// symlink to a device) or is over MaxFileSize is a Problem, found without
// blocking or reading it.
func (c *Catalog) parseOne(cd *candidate) {
	data, err := safefile.Read(cd.path, MaxFileSize)
	if err != nil {
		cd.prob = readProblem(cd.path, err)
		return // not cached: an unreadable file is tried again next time
	}
	cd.skill, cd.probs = Parse(cd.path, data)
	if cd.skill != nil {
		cd.skill.Name, cd.skill.Source = cd.name, cd.source
		for _, w := range cd.skill.Warnings {
			c.log.Debug("skill warning", "path", cd.path, "warning", w)
		}
	}
	c.mu.Lock()
	c.cache[cd.path] = cacheEntry{mod: cd.info.ModTime(), size: cd.info.Size(), skill: cd.skill, problems: cd.probs}
	c.mu.Unlock()
}

// loadBuiltins parses the built-in skills once.
func (c *Catalog) loadBuiltins() {
	c.builtinOnce.Do(func() {
		entries, err := fs.ReadDir(c.builtin, ".")
		if err != nil {
			c.builtinProblems = append(c.builtinProblems, Problem{Path: "builtin", Message: fmt.Sprintf("reading the built-in skills: %v", err)})
			return
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			p := path.Join(e.Name(), "SKILL.md")
			data, err := fs.ReadFile(c.builtin, p)
			if err != nil {
				c.builtinProblems = append(c.builtinProblems, Problem{Path: "builtin/" + p, Message: fmt.Sprintf("reading the file: %v", err)})
				continue
			}
			sk, probs := Parse("builtin/"+p, data)
			c.builtinProblems = append(c.builtinProblems, probs...)
			if sk == nil {
				continue
			}
			sk.Name, sk.Source, sk.Path, sk.Dir = e.Name(), SourceBuiltin, "", ""
			c.builtins = append(c.builtins, sk)
		}
	})
}

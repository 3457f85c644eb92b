package skill

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

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
	// Plugins are plugin directories holding skills/ and commands/; their
	// skills are named "plugin:name", plugin being the directory's base name.
	Plugins []string
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
	info   fs.FileInfo
	prob   *Problem // set when the file cannot even be read
	skill  *Skill   // after parsing: the cached skill (shared)
	probs  []Problem
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
		prefix := filepath.Base(filepath.Clean(p)) + ":"
		sc.skillsDir(filepath.Join(p, "skills"), SourcePlugin, prefix)
		sc.commandsDir(filepath.Join(p, "commands"), SourcePlugin, prefix)
	}
	c.loadBuiltins()
	for _, sk := range c.builtins {
		sc.cands = append(sc.cands, candidate{name: sk.Name, source: SourceBuiltin, skill: sk})
	}
	sc.probs = append(sc.probs, c.builtinProblems...)
	if src.ConfigHome != "" {
		sc.commandsDir(filepath.Join(src.ConfigHome, "tackle", "commands"), SourceCommand, "")
	}
	if src.Home != "" {
		sc.commandsDir(filepath.Join(src.Home, ".claude", "commands"), SourceCommand, "")
	}
	for _, d := range project {
		sc.commandsDir(filepath.Join(d, ".tackle", "commands"), SourceCommand, "")
		sc.commandsDir(filepath.Join(d, ".claude", "commands"), SourceCommand, "")
	}
	c.parseAll(sc.cands) // built-ins have no file info: already parsed

	set := &Set{dirs: sc.dirs}
	names := map[string]bool{}
	set.Problems = append(set.Problems, sc.probs...)
	for i := range sc.cands {
		cd := &sc.cands[i]
		sk := cd.resolve(set)
		if sk == nil {
			continue
		}
		if names[sk.Name] {
			set.Shadowed = append(set.Shadowed, sk)
			continue
		}
		names[sk.Name] = true
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
	if sk.Name != cd.name || sk.Source != cd.source {
		sk = sk.Clone()
		sk.Name, sk.Source = cd.name, cd.source
	}
	return sk
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

// skillsDir adds the <name>/SKILL.md files of dir.
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
		if strings.HasPrefix(name, ".") || !(e.IsDir() || e.Type()&fs.ModeSymlink != 0) {
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

// commandsDir adds the *.md files of dir (and of its subdirectories, named
// "sub:name") as legacy commands.
func (sc *scanner) commandsDir(dir, source, prefix string) {
	dir = filepath.Clean(dir)
	if sc.dirs[dir] {
		return
	}
	sc.dirs[dir] = true
	sc.commandFiles(dir, source, prefix, 0)
}

func (sc *scanner) commandFiles(dir, source, prefix string, depth int) {
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
			if depth == 0 {
				sc.commandFiles(p, source, prefix+name+":", depth+1)
			}
			continue
		}
		if !strings.HasSuffix(name, ".md") {
			continue
		}
		cd := candidate{path: p, name: prefix + strings.TrimSuffix(name, ".md"), source: source}
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
		sc.cands = append(sc.cands, cd)
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
	workers := min(runtime.GOMAXPROCS(0), (len(todo)+15)/16)
	if workers <= 1 {
		for _, i := range todo {
			c.parseOne(&cands[i])
		}
		return
	}
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

package sysprompt

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/internal/safefile"
)

// Scopes of a memory file, spelled as the settings scopes are.
const (
	// ScopeUser is the user's own file, for every project.
	ScopeUser = "user"
	// ScopeProject is a file of the project, checked in.
	ScopeProject = "project"
	// ScopeLocal is the user's private file for one project (CLAUDE.local.md).
	ScopeLocal = "local"
)

// DefaultBudget is how many characters the memory files may hold together:
// Claude Code warns about a memory file above 40,000.
const DefaultBudget = 40_000

// MaxImportDepth is how many hops of @imports are followed from a memory
// file, as in Claude Code: a file imported by a file that is already 5
// imports away is not read.
const MaxImportDepth = 5

// projectFiles are the names looked for in each directory from the
// repository root down to the cwd, in order: later ones are more specific.
var projectFiles = []struct{ name, scope string }{
	{"CLAUDE.md", ScopeProject},
	{filepath.Join(".claude", "CLAUDE.md"), ScopeProject},
	{"CLAUDE.local.md", ScopeLocal},
	{"AGENTS.md", ScopeProject},
	{filepath.Join(".tackle", "CLAUDE.md"), ScopeProject},
}

// MemoryOptions says where Memory looks. The zero value looks from the
// process's working directory with the process's home.
type MemoryOptions struct {
	// Cwd is the session's working directory (default os.Getwd).
	Cwd string
	// Home is the user's home directory, for ~/.claude/CLAUDE.md and @~/
	// imports (default os.UserHomeDir; "" after that: no user files).
	Home string
	// ConfigHome is $XDG_CONFIG_HOME (default that variable, else
	// Home/.config), for tackle's user file ConfigHome/tackle/CLAUDE.md.
	ConfigHome string
	// Budget is how many characters the files' contents may hold together
	// (0: DefaultBudget; negative: no limit).
	Budget int
	// Trusted says the project is trusted (config.Trust). Only then may a
	// project's memory file import a file outside the repository root (or
	// be a symlink to one), as Claude Code asks before it loads such
	// "external" imports: a cloned repository must not pull ~/.ssh or
	// ~/.aws into the prompt. The user's own files may import anything.
	Trusted bool
}

// MemoryFile is one memory file, in the order the model sees them: the
// least specific first.
type MemoryFile struct {
	// Path is the file's absolute path as found (symlinks not resolved).
	Path string
	// Scope is ScopeUser, ScopeProject or ScopeLocal; an imported file has
	// the scope of the file that imported it.
	Scope string
	// ImportedBy is the path of the file whose @import brought this one in
	// ("" for a file found by its name).
	ImportedBy string
	// Content is the file's text (CRLF made LF, invalid UTF-8 replaced).
	// Its @path imports stay as written: each imported file follows its
	// importer as a MemoryFile of its own, as in Claude Code.
	Content string
	// Cut is how many characters were cut from the end of Content to keep
	// the files within the budget (all of them when Content is "").
	Cut int
}

// Problem is a memory file, or an import, that could not be loaded, or
// the files being over the budget. The other files still load.
type Problem struct {
	// Path is the memory file concerned: the one that could not be read,
	// or the one whose import could not be followed.
	Path string
	// Line is the 1-based line of the import, 0 when not about an import.
	Line int
	// Message says what went wrong and what to do about it.
	Message string
}

// Error returns "path:line: message" ("path: message" without a line).
func (p Problem) Error() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Message)
	}
	return p.Path + ": " + p.Message
}

// Memory returns the memory files for a session, as Claude Code loads
// them, least specific first: ~/.claude/CLAUDE.md and
// ConfigHome/tackle/CLAUDE.md, then for each directory from the repository
// root (RepoRoot of the cwd; the cwd alone outside a repository) down to
// the cwd its CLAUDE.md, .claude/CLAUDE.md, CLAUDE.local.md, AGENTS.md and
// .tackle/CLAUDE.md. Each file is followed by the files it imports (depth
// first, in the order of the imports). A file is loaded once, however many
// paths lead to it (an import cycle, a CLAUDE.md that is a symlink to
// AGENTS.md). A missing file is skipped; one that cannot be read, a
// missing import and the budget are Problems, never errors.
func Memory(opts MemoryOptions) ([]MemoryFile, []Problem) {
	o := opts
	if o.Cwd == "" {
		o.Cwd, _ = os.Getwd()
	}
	if abs, err := filepath.Abs(o.Cwd); err == nil {
		o.Cwd = abs
	}
	if o.Home == "" {
		o.Home, _ = os.UserHomeDir()
	}
	if o.ConfigHome == "" {
		o.ConfigHome = os.Getenv("XDG_CONFIG_HOME")
	}
	if o.ConfigHome == "" && o.Home != "" {
		o.ConfigHome = filepath.Join(o.Home, ".config")
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	root, ok := RepoRoot(o.Cwd)
	if !ok {
		root = o.Cwd
	}
	l := &loader{opts: o, root: root, realRoot: realPath(root), seen: map[string]bool{}, realDirs: map[string]string{}}
	if o.Home != "" {
		l.load(filepath.Join(o.Home, ".claude", "CLAUDE.md"), ScopeUser, nil, 0)
	}
	if o.ConfigHome != "" {
		l.load(filepath.Join(o.ConfigHome, "tackle", "CLAUDE.md"), ScopeUser, nil, 0)
	}
	for _, dir := range dirsDown(root, o.Cwd) {
		for _, f := range projectFiles {
			l.load(filepath.Join(dir, f.name), f.scope, nil, 0)
		}
	}
	l.budget()
	return l.files, l.problems
}

// RepoRoot returns the nearest directory at or above dir that holds a .git
// (a directory, or the file of a linked work tree or submodule).
func RepoRoot(dir string) (string, bool) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d, true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", false
		}
		d = parent
	}
}

// dirsDown lists root, then each directory below it down to cwd.
func dirsDown(root, cwd string) []string {
	dirs := []string{root}
	rel, err := filepath.Rel(root, cwd)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return dirs
	}
	d := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		dirs = append(dirs, d)
	}
	return dirs
}

// loader gathers the files of one Memory call.
type loader struct {
	opts     MemoryOptions
	root     string
	realRoot string
	seen     map[string]bool   // real paths already loaded (or tried)
	realDirs map[string]string // directory → its real path
	files    []MemoryFile
	problems []Problem
}

// from is the import that leads to a file: the importing file and line.
type from struct {
	path string
	line int
	ref  string // the path as written after the @
}

// load reads path (a file found by name when via is nil, else an import)
// and then the files it imports.
func (l *loader) load(path, scope string, via *from, depth int) {
	real, ok := l.realPath(path)
	if !ok {
		if via != nil {
			l.fail(path, via, "does not exist")
		}
		return
	}
	if l.seen[real] {
		return
	}
	l.seen[real] = true
	if scope != ScopeUser && !l.opts.Trusted && !within(l.realRoot, real) {
		what := "is outside the project (" + l.root + ")"
		if real != path {
			what = "leads to " + real + ", outside the project (" + l.root + ")"
		}
		l.fail(path, via, what+"; a project's memory files reach outside it only in a trusted project (tackle trust "+l.root+")")
		return
	}
	data, err := safefile.Read(path, safefile.LimitMemory)
	if err != nil {
		l.fail(path, via, reason(err))
		return
	}
	if bytes.IndexByte(data, 0) >= 0 {
		l.fail(path, via, "is not a text file")
		return
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	content := strings.ReplaceAll(strings.ToValidUTF8(string(data), "\uFFFD"), "\r\n", "\n")
	f := MemoryFile{Path: path, Scope: scope, Content: content}
	if via != nil {
		f.ImportedBy = via.path
	}
	l.files = append(l.files, f)

	dir := filepath.Dir(path)
	for _, r := range findImports(content) {
		target, ok := l.resolve(r.path, dir)
		if !ok {
			continue // a mention such as @alice, not a path
		}
		if depth >= MaxImportDepth {
			if real, ok := l.realPath(target); ok && !l.seen[real] {
				l.problem(path, r.line, fmt.Sprintf("@%s is not imported: this file is already %d imports away from a memory file, the most that is followed", r.path, depth))
			}
			continue
		}
		l.load(target, scope, &from{path: path, line: r.line, ref: r.path}, depth+1)
	}
}

// resolve turns an import's path into a file's: ~/ is the home directory,
// a relative path is relative to the importing file's directory. When the
// path as written does not exist but does without trailing punctuation
// ("see @docs/x.md."), that is the file. ok is false for a missing word
// with neither a slash nor a dot (@alice is a mention, not a file).
func (l *loader) resolve(ref, dir string) (string, bool) {
	if strings.HasPrefix(ref, "~/") && l.opts.Home == "" {
		return "", false // no home to import from
	}
	join := func(p string) string {
		switch {
		case strings.HasPrefix(p, "~/"):
			return filepath.Join(l.opts.Home, p[2:])
		case filepath.IsAbs(p):
			return filepath.Clean(p)
		}
		return filepath.Join(dir, p)
	}
	target := join(ref)
	if exists(target) {
		return target, true
	}
	if trimmed := strings.TrimRight(ref, ".,;:!?)]}'\"*_"); trimmed != ref && validImport(trimmed) && exists(join(trimmed)) {
		return join(trimmed), true
	}
	if !strings.ContainsAny(ref, "/.") {
		return "", false
	}
	return target, true
}

func (l *loader) problem(path string, line int, msg string) {
	l.problems = append(l.problems, Problem{Path: path, Line: line, Message: msg})
}

// fail records that path is not loaded because it what ("does not
// exist", "is a FIFO, not a regular file"): a problem of the file itself,
// or of the import via that leads to it.
func (l *loader) fail(path string, via *from, what string) {
	if via == nil {
		l.problem(path, 0, "not loaded: it "+what)
		return
	}
	l.problem(via.path, via.line, "@"+via.ref+" is not imported: "+path+" "+what)
}

// budget cuts the files to the budget, the least specific (first) ones
// first, each from its end at a line break.
func (l *loader) budget() {
	if l.opts.Budget < 0 {
		return
	}
	total := 0
	for _, f := range l.files {
		total += utf8.RuneCountInString(f.Content)
	}
	over := total - l.opts.Budget
	for i := range l.files {
		if over <= 0 {
			break
		}
		f := &l.files[i]
		n := utf8.RuneCountInString(f.Content)
		if n == 0 {
			continue
		}
		f.Content = cutTo(f.Content, max(n-over, 0))
		f.Cut = n - utf8.RuneCountInString(f.Content)
		over -= f.Cut
		what := fmt.Sprintf("the last %d of its %d characters are left out", f.Cut, n)
		if f.Content == "" {
			what = "it is left out"
		}
		l.problem(f.Path, 0, fmt.Sprintf("%s: the memory files hold %d characters, over the budget of %d, and the least specific files are cut first; shorten them or move detail into files the agent reads when needed", what, total, l.opts.Budget))
	}
}

// cutTo returns the longest prefix of s with at most n characters that
// ends at a line break (or, when there is none, at any character).
func cutTo(s string, n int) string {
	if n <= 0 {
		return ""
	}
	end := len(s)
	for i := range s {
		if n == 0 {
			end = i
			break
		}
		n--
	}
	if end == len(s) {
		return s
	}
	if nl := strings.LastIndexByte(s[:end], '\n'); nl >= 0 {
		return s[:nl+1]
	}
	return s[:end]
}

// realPath returns path with its symlinks resolved, and false when there
// is no file at path (a dangling symlink included). Directories' real paths
// are remembered, as every name in a directory is looked up.
func (l *loader) realPath(path string) (string, bool) {
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
		return filepath.Clean(path), !missing(err) // safefile.Read says why
	case fi.Mode()&fs.ModeSymlink != 0:
		if _, err := os.Stat(path); err != nil && missing(err) {
			return "", false
		}
		return realPath(path), true
	}
	dir := filepath.Dir(path)
	rd, ok := l.realDirs[dir]
	if !ok {
		rd = realPath(dir)
		l.realDirs[dir] = rd
	}
	return filepath.Join(rd, filepath.Base(path)), true
}

// realPath resolves symlinks in path, or returns it cleaned when it cannot.
func realPath(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	if root == string(filepath.Separator) || path == root {
		return true
	}
	return strings.HasPrefix(path, root+string(filepath.Separator))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil || !missing(err)
}

// missing reports whether err says there is no file (also when a parent
// is not a directory, as .claude being a file).
func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// reason says why safefile.Read failed, as words that follow a path: "is a
// FIFO, not a regular file", "cannot be read (permission denied)".
func reason(err error) string {
	r := err.Error()
	var se *safefile.Error
	if errors.As(err, &se) {
		r = se.Reason
	}
	if strings.HasPrefix(r, "is ") || strings.HasPrefix(r, "has ") {
		return r
	}
	return "cannot be read (" + r + ")"
}

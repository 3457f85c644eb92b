package permission

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// This file makes a Read deny rule hold where a call reads more than the
// paths it names: a recursive reader over a directory that holds denied
// paths, a git command that prints a repository's content, a hard link to
// a denied file, and the walks of Grep and Glob (tool.ReadGuard).

// maxLinkWalk bounds the entries visited to find the files a path rule
// covers, when a call reads a file with several hard links.
const maxLinkWalk = 20000

// coversBelow reports whether the rule may cover a path strictly below
// dir, or dir itself: its pattern's literal prefix lies below dir or dir
// lies below it, or the pattern is not anchored (`**/x` matches anywhere).
// It errs towards yes: the caller asks, it never allows on it.
func (c *compiled) coversBelow(pc pathCtx, dir string) bool {
	if c.kind == kindBare {
		return true
	}
	if c.kind != kindPath {
		return false
	}
	pp := c.resolved(pc)
	if !pp.ok {
		return false
	}
	lit := pp.lit
	if lit == "" || lit == "/" || dir == "/" {
		return true
	}
	return lit == dir || strings.HasPrefix(lit, dir+"/") || strings.HasPrefix(dir, lit+"/")
}

// readRule reports whether c is a rule about what is read: a Read rule
// (a deny or ask rule's Read covers every tool's reads).
func readRule(c *compiled) bool { return c.rule.Tool == "Read" }

// coveredTree finds a Read rule of list that may cover something in a tree
// the call reads whole (Access.RecursiveReads, Access.RepoReads). what
// names the tree for the reason.
func coveredTree(list []*compiled, in *input) (c *compiled, what string) {
	for _, c := range list {
		if !readRule(c) {
			continue
		}
		for _, d := range in.acc.RecursiveReads {
			if c.coversBelow(in.pc, d) {
				return c, "everything below " + d
			}
		}
		for _, d := range in.acc.RepoReads {
			if c.coversBelow(in.pc, d) {
				return c, "the content of the git repository " + d
			}
		}
	}
	return nil, ""
}

// fileID is a file's device and inode.
type fileID struct{ dev, ino uint64 }

// linkIndex holds the identities of the files each path rule covers,
// found on first use (a call that reads a file with several links) for one
// pathCtx. LoadRules gives every turn a new one, so it never goes stale
// for long.
type linkIndex struct {
	mu   sync.Mutex
	sets map[linkKey]map[fileID]bool
}

type linkKey struct {
	c  *compiled
	pc pathCtx
}

// files returns the identities of the regular files c covers under pc,
// walking from the pattern's literal prefix (the working directories for a
// pattern that is not anchored), at most maxLinkWalk entries.
func (x *linkIndex) files(c *compiled, pc pathCtx, roots []string) map[fileID]bool {
	k := linkKey{c, pc}
	x.mu.Lock()
	defer x.mu.Unlock()
	if s, ok := x.sets[k]; ok {
		return s
	}
	set := map[fileID]bool{}
	pp := c.resolved(pc)
	if pp.ok {
		starts := roots
		if pp.lit != "" && pp.lit != "/" {
			starts = []string{pp.lit}
		}
		budget := maxLinkWalk
		for _, start := range starts {
			filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error { //nolint:errcheck // a walk error ends that walk only
				if err != nil {
					return nil
				}
				if budget--; budget < 0 {
					return filepath.SkipAll
				}
				if !d.Type().IsRegular() || !pp.matchPath(p) {
					return nil
				}
				if id, _, ok := identity(p); ok {
					set[id] = true
				}
				return nil
			})
		}
	}
	if x.sets == nil {
		x.sets = map[linkKey]map[fileID]bool{}
	}
	x.sets[k] = set
	return set
}

// identity stats p (following symlinks) and returns its identity and link
// count; ok is false when p is not a regular file.
func identity(p string) (fileID, uint64, bool) {
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return fileID{}, 0, false
	}
	return fileID{uint64(st.Dev), st.Ino}, uint64(st.Nlink), true //nolint:unconvert // Dev's type differs by platform
}

// hardLinked finds a path rule of list (Read rules for what the call reads
// or writes, Edit rules for what it writes) that covers, under another
// name, a file the call touches: a file with several links whose identity
// is one of the files the rule covers.
func (r *Rules) hardLinked(list []*compiled, in *input) (*compiled, string) {
	if !slices.ContainsFunc(list, linkRule) {
		return nil, "" // no path rule: no stat
	}
	var multi []string
	var ids []fileID
	for _, p := range union(in.reads, in.writes) {
		if id, n, ok := identity(p); ok && n > 1 {
			multi, ids = append(multi, p), append(ids, id)
		}
	}
	if len(multi) == 0 {
		return nil, ""
	}
	roots := []string{in.pc.root}
	if in.pc.cwd != in.pc.root {
		roots = append(roots, in.pc.cwd)
	}
	for _, c := range list {
		if !linkRule(c) {
			continue
		}
		set := r.linkCache().files(c, in.pc, roots)
		for i, p := range multi {
			if !set[ids[i]] {
				continue
			}
			if c.rule.Tool == "Edit" && !contains(in.writes, p) {
				continue
			}
			return c, p + " (a hard link to a file the rule covers)"
		}
	}
	return nil, ""
}

// linkRule reports whether c is a path rule a hard link can evade.
func linkRule(c *compiled) bool {
	return c.kind == kindPath && (c.rule.Tool == "Read" || c.rule.Tool == "Edit")
}

// linkCache returns the rules' link cache, or a new one for rules built
// without LoadRules.
func (r *Rules) linkCache() *linkIndex {
	if r.links != nil {
		return r.links
	}
	return &linkIndex{}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ReadGuard returns what the Read deny rules cover for a call in cwd
// (relative rules resolve against it), root and home, for tools that walk
// directories (tool.Call.ReadGuard); nil when no Read deny rule applies.
func (r *Rules) ReadGuard(cwd, root, home string) tool.ReadGuard {
	var list []*compiled
	for _, c := range r.deny {
		if readRule(c) && (c.kind == kindPath || c.kind == kindBare) {
			list = append(list, c)
		}
	}
	if len(list) == 0 {
		return nil
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if cwd == "" {
		cwd = root
	}
	if root == "" {
		root = cwd
	}
	return &readGuard{rules: r, list: list, pc: pathCtx{cwd: cwd, root: root, home: home}}
}

type readGuard struct {
	rules *Rules
	list  []*compiled
	pc    pathCtx

	once sync.Once
	ids  map[fileID]bool // the files the rules cover, found on first DeniedFile
}

// Denied implements tool.ReadGuard.
func (g *readGuard) Denied(path string) bool {
	for _, c := range g.list {
		if c.kind == kindBare {
			return true
		}
		if pp := c.resolved(g.pc); pp.ok && pp.matchPath(path) {
			return true
		}
	}
	return false
}

// DeniedFile implements tool.ReadGuard.
func (g *readGuard) DeniedFile(dev, ino uint64) bool {
	g.once.Do(func() {
		g.ids = map[fileID]bool{}
		roots := []string{g.pc.root}
		if g.pc.cwd != g.pc.root {
			roots = append(roots, g.pc.cwd)
		}
		for _, c := range g.list {
			if c.kind != kindPath {
				continue
			}
			for id := range g.rules.linkCache().files(c, g.pc, roots) {
				g.ids[id] = true
			}
		}
	})
	return g.ids[fileID{dev, ino}]
}

// maxDenyMatches bounds the files one Read deny pattern names for the
// sandbox (ReadDenyPaths).
const maxDenyMatches = 1000

// ReadDenyPaths are the existing files and directories the Read deny
// rules name, for the OS sandbox to hide (it cannot match patterns: it
// hides paths). A literal path or a "dir/**" gives itself; a pattern is
// globbed where it is anchored, and an unanchored one ("**/.env") in
// each of dirs (the working directories), at most maxDenyMatches each.
// A file created after the command starts is not hidden by it (the
// permission stage still asks or denies for the paths it sees).
func (r *Rules) ReadDenyPaths(cwd, root, home string, dirs []string) []string {
	pc := pathCtx{cwd: cwd, root: root, home: home}
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	glob := func(base, pattern string) {
		n := 0
		_ = doublestar.GlobWalk(os.DirFS(base), pattern, func(p string, _ fs.DirEntry) error {
			add(filepath.Join(base, p))
			if n++; n >= maxDenyMatches {
				return fs.SkipAll
			}
			return nil
		}, doublestar.WithNoFollow())
	}
	for _, c := range r.deny {
		if !readRule(c) || c.kind != kindPath {
			continue
		}
		pp := c.resolved(pc)
		if !pp.ok {
			continue
		}
		pat := pp.pat
		switch {
		case pp.lit == pat:
			add(unescapeMeta(pat))
		case pp.lit+"/**" == pat && !strings.ContainsAny(pp.lit, `*?[{\`):
			add(pp.lit)
		case strings.HasPrefix(pat, "/**/"):
			for _, d := range dirs {
				glob(d, "**/"+pat[len("/**/"):]) // "**/" matches at the top too
			}
		case pp.lit != "" && pp.lit != "/":
			rest := strings.TrimPrefix(strings.TrimPrefix(pat, pp.lit), "/")
			glob(unescapeMeta(pp.lit), rest)
		}
	}
	return out
}

// unescapeMeta undoes escapeMeta.
func unescapeMeta(p string) string {
	if !strings.Contains(p, `\`) {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '\\' && i+1 < len(p) {
			i++
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

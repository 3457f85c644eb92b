package search

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/tackle-agent/tackle/internal/safefile"
)

// matchKind says how a globPattern is tested, from fastest to slowest.
type matchKind uint8

const (
	kindLiteral matchKind = iota // name or path equals lit
	kindSuffix                   // "*" + lit: the string ends with lit and has no "/"
	kindGlob                     // doublestar.MatchUnvalidated(glob, s)
)

// globPattern is one line of an ignore file, one --glob of Grep or one
// glob of a file type, compiled with gitignore's rules as ripgrep's
// ignore crate applies them.
type globPattern struct {
	// whitelist is true for "!x" in an ignore file and for a glob without
	// "!" in an override: a match includes the path.
	whitelist bool
	// dirOnly patterns ended with "/" and match directories only.
	dirOnly bool
	// base patterns had no "/" and match the last path component;
	// others match the path relative to the ignore file's directory.
	base bool
	kind matchKind
	lit  string
	glob string
}

// compileGlob compiles one gitignore-style line. override inverts the
// meaning of "!" (Grep's --glob: "!x" excludes, "x" includes). It returns
// false for blank lines, comments and invalid globs.
func compileGlob(line string, override bool) (globPattern, bool) {
	var p globPattern
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpace(line)
	if line == "" || (!override && line[0] == '#') {
		return p, false
	}
	negated, absolute := false, false
	if strings.HasPrefix(line, `\!`) || strings.HasPrefix(line, `\#`) {
		line = line[1:]
	} else {
		if line[0] == '!' {
			negated = true
			line = line[1:]
		}
		if strings.HasPrefix(line, "/") {
			line, absolute = line[1:], true
		}
	}
	if override {
		p.whitelist = !negated
	} else {
		p.whitelist = negated
	}
	if strings.HasSuffix(line, "/") {
		p.dirOnly = true
		line = strings.TrimSuffix(line, "/")
		line = strings.TrimSuffix(line, `\`)
	}
	if line == "" {
		return p, false
	}
	anchored := absolute || strings.Contains(line, "/")
	if rest, ok := strings.CutPrefix(line, "**/"); ok && !strings.Contains(rest, "/") {
		line, anchored = rest, false
	}
	if strings.HasSuffix(line, "/**") {
		line += "/*"
	}
	p.base = !anchored
	if !doublestar.ValidatePattern(line) {
		return p, false
	}
	p.glob = line
	switch {
	case !hasMeta(line):
		p.kind, p.lit = kindLiteral, line
	case line[0] == '*' && !hasMeta(line[1:]) && p.base:
		p.kind, p.lit = kindSuffix, line[1:]
	default:
		p.kind = kindGlob
		if p.base && line == "**" {
			p.glob = "*"
		}
	}
	return p, true
}

// trimTrailingSpace removes trailing spaces unless escaped with a backslash.
func trimTrailingSpace(s string) string {
	for strings.HasSuffix(s, " ") && !strings.HasSuffix(s, `\ `) {
		s = s[:len(s)-1]
	}
	return s
}

// hasMeta reports whether s contains glob syntax.
func hasMeta(s string) bool {
	return strings.ContainsAny(s, `*?[{\`)
}

// relPath is the path of an entry relative to the directory of an ignore
// file (or to the search root), built only when a pattern needs it.
type relPath struct {
	prefix string // path from the ignore file's directory to dirRel's base, or ""
	strip  string // prefix of dirRel to remove ("" for none)
	dirRel string // the entry's directory relative to the search root
	name   string
	built  bool
	s      string
}

func (r *relPath) get() string {
	if r.built {
		return r.s
	}
	p := r.name
	if r.dirRel != "" {
		p = r.dirRel + "/" + r.name
	}
	if r.strip != "" {
		p = strings.TrimPrefix(p, r.strip+"/")
	}
	if r.prefix != "" && r.prefix != "." {
		p = r.prefix + "/" + p
	}
	r.s, r.built = p, true
	return p
}

// match tests the pattern against an entry; rel is its path relative to
// the pattern's base.
func (p *globPattern) match(name string, rel *relPath, isDir bool) bool {
	if p.dirOnly && !isDir {
		return false
	}
	s := name
	if !p.base {
		s = rel.get()
	}
	switch p.kind {
	case kindLiteral:
		return s == p.lit
	case kindSuffix:
		return strings.HasSuffix(s, p.lit)
	default:
		return doublestar.MatchUnvalidated(p.glob, s)
	}
}

// globSet is an ordered list of patterns where the last match wins, as
// in one .gitignore file or the list of Grep's globs.
type globSet struct {
	patterns   []globPattern
	anchored   bool // some pattern needs the relative path
	whitelists int  // number of whitelist patterns
}

func (s *globSet) add(p globPattern) {
	s.patterns = append(s.patterns, p)
	if !p.base {
		s.anchored = true
	}
	if p.whitelist {
		s.whitelists++
	}
}

// decision is the outcome of matching a path against ignore rules.
type decision int8

const (
	noMatch   decision = 0
	ignore    decision = 1
	whitelist decision = 2
)

// matched returns the decision of the last pattern that matches.
func (s *globSet) matched(name string, rel *relPath, isDir bool) decision {
	if s == nil {
		return noMatch
	}
	for i := len(s.patterns) - 1; i >= 0; i-- {
		p := &s.patterns[i]
		if p.match(name, rel, isDir) {
			if p.whitelist {
				return whitelist
			}
			return ignore
		}
	}
	return noMatch
}

// parseIgnoreFile compiles the content of an ignore file; nil if it has no patterns.
func parseIgnoreFile(data []byte) *globSet {
	var s globSet
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if p, ok := compileGlob(string(line), false); ok {
			s.add(p)
		}
	}
	if len(s.patterns) == 0 {
		return nil
	}
	return &s
}

// readIgnoreFile reads and compiles an ignore file; nil if absent or empty.
func readIgnoreFile(path string) *globSet {
	data, err := safefile.Read(path, safefile.LimitIgnore) // a repository's file: never a FIFO or a device
	if err != nil {
		return nil
	}
	return parseIgnoreFile(data)
}

// ignoreNode holds the ignore files of one directory. Directories without
// ignore files share their parent's node. Nodes are immutable once built
// and shared between workers.
type ignoreNode struct {
	parent *ignoreNode
	// relDir is the directory relative to the search root ("" for the root);
	// for directories above the root it is empty and above is set.
	relDir string
	// above is the path from this directory down to the search root, for
	// directories above the root ("go/src"); empty otherwise.
	above     string
	isAbove   bool
	rgignore  *globSet // .rgignore
	dotIgnore *globSet // .ignore
	gitignore *globSet // .gitignore
	exclude   *globSet // .git/info/exclude
	hasGit    bool     // the directory contains .git
	anyGit    bool     // this directory or one above it contains .git
}

// ignoreFileNames are the files read in every directory.
const (
	rgignoreName  = ".rgignore"
	dotIgnoreName = ".ignore"
	gitignoreName = ".gitignore"
)

// newIgnoreNode reads the ignore files of dir. hasGit says whether dir
// contains .git. It returns parent when dir has nothing that matters.
func newIgnoreNode(parent *ignoreNode, dir, relDir string, hasRg, hasIgnore, hasGitignore, hasGit, gitIsDir bool) *ignoreNode {
	n := &ignoreNode{parent: parent, relDir: relDir, hasGit: hasGit}
	if hasRg {
		n.rgignore = readIgnoreFile(filepath.Join(dir, rgignoreName))
	}
	if hasIgnore {
		n.dotIgnore = readIgnoreFile(filepath.Join(dir, dotIgnoreName))
	}
	if hasGitignore {
		n.gitignore = readIgnoreFile(filepath.Join(dir, gitignoreName))
	}
	if hasGit && gitIsDir {
		n.exclude = readIgnoreFile(filepath.Join(dir, ".git", "info", "exclude"))
	}
	n.anyGit = hasGit || (parent != nil && parent.anyGit)
	if !hasGit && n.rgignore == nil && n.dotIgnore == nil && n.gitignore == nil {
		return parent
	}
	return n
}

// ancestorNodes builds the chain of ignore nodes for the directories above
// root (ripgrep applies ignore files of parent directories too).
func ancestorNodes(root string) *ignoreNode {
	var dirs []string
	for d := filepath.Dir(root); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if d == filepath.Dir(d) {
			break
		}
	}
	var node *ignoreNode
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		above, err := filepath.Rel(d, root)
		if err != nil {
			continue
		}
		gi, gitErr := os.Lstat(filepath.Join(d, ".git"))
		hasGit := gitErr == nil
		n := &ignoreNode{
			parent:    node,
			above:     filepath.ToSlash(above),
			isAbove:   true,
			rgignore:  readIgnoreFile(filepath.Join(d, rgignoreName)),
			dotIgnore: readIgnoreFile(filepath.Join(d, dotIgnoreName)),
			gitignore: readIgnoreFile(filepath.Join(d, gitignoreName)),
			hasGit:    hasGit,
		}
		if hasGit && gi.IsDir() {
			n.exclude = readIgnoreFile(filepath.Join(d, ".git", "info", "exclude"))
		}
		n.anyGit = hasGit || (node != nil && node.anyGit)
		if !hasGit && n.rgignore == nil && n.dotIgnore == nil && n.gitignore == nil {
			continue
		}
		node = n
	}
	return node
}

// ignored applies the ignore files of node and its parents to the entry
// name in directory dirRel (relative to the search root), with ripgrep's
// precedence: per kind the deepest matching file decides, then .rgignore
// over .ignore over .gitignore over .git/info/exclude; .gitignore files
// count only inside a git repository and not above its root.
func (n *ignoreNode) ignored(dirRel, name string, isDir bool) decision {
	if n == nil {
		return noMatch
	}
	var mRg, mIg, mGit, mEx decision
	anyGit := n.anyGit
	sawGit := false
	for x := n; x != nil; x = x.parent {
		rel := relPath{dirRel: dirRel, name: name}
		if x.isAbove {
			rel.prefix = x.above
		} else {
			rel.strip = x.relDir
		}
		if mRg == noMatch && x.rgignore != nil {
			mRg = x.rgignore.matched(name, &rel, isDir)
		}
		if mIg == noMatch && x.dotIgnore != nil {
			mIg = x.dotIgnore.matched(name, &rel, isDir)
		}
		if anyGit && !sawGit {
			if mGit == noMatch && x.gitignore != nil {
				mGit = x.gitignore.matched(name, &rel, isDir)
			}
			if mEx == noMatch && x.exclude != nil {
				mEx = x.exclude.matched(name, &rel, isDir)
			}
		}
		sawGit = sawGit || x.hasGit
	}
	for _, m := range [...]decision{mRg, mIg, mGit, mEx} {
		if m != noMatch {
			return m
		}
	}
	return noMatch
}

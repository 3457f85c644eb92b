package shell

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// The git commands that print the content of files (issue 10, item 3):
// show, cat-file -p, log -p (and whatchanged, reflog, stash list),
// log -L, diff (and diff-tree, diff-index, diff-files with -p), grep,
// blame and annotate, archive, format-patch, range-diff, bundle create,
// stash show and config -f. When every path whose content one prints is
// literal — a blob named REV:PATH or :PATH (relative to the repository's
// root; ./PATH and ../PATH relative to the directory git runs in), a
// pathspec, the file of blame and log -L, the files of diff --no-index —
// those paths are Reads (and a directory among them a RecursiveRead).
// Otherwise the root of the repository's work tree is a RepoRead: a Read
// deny rule for anything in it asks. Listings that print no content (git
// log --oneline, diff --stat, ls-files, cat-file -t) read nothing.

// gitCtx is where one git command runs.
type gitCtx struct {
	dirs  []string // the directories it runs in: the bases, moved by -C
	roots []string // the root of each one's work tree
	// literal is --literal-pathspecs: pathspecs are not patterns.
	literal bool
}

// gitContext parses git's global options: where the command runs, its
// subcommand and the subcommand's arguments. ok is false when the
// subcommand is not static.
func (a *analyzer) gitContext(args []cword) (g gitCtx, sub string, rest []cword, ok bool) {
	g.dirs = a.bases
	var workTree *cword
	gitDir := false
	for i := 0; i < len(args) && !ok; i++ {
		w := args[i]
		if !w.Static {
			return g, "", nil, false
		}
		switch s := w.S; {
		case s == "-C" && i+1 < len(args):
			i++
			var moved []string
			for _, d := range g.dirs {
				moved = append(moved, a.pathsIn([]string{d}, args[i])...)
			}
			g.dirs = moved
		case (s == "-c" || s == "--git-dir" || s == "--work-tree" || s == "--namespace" || s == "--config-env") && i+1 < len(args):
			i++
			switch s {
			case "--git-dir":
				gitDir = true
			case "--work-tree":
				workTree = &args[i]
			}
		case strings.HasPrefix(s, "--git-dir="):
			gitDir = true
		case strings.HasPrefix(s, "--work-tree="):
			v := litWord(strings.TrimPrefix(s, "--work-tree="))
			workTree = &v
		case s == "--literal-pathspecs":
			g.literal = true
		case strings.HasPrefix(s, "-"):
		default:
			sub, rest, ok = s, args[i+1:], true
		}
	}
	for _, d := range g.dirs {
		root := d
		switch {
		case workTree != nil:
			if ps := a.pathsIn([]string{d}, *workTree); len(ps) > 0 {
				root = ps[0]
			}
		case !gitDir:
			root = repoRoot(d)
		}
		g.roots = append(g.roots, root)
	}
	return g, sub, rest, ok
}

// repoRoot is the nearest directory at or above dir holding .git (a
// directory, or the file of a linked work tree), else dir.
func repoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// gitReaders are the git subcommands that may print file content.
var gitReaders = map[string]func(a *analyzer, g gitCtx, sub string, args []cword){
	"show": gitShow, "cat-file": gitCatFile, "log": gitLog, "whatchanged": gitLog, "reflog": gitReflog,
	"diff": gitDiff, "diff-tree": gitDiff, "diff-index": gitDiff, "diff-files": gitDiff,
	"grep": gitGrep, "blame": gitBlame, "annotate": gitBlame, "archive": gitArchive,
	"format-patch": gitPatches, "range-diff": gitPatches, "bundle": gitBundle, "stash": gitStash,
	"config": gitConfig,
}

// gitReads records what a git command prints the content of.
func (a *analyzer) gitReads(args []cword) {
	g, sub, rest, ok := a.gitContext(args)
	if !ok {
		return
	}
	for _, root := range g.roots {
		if key, path := gitHazard(root); key != "" {
			a.ask(fmt.Sprintf("the repository's git config %s sets %s, which makes git run a program", path, key))
			break
		}
	}
	if read := gitReaders[sub]; read != nil {
		read(a, g, sub, rest)
	}
}

// gitArgs are a git subcommand's arguments, split.
type gitArgs struct {
	opts  []string // the options as written (-p, --stat, -U3, --format=x)
	ops   []cword  // the operands before --
	specs []cword  // the pathspecs after --
}

// logValued and logLong are the options of log, show and diff that take
// the next word as their value.
const logValued = "nLGSO"

var logLong = []string{
	"author", "committer", "grep", "since", "until", "after", "before", "skip", "max-count", "min-parents",
	"max-parents", "encoding", "output", "relative", "exclude", "glob", "branches", "tags", "remotes",
	"contents", "ignore-rev", "ignore-revs-file", "max-depth", "threads", "format", "remote", "prefix", "add-file",
}

// parseGit splits args: options are static words starting with "-"
// before "--"; a short option of valued written alone, or a long one of
// longValued without =, takes the next word. onValue, if set, gets each
// option that has a value, with it (-L 1,5:f and -L1,5:f alike).
func parseGit(args []cword, valued string, onValue func(opt string, v cword)) gitArgs {
	var g gitArgs
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w.Static && w.S == "--":
			g.specs = args[i+1:]
			return g
		case !w.Static || len(w.S) < 2 || w.S[0] != '-':
			g.ops = append(g.ops, w)
			continue
		}
		g.opts = append(g.opts, w.S)
		var opt string
		var v cword
		switch long, isLong := strings.CutPrefix(w.S, "--"); {
		case isLong && strings.Contains(long, "="):
			name, val, _ := strings.Cut(long, "=")
			opt, v = "--"+name, litWord(val)
		case isLong && slices.Contains(logLong, long) && i+1 < len(args):
			i++
			opt, v = w.S, args[i]
		case !isLong && strings.IndexByte(valued, w.S[1]) >= 0 && len(w.S) == 2 && i+1 < len(args):
			i++
			opt, v = w.S, args[i]
		case !isLong && strings.IndexByte(valued, w.S[1]) >= 0 && len(w.S) > 2:
			opt, v = w.S[:2], litWord(w.S[2:])
		default:
			continue
		}
		if onValue != nil {
			onValue(opt, v)
		}
	}
	return g
}

// has reports whether one of the options is given (a long one also as
// --name=value, a short one also clustered or with its value attached).
func (g gitArgs) has(names ...string) bool {
	for _, o := range g.opts {
		for _, n := range names {
			switch {
			case o == n, strings.HasPrefix(n, "--") && strings.HasPrefix(o, n+"="):
				return true
			case len(n) == 2 && !strings.HasPrefix(o, "--") && strings.HasPrefix(o, n):
				return true
			}
		}
	}
	return false
}

// patch reports options that make a command print diffs.
func (g gitArgs) patch() bool {
	return g.has("-p", "-u", "-U", "--patch", "--unified", "--word-diff", "--color-words", "--cc", "--binary",
		"--patch-with-stat", "--patch-with-raw", "--function-context", "-W")
}

// noPatch reports options that make show, diff and stash show print no
// diff (unless patch also holds).
func (g gitArgs) noPatch() bool {
	return !g.patch() && g.has("-s", "--no-patch", "--stat", "--numstat", "--shortstat", "--name-only",
		"--name-status", "--summary", "--dirstat", "--raw", "--quiet", "--compact-summary")
}

// revsAndPaths splits operands as git does: an operand that exists as a
// path where git runs is a pathspec, any other one a revision.
func (g gitCtx) revsAndPaths(ops []cword) (revs, paths []cword) {
	for _, w := range ops {
		if w.Static && !strings.Contains(w.S, ":") && g.exists(w.S) {
			paths = append(paths, w)
		} else {
			revs = append(revs, w)
		}
	}
	return revs, paths
}

func (g gitCtx) exists(p string) bool {
	for _, d := range g.dirs {
		if _, err := os.Lstat(filepath.Join(d, p)); err == nil {
			return true
		}
	}
	return false
}

// repo records the repositories as read without literal paths.
func (a *analyzer) repo(g gitCtx) {
	for _, r := range g.roots {
		a.add(&a.repoReads, "g", r)
	}
}

// readIn records the files a word names, relative to dirs, as read (and
// read whole, for directories).
func (a *analyzer) readIn(dirs []string, w cword) []string {
	ps := a.pathsIn(dirs, w)
	for _, p := range ps {
		a.read(p)
	}
	a.trees(ps)
	return ps
}

// pathspecs records the content a git command prints of pathspecs: the
// paths, when they are literal, else the repository (and with no
// pathspec, the repository).
func (a *analyzer) pathspecs(g gitCtx, specs []cword) {
	if len(specs) == 0 {
		a.repo(g)
		return
	}
	for _, w := range specs {
		if !w.Static || !g.literal && (strings.HasPrefix(w.S, ":") || !w.Glob && strings.ContainsAny(w.S, "*?[")) {
			a.repo(g) // magic, a pattern, or only known when it runs
			continue
		}
		for _, p := range a.readIn(g.dirs, w) {
			if w.Glob && strings.ContainsAny(p, "*?[") {
				a.repo(g) // a glob bash left as written: git matches it
			}
		}
	}
}

// blobPath returns the path of an object named REV:PATH, :PATH or
// :N:PATH; ok is false for any other name (a revision, :/message).
func blobPath(name string) (p string, ok bool) {
	if strings.HasPrefix(name, ":/") {
		return "", false
	}
	if rest, ok := strings.CutPrefix(name, ":"); ok {
		if len(rest) >= 2 && rest[0] >= '0' && rest[0] <= '3' && rest[1] == ':' {
			rest = rest[2:]
		}
		return rest, true
	}
	depth := 0
	for i := 0; i < len(name); i++ {
		switch name[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ':':
			if depth <= 0 {
				return name[i+1:], true
			}
		}
	}
	return "", false
}

// object records the content of an object git prints: a blob or tree
// named by path (a tree read whole when whole is set), else the
// repository.
func (a *analyzer) object(g gitCtx, w cword, whole bool) {
	p, ok := "", false
	if w.Static {
		p, ok = blobPath(w.S)
	}
	if !ok {
		a.repo(g)
		return
	}
	for i, d := range g.dirs {
		base := g.roots[i]
		if p == "." || p == ".." || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") {
			base = d
		}
		rp := tool.RealPath(filepath.Join(base, p))
		a.read(rp)
		if whole {
			a.trees([]string{rp})
		}
	}
}

// gitShow: the objects named, and a commit's diff unless -s or --stat.
func gitShow(a *analyzer, g gitCtx, _ string, args []cword) {
	ga := parseGit(args, logValued, nil)
	revs, paths := g.revsAndPaths(ga.ops)
	diffs := len(revs) == 0 && !ga.noPatch()
	for _, w := range revs {
		_, blob := blobPath(w.S)
		switch {
		case !w.Static:
			a.repo(g)
		case blob:
			a.object(g, w, false)
		case !ga.noPatch() || isHex(w.S):
			diffs = true // a commit's diff, or an object named by its hash
		}
	}
	if diffs {
		a.pathspecs(g, append(paths, ga.specs...))
	}
}

// isHex reports a word that may be an object's hash.
func isHex(s string) bool {
	return len(s) >= 4 && strings.Trim(strings.ToLower(s), "0123456789abcdef") == ""
}

// gitCatFile: the object of -p or TYPE OBJECT, and the objects of
// --batch, but not -t, -s or -e.
func gitCatFile(a *analyzer, g gitCtx, _ string, args []cword) {
	ga := parseGit(args, "", nil)
	switch {
	case ga.has("--batch", "--batch-command"):
		a.repo(g)
	case len(ga.ops) == 0 || ga.has("-t", "-s", "-e") && !ga.has("-p"):
	default:
		a.object(g, ga.ops[len(ga.ops)-1], false)
	}
}

// gitLog: diffs with -p and the like, the files of -L.
func gitLog(a *analyzer, g gitCtx, _ string, args []cword) {
	ga := parseGit(args, logValued, func(opt string, v cword) {
		if opt == "-L" && v.Static {
			if i := strings.LastIndexByte(v.S, ':'); i >= 0 {
				a.readIn(g.dirs, litWord(v.S[i+1:]))
			}
		}
	})
	if ga.patch() {
		_, paths := g.revsAndPaths(ga.ops)
		a.pathspecs(g, append(paths, ga.specs...))
	}
}

// gitReflog: reflog show takes log's options.
func gitReflog(a *analyzer, g gitCtx, sub string, args []cword) {
	if len(args) > 0 && args[0].Static && args[0].S == "show" {
		args = args[1:]
	}
	gitLog(a, g, sub, args)
}

// gitDiff: the files of --no-index; the diff of the pathspecs, or of the
// repository, and the blobs compared (diff unless --stat and the like;
// diff-tree, diff-index and diff-files only with -p).
func gitDiff(a *analyzer, g gitCtx, sub string, args []cword) {
	ga := parseGit(args, logValued, func(opt string, v cword) {
		if opt == "-O" {
			a.readIn(g.dirs, v) // the order file
		}
	})
	if ga.has("--no-index") {
		for _, w := range append(ga.ops, ga.specs...) {
			a.readIn(g.dirs, w)
		}
		return
	}
	if !ga.patch() && (sub != "diff" || ga.noPatch()) {
		return
	}
	revs, paths := g.revsAndPaths(ga.ops)
	commits := len(revs) == 0
	for _, w := range revs {
		if _, blob := blobPath(w.S); w.Static && blob {
			a.object(g, w, false)
		} else {
			commits = true
		}
	}
	if commits {
		a.pathspecs(g, append(paths, ga.specs...))
	}
}

// gitGrep: the pathspecs searched, or the repository (--no-index and
// --untracked also search files git does not track: the directories).
func gitGrep(a *analyzer, g gitCtx, _ string, args []cword) {
	patternGiven := false
	ga := parseGit(args, "efABCm", func(opt string, v cword) {
		switch opt {
		case "-e":
			patternGiven = true
		case "-f":
			patternGiven = true
			a.readIn(g.dirs, v)
		}
	})
	ops := ga.ops
	if !patternGiven && len(ops) > 0 {
		ops = ops[1:]
	}
	_, paths := g.revsAndPaths(ops)
	paths = append(paths, ga.specs...)
	if len(paths) == 0 && ga.has("--no-index", "--untracked") {
		a.cwdTree(g.dirs)
	}
	a.pathspecs(g, paths)
}

// gitBlame: the file blamed (the last operand, or the one after --), and
// the files of --contents, -S and --ignore-revs-file.
func gitBlame(a *analyzer, g gitCtx, _ string, args []cword) {
	ga := parseGit(args, "LS", func(opt string, v cword) {
		if opt == "-S" || opt == "--contents" || opt == "--ignore-revs-file" {
			a.readIn(g.dirs, v)
		}
	})
	var file []cword
	switch {
	case len(ga.specs) > 0:
		file = ga.specs[:1]
	case len(ga.ops) > 0:
		file = ga.ops[len(ga.ops)-1:]
	}
	a.pathspecs(g, file)
}

// gitArchive: the tree archived (TREE:PATH whole, or the paths given, or
// the repository), the files of --add-file; --output is written.
func gitArchive(a *analyzer, g gitCtx, _ string, args []cword) {
	remote := false
	ga := parseGit(args, "o", func(opt string, v cword) {
		switch opt {
		case "-o", "--output":
			for _, p := range a.pathsIn(g.dirs, v) {
				a.write(p)
			}
		case "--add-file":
			a.readIn(g.dirs, v)
		case "--remote":
			remote = true
		}
	})
	switch {
	case remote || len(ga.ops) == 0:
	case len(ga.ops) == 1 && len(ga.specs) == 0:
		if _, blob := blobPath(ga.ops[0].S); ga.ops[0].Static && blob {
			a.object(g, ga.ops[0], true)
		} else {
			a.repo(g)
		}
	default:
		a.pathspecs(g, append(ga.ops[1:], ga.specs...))
	}
}

// gitPatches: format-patch and range-diff print the diffs of commits:
// their pathspecs, or the repository.
func gitPatches(a *analyzer, g gitCtx, _ string, args []cword) {
	a.pathspecs(g, parseGit(args, logValued, nil).specs)
}

// gitBundle: bundle create copies the repository.
func gitBundle(a *analyzer, g gitCtx, _ string, args []cword) {
	if len(args) > 0 && args[0].Static && args[0].S == "create" {
		a.repo(g)
	}
}

// gitStash: stash show prints a diff unless --stat and the like say
// otherwise (stash.showPatch may make it the default); stash list takes
// log's -p.
func gitStash(a *analyzer, g gitCtx, _ string, args []cword) {
	if len(args) == 0 || !args[0].Static {
		return
	}
	ga := parseGit(args[1:], logValued, nil)
	switch args[0].S {
	case "show":
		if !ga.noPatch() {
			a.repo(g)
		}
	case "list":
		if ga.patch() {
			a.repo(g)
		}
	}
}

// gitConfig: the files of -f and --file, the blob of --blob.
func gitConfig(a *analyzer, g gitCtx, _ string, args []cword) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static {
			continue
		}
		switch {
		case (w.S == "-f" || w.S == "--file" || w.S == "--blob") && i+1 < len(args):
			i++
			if w.S == "--blob" {
				a.object(g, args[i], false)
			} else {
				a.readIn(g.dirs, args[i])
			}
		case strings.HasPrefix(w.S, "--file="):
			a.readIn(g.dirs, litWord(strings.TrimPrefix(w.S, "--file=")))
		case strings.HasPrefix(w.S, "--blob="):
			a.object(g, litWord(strings.TrimPrefix(w.S, "--blob=")), false)
		}
	}
}

package shell

import (
	"os"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// The recursive readers (issue 10, item 3) read whole directory trees and
// print or copy what they read. Their directories are RecursiveReads (and
// Reads), so that a Read deny rule for a path below one asks:
//
//   - grep, egrep, fgrep, zgrep with -r, -R, --recursive or -d recurse (the
//     current directory without an operand); rg, ag and ack always; diff
//     -r; cp -r, -R or -a (fileSpecs in access.go);
//   - find with -exec, -execdir, -ok or -okdir: its starting points; and
//     find, fd or git ls-files piped into xargs, which reads what they list;
//   - tar creating or extending an archive, zip -r, rsync -r or -a, scp -r.
//
// Commands that list names or sizes only (ls -R, du, tree, find without
// -exec) are not recursive reads, nor are operands that are not
// directories. A read is only recorded for what the analysis can see: a
// directory only known when the command runs names nothing.

// tree records a directory read whole (and read).
func (a *analyzer) tree(p string) {
	a.read(p)
	a.add(&a.treeReads, "t", p)
}

// trees records those of ps that are directories as read whole.
func (a *analyzer) trees(ps []string) {
	for _, p := range ps {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			a.tree(p)
		}
	}
}

// cwdTree records the directories the command may run in as read whole.
func (a *analyzer) cwdTree(dirs []string) {
	for _, d := range dirs {
		a.tree(tool.RealPath(d))
	}
}

// rootTrees records starting points of a walk as read (whole, for
// directories).
func (a *analyzer) rootTrees(roots []cword) {
	for _, r := range roots {
		a.trees(a.readWord(r))
	}
}

// findRoots returns find's starting points: the operands before its
// expression (after -H, -L, -P, -D LIST and -OLEVEL), or "." without any.
func findRoots(args []cword) []cword {
	i := 0
	for i < len(args) && args[i].Static {
		switch s := args[i].S; {
		case s == "-H" || s == "-L" || s == "-P" || strings.HasPrefix(s, "-O"):
			i++
			continue
		case s == "-D":
			i += 2
			continue
		}
		break
	}
	var roots []cword
	for ; i < len(args); i++ {
		w := args[i]
		if w.Static && (len(w.S) > 1 && w.S[0] == '-' || w.S == "(" || w.S == "!" || w.S == ",") {
			break
		}
		roots = append(roots, w)
	}
	if len(roots) == 0 {
		roots = []cword{litWord(".")}
	}
	return roots
}

// findReads records the starting points of a find that runs a command on
// every file it finds.
func (a *analyzer) findReads(args []cword) {
	if len(findExecs(args)) > 0 {
		a.rootTrees(findRoots(args))
	}
}

// pipedFind records what a lister (find, fd, git ls-files) earlier in a
// pipeline lists when xargs ends it and takes its output as file names
// (find . -name '*.env' | xargs cat).
func (a *analyzer) pipedFind(src string, b *syntax.BinaryCmd) {
	if b.Op != syntax.Pipe && b.Op != syntax.PipeAll {
		return
	}
	y, ok := b.Y.Cmd.(*syntax.CallExpr)
	if !ok || len(y.Args) == 0 || path.Base(commandName(y.Args[0])) != "xargs" {
		return
	}
	for x := b.X; x != nil; {
		var stage *syntax.CallExpr
		switch c := x.Cmd.(type) {
		case *syntax.BinaryCmd:
			if c.Op != syntax.Pipe && c.Op != syntax.PipeAll {
				return
			}
			stage, _ = c.Y.Cmd.(*syntax.CallExpr)
			x = c.X
		case *syntax.CallExpr:
			stage, x = c, nil
		default:
			return
		}
		if stage != nil && len(stage.Args) > 0 {
			a.listed(src, stage)
		}
	}
}

// listed records what a lister of file names lists: find's and fd's
// starting points, the directory of git ls-files.
func (a *analyzer) listed(src string, ce *syntax.CallExpr) {
	ws, _ := words(src, ce.Args)
	ws = a.stripWrappers(ws)
	if len(ws) < 1 || !ws[0].Static {
		return
	}
	args := ws[1:]
	switch path.Base(ws[0].S) {
	case "find":
		a.rootTrees(findRoots(args))
	case "fd", "fdfind":
		ops, _, _ := operands(args, "dtEeSjcx", []string{"max-depth", "type", "exclude", "extension", "size", "threads", "color", "exec", "exec-batch"})
		if len(ops) < 2 {
			a.cwdTree(a.bases)
		}
		if len(ops) > 1 {
			a.rootTrees(ops[1:])
		}
	case "git":
		if g, sub, _, ok := a.gitContext(args); ok && (sub == "ls-files" || sub == "ls-tree") {
			a.cwdTree(g.dirs)
		}
	}
}

// operands returns the operands of a command whose options may come
// anywhere (GNU getopt permutes them), and the letters of its short
// options and the names of its long ones. A short option of valued takes a
// value (attached, or the next word), as does a long one of longValued
// written without =; "--" ends the options.
func operands(args []cword, valued string, longValued []string) (ops []cword, short string, long []string) {
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case !w.Static || len(w.S) < 2 || w.S[0] != '-':
			ops = append(ops, w)
		case w.S == "--":
			return append(ops, args[i+1:]...), short, long
		case strings.HasPrefix(w.S, "--"):
			name, _, hasVal := strings.Cut(w.S[2:], "=")
			long = append(long, name)
			if !hasVal && slices.Contains(longValued, name) {
				i++
			}
		default:
			for j := 1; j < len(w.S); j++ {
				short += w.S[j : j+1]
				if strings.IndexByte(valued, w.S[j]) >= 0 {
					if j == len(w.S)-1 {
						i++
					}
					break
				}
			}
		}
	}
	return ops, short, long
}

// tarLong are tar's long options that take the next word as their value,
// with the short option each one spells (0 for none).
var tarLong = map[string]byte{
	"file": 'f', "directory": 'C', "files-from": 'T', "exclude-from": 'X', "exclude": 0, "transform": 0,
	"use-compress-program": 'I', "owner": 0, "group": 0, "mode": 0, "mtime": 0, "newer": 'N', "label": 'V',
	"format": 'H', "to-command": 0, "listed-incremental": 'g', "strip-components": 0, "blocking-factor": 'b',
}

// tarValued are tar's short options that take a value.
const tarValued = "bCfFgHIKLNTVX"

// tarReads records what tar reads when it creates or extends an archive
// (c, r, u; -c, --create, --append, --update): its file operands, read
// whole, relative to the -C directory in effect for each; the lists of
// -T and -X; and the archive it writes.
func (a *analyzer) tarReads(args []cword) {
	type operand struct {
		w   cword
		dir *cword // the -C directory in effect, if any
	}
	var ops []operand
	var dir, archive *cword
	create := false
	value := func(opt byte, v cword) {
		switch opt {
		case 'C':
			dir = &v
		case 'f':
			archive = &v
		case 'T', 'X':
			a.readWord(v)
		}
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case !w.Static || w.S == "-" || (i > 0 && !strings.HasPrefix(w.S, "-")):
			ops = append(ops, operand{w, dir})
		case w.S == "--":
			for _, rest := range args[i+1:] {
				ops = append(ops, operand{rest, dir})
			}
			i = len(args)
		case strings.HasPrefix(w.S, "--"):
			name, val, hasVal := strings.Cut(w.S[2:], "=")
			if name == "create" || name == "append" || name == "update" {
				create = true
			}
			opt, valued := tarLong[name]
			switch {
			case hasVal:
				value(opt, litWord(val))
			case valued && i+1 < len(args):
				i++
				value(opt, args[i])
			}
		default: // -czf x, or the old style czf x (values follow in order)
			old := w.S[0] != '-'
			letters := strings.TrimPrefix(w.S, "-")
			for j := 0; j < len(letters); j++ {
				c := letters[j]
				if c == 'c' || c == 'r' || c == 'u' {
					create = true
				}
				if strings.IndexByte(tarValued, c) < 0 {
					continue
				}
				if !old && j < len(letters)-1 {
					value(c, litWord(letters[j+1:]))
					break
				}
				if i+1 < len(args) {
					i++
					value(c, args[i])
				}
				if !old {
					break
				}
			}
		}
	}
	if !create {
		return
	}
	if archive != nil {
		a.writeWord(*archive)
	}
	for _, o := range ops {
		bases := a.bases
		if o.dir != nil {
			bases = a.paths(*o.dir)
		}
		ps := a.pathsIn(bases, o.w)
		for _, p := range ps {
			a.read(p)
		}
		a.trees(ps)
	}
}

// zipReads records what zip archives: its input files and directories
// (read whole with -r, -R or --recurse-paths), and the archive it writes
// (the first operand).
func (a *analyzer) zipReads(args []cword) {
	ops, short, long := operands(args, "bnPtZOsxi", []string{"password", "temp-path", "suffixes", "exclude", "include", "out"})
	if len(ops) == 0 {
		return
	}
	recursive := strings.ContainsAny(short, "rR") || slices.Contains(long, "recurse-paths")
	a.writeWord(ops[0])
	for _, w := range ops[1:] {
		if ps := a.readWord(w); recursive {
			a.trees(ps)
		}
	}
}

// syncLong are rsync's and scp's long options that take the next word as
// their value.
var syncLong = []string{
	"exclude", "include", "filter", "exclude-from", "include-from", "files-from", "rsh", "rsync-path",
	"temp-dir", "compare-dest", "copy-dest", "link-dest", "partial-dir", "log-file", "password-file",
	"out-format", "backup-dir", "suffix", "chmod", "chown", "bwlimit", "timeout", "port", "max-size", "min-size",
}

// syncReads records the local sources of rsync and scp (every operand but
// the last, unless it names a remote host:path), read whole with rsync -r
// or -a (--recursive, --archive) and scp -r.
func (a *analyzer) syncReads(name string, args []cword) {
	valued, recursiveFlags := "eBfTM", "ra"
	if name == "scp" {
		valued, recursiveFlags = "cFiJloPSDX", "r"
	}
	ops, short, long := operands(args, valued, syncLong)
	recursive := strings.ContainsAny(short, recursiveFlags) || slices.Contains(long, "recursive") || slices.Contains(long, "archive")
	if len(ops) < 2 {
		return
	}
	for _, w := range ops[:len(ops)-1] {
		if w.Static && remotePath(w.S) {
			continue
		}
		if ps := a.readWord(w); recursive {
			a.trees(ps)
		}
	}
}

// remotePath reports an rsync or scp operand naming another host
// (host:path, user@host:path, rsync://…).
func remotePath(s string) bool {
	i := strings.IndexByte(s, ':')
	return i > 0 && !strings.Contains(s[:i], "/")
}

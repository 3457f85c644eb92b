package shell

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// The permission view of a command line (tool.Access Commands, Reads,
// Writes, AlwaysAsk), as reference.md section 4 describes it:
//
//   - Commands: every simple command anywhere in the script — across && || ;
//     | |& & and newlines, in subshells, blocks, function bodies, loops,
//     $(…), backticks, here-documents and process substitutions —, with the
//     wrapper commands stripped (timeout, time, nice, nohup, stdbuf, command,
//     builtin, noglob, exec, flag-less xargs) and the leading VAR=val
//     assignments left out. Static words are written without their quotes
//     (and brace-expanded); a word with an expansion is kept as written.
//     Words are joined by single spaces. A command that runs another one
//     (sudo, env, setsid, ionice, xargs with options, find -exec, bash -c,
//     eval) adds the inner command as well, so that a deny rule for it
//     matches and an allow rule must allow both.
//   - Writes: the targets of > >> &> &>> >| <> and >&FILE (not /dev/null,
//     the standard streams or a file descriptor), and the files of tee,
//     touch, rm, mkdir, cp, mv, dd of=, sed -i, sort -o, ….
//   - Redirects: the Writes that are redirection targets.
//   - Reads: the file operands of the commands that read files (cat, head,
//     grep, sed, awk, jq, cp, …), < targets and sourced files, and the
//     paths whose content git prints when they are literal (gitread.go).
//   - RecursiveReads: the directories read whole (grep -r, rg, find -exec,
//     tar c, …: recursive.go); they are in Reads as well.
//   - RepoReads: the repositories whose content a git command prints
//     without naming literal paths (git log -p, git grep, …: gitread.go).
//   - Paths are resolved against the directory the command would run in (cd
//     and pushd are followed; when a cd may or may not apply, both
//     directories count), then ~, braces and globs are expanded against the
//     file system as bash would, and symlinks are resolved (for a path that
//     does not exist, its nearest existing parent). A word whose value is
//     only known when the command runs ($VAR, $(…)) names no path.
//   - AlwaysAsk: a write to a protected path (tool.ProtectedPath), bash/sh/zsh/… -c, a shell reading commands from its input,
//     eval, source of a file outside the working directories (or not known),
//     a command name only known when it runs, shopt -s expand_aliases,
//     a trap whose command is only known when it runs, a word expansion that
//     evaluates a value the analysis cannot see (evaluate.go: the literal
//     text it would expand is analysed too, so deny rules see its commands),
//     braces expanding to more than maxBraceWords words, nesting deeper than
//     maxNesting, a command over 10,000 characters or one that does not parse.

// maxNesting bounds the command strings parsed inside others (bash -c
// "eval '…'").
const maxNesting = 4

// The bounds of one command's analysis: past either, the analysis stops
// where it is (what it found so far stays, so deny rules still see those
// commands) and the command is always asked. A 9,900-character command of
// nested $(…) once took 10 s of CPU and listed 6 MB of commands, since
// every level's command holds every deeper one.
const (
	// maxAnalysisTime bounds the time spent analysing one command line.
	maxAnalysisTime = 200 * time.Millisecond
	// maxCommandsBytes bounds the total text of Commands.
	maxCommandsBytes = 64 << 10
	// maxCommands bounds the number of Commands.
	maxCommands = 1024
)

// shellAccess is the permission view of one command line.
type shellAccess struct {
	Commands       []string
	Reads          []string
	Writes         []string
	Redirects      []string
	RecursiveReads []string
	RepoReads      []string
	AlwaysAsk      string
}

// analyzeAccess builds the permission view of command run in env's current
// directory.
func analyzeAccess(env tool.Env, command string) shellAccess {
	a := &analyzer{
		dirs:  env.WorkingDirs(),
		bases: []string{env.Cwd()},
		home:  homeDir(env),
		seen:  map[string]bool{},
		until: time.Now().Add(maxAnalysisTime),
	}
	switch {
	case len(command) > maxClassifyChars:
		a.whole(command)
		a.ask(fmt.Sprintf("the command is %d characters long; commands over %d characters are not analysed, so they are always asked", len(command), maxClassifyChars))
	default:
		if err := a.script(command, 0); err != nil {
			a.whole(command)
			a.ask(fmt.Sprintf("the command does not parse as a bash script (%v), so its parts cannot be checked", err))
		}
	}
	for _, w := range a.writes {
		if name := tool.ProtectedPath(w); name != "" {
			a.ask(fmt.Sprintf("the command writes %s, a protected path (%s)", w, name))
		}
	}
	return shellAccess{
		Commands: a.commands, Reads: a.reads, Writes: a.writes, Redirects: a.redirects,
		RecursiveReads: a.treeReads, RepoReads: a.repoReads, AlwaysAsk: strings.Join(a.asks, "; "),
	}
}

// homeDir is $HOME of the session's environment, else the daemon's.
func homeDir(env tool.Env) string {
	for _, kv := range env.Environ() {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok && v != "" {
			return v
		}
	}
	h, _ := os.UserHomeDir()
	return h
}

type analyzer struct {
	dirs  []string // the working directories
	home  string
	bases []string // the directories a command may run in (cd is followed)

	commands, reads, writes, asks   []string
	redirects, treeReads, repoReads []string
	seen                            map[string]bool // kind letter + value, for de-duplication
	globRead                        int             // directories and entries read to expand globs (maxGlobEntries)
	resolved                        int             // paths resolved (maxPaths)

	// until is when the analysis must stop (zero: never, for probes);
	// cmdBytes the text of commands so far; over is set once a bound was
	// passed, and the analysis stops.
	until    time.Time
	cmdBytes int
	over     bool
}

func (a *analyzer) add(list *[]string, kind, s string) {
	if s == "" || a.seen[kind+s] {
		return
	}
	if kind == "c" {
		if a.over {
			return
		}
		if len(a.commands) >= maxCommands || a.cmdBytes+len(s) > maxCommandsBytes {
			a.bound(fmt.Sprintf("the command holds more than %d simple commands or %d KB of them", maxCommands, maxCommandsBytes>>10))
			return
		}
		a.cmdBytes += len(s)
	}
	a.seen[kind+s] = true
	*list = append(*list, s)
}

// bound stops the analysis: it passed one of its bounds, said in what.
func (a *analyzer) bound(what string) {
	if a.over {
		return
	}
	a.over = true
	a.ask(fmt.Sprintf("the command is too complex to analyse (%s), so it is always asked", what))
}

// overTime reports whether the analysis must stop, and stops it when its
// time is up.
func (a *analyzer) overTime() bool {
	if a.over {
		return true
	}
	if !a.until.IsZero() && time.Now().After(a.until) {
		a.bound(fmt.Sprintf("analysing it took more than %s", maxAnalysisTime))
	}
	return a.over
}

// whole lists the whole command line as its one command, past the bounds
// of Commands, so that deny rules still see it: it is not analysed.
func (a *analyzer) whole(command string) {
	command = strings.TrimSpace(command)
	if command != "" && !a.seen["c"+command] {
		a.seen["c"+command] = true
		a.commands = append(a.commands, command)
	}
}

func (a *analyzer) command(s string) { a.add(&a.commands, "c", s) }
func (a *analyzer) read(p string)    { a.add(&a.reads, "r", p) }
func (a *analyzer) write(p string)   { a.add(&a.writes, "w", p) }
func (a *analyzer) ask(reason string) {
	a.add(&a.asks, "a", reason)
}

// script parses src and walks every node of it.
func (a *analyzer) script(src string, depth int) error {
	if a.overTime() {
		return nil
	}
	f, err := parseBash(src)
	if err != nil {
		return err
	}
	a.walk(src, f, depth)
	return nil
}

// walk analyses every node of n, parsed from src, and what the word
// expansions in it evaluate (evaluate.go).
func (a *analyzer) walk(src string, n syntax.Node, depth int) {
	var scan evalScan
	syntax.Walk(n, func(n syntax.Node) bool {
		if a.overTime() {
			return false
		}
		scan.node(n)
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Args) > 0 {
				a.call(src, n, depth)
			}
		case *syntax.Stmt:
			a.stdinScript(src, n, depth)
		case *syntax.BinaryCmd:
			a.pipedScript(n, depth)
			a.pipedFind(src, n)
		case *syntax.DeclClause:
			a.command(source(src, n))
		case *syntax.LetClause:
			a.command(source(src, n))
		case *syntax.Redirect:
			a.redirect(n)
		}
		return true
	})
	if a.over {
		return
	}
	reasons, code := scan.finish()
	for _, r := range reasons {
		a.ask(r)
	}
	for _, c := range code {
		if c.Script {
			a.nested("code a builtin runs", c.Text, depth)
		} else {
			a.evaluated(c.Text, depth)
		}
	}
}

// evaluated analyses a literal text that bash expands as words while it
// evaluates a value (the subscript in printf -v 'a[$(rm x)]'): the
// commands in it run, so rules must see them.
func (a *analyzer) evaluated(text string, depth int) {
	if depth+1 > maxNesting {
		a.ask(fmt.Sprintf("a value evaluated as code is nested more than %d levels deep, which is not analysed", maxNesting))
		return
	}
	w, err := parseDocument(text)
	if err != nil {
		return // asked already, as a value that evaluates code
	}
	a.walk(text, w, depth+1)
}

// nested analyses a command string run by bash -c or eval.
func (a *analyzer) nested(who, s string, depth int) {
	if depth+1 > maxNesting {
		a.ask(fmt.Sprintf("%s is nested more than %d levels deep, which is not analysed", who, maxNesting))
		return
	}
	if err := a.script(s, depth+1); err != nil {
		a.command(strings.TrimSpace(s))
		a.ask(fmt.Sprintf("the command string given to %s does not parse (%v)", who, err))
	}
}

// source is the text of node n in src.
func source(src string, n syntax.Node) string {
	start, end := int(n.Pos().Offset()), int(n.End().Offset())
	if start < 0 || end > len(src) || start > end {
		return ""
	}
	return src[start:end]
}

// cword is one word of a simple command.
type cword struct {
	arg
	w    *syntax.Word
	text string // the word as Commands writes it
}

// maxBraceWords bounds the words that brace expansion of one word may
// make ({a,b}{c,d}… doubles with each brace): past it the word is kept as
// written, and the command asked.
const maxBraceWords = 1024

// words turns the words of a simple command into cwords, expanding the
// braces of static words as bash does. over reports a word whose braces
// make more than maxBraceWords words, kept as written.
func words(src string, ws []*syntax.Word) (out []cword, over bool) {
	out = make([]cword, 0, len(ws))
	for _, w := range ws {
		a := wordArg(w)
		if a.Static && strings.Contains(a.S, "{") {
			split := *w // SplitBraces replaces the parts
			if syntax.SplitBraces(&split) && braceWords(&split, maxBraceWords) > maxBraceWords {
				over = true
			} else if fields, err := expand.Fields(&expand.Config{}, w); err == nil && len(fields) != 1 {
				for _, f := range fields {
					lit := &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: f}}}
					out = append(out, cword{arg: arg{S: f, Static: true, Glob: strings.ContainsAny(f, "*?[")}, w: lit, text: f})
				}
				continue
			}
		}
		c := cword{arg: a, w: w, text: a.S}
		if !a.Static {
			c.text = source(src, w)
		}
		out = append(out, c)
	}
	return out, over
}

// braceWords counts the words that brace expansion makes of w (split by
// syntax.SplitBraces), or some number over limit.
func braceWords(w *syntax.Word, limit int) int {
	n := 1
	for _, p := range w.Parts {
		br, ok := p.(*syntax.BraceExp)
		if !ok {
			continue
		}
		k := 0
		if br.Sequence {
			k = sequenceLen(br)
		} else {
			for _, e := range br.Elems {
				k += braceWords(e, limit)
				if k > limit {
					break
				}
			}
		}
		if n *= max(k, 1); n > limit {
			return limit + 1
		}
	}
	return n
}

// sequenceLen is the number of words of {x..y[..step]}.
func sequenceLen(br *syntax.BraceExp) int {
	from, err1 := strconv.ParseInt(br.Elems[0].Lit(), 10, 64)
	to, err2 := strconv.ParseInt(br.Elems[1].Lit(), 10, 64)
	if err1 != nil || err2 != nil {
		from, to = 0, 255 // letters: at most one word per byte value
	}
	step := int64(1)
	if len(br.Elems) > 2 {
		if n, err := strconv.ParseInt(br.Elems[2].Lit(), 10, 64); err == nil && n != 0 {
			step = max(n, -n)
		}
	}
	d := max(to-from, from-to)
	if d/step >= math.MaxInt32 {
		return math.MaxInt32
	}
	return int(d/step) + 1
}

func joinWords(ws []cword) string {
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.text
	}
	return strings.Join(parts, " ")
}

// systemBinDirs are the directories whose commands rules name without the
// directory: /bin/rm is matched as rm too.
var systemBinDirs = map[string]bool{
	"/bin": true, "/usr/bin": true, "/usr/local/bin": true, "/sbin": true, "/usr/sbin": true, "/usr/local/sbin": true,
}

// shellNames are the shells whose -c runs a command string.
var shellNames = map[string]bool{
	"bash": true, "sh": true, "zsh": true, "dash": true, "ksh": true, "ash": true, "mksh": true, "fish": true, "busybox": true,
}

// call handles one simple command. Its leading assignments are left out,
// except those that change what the command runs or loads (PATH, LD_*,
// NODE_OPTIONS, …: see unsafeVar): an allow rule must not match past them
// (deny and ask rules do, reference.md section 4).
func (a *analyzer) call(src string, ce *syntax.CallExpr, depth int) {
	var prefix []string
	for _, as := range ce.Assigns {
		if as.Name == nil || unsafeVar(as.Name.Value) {
			prefix = append(prefix, source(src, as))
		}
	}
	ws, over := words(src, ce.Args)
	if over {
		a.ask(fmt.Sprintf("a word of the command has braces that expand to more than %d words, which is not analysed", maxBraceWords))
	}
	a.simplePrefixed(strings.Join(prefix, " "), ws, depth)
}

// unsafeVar reports environment variables that change which program a
// command runs, what it loads or how it starts.
func unsafeVar(name string) bool {
	if dangerousVar(name) {
		return true
	}
	switch name {
	case "NODE_OPTIONS", "NODE_PATH", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PERL5LIB", "PERL5OPT", "PERLLIB",
		"RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "GCONV_PATH", "ZDOTDIR", "TMPDIR":
		return true
	}
	return strings.HasPrefix(name, "DYLD_") || strings.HasPrefix(name, "npm_config_") || strings.HasPrefix(name, "NPM_CONFIG_")
}

func (a *analyzer) simple(ws []cword, depth int) { a.simplePrefixed("", ws, depth) }

// simplePrefixed handles one simple command; prefix (unsafe assignments)
// is written before it in Commands.
func (a *analyzer) simplePrefixed(prefix string, ws []cword, depth int) {
	ws = a.stripWrappers(ws)
	if len(ws) == 0 {
		return
	}
	if prefix != "" {
		a.command(prefix + " " + joinWords(ws))
	} else {
		a.command(joinWords(ws))
	}
	name := ws[0]
	if !name.Static {
		a.ask(fmt.Sprintf("the command name %s is only known when the command runs", name.text))
		return
	}
	if name.Glob {
		a.ask(fmt.Sprintf("the command name %s is a pattern that is only expanded when the command runs", name.text))
		return
	}
	if dir := path.Dir(name.S); systemBinDirs[dir] {
		// /usr/bin/rm x is rm x to rules as well.
		short := append([]cword{{arg: arg{S: path.Base(name.S), Static: true}, text: path.Base(name.S)}}, ws[1:]...)
		a.command(joinWords(short))
	}
	base := path.Base(name.S)
	args := ws[1:]
	switch {
	case shellNames[base]:
		a.shell(base, args, depth)
	case base == "eval":
		a.ask("eval runs its arguments as shell code, which is always asked")
		if s, ok := staticJoin(args); ok && s != "" {
			a.nested("eval", s, depth)
		}
	case base == "source" || base == ".":
		a.source(base, args)
	case base == "cd" || base == "pushd":
		a.cd(args)
	case base == "shopt":
		if s, _ := staticJoin(args); strings.Contains(s, "-s") && strings.Contains(s, "expand_aliases") {
			a.ask("shopt -s expand_aliases lets aliases change what later commands run")
		}
	case base == "trap":
		a.trap(args, depth)
	}
	for _, inner := range innerCommands(base, args) {
		if depth+1 > maxNesting {
			a.ask(fmt.Sprintf("%s is nested more than %d levels deep, which is not analysed", base, maxNesting))
			break
		}
		a.simple(inner, depth+1)
	}
	a.files(base, args)
}

// staticJoin joins static words with spaces.
func staticJoin(ws []cword) (string, bool) {
	parts := make([]string, len(ws))
	for i, w := range ws {
		if !w.Static {
			return "", false
		}
		parts[i] = w.S
	}
	return strings.Join(parts, " "), true
}

// shell handles bash, sh, …: -c runs a command string, and a shell given
// no script (or -s) reads its commands from its standard input.
func (a *analyzer) shell(name string, args []cword, depth int) {
	if name == "busybox" {
		if len(args) == 0 || !args[0].Static || !shellNames[args[0].S] || args[0].S == "busybox" {
			return
		}
		name, args = args[0].S, args[1:]
	}
	cmdString, stdin := false, false
	askString := func() {
		a.ask(fmt.Sprintf("%s -c runs a command string as a new shell script, which is always asked", name))
	}
	for i := 0; i < len(args); i++ {
		w := args[i]
		option := w.Static && len(w.S) > 1 && (w.S[0] == '-' || w.S[0] == '+') && w.S != "--"
		switch {
		case w.Static && w.S == "--":
			continue
		case option && strings.HasPrefix(w.S, "--"):
			if w.S == "--rcfile" || w.S == "--init-file" {
				i++
			}
			continue
		case option:
			if w.S[0] == '-' && strings.ContainsRune(w.S[1:], 'c') {
				cmdString = true
			}
			if w.S[0] == '-' && strings.ContainsRune(w.S[1:], 's') {
				stdin = true
			}
			if last := w.S[len(w.S)-1]; last == 'o' || last == 'O' {
				i++ // -o OPTION, -O SHOPT
			}
			continue
		}
		// The first operand.
		switch {
		case cmdString:
			askString()
			if w.Static {
				a.nested(name+" -c", w.S, depth)
			}
		case stdin:
			a.ask(fmt.Sprintf("%s -s reads the commands it runs from its standard input, which cannot be checked", name))
		}
		return // otherwise a script file: a command like any other
	}
	switch {
	case cmdString:
		askString()
		return
	case stdin:
		a.ask(fmt.Sprintf("%s -s reads the commands it runs from its standard input, which cannot be checked", name))
		return
	}
	a.ask(fmt.Sprintf("%s without a script reads the commands it runs from its standard input, which cannot be checked", name))
}

// trap handles trap ACTION SIGNAL…: the action is a command string the
// shell runs later, analysed like eval's (an action only known when the
// command runs is asked).
func (a *analyzer) trap(args []cword, depth int) {
	ops := args[skipOptions(args, ""):]
	if len(ops) < 2 {
		return // trap, trap -p, trap SIGNAL: nothing is set to run
	}
	switch act := ops[0]; {
	case !act.Static:
		a.ask(fmt.Sprintf("trap sets a command only known when the command runs (%s)", act.text))
	case act.S != "" && act.S != "-":
		a.nested("trap", act.S, depth)
	}
}

// source handles source and `.`: the file is read and run in this shell.
func (a *analyzer) source(name string, args []cword) {
	if len(args) == 0 {
		return
	}
	ps := a.paths(args[0])
	if ps == nil {
		a.ask(fmt.Sprintf("%s runs the commands of a file only known when the command runs", name))
		return
	}
	for _, p := range ps {
		a.read(p)
		if !within(a.dirs, p) {
			a.ask(fmt.Sprintf("%s runs the commands of %s, outside the working directories", name, p))
		}
	}
}

// cd follows a cd or pushd: later relative paths may be relative to its
// target, or (in a subshell, or after a failed cd) to the directory before.
func (a *analyzer) cd(args []cword) {
	var ops []cword
	for _, w := range args {
		if w.Static && (w.S == "--" || w.S == "-L" || w.S == "-P" || w.S == "-e" || w.S == "-@" || w.S == "-n") {
			continue
		}
		ops = append(ops, w)
	}
	if len(ops) == 0 {
		if a.home != "" {
			a.addBase(a.home)
		}
		return
	}
	if ops[0].Static && ops[0].S == "-" {
		return // $OLDPWD: one of the bases already
	}
	for _, p := range a.paths(ops[0]) {
		a.addBase(p)
	}
}

func (a *analyzer) addBase(p string) {
	if !slices.Contains(a.bases, p) && len(a.bases) < 16 {
		a.bases = append(a.bases, p)
	}
}

// redirect records the file a redirection reads or writes.
func (a *analyzer) redirect(r *syntax.Redirect) {
	if r.Word == nil {
		return
	}
	target := wordArg(r.Word)
	w := cword{arg: target, w: r.Word}
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.AppClob:
		a.redirectTo(w)
	case syntax.DplOut:
		if target.Static && (isFD(target.S) || target.S == "-" || strings.HasSuffix(target.S, "-") && isFD(strings.TrimSuffix(target.S, "-"))) {
			return
		}
		a.redirectTo(w)
	case syntax.RdrIn:
		a.readWord(w)
	case syntax.RdrInOut:
		a.readWord(w)
		a.redirectTo(w)
	}
}

// redirectTo records a file a redirection writes, in Writes and Redirects.
func (a *analyzer) redirectTo(w cword) {
	for _, p := range a.paths(w) {
		a.write(p)
		a.add(&a.redirects, "d", p)
	}
}

// harmless are the files a command may write or read without touching a file.
func harmless(p string) bool {
	switch p {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty", "/dev/zero", "/dev/random", "/dev/urandom", "-":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") || strings.HasPrefix(p, "/proc/self/fd/")
}

func (a *analyzer) writeWord(w cword) {
	for _, p := range a.paths(w) {
		a.write(p)
	}
}

// readWord records the files a word names as read, and returns them.
func (a *analyzer) readWord(w cword) []string {
	ps := a.paths(w)
	for _, p := range ps {
		a.read(p)
	}
	return ps
}

// paths resolves a path word against every possible current directory.
func (a *analyzer) paths(w cword) []string { return a.pathsIn(a.bases, w) }

// maxGlobEntries bounds the directories and entries one analysis reads
// to expand globs (cat /*/*/* would read thousands of directories): past
// it, a glob names the directory before its first pattern, read whole.
const maxGlobEntries = 4096

var errGlobBudget = errors.New("too many directories read to expand globs")

// maxPaths bounds the paths one analysis resolves (each costs system
// calls): past it, a word names the directory before its first pattern,
// read whole, and the command is asked.
const maxPaths = 1024

// pathsIn resolves a path word against each of bases: ~, braces and
// globs expanded as bash would, symlinks resolved. It returns nil for a
// word whose value is only known at run time, and for the harmless device
// files.
func (a *analyzer) pathsIn(bases []string, w cword) []string {
	if w.w == nil || !staticPath(w.w) {
		return nil
	}
	if w.Static && (harmless(w.S) || w.S == "{}") { // {}: find -exec's file name
		return nil
	}
	var out []string
	readDir := func(dir string) ([]fs.DirEntry, error) {
		if a.globRead >= maxGlobEntries {
			return nil, errGlobBudget
		}
		es, err := os.ReadDir(dir)
		a.globRead += 1 + len(es)
		return es, err
	}
	for _, base := range bases {
		cfg := &expand.Config{
			Env:      expand.ListEnviron("PWD="+base, "HOME="+a.home),
			ReadDir2: readDir,
		}
		fields, err := expand.Fields(cfg, w.w)
		if errors.Is(err, errGlobBudget) || err == nil && a.resolved+len(fields) > maxPaths {
			fields, err = a.globPrefix(cfg, w.w, base)
		}
		if err != nil {
			continue
		}
		a.resolved += len(fields)
		for _, f := range fields {
			if f == "" || harmless(f) {
				continue
			}
			if !filepath.IsAbs(f) {
				f = filepath.Join(base, f)
			}
			if p := tool.RealPath(f); !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
		if filepath.IsAbs(wordArg(w.w).S) {
			break // the same from every base
		}
	}
	return out
}

// globPrefix is what a word too costly to expand and resolve names
// instead: the directory before its first pattern, read whole; the command
// is asked, since what it names is not checked one by one.
func (a *analyzer) globPrefix(cfg *expand.Config, w *syntax.Word, base string) ([]string, error) {
	lit, err := expand.Literal(cfg, w)
	if err != nil {
		return nil, err
	}
	dir := globDir(lit)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	a.ask(fmt.Sprintf("the command names more paths than are checked one by one (%d), so a pattern counts as its whole directory", maxPaths))
	rp := tool.RealPath(dir)
	a.read(rp)
	a.trees([]string{rp})
	return []string{dir}, nil
}

// staticPath reports whether a word's value is known before it runs: no
// parameter, command or arithmetic expansion (a leading ~ is fine).
func staticPath(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// skipOptions returns the index of the first operand of ws: options are
// static words starting with "-" (not "-" itself); "--" ends them. A short
// option in valued takes a value (attached, or the next word); a long one
// in longValued takes the next word unless written --name=value.
func skipOptions(ws []cword, valued string, longValued ...string) int {
	return eachOption(ws, valued, longValued, nil)
}

// eachOption is skipOptions that also hands each short option of valued,
// with its value, to fn (when fn is not nil).
func eachOption(ws []cword, valued string, longValued []string, fn func(opt byte, value cword)) int {
	for i := 0; i < len(ws); i++ {
		w := ws[i]
		if !w.Static || !strings.HasPrefix(w.S, "-") || w.S == "-" {
			return i
		}
		if w.S == "--" {
			return i + 1
		}
		if strings.HasPrefix(w.S, "--") {
			if !strings.Contains(w.S, "=") && slices.Contains(longValued, w.S[2:]) {
				i++
			}
			continue
		}
		for j := 1; j < len(w.S); j++ {
			if strings.IndexByte(valued, w.S[j]) < 0 {
				continue
			}
			switch {
			case j < len(w.S)-1:
				if fn != nil {
					fn(w.S[j], litWord(w.S[j+1:]))
				}
			case i+1 < len(ws):
				i++ // the value is the next word
				if fn != nil {
					fn(w.S[j], ws[i])
				}
			}
			break
		}
	}
	return len(ws)
}

// stripWrappers removes the wrapper commands that run the rest of their
// words as a command: timeout, time, nice, nohup, stdbuf, command (not -v),
// builtin, noglob, exec and xargs without options. A wrapper with nothing
// to run is kept.
func (a *analyzer) stripWrappers(ws []cword) []cword {
	for len(ws) > 1 && ws[0].Static {
		rest := ws[1:]
		k := -1
		switch path.Base(ws[0].S) {
		case "timeout":
			if k = skipOptions(rest, "sk", "signal", "kill-after"); k < len(rest) {
				k++ // the duration
			}
		case "time":
			k = skipOptions(rest, "fo", "format", "output")
			for i := 0; i < k; i++ {
				switch w := rest[i]; {
				case w.Static && (w.S == "-o" || w.S == "--output") && i+1 < k:
					a.writeWord(rest[i+1])
				case w.Static && strings.HasPrefix(w.S, "--output="):
					a.writeWord(litWord(strings.TrimPrefix(w.S, "--output=")))
				}
			}
		case "nice":
			k = skipOptions(rest, "n", "adjustment")
		case "nohup", "builtin", "noglob":
			k = skipOptions(rest, "")
		case "stdbuf":
			k = skipOptions(rest, "ioe", "input", "output", "error")
		case "exec":
			k = skipOptions(rest, "a")
		case "command":
			k = skipOptions(rest, "")
			for _, w := range rest[:k] {
				if w.S != "-p" && w.S != "--" {
					k = -1 // command -v/-V only looks the name up
					break
				}
			}
		case "xargs":
			if !rest[0].Static || !strings.HasPrefix(rest[0].S, "-") {
				k = 0
			}
		}
		if k < 0 || k >= len(rest) {
			return ws
		}
		ws = rest[k:]
	}
	return ws
}

// litWord is a static word holding s.
func litWord(s string) cword {
	return cword{arg: arg{S: s, Static: true}, w: &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: s}}}, text: s}
}

// innerCommands returns the commands that a runner runs which rules should
// also see: sudo, doas, env, setsid, ionice and xargs with options run the
// rest of their words; find runs its -exec, -execdir, -ok and -okdir
// commands.
func innerCommands(name string, args []cword) [][]cword {
	k := -1
	switch name {
	case "sudo":
		k = skipOptions(args, "CDghpRrtTUu", "chdir", "close-from", "group", "host", "prompt", "role", "type", "other-user", "user", "command-timeout")
	case "doas":
		k = skipOptions(args, "Cu")
	case "env":
		k = skipOptions(args, "uCS", "unset", "chdir", "split-string")
		for k < len(args) && args[k].Static && strings.Contains(args[k].S, "=") && !strings.HasPrefix(args[k].S, "=") {
			k++ // VAR=val
		}
	case "setsid":
		k = skipOptions(args, "")
	case "ionice":
		k = skipOptions(args, "cnpPu", "class", "classdata", "pid", "pgid", "uid")
	case "xargs":
		k = skipOptions(args, "adEILnPs", "arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "process-slot-var")
		if k == 0 {
			return nil // stripped as a wrapper already
		}
	case "find":
		return findExecs(args)
	}
	if k < 0 || k >= len(args) {
		return nil
	}
	return [][]cword{args[k:]}
}

// findExecs returns the commands of find's -exec, -execdir, -ok and
// -okdir primaries, each up to its ; or +.
func findExecs(args []cword) [][]cword {
	var out [][]cword
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static || (w.S != "-exec" && w.S != "-execdir" && w.S != "-ok" && w.S != "-okdir") {
			continue
		}
		end := i + 1
		for end < len(args) && !(args[end].Static && (args[end].S == ";" || args[end].S == "+")) {
			end++
		}
		if end > i+1 {
			out = append(out, args[i+1:end])
		}
		i = end
	}
	return out
}

// fileSpec says which words of a command name files it reads or writes.
type fileSpec struct {
	// valued are the short options that take a value (attached or next).
	valued string
	// readFlags are the short options whose value is a file read (grep -f).
	readFlags string
	// longRead are the long options whose value is a file read (--file).
	longRead []string
	// program: the first operand is a pattern or program, unless one of
	// progFlags (short) or progLong gives it.
	program   bool
	progFlags string
	progLong  []string
	// ops says what the operands are: read, write, or both.
	ops opKind
	// recFlags (short) and recLong (long, or NAME=VALUE) make the command
	// read its directory operands whole (grep -r, cp -a); recValue is a
	// short option whose value "recurse" does (grep -d recurse). alwaysRec
	// commands always do (rg). recCwd: read whole with no operand, the
	// current directory is (grep -r PAT, rg PAT).
	recFlags          string
	recLong           []string
	recValue          byte
	alwaysRec, recCwd bool
}

type opKind int

const (
	opRead      opKind = iota // every operand is read
	opWrite                   // every operand is written (created, changed or removed)
	opCopy                    // cp: sources read, the last operand (or -t DIR) written
	opMove                    // mv: sources read and removed, the last operand (or -t DIR) written
	opMode                    // chmod, chown, chgrp: the first operand is a mode or owner
	opFirstRead               // uniq, xxd: the first operand is read, a second written
)

var grepSpec = fileSpec{
	valued: "ABCDdefm", readFlags: "f", longRead: []string{"file"}, program: true, progFlags: "ef", progLong: []string{"regexp", "file"},
	recFlags: "rR", recLong: []string{"recursive", "dereference-recursive", "directories=recurse"}, recValue: 'd', recCwd: true,
}

// fileSpecs are the commands whose operands are files.
var fileSpecs = map[string]fileSpec{
	"cat": {}, "tac": {valued: "s"}, "nl": {valued: "bdfhilnsvw"}, "head": {valued: "nc"}, "tail": {valued: "ncs"},
	"less": {valued: "bhjkoOpPtTxyz#"}, "more": {valued: "n"}, "wc": {}, "cut": {valued: "bcdf"},
	"sort": {valued: "kStTo"}, "uniq": {valued: "fsw", ops: opFirstRead}, "diff": {valued: "CUFIxXLS", readFlags: "X", longRead: []string{"from-file", "to-file", "exclude-from"}, recFlags: "r", recLong: []string{"recursive"}},
	"cmp": {valued: "in"}, "comm": {}, "paste": {valued: "d"}, "join": {valued: "12aeojt"}, "file": {valued: "efFmP"},
	"stat": {valued: "c"}, "strings": {valued: "ndtTe"}, "od": {valued: "AjNtw"}, "hexdump": {valued: "eEfns"},
	"xxd": {valued: "cgloAsn", ops: opFirstRead}, "base64": {valued: "w"}, "base32": {valued: "w"},
	"rev": {}, "fold": {valued: "w"}, "expand": {valued: "t"}, "unexpand": {valued: "t"}, "column": {valued: "cstoRNHWE"},
	"md5sum": {}, "sha1sum": {}, "sha224sum": {}, "sha256sum": {}, "sha384sum": {}, "sha512sum": {}, "b2sum": {}, "cksum": {},
	"grep": grepSpec, "egrep": grepSpec, "fgrep": grepSpec, "zgrep": grepSpec,
	"rg":   {valued: "ABCEefgjmMrtT", readFlags: "f", longRead: []string{"file", "ignore-file"}, program: true, progFlags: "ef", progLong: []string{"regexp", "file", "files", "type-list"}, alwaysRec: true, recCwd: true},
	"ag":   {valued: "ABCGgmpW", program: true, progFlags: "g", alwaysRec: true, recCwd: true},
	"ack":  {valued: "ABCgm", program: true, progFlags: "g", longRead: []string{"ackrc"}, alwaysRec: true, recCwd: true},
	"sed":  {valued: "efl", readFlags: "f", longRead: []string{"file"}, program: true, progFlags: "ef", progLong: []string{"expression", "file"}},
	"awk":  {valued: "fvF", readFlags: "f", longRead: []string{"file"}, program: true, progFlags: "f", progLong: []string{"file"}},
	"gawk": {valued: "fvFeEil", readFlags: "fEi", longRead: []string{"file", "include", "exec"}, program: true, progFlags: "fE", progLong: []string{"file", "exec", "source"}},
	"mawk": {valued: "fvF", readFlags: "f", program: true, progFlags: "f"},
	"jq":   {valued: "fL", readFlags: "f", longRead: []string{"from-file"}, program: true, progFlags: "f", progLong: []string{"from-file"}},
	"zcat": {}, "bzcat": {}, "xzcat": {}, "zless": {}, "source": {}, ".": {},
	"tee": {ops: opWrite}, "touch": {valued: "dtr", readFlags: "r", ops: opWrite}, "rm": {ops: opWrite},
	"rmdir": {ops: opWrite}, "mkdir": {valued: "m", ops: opWrite}, "truncate": {valued: "sr", readFlags: "r", ops: opWrite},
	"shred": {valued: "nsu", ops: opWrite}, "unlink": {ops: opWrite},
	"cp": {valued: "tS", ops: opCopy, recFlags: "rRa", recLong: []string{"recursive", "archive"}}, "mv": {valued: "tS", ops: opMove}, "install": {valued: "tSmogbCD", ops: opCopy},
	"ln":    {valued: "tS", ops: opCopy},
	"chmod": {ops: opMode}, "chown": {ops: opMode}, "chgrp": {ops: opMode},
}

// files records the files a command's operands read and write.
func (a *analyzer) files(name string, args []cword) {
	switch name {
	case "dd":
		for _, w := range args {
			if !w.Static {
				continue
			}
			if v, ok := strings.CutPrefix(w.S, "if="); ok {
				a.readWord(litWord(v))
			}
			if v, ok := strings.CutPrefix(w.S, "of="); ok {
				a.writeWord(litWord(v))
			}
		}
		return
	case "source", ".":
		return // source() resolved the file
	case "jq":
		args = jqArgs(a, args)
	case "git":
		a.gitReads(args)
		return
	case "find":
		a.findReads(args)
		return
	case "tar":
		a.tarReads(args)
		return
	case "zip":
		a.zipReads(args)
		return
	case "rsync", "scp":
		a.syncReads(name, args)
		return
	}
	spec, ok := fileSpecs[name]
	if !ok {
		return
	}
	var ops []cword
	var target *cword // -t DIR of cp, mv, install, ln
	programGiven, inPlace, sortOut := false, false, []cword(nil)
	recursive := spec.alwaysRec
	for i := 0; i < len(args); i++ {
		w := args[i]
		if !w.Static || !strings.HasPrefix(w.S, "-") || w.S == "-" || (spec.ops == opMode && len(ops) == 0 && isModeLike(w.S)) {
			ops = append(ops, w)
			continue
		}
		if w.S == "--" {
			ops = append(ops, args[i+1:]...)
			break
		}
		if long, ok := strings.CutPrefix(w.S, "--"); ok {
			key, val, hasVal := strings.Cut(long, "=")
			if slices.Contains(spec.progLong, key) {
				programGiven = true
			}
			if slices.Contains(spec.recLong, key) || hasVal && slices.Contains(spec.recLong, key+"="+val) {
				recursive = true
			}
			isRead := slices.Contains(spec.longRead, key)
			var value *cword
			if hasVal {
				v := litWord(val)
				value = &v
			} else if isRead && i+1 < len(args) {
				i++
				value = &args[i]
			}
			switch {
			case value == nil:
			case isRead:
				a.readWord(*value)
			case key == "target-directory":
				target = value
			case key == "output" && name == "sort":
				sortOut = append(sortOut, *value)
			case key == "reference":
				a.readWord(*value)
			}
			if key == "in-place" && name == "sed" {
				inPlace = true
			}
			continue
		}
		for j := 1; j < len(w.S); j++ {
			c := w.S[j]
			if strings.IndexByte(spec.progFlags, c) >= 0 {
				programGiven = true
			}
			if strings.IndexByte(spec.recFlags, c) >= 0 {
				recursive = true
			}
			if name == "sed" && c == 'i' {
				inPlace = true
				break // -i[SUFFIX]
			}
			if strings.IndexByte(spec.valued, c) < 0 {
				continue
			}
			var value cword
			if j < len(w.S)-1 {
				value = litWord(w.S[j+1:])
			} else if i+1 < len(args) {
				i++
				value = args[i]
			} else {
				break
			}
			switch {
			case strings.IndexByte(spec.readFlags, c) >= 0:
				a.readWord(value)
			case c == 't' && (spec.ops == opCopy || spec.ops == opMove):
				target = &value
			case c == 'o' && name == "sort":
				sortOut = append(sortOut, value)
			case c == spec.recValue && value.Static && value.S == "recurse":
				recursive = true
			}
			break
		}
	}
	if spec.program && !programGiven && len(ops) > 0 {
		ops = ops[1:]
	}
	for _, w := range sortOut {
		a.writeWord(w)
	}
	if recursive && spec.recCwd && len(ops) == 0 {
		a.cwdTree(a.bases)
	}
	switch spec.ops {
	case opRead:
		for _, w := range ops {
			if ps := a.readWord(w); recursive {
				a.trees(ps)
			}
			if inPlace {
				a.writeWord(w)
			}
		}
	case opWrite:
		for _, w := range ops {
			a.writeWord(w)
		}
	case opMode:
		if len(ops) > 0 {
			for _, w := range ops[1:] {
				a.writeWord(w)
			}
		}
	case opFirstRead:
		if len(ops) > 0 {
			a.readWord(ops[0])
		}
		if len(ops) > 1 {
			a.writeWord(ops[1])
		}
	case opCopy, opMove:
		srcs := ops
		if target == nil && len(ops) > 1 {
			srcs, target = ops[:len(ops)-1], &ops[len(ops)-1]
		}
		if name == "ln" {
			srcs = nil // the link's target is not opened
		}
		for _, w := range srcs {
			if ps := a.readWord(w); recursive {
				a.trees(ps)
			}
			if spec.ops == opMove {
				a.writeWord(w)
			}
		}
		if target != nil {
			a.copyTarget(*target, srcs)
		}
	}
}

// copyTarget records the files cp or mv writes: into a directory, each
// source's name in it; else the target itself.
func (a *analyzer) copyTarget(target cword, srcs []cword) {
	for _, dst := range a.paths(target) {
		fi, err := os.Stat(dst)
		if err != nil || !fi.IsDir() || len(srcs) == 0 {
			a.write(dst)
			continue
		}
		for _, src := range srcs {
			for _, p := range a.paths(src) {
				a.write(filepath.Join(dst, filepath.Base(p)))
			}
		}
	}
}

// isModeLike reports a chmod mode such as -x or -w (an option-looking operand).
func isModeLike(s string) bool {
	return len(s) > 1 && strings.Trim(s[1:], "rwxXst") == ""
}

// jqArgs removes jq's --arg/--argjson NAME VALUE pairs and records the
// files of --slurpfile/--rawfile NAME FILE.
func jqArgs(a *analyzer, args []cword) []cword {
	out := make([]cword, 0, len(args))
	for i := 0; i < len(args); i++ {
		w := args[i]
		if w.Static {
			switch w.S {
			case "--arg", "--argjson":
				i += 2
				continue
			case "--slurpfile", "--rawfile":
				if i+2 < len(args) {
					a.readWord(args[i+2])
				}
				i += 2
				continue
			case "--args", "--jsonargs":
				return out // the rest are arguments, not files
			}
		}
		out = append(out, w)
	}
	return out
}

// stdinShell reports whether a simple command (wrappers stripped) is a
// shell reading its commands from its standard input.
func (a *analyzer) stdinShell(src string, ce *syntax.CallExpr) bool {
	ws, _ := words(src, ce.Args)
	ws = a.stripWrappers(ws)
	if len(ws) == 0 || !ws[0].Static || !shellNames[path.Base(ws[0].S)] {
		return false
	}
	probe := &analyzer{seen: map[string]bool{}, bases: a.bases, home: a.home, dirs: a.dirs}
	probe.shell(path.Base(ws[0].S), ws[1:], maxNesting)
	for _, r := range probe.asks {
		if strings.Contains(r, "standard input") {
			return true
		}
	}
	return false
}

// stdinScript analyses the here-document or here-string given to a shell
// that reads its commands from its input (bash <<EOF … EOF, sh <<< "…").
func (a *analyzer) stdinScript(src string, st *syntax.Stmt, depth int) {
	ce, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 || len(st.Redirs) == 0 {
		return
	}
	var scripts []string
	for _, r := range st.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc != nil {
				var sb strings.Builder
				for _, part := range r.Hdoc.Parts {
					if l, ok := part.(*syntax.Lit); ok {
						sb.WriteString(l.Value)
					} else {
						sb.WriteString(source(src, part))
					}
				}
				scripts = append(scripts, sb.String())
			}
		case syntax.WordHdoc:
			if w := wordArg(r.Word); w.Static {
				scripts = append(scripts, w.S)
			} else {
				scripts = append(scripts, source(src, r.Word))
			}
		}
	}
	if len(scripts) == 0 || !a.stdinShell(src, ce) {
		return
	}
	for _, s := range scripts {
		a.nested("a script given to a shell on its input", s, depth)
	}
}

// pipedScript analyses the static text that echo or printf pipe into a
// shell reading its input (echo 'rm x' | sh).
func (a *analyzer) pipedScript(b *syntax.BinaryCmd, depth int) {
	if b.Op != syntax.Pipe && b.Op != syntax.PipeAll {
		return
	}
	x, ok1 := b.X.Cmd.(*syntax.CallExpr)
	y, ok2 := b.Y.Cmd.(*syntax.CallExpr)
	if !ok1 || !ok2 || len(x.Args) < 2 || len(y.Args) == 0 {
		return
	}
	name := wordArg(x.Args[0])
	if !name.Static || (name.S != "echo" && name.S != "printf") {
		return
	}
	var parts []string
	for _, w := range x.Args[1:] {
		wa := wordArg(w)
		if !wa.Static {
			return
		}
		if len(parts) == 0 && strings.HasPrefix(wa.S, "-") && name.S == "echo" {
			continue // echo -e, -n
		}
		parts = append(parts, wa.S)
	}
	if len(parts) == 0 || !a.stdinShell("", y) {
		return
	}
	a.nested("a script piped into a shell", strings.Join(parts, " "), depth)
}

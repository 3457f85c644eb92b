package shell

import (
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// maxClassifyChars is the length over which a command is not parsed (and so
// never read-only).
const maxClassifyChars = 10000

// class is what the static analysis of a command string found.
type class struct {
	// Parsed is false for a command that does not parse or is too long.
	Parsed bool
	// ReadOnly is true when every simple command is a known read-only
	// command with read-only arguments, nothing is redirected to a file,
	// and no word expansion evaluates a value the analysis cannot see
	// (evaluate.go).
	ReadOnly bool
	// Destructive is true when some command deletes or overwrites data
	// that cannot be recovered (rm, dd, git reset --hard, ...).
	Destructive bool
	// Refs are the path-like words of a read-only command, in source order,
	// for the check that it stays inside the working directories.
	Refs []pathRef
	// Last is the name of the command whose exit status is the command's
	// (the last simple command of the last pipeline): "grep", "git diff", ...
	Last string
}

// pathRef is one path-like word.
type pathRef struct {
	// Path is the word's value (empty when Unsure).
	Path string
	// Cd marks the target of cd: later relative paths may be relative to it.
	Cd bool
	// Unsure marks a word whose value is not known statically (an
	// expansion, ~, a glob that may match ..): it cannot be proved inside.
	Unsure bool
	// Glob marks a path with glob characters: the directory before the
	// first one is checked.
	Glob bool
}

// arg is one word of a simple command.
type arg struct {
	// S is the value when Static.
	S string
	// Static is true when the word has no expansion.
	Static bool
	// Quoted is true when any part was quoted (no globbing of those parts).
	Quoted bool
	// Glob is true when an unquoted part has a glob character.
	Glob bool
	// Splits is true when an unquoted expansion may split into several words.
	Splits bool
}

// classCache remembers the classes of recent commands: the pipeline asks for
// a call's attributes, permission and run in turn, and parsing is the
// larger part of that work. Classes are never modified once made.
var classCache = struct {
	mu sync.Mutex // guards m
	m  map[string]class
}{m: map[string]class{}}

// classCacheSize bounds classCache; when full it is emptied.
const classCacheSize = 256

// classify parses command (bash syntax) and classifies it. It never fails:
// a command that does not parse is neither read-only nor known safe.
func classify(command string) class {
	classCache.mu.Lock()
	c, ok := classCache.m[command]
	classCache.mu.Unlock()
	if ok {
		return c
	}
	c = parseClass(command)
	classCache.mu.Lock()
	if len(classCache.m) >= classCacheSize {
		clear(classCache.m)
	}
	classCache.m[command] = c
	classCache.mu.Unlock()
	return c
}

// parsers are bash parsers for reuse: a Bash call parses its command
// several times (classification, analysis, each simple command), and a
// new parser costs more than a short command's parse. A parser keeps
// nothing of the trees it returned (Parse starts afresh).
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// parseBash parses src as a bash script.
func parseBash(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	return p.Parse(strings.NewReader(src), "")
}

// parseDocument parses src as the body of a here-document: the
// expansions in literal text.
func parseDocument(src string) (*syntax.Word, error) {
	p := parsers.Get().(*syntax.Parser)
	defer parsers.Put(p)
	return p.Document(strings.NewReader(src))
}

// parseClass is classify without the cache.
func parseClass(command string) class {
	if len(command) > maxClassifyChars || strings.TrimSpace(command) == "" {
		return class{Destructive: len(command) <= 1<<20 && fallbackDestructive(command)}
	}
	f, err := parseBash(command)
	if err != nil {
		return class{Destructive: fallbackDestructive(command)}
	}
	c := &classifier{ro: true}
	syntax.Walk(f, c.visit)
	if reasons, _ := c.scan.finish(); len(reasons) > 0 {
		c.ro = false
	}
	return class{Parsed: true, ReadOnly: c.ro, Destructive: c.destructive, Refs: c.refs, Last: lastCommand(f.Stmts)}
}

type classifier struct {
	ro          bool
	destructive bool
	refs        []pathRef
	scan        evalScan
}

func (c *classifier) visit(n syntax.Node) bool {
	c.scan.node(n)
	switch n := n.(type) {
	case *syntax.Stmt:
		if n.Coprocess || n.Disown {
			c.ro = false
		}
	case *syntax.CallExpr:
		c.call(n)
	case *syntax.Redirect:
		c.redirect(n)
	case *syntax.FuncDecl, *syntax.CoprocClause, *syntax.TestDecl:
		c.ro = false
	case *syntax.DeclClause:
		for _, a := range n.Args {
			if a.Name == nil || dangerousVar(a.Name.Value) {
				c.ro = false
			}
		}
	case *syntax.Assign:
		if n.Name != nil && dangerousVar(n.Name.Value) {
			c.ro = false
		}
	}
	return true
}

// dangerousVar reports variables whose assignment changes what later
// commands run or read.
func dangerousVar(name string) bool {
	switch name {
	case "PATH", "IFS", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "CDPATH", "HOME", "PAGER", "EDITOR", "VISUAL":
		return true
	}
	return strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "GIT_") || strings.HasPrefix(name, "BASH_FUNC")
}

func (c *classifier) redirect(r *syntax.Redirect) {
	target := wordArg(r.Word)
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return
	case syntax.RdrIn:
		c.addPath(target, false)
		return
	case syntax.DplIn:
		if target.Static && (isFD(target.S) || target.S == "-") {
			return
		}
		c.ro = false
		return
	case syntax.DplOut:
		if target.Static && (isFD(target.S) || target.S == "-") {
			return
		}
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll:
		if target.Static && target.S == "/dev/null" {
			return
		}
	}
	c.ro = false
}

func isFD(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func (c *classifier) call(ce *syntax.CallExpr) {
	if len(ce.Args) == 0 {
		return // assignments only: checked as *syntax.Assign
	}
	args := make([]arg, len(ce.Args))
	for i, w := range ce.Args {
		args[i] = wordArg(w)
	}
	if destructiveCall(args) {
		c.destructive = true
	}
	if !args[0].Static || strings.Contains(args[0].S, "/") || args[0].Glob {
		c.ro = false
		return
	}
	name := args[0].S
	check, ok := readOnlyCommands[name]
	if !ok || !check(args[1:]) {
		c.ro = false
		return
	}
	if c.ro {
		c.collectPaths(name, args[1:])
	}
}

// wordArg describes a word. Quote removal is done for static words.
func wordArg(w *syntax.Word) arg {
	a := arg{Static: true}
	if w == nil {
		return arg{}
	}
	var sb strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			v := p.Value
			if strings.ContainsAny(v, "*?") {
				a.Glob = true
			}
			if i := strings.IndexByte(v, '['); i >= 0 && strings.IndexByte(v[i:], ']') > 0 {
				a.Glob = true
			}
			if strings.ContainsAny(v, "{") {
				a.Glob = true // brace expansion: treated like a glob
			}
			sb.WriteString(unescape(v))
		case *syntax.SglQuoted:
			a.Quoted = true
			if p.Dollar {
				a.Static = false
			}
			sb.WriteString(p.Value)
		case *syntax.DblQuoted:
			a.Quoted = true
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					sb.WriteString(unescapeDbl(l.Value))
				} else {
					a.Static = false
				}
			}
		default:
			a.Static = false
			a.Splits = true
		}
	}
	if a.Static {
		a.S = sb.String()
		if len(w.Parts) > 0 {
			if l, ok := w.Parts[0].(*syntax.Lit); ok && strings.HasPrefix(l.Value, "~") {
				a.Static = false // tilde expansion
				a.S = ""
			}
		}
	}
	return a
}

func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

func unescapeDbl(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// lastCommand names the command whose exit status a script ends with: the
// last simple command of the last statement ("git diff" for git).
func lastCommand(stmts []*syntax.Stmt) string {
	if len(stmts) == 0 {
		return ""
	}
	st := stmts[len(stmts)-1]
	if st.Negated || st.Background {
		return ""
	}
	switch cmd := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		return lastCommand([]*syntax.Stmt{cmd.Y})
	case *syntax.Subshell:
		return lastCommand(cmd.Stmts)
	case *syntax.Block:
		return lastCommand(cmd.Stmts)
	case *syntax.TestClause:
		return "[["
	case *syntax.TimeClause:
		if cmd.Stmt != nil {
			return lastCommand([]*syntax.Stmt{cmd.Stmt})
		}
	case *syntax.CallExpr:
		if len(cmd.Args) == 0 {
			return ""
		}
		args := make([]arg, len(cmd.Args))
		for i, w := range cmd.Args {
			args[i] = wordArg(w)
		}
		if !args[0].Static {
			return ""
		}
		name := path.Base(args[0].S)
		if name == "git" {
			if sub, _, ok := gitSubcommand(args[1:]); ok {
				return "git " + sub
			}
		}
		return name
	}
	return ""
}

// exitOneMeaning says what exit status 1 of the last command means when it
// is not an error (reference.md: grep, rg, find, diff, test, [, git diff,
// git grep), or "" when exit 1 is an error.
func exitOneMeaning(last string) string {
	switch last {
	case "grep", "egrep", "fgrep", "rg", "git grep":
		return "no matches found"
	case "diff", "git diff", "cmp":
		return "the inputs differ"
	case "test", "[", "[[":
		return "the condition is false"
	case "find":
		return "some paths could not be visited"
	}
	return ""
}

// fallbackDestructive is the destructive check for a command that does not
// parse: any word that names a destructive command, with the words after it.
func fallbackDestructive(command string) bool {
	words := strings.FieldsFunc(command, func(r rune) bool {
		return strings.ContainsRune(" \t\n;&|()`$<>{}\"'", r)
	})
	for i, w := range words {
		if name := path.Base(w); !mayDestroy[name] && !wrappers[name] && !strings.HasPrefix(name, "mkfs") {
			continue // not a command that can be destructive, whatever its arguments
		}
		rest := make([]arg, 0, 32)
		for _, x := range words[i:min(len(words), i+32)] {
			rest = append(rest, arg{S: x, Static: true})
		}
		if destructiveCall(rest) {
			return true
		}
	}
	return false
}

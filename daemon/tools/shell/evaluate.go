package shell

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bash runs code while it expands some words (issue 10, item 2). What the
// manual says recurses, which this file follows:
//
//   - Arithmetic evaluation — $(( )), $[ ], (( )), let, for (( ;; )), the
//     operands of [[ … ]]'s -eq -ne -lt -le -gt -ge, the subscripts of
//     indexed arrays (${a[i]}, a[i]=v, a=([i]=v)), the offset and length of
//     ${v:offset:length}, and a value given to a variable declared -i —
//     evaluates the value of every variable it names, or that an expansion
//     puts into it, as an expression in turn, and word-expands the
//     subscripts it meets there: a value such as a[$(cmd)] runs cmd.
//   - A variable name may carry a subscript, evaluated the same way, where
//     a builtin assigns, tests or removes a variable by name (printf -v,
//     read, mapfile and readarray, getopts, wait -p, compgen -V, unset,
//     declare and its kin, test and [ with -v or -R, [[ -v ]], [[ -R ]]),
//     in the target of a nameref (declare -n), and in the indirection
//     ${!name}.
//   - ${v@P} expands v's value as a prompt string: its backslash escapes
//     (\nnn can make a $), then parameter expansion, command substitution
//     and arithmetic. (${v@E} only decodes escapes, as $'…' does, and runs
//     nothing.)
//   - PS4 (under set -x) and PS0–PS2 are expanded as prompts, and
//     PROMPT_COMMAND, mapfile -C and compgen -C are run as shell code.
//
// test and [ read -eq's operands as plain integers, and printf its numeric
// arguments: neither evaluates them.
//
// A use is safe when the analysis sees the value: a literal of the command
// itself that holds no $ or ` ($((1+2)), let x=1, printf -v 'a[0]'), whose
// names are all safe; or a variable whose every assignment in the script is
// a literal, one of which surely ran before the use — a top-level
// statement before it, or the word list of the for loop around it — and
// whose values are plain numbers (arithmetic), plain names (a name's
// target) or free of $, ` and \ (a prompt). Any other use makes the command
// not read-only and always asked; a literal text that would be expanded as
// code is handed on, so that its commands are analysed as well (deny rules
// still match them).

// evalCtx is how bash evaluates a value.
type evalCtx uint8

const (
	evalArith  evalCtx = iota // as an arithmetic expression
	evalName                  // as a variable name (whose subscript is arithmetic)
	evalPrompt                // as a prompt string
)

// evalUse is one place where bash evaluates a value.
type evalUse struct {
	at   uint    // offset of the use in the script
	ctx  evalCtx // how the value is evaluated
	name string  // the variable whose value is evaluated, or ""
	text string  // the literal text evaluated (arithmetic), when name is ""
	what string  // what evaluates it, for the reason: "$(( ))", "printf -v"
}

// varInfo is what a script assigns to one variable.
type varInfo struct {
	values  []string // the literal values assigned anywhere
	unknown bool     // an assignment's value is not a literal, or too many
	sure    []span   // where one of the literal assignments surely ran
	integer bool     // declared -i: every value assigned is evaluated as arithmetic
	nameref bool     // declared -n: every value assigned is a variable name
}

// span is a range of offsets in a script: from included, to excluded.
type span struct{ from, to uint }

// maxEvalValues bounds the literal values kept per variable; past it the
// variable counts as unknown.
const maxEvalValues = 32

// maxEvalReasons bounds the reasons one script gives.
const maxEvalReasons = 3

// evalScan finds the uses of one script that evaluate values. The
// classification and the permission analysis hand it every node of their
// walk of the script (node), then read the verdict (finish).
type evalScan struct {
	vars  map[string]*varInfo
	uses  []evalUse
	assoc map[string]uint // associative arrays declared at the top level, and from where
	// noTrack is set by a nameref or an assignment to a computed name:
	// then no variable's value is sure.
	noTrack bool
	reasons []string   // why the script evaluates what it cannot see
	code    []evalCode // literal texts that bash runs or expands as words
}

// evalCode is a literal text that bash runs (Script) or expands as a word
// (a subscript, a prompt) while it evaluates a value.
type evalCode struct {
	Text   string
	Script bool
}

// node records what n evaluates or assigns.
func (s *evalScan) node(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.File:
		s.topLevel(n.Stmts)
	case *syntax.CallExpr:
		for _, as := range n.Assigns {
			s.assign(as, "")
		}
		if len(n.Args) > 0 {
			s.call(n.Args)
		}
	case *syntax.DeclClause:
		s.decl(n)
	case *syntax.ArithmExp:
		s.arith(n.X, "$(( ))")
	case *syntax.ArithmCmd:
		s.arith(n.X, "(( ))")
	case *syntax.LetClause:
		for _, x := range n.Exprs {
			s.arith(x, "let")
		}
	case *syntax.ForClause:
		s.forLoop(n)
	case *syntax.ParamExp:
		s.param(n)
	case *syntax.BinaryTest:
		if n.Op >= syntax.TsEql && n.Op <= syntax.TsGtr {
			what := "[[ " + n.Op.String() + " ]]"
			for _, x := range []syntax.TestExpr{n.X, n.Y} {
				if w, ok := x.(*syntax.Word); ok {
					s.arithWord(w, what)
				}
			}
		}
	case *syntax.UnaryTest:
		if w, ok := n.X.(*syntax.Word); ok && (n.Op == syntax.TsVarSet || n.Op == syntax.TsRefVar) {
			s.nameArg(cword{arg: wordArg(w), w: w}, "[[ "+n.Op.String()+" ]]", false)
		}
	}
}

// finish resolves the uses against the assignments. It returns why the
// script must be asked (nil when it evaluates only what the analysis sees)
// and the literal texts bash would run or expand as code.
func (s *evalScan) finish() (reasons []string, code []evalCode) {
	s.declared()
	for _, u := range s.uses {
		if u.name != "" {
			s.checkVar(u)
		} else {
			s.checkText(u.text, u.at, u.what)
		}
	}
	return s.reasons, s.code
}

// declared adds the uses that declare -i and declare -n make of every
// value given to their variables.
func (s *evalScan) declared() {
	var names []string
	for name, v := range s.vars {
		if v.integer || v.nameref {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		switch v := s.vars[name]; {
		case v.unknown && v.integer:
			s.fail(fmt.Sprintf("%s is declared -i, so every value given to it is evaluated as an arithmetic expression, and one is not a literal the analysis can see", name))
		case v.unknown:
			s.fail(fmt.Sprintf("%s is a nameref, so every value given to it is taken as a variable name, and one is not a literal the analysis can see", name))
		case v.integer:
			for _, val := range v.values {
				s.uses = append(s.uses, evalUse{text: val, what: "declare -i " + name})
			}
		default:
			for _, val := range v.values {
				s.nameText(val, 0, "the nameref "+name)
			}
		}
	}
}

func (s *evalScan) fail(reason string) {
	if len(s.reasons) < maxEvalReasons && !slices.Contains(s.reasons, reason) {
		s.reasons = append(s.reasons, reason)
	}
}

// evaluatesCode records a literal text bash expands as a word; runsCode
// one it runs as a script.
func (s *evalScan) evaluatesCode(text string) { s.addCode(evalCode{Text: text}) }
func (s *evalScan) runsCode(text string)      { s.addCode(evalCode{Text: text, Script: true}) }

func (s *evalScan) addCode(c evalCode) {
	if !slices.Contains(s.code, c) {
		s.code = append(s.code, c)
	}
}

func (s *evalScan) varFor(name string) *varInfo {
	if s.vars == nil {
		s.vars = map[string]*varInfo{}
	}
	v := s.vars[name]
	if v == nil {
		v = &varInfo{}
		s.vars[name] = v
	}
	return v
}

// literal records a literal value assigned to v.
func (v *varInfo) literal(val string) {
	if len(v.values) >= maxEvalValues {
		v.unknown = true
		return
	}
	if !slices.Contains(v.values, val) {
		v.values = append(v.values, val)
	}
}

// topLevel records the variables that top-level statements assign
// literals to: they are sure from the end of the statement on. A top-level
// declare -A makes its names associative arrays from there on.
func (s *evalScan) topLevel(stmts []*syntax.Stmt) {
	for _, st := range stmts {
		if st.Background || st.Coprocess || len(st.Redirs) > 0 {
			continue // a subshell, or an assignment a failed redirection skips
		}
		var assigns []*syntax.Assign
		flags := ""
		switch c := st.Cmd.(type) {
		case *syntax.CallExpr:
			if len(c.Args) > 0 {
				continue // x=1 cmd sets x for cmd only
			}
			assigns = c.Assigns
		case *syntax.DeclClause:
			if c.Variant.Value == "local" {
				continue // an error outside a function
			}
			flags, assigns = declFlags(c.Args)
		default:
			continue
		}
		from := uint(st.End().Offset())
		for _, as := range assigns {
			if as.Name == nil {
				continue
			}
			if strings.Contains(flags, "A") {
				if s.assoc == nil {
					s.assoc = map[string]uint{}
				}
				s.assoc[as.Name.Value] = from
			}
			if as.Index == nil && !as.Append && !as.Naked && literalValue(as) {
				v := s.varFor(as.Name.Value)
				v.sure = append(v.sure, span{from, math.MaxUint})
			}
		}
	}
}

// literalValue reports whether an assignment's value is a literal (or a
// number, see numericWord).
func literalValue(as *syntax.Assign) bool {
	if as.Array != nil {
		for _, e := range as.Array.Elems {
			if e.Value != nil && !wordArg(e.Value).Static && !numericWord(e.Value) {
				return false
			}
		}
		return true
	}
	return as.Value == nil || wordArg(as.Value).Static || numericWord(as.Value)
}

// numericWord reports a word whose value is surely a number: arithmetic
// expansions, ${#x} and digits ($((i+1)), "${#a[@]}"); the expressions
// themselves are uses of their own.
func numericWord(w *syntax.Word) bool {
	return numericParts(w.Parts)
}

func numericParts(parts []syntax.WordPart) bool {
	if len(parts) == 0 {
		return false
	}
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.ArithmExp:
		case *syntax.ParamExp:
			if !p.Length || p.Excl {
				return false
			}
		case *syntax.Lit:
			if strings.Trim(p.Value, "0123456789") != "" {
				return false
			}
		case *syntax.DblQuoted:
			if !numericParts(p.Parts) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// declFlags splits declare's words into its option letters and the rest.
func declFlags(args []*syntax.Assign) (flags string, rest []*syntax.Assign) {
	for _, as := range args {
		if as.Naked && as.Name == nil && as.Value != nil {
			if a := wordArg(as.Value); a.Static && len(a.S) > 1 && a.S[0] == '-' {
				flags += a.S[1:]
				continue
			}
			if a := wordArg(as.Value); a.Static && len(a.S) > 1 && a.S[0] == '+' {
				continue
			}
		}
		rest = append(rest, as)
	}
	return flags, rest
}

// isAssoc reports whether name is an associative array at offset at:
// its subscripts are words, expanded once, not arithmetic.
func (s *evalScan) isAssoc(name string, at uint) bool {
	from, ok := s.assoc[name]
	return ok && at >= from
}

// assign records one assignment; flags are declare's option letters.
func (s *evalScan) assign(as *syntax.Assign, flags string) {
	if as.Name == nil {
		return
	}
	name := as.Name.Value
	v := s.varFor(name)
	if strings.Contains(flags, "i") {
		v.integer = true
	}
	at := uint(as.Pos().Offset())
	assoc := strings.Contains(flags, "A") // declare -A: the subscripts are keys
	if as.Index != nil && !assoc {
		s.subscript(name, as.Index, at)
	}
	switch {
	case as.Array != nil:
		for _, e := range as.Array.Elems {
			if e.Index != nil && !assoc {
				s.subscript(name, e.Index, at)
			}
			s.value(v, e.Value)
		}
	case as.Naked:
	case as.Append:
		v.unknown = true
	default:
		s.value(v, as.Value)
	}
	if isPromptVar(name) && as.Value != nil {
		s.promptValue(name, as.Value)
	}
}

// value records the value w given to v.
func (s *evalScan) value(v *varInfo, w *syntax.Word) {
	if w == nil {
		v.literal("")
		return
	}
	switch a := wordArg(w); {
	case a.Static:
		v.literal(a.S)
	case numericWord(w):
		v.literal("0") // some number
	default:
		v.unknown = true
	}
}

// isPromptVar reports the variables bash expands as prompts (PS4 under set
// -x, PS0–PS2 when interactive) or runs (PROMPT_COMMAND).
func isPromptVar(name string) bool {
	switch name {
	case "PS0", "PS1", "PS2", "PS4", "PROMPT_COMMAND":
		return true
	}
	return false
}

// promptValue records a value given to a prompt variable: a literal one is
// analysed as the code it may run.
func (s *evalScan) promptValue(name string, w *syntax.Word) {
	a := wordArg(w)
	how := "expands it as a prompt, which can run commands"
	if name == "PROMPT_COMMAND" {
		how = "runs it as shell code"
	}
	switch {
	case !a.Static:
		s.fail(fmt.Sprintf("%s is given a value the analysis cannot see, and bash %s", name, how))
	case name == "PROMPT_COMMAND":
		s.fail(fmt.Sprintf("%s is given %q, and bash %s", name, a.S, how))
		s.runsCode(a.S)
	case strings.ContainsAny(a.S, "$`\\"):
		s.fail(fmt.Sprintf("%s is given %q, and bash %s", name, a.S, how))
		s.evaluatesCode(a.S)
	}
}

// decl records a declare, typeset, local, export or readonly clause.
func (s *evalScan) decl(d *syntax.DeclClause) {
	variant := d.Variant.Value
	flags, args := declFlags(d.Args)
	nameref := variant == "nameref" || (variant != "export" && variant != "readonly" && strings.Contains(flags, "n"))
	if nameref {
		s.noTrack = true // assigning through a nameref changes its target
	}
	for _, as := range args {
		if as.Name == nil {
			// A word bash parses as NAME[=VALUE] only when it runs.
			a := wordArg(as.Value)
			if !a.Static {
				s.noTrack = true
				s.fail(fmt.Sprintf("%s is given a word only known when the command runs; a name such as a[$(cmd)] in it runs cmd", variant))
				continue
			}
			name, val, hasVal := strings.Cut(a.S, "=")
			s.nameText(name, uint(as.Value.Pos().Offset()), variant)
			if v := s.varFor(baseName(name)); hasVal {
				v.literal(val)
			}
			continue
		}
		s.assign(as, flags)
		if nameref {
			s.varFor(as.Name.Value).nameref = true
		}
	}
}

// baseName is the variable of a name that may carry a subscript (a[1]).
func baseName(name string) string {
	if i := strings.IndexByte(name, '['); i >= 0 {
		return name[:i]
	}
	return name
}

// evalBuiltins are the builtins whose words call evaluates.
var evalBuiltins = map[string]bool{
	"printf": true, "read": true, "mapfile": true, "readarray": true, "getopts": true, "wait": true,
	"compgen": true, "unset": true, "test": true, "[": true, "let": true, "builtin": true, "command": true,
}

// call records what a simple command's builtin evaluates.
func (s *evalScan) call(args []*syntax.Word) {
	if !evalBuiltins[commandName(args[0])] {
		return
	}
	ws, _ := words("", args)
	for len(ws) > 0 && ws[0].Static && (ws[0].S == "builtin" || ws[0].S == "command") {
		k := skipOptions(ws[1:], "")
		for _, w := range ws[1:][:k] {
			if w.S == "-v" || w.S == "-V" {
				return // command -v only looks the name up
			}
		}
		ws = ws[1+k:]
	}
	if len(ws) == 0 || !ws[0].Static {
		return
	}
	name, rest := ws[0].S, ws[1:]
	assigns := func(what string) func(byte, cword) {
		return func(_ byte, v cword) { s.nameArg(v, what, true) }
	}
	switch name {
	case "printf":
		eachOption(rest, "v", nil, assigns("printf -v"))
	case "read":
		k := eachOption(rest, "adinNptu", nil, func(opt byte, v cword) {
			if opt == 'a' {
				s.nameArg(v, "read -a", true)
			}
		})
		for _, w := range rest[k:] {
			s.nameArg(w, "read", true)
		}
	case "mapfile", "readarray":
		k := eachOption(rest, "dnOsuCc", nil, func(opt byte, v cword) {
			if opt == 'C' {
				s.callback(name+" -C", v)
			}
		})
		if k < len(rest) {
			s.nameArg(rest[k], name, true)
		}
	case "compgen":
		eachOption(rest, "AGWFCXPSoV", nil, func(opt byte, v cword) {
			switch opt {
			case 'V':
				s.nameArg(v, "compgen -V", true)
			case 'C':
				s.callback("compgen -C", v)
			}
		})
	case "getopts":
		if k := skipOptions(rest, ""); k+1 < len(rest) {
			s.nameArg(rest[k+1], "getopts", true)
		}
	case "wait":
		eachOption(rest, "p", nil, assigns("wait -p"))
	case "unset":
		for _, w := range rest[skipOptions(rest, ""):] {
			s.nameArg(w, "unset", false)
		}
	case "test", "[":
		for i, w := range rest[:max(len(rest)-1, 0)] {
			if w.Static && (w.S == "-v" || w.S == "-R") {
				s.nameArg(rest[i+1], name+" "+w.S, false)
			}
		}
	case "let":
		for _, w := range rest {
			s.arithWord(w.w, "let")
		}
	case "declare", "typeset", "local", "export", "readonly": // run through builtin or command
		for _, w := range rest {
			switch {
			case !w.Static:
				s.noTrack = true
				s.fail(fmt.Sprintf("%s is given a word only known when the command runs; a name such as a[$(cmd)] in it runs cmd", name))
			case strings.HasPrefix(w.S, "-") && strings.ContainsAny(w.S, "ni"):
				s.noTrack = true
				s.fail(fmt.Sprintf("%s %s run through builtin or command is not analysed", name, w.S))
			case !strings.HasPrefix(w.S, "-") && !strings.HasPrefix(w.S, "+"):
				n, _, _ := strings.Cut(w.S, "=")
				s.nameText(n, wordPos(w), name)
				s.varFor(baseName(n)).unknown = true
			}
		}
	}
}

// commandName is the value of a command's first word if it is static.
func commandName(w *syntax.Word) string {
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok {
			return l.Value
		}
	}
	if a := wordArg(w); a.Static {
		return a.S
	}
	return ""
}

func wordPos(w cword) uint {
	if w.w == nil {
		return 0
	}
	return uint(w.w.Pos().Offset())
}

// callback records an argument that a builtin runs as shell code.
func (s *evalScan) callback(what string, w cword) {
	if !w.Static {
		s.fail(fmt.Sprintf("%s runs a command only known when the command runs", what))
		return
	}
	s.fail(fmt.Sprintf("%s runs %q as shell code, which is always asked", what, w.S))
	s.runsCode(w.S)
}

// nameArg records a word that a builtin takes as a variable name; assigns
// says the builtin gives the variable a value the analysis cannot see.
func (s *evalScan) nameArg(w cword, what string, assigns bool) {
	at := wordPos(w)
	switch {
	case w.Static:
		s.nameText(w.S, at, what)
		if assigns {
			s.varFor(baseName(w.S)).unknown = true
		}
	case assigns:
		s.noTrack = true
		s.fail(fmt.Sprintf("%s assigns a variable whose name is only known when the command runs; a name such as a[$(cmd)] runs cmd", what))
	default:
		if name := plainParam(w.w); name != "" {
			s.uses = append(s.uses, evalUse{at: at, ctx: evalName, name: name, what: what})
			return
		}
		s.fail(fmt.Sprintf("%s is given a variable name only known when the command runs; a name such as a[$(cmd)] runs cmd", what))
	}
}

// plainParam is the variable of a word that is only $name or "${name}".
func plainParam(w *syntax.Word) string {
	if w == nil || len(w.Parts) != 1 {
		return ""
	}
	p := w.Parts[0]
	if dq, ok := p.(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
		p = dq.Parts[0]
	}
	pe, ok := p.(*syntax.ParamExp)
	if !ok || pe.Param == nil || pe.Excl || pe.Length || pe.Width || pe.Index != nil || pe.Slice != nil || pe.Repl != nil || pe.Exp != nil || pe.Names != 0 {
		return ""
	}
	return pe.Param.Value
}

// nameText records a literal variable name: its subscript, if any, is
// evaluated (arithmetic, or for an associative array expanded as a word).
func (s *evalScan) nameText(text string, at uint, what string) {
	i := strings.IndexByte(text, '[')
	if i < 0 {
		return
	}
	sub := text[i+1:]
	if j := strings.LastIndexByte(sub, ']'); j >= 0 {
		sub = sub[:j]
	}
	if s.isAssoc(text[:i], at) {
		if strings.ContainsAny(sub, "$`") {
			s.fail(fmt.Sprintf("%s expands the subscript of %q, which runs the commands and expansions in it", what, text))
			s.evaluatesCode(sub)
		}
		return
	}
	s.uses = append(s.uses, evalUse{at: at, ctx: evalArith, text: sub, what: what + " (the subscript of " + text + ")"})
}

// subscript records an array subscript: arithmetic, unless name is an
// associative array.
func (s *evalScan) subscript(name string, idx syntax.ArithmExpr, at uint) {
	if !s.isAssoc(name, at) {
		s.arith(idx, "the subscript of "+name+"[…]")
	}
}

// param records what a parameter expansion evaluates anywhere: its
// subscript, its offset and length, an indirection and a prompt expansion.
func (s *evalScan) param(p *syntax.ParamExp) {
	if p.Param == nil {
		return
	}
	name := p.Param.Value
	at := uint(p.Pos().Offset())
	all := p.Index != nil && allElems(p.Index)
	if p.Index != nil && !all {
		s.subscript(name, p.Index, at)
	}
	if p.Slice != nil {
		what := "${" + name + ":offset:length}"
		s.arith(p.Slice.Offset, what)
		s.arith(p.Slice.Length, what)
	}
	if p.Excl && p.Names == 0 && !all {
		s.uses = append(s.uses, evalUse{at: at, ctx: evalName, name: name, what: "${!" + name + "}"})
	}
	if p.Exp != nil && p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && p.Exp.Word.Lit() == "P" {
		s.uses = append(s.uses, evalUse{at: at, ctx: evalPrompt, name: name, what: "${" + name + "@P}"})
	}
}

// allElems reports a subscript of @ or *: every element, nothing evaluated.
func allElems(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok {
		return false
	}
	l := w.Lit()
	return l == "@" || l == "*"
}

// forLoop records the variable of a for or select loop, and the
// arithmetic of a C-style loop.
func (s *evalScan) forLoop(f *syntax.ForClause) {
	switch l := f.Loop.(type) {
	case *syntax.WordIter:
		v := s.varFor(l.Name.Value)
		if f.Select || !l.InPos.IsValid() {
			v.unknown = true // a person's choice, or the positional parameters
			return
		}
		items, _ := words("", l.Items)
		for _, it := range items {
			if !it.Static || it.Glob {
				v.unknown = true // file names are not literals
				return
			}
			v.literal(it.S)
		}
		v.sure = append(v.sure, span{uint(f.DoPos.Offset()), uint(f.End().Offset())})
	case *syntax.CStyleLoop:
		what := "for (( ))"
		s.arith(l.Init, what)
		s.arith(l.Cond, what)
		s.arith(l.Post, what)
		if l.Init != nil {
			sp := span{uint(l.Init.End().Offset()), uint(f.End().Offset())}
			for _, name := range arithAssigned(l.Init, nil) {
				s.varFor(name).sure = append(s.varFor(name).sure, sp)
			}
		}
	}
}

// arithAssigned returns the names an arithmetic expression assigns with =
// at its top level (i=0, j=1).
func arithAssigned(x syntax.ArithmExpr, out []string) []string {
	b, ok := x.(*syntax.BinaryArithm)
	if !ok {
		return out
	}
	switch b.Op {
	case syntax.Comma:
		return arithAssigned(b.Y, arithAssigned(b.X, out))
	case syntax.Assgn:
		if w, ok := b.X.(*syntax.Word); ok && isName(w.Lit()) {
			out = append(out, w.Lit())
		}
	}
	return out
}

// arith records an arithmetic expression. An assignment's target is not
// evaluated (its subscript is, as a parameter expansion of its own); every
// other operand is.
func (s *evalScan) arith(x syntax.ArithmExpr, what string) {
	switch x := x.(type) {
	case *syntax.Word:
		s.arithWord(x, what)
	case *syntax.BinaryArithm:
		if x.Op != syntax.Assgn {
			s.arith(x.X, what)
		}
		s.arith(x.Y, what)
	case *syntax.UnaryArithm:
		s.arith(x.X, what)
	case *syntax.ParenArithm:
		s.arith(x.X, what)
	}
}

// arithWord records one operand of an arithmetic expression, expanded as
// in double quotes and then evaluated.
func (s *evalScan) arithWord(w *syntax.Word, what string) {
	if w == nil {
		return
	}
	s.arithParts(w.Parts, uint(w.Pos().Offset()), what, new(bool))
}

// arithParts records the parts of an operand; afterName tells whether the
// literal text just before ends in a name, which an expansion right after
// would extend into another name.
func (s *evalScan) arithParts(parts []syntax.WordPart, at uint, what string, afterName *bool) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			s.uses = append(s.uses, evalUse{at: at, text: p.Value, what: what})
			*afterName = endsInName(p.Value)
			continue
		case *syntax.SglQuoted:
			if p.Dollar && strings.Contains(p.Value, `\`) {
				s.fail(fmt.Sprintf("%s evaluates $'%s', whose escapes can make a command substitution", what, p.Value))
			}
			s.uses = append(s.uses, evalUse{at: at, text: p.Value, what: what})
			*afterName = endsInName(p.Value)
			continue
		case *syntax.DblQuoted:
			s.arithParts(p.Parts, at, what, afterName)
			continue
		case *syntax.ArithmExp:
			// A number; its own expression is a node of its own.
		case *syntax.ParamExp:
			if *afterName {
				s.fail(fmt.Sprintf("%s evaluates a variable name built from an expansion", what))
			}
			s.arithParam(p, what)
		default:
			s.fail(fmt.Sprintf("%s evaluates the output of a command, which is not a literal the analysis can see (an output such as a[$(cmd)] runs cmd)", what))
		}
		*afterName = false
	}
}

// arithParam records an expansion inside an arithmetic expression: the
// value it puts there is evaluated.
func (s *evalScan) arithParam(p *syntax.ParamExp, what string) {
	switch {
	case p.Length:
		return // a number
	case p.Param == nil || p.Excl || p.Width || p.Slice != nil || p.Repl != nil || p.Names != 0 ||
		(p.Exp != nil && !defaultOp(p.Exp.Op)):
		s.fail(fmt.Sprintf("%s evaluates a transformed expansion, which is not a literal the analysis can see", what))
		return
	}
	s.uses = append(s.uses, evalUse{at: uint(p.Pos().Offset()), ctx: evalArith, name: p.Param.Value, what: what})
	if p.Exp != nil {
		s.arithWord(p.Exp.Word, what)
	}
}

// defaultOp reports the expansions whose value is the variable's or a
// word's: ${x:-w}, ${x-w}, ${x:=w}, ${x=w}.
func defaultOp(op syntax.ParExpOperator) bool {
	switch op {
	case syntax.DefaultUnset, syntax.DefaultUnsetOrNull, syntax.AssignUnset, syntax.AssignUnsetOrNull:
		return true
	}
	return false
}

// checkText resolves a literal evaluated as arithmetic: it must hold no
// $ or ` and name only variables whose values are sure.
func (s *evalScan) checkText(text string, at uint, what string) {
	if strings.ContainsAny(text, "$`") {
		s.fail(fmt.Sprintf("%s evaluates %q, which runs the commands and expansions in it", what, text))
		s.evaluatesCode(text)
		return
	}
	for _, name := range arithNames(text) {
		s.checkVar(evalUse{at: at, ctx: evalArith, name: name, what: what})
	}
}

// checkVar resolves a use of a variable's value; its literal values that
// hold code are handed on in any case (through a nameref, its targets').
func (s *evalScan) checkVar(u evalUse) {
	if v := s.vars[u.name]; v != nil {
		for _, val := range v.values {
			if strings.ContainsAny(val, "$`") {
				s.evaluatesCode(val)
			}
			if t := s.vars[val]; v.nameref && t != nil && !t.nameref {
				for _, tv := range t.values {
					if strings.ContainsAny(tv, "$`") {
						s.evaluatesCode(tv)
					}
				}
			}
		}
	}
	if ok, bad := s.sure(u.name, u.at, u.ctx); !ok {
		s.fail(reasonFor(u.what, u.name, bad, u.ctx))
	}
}

// reasonFor says why a use of name's value is asked: bad is the literal
// value that could run code, or "" when the value is not a literal the
// analysis sees.
func reasonFor(what, name, bad string, ctx evalCtx) string {
	how := "as an arithmetic expression"
	example := "a value such as a[$(cmd)] runs cmd"
	switch ctx {
	case evalName:
		how, example = "as a variable name", "a name such as a[$(cmd)] runs cmd"
	case evalPrompt:
		how, example = "as a prompt string", "a value such as $(cmd) runs cmd"
	}
	if bad != "" {
		return fmt.Sprintf("%s evaluates the value of %s (%q) %s, which can run commands", what, name, bad, how)
	}
	return fmt.Sprintf("%s evaluates the value of %s %s, and that value is not a literal the analysis can see (%s)", what, name, how, example)
}

// alwaysNumeric are the variables whose value bash keeps a number.
var alwaysNumeric = map[string]bool{
	"#": true, "?": true, "$": true, "!": true, "RANDOM": true, "SRANDOM": true, "SECONDS": true,
	"LINENO": true, "BASHPID": true, "EPOCHSECONDS": true, "PPID": true, "UID": true, "EUID": true,
	"HISTCMD": true, "BASH_SUBSHELL": true, "SHLVL": true,
}

// sure reports whether the value of name is seen at offset at, and safe
// for ctx; bad is the literal value that is not safe, if that is why not.
func (s *evalScan) sure(name string, at uint, ctx evalCtx) (ok bool, bad string) {
	if ctx == evalArith && alwaysNumeric[name] {
		return true, ""
	}
	v := s.vars[name]
	if v == nil || v.unknown || s.noTrack || shellSet(name) {
		return false, ""
	}
	if !slices.ContainsFunc(v.sure, func(sp span) bool { return at >= sp.from && at < sp.to }) {
		return false, ""
	}
	for _, val := range v.values {
		if !safeValue(val, ctx) {
			return false, val
		}
	}
	return true, ""
}

// shellSet reports the variables bash itself gives values from input, the
// file system or the command line ($_, REPLY, OPTARG, PWD, BASH_COMMAND,
// …): a literal assigned to them earlier says nothing of their value.
func shellSet(name string) bool {
	switch name {
	case "_", "REPLY", "MAPFILE", "OPTARG", "OPTIND", "PWD", "OLDPWD", "COPROC", "DIRSTACK", "FUNCNAME", "GROUPS", "PIPESTATUS":
		return true
	}
	return strings.HasPrefix(name, "BASH") || strings.HasPrefix(name, "COMP_") || strings.HasPrefix(name, "READLINE_")
}

// safeValue reports whether a variable's value evaluates to no code in
// ctx: a plain number expression, a plain name, or a prompt without
// expansions and escapes.
func safeValue(val string, ctx evalCtx) bool {
	switch ctx {
	case evalName:
		return val == "" || isName(val) || alwaysNumeric[val] || strings.Trim(val, "0123456789") == ""
	case evalPrompt:
		return !strings.ContainsAny(val, "$`\\")
	}
	if strings.ContainsAny(val, "$`[]\\'\"") {
		return false
	}
	return len(arithNames(val)) == 0
}

// arithNames returns the variable names whose values an arithmetic text
// evaluates: not the targets of = (x=1, a[i]=1), nor numbers such as 0x1f
// and 16#ff.
func arithNames(text string) []string {
	var out []string
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case isNameStart(c):
			j := i + 1
			for j < len(text) && isNameChar(text[j]) {
				j++
			}
			if !assignedAt(text, j) {
				out = append(out, text[i:j])
			}
			i = j
		case c >= '0' && c <= '9':
			for i < len(text) && (isNameChar(text[i]) || text[i] == '#' || text[i] == '@') {
				i++
			}
		default:
			i++
		}
	}
	return out
}

// assignedAt reports whether the name ending at text[j] is the target of
// a plain assignment: followed by =, not ==, maybe after a subscript.
func assignedAt(text string, j int) bool {
	if j < len(text) && text[j] == '[' {
		depth := 0
		for ; j < len(text); j++ {
			if text[j] == '[' {
				depth++
			} else if text[j] == ']' {
				if depth--; depth == 0 {
					j++
					break
				}
			}
		}
	}
	for j < len(text) && (text[j] == ' ' || text[j] == '\t') {
		j++
	}
	return j < len(text) && text[j] == '=' && (j+1 == len(text) || text[j+1] != '=')
}

// endsInName reports whether text ends in a name (x, a_1), which text
// appended to it would extend.
func endsInName(text string) bool {
	i := len(text)
	for i > 0 && isNameChar(text[i-1]) {
		i--
	}
	return i < len(text) && isNameStart(text[i])
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isNameChar(c byte) bool  { return isNameStart(c) || c >= '0' && c <= '9' }

// isName reports a valid shell variable name.
func isName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameChar(s[i]) {
			return false
		}
	}
	return true
}

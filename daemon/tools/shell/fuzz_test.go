package shell

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// analyzeBound is the longest the analysis of one command may take
// (issue 10): Attributes and CheckPermission, from the parse to the
// resolved paths; more under the race detector, which slows it several
// times (raceSlowdown).
const analyzeBound = 50 * time.Millisecond * raceSlowdown

// FuzzAnalyze checks the Bash analysis of any command: it never panics,
// takes at most analyzeBound, and never calls read-only (Attributes, or
// a command of CommandsReadOnly) a command whose parse evaluates a
// non-literal in arithmetic or a subscript (evaluatesNonLiteral). The
// machine may be busy: a command is timed again, up to three times, and
// fails only when every time is over the bound.
func FuzzAnalyze(f *testing.F) {
	for _, tc := range evalCommands {
		f.Add(tc.command)
	}
	for _, c := range []string{
		`printf -v 'a[$(rm x)]' %s 1`, `read 'a[$(rm x)]' <<< 1`, `test -v 'a[$(rm x)]'`, `[ -v 'a[$(rm x)]' ]`,
		`let 'a[$(rm x)]=1'`, `x='a[$(rm x)]'; echo $(( x ))`, `v='a[$(rm -f x)]'; [[ $v -eq 0 ]]`,
		`x='$(rm x)'; echo "${x@P}"`, `a='a[$(rm x)]'; echo ${b[a]}`, `v='a[$(rm x)]'; echo ${v:v}`,
		`echo $((1+2))`, `x=3; echo $((x+1))`, `for i in 1 2 3; do echo $((i*2)); done`, `for ((i=0; i<3; i++)); do :; done`,
		`i=0; while [ $i -lt 3 ]; do i=$((i+1)); done`, `declare -A m=([k]=v); echo ${m[$k]}`, `echo ${a[@]:1:$n}`,
		`grep -r pw .`, `grep pw -r .`, `rg foo`, `find . -exec cat {} +`, `find . | xargs cat`, `tar czf a.tgz src`,
		`git show HEAD:secrets/k`, `git -C . show :./secrets/k`, `git log -p -- src`, `git diff --no-index a b`,
		`git blame -L 1,2 f`, `git grep -e x -- '*.go'`, `diff --from-file=secrets/k f`, `echo a > x 2>&1 >> y &> z <> w`,
		`cat <<EOF | sh\nrm x\nEOF`, `bash -c "eval 'echo \$((x))'"`, `echo {1..100000}`, `cat /*/*/*`,
	} {
		f.Add(c)
	}
	env, _ := accessEnv(f)
	bash := &Bash{}
	f.Fuzz(func(t *testing.T, command string) {
		raw, err := json.Marshal(map[string]string{"command": command})
		if err != nil {
			return
		}
		call := &tool.Call{ID: "fuzz", Name: "Bash", Input: raw, Env: env}
		var attrs tool.Attributes
		var acc tool.Access
		best := time.Duration(1<<63 - 1)
		for try := 0; try < 3 && best > analyzeBound; try++ {
			clearClassCache()
			start := time.Now()
			attrs = bash.Attributes(raw)
			acc, err = bash.CheckPermission(context.Background(), call)
			best = min(best, time.Since(start))
			if err != nil {
				t.Fatalf("CheckPermission: %v", err)
			}
		}
		if best > analyzeBound {
			t.Fatalf("the analysis took %v (the best of three), over %v", best, analyzeBound)
		}
		if attrs.ReadOnly && evaluatesNonLiteral(command) {
			t.Fatalf("read-only, but it evaluates a non-literal in arithmetic or a subscript")
		}
		for i, c := range acc.Commands {
			if i < len(acc.CommandsReadOnly) && acc.CommandsReadOnly[i] && evaluatesNonLiteral(c) {
				t.Fatalf("the command %q is read-only, but it evaluates a non-literal in arithmetic or a subscript", c)
			}
		}
	})
}

// clearClassCache empties classify's cache, so that a call is timed in
// full.
func clearClassCache() {
	classCache.mu.Lock()
	clear(classCache.m)
	classCache.mu.Unlock()
}

// arithToken is a name or a number of an arithmetic expression.
var arithToken = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*|[0-9][0-9A-Za-z_#@]*`)

// evaluatesNonLiteral is FuzzAnalyze's oracle, written apart from
// evaluate.go and more lenient than it: whether the command's parse has an
// arithmetic context ($(( )), (( )), let, for (( )), [[ -eq ]] and the
// like, a subscript of an array not declared -A, ${v:offset:length}) that
// evaluates a command's output, a quoted $ or `, or a variable that is not
// a number in every assignment of the script (nor one bash keeps a
// number).
func evaluatesNonLiteral(command string) bool {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(command), "")
	if err != nil {
		return false
	}
	numeric, tainted, assoc := map[string]bool{}, map[string]bool{}, map[string]bool{}
	assigned := func(name string, pure bool) {
		if pure {
			numeric[name] = true
		} else {
			tainted[name] = true
		}
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Assign:
			if n.Name != nil && !n.Naked {
				pure := n.Value == nil || pureWord(n.Value)
				if n.Array != nil {
					for _, e := range n.Array.Elems {
						pure = pure && (e.Value == nil || pureWord(e.Value))
					}
				}
				assigned(n.Name.Value, pure && !n.Append)
			}
		case *syntax.DeclClause:
			declA := false
			for _, a := range n.Args {
				if a.Name == nil && a.Value != nil && strings.HasPrefix(a.Value.Lit(), "-") && strings.Contains(a.Value.Lit(), "A") {
					declA = true
				}
				if a.Name != nil && declA {
					assoc[a.Name.Value] = true
				}
			}
		case *syntax.WordIter:
			pure := n.InPos.IsValid()
			for _, w := range n.Items {
				pure = pure && pureWord(w)
			}
			assigned(n.Name.Value, pure)
		case *syntax.BinaryArithm:
			if w, ok := n.X.(*syntax.Word); ok && (n.Op == syntax.Assgn || n.Op >= syntax.AddAssgn && n.Op <= syntax.PowAssgn) && isName(w.Lit()) {
				numeric[w.Lit()] = true // arithmetic assigns numbers
			}
		}
		return true
	})
	literal := func(name string) bool { return alwaysNumeric[name] || numeric[name] && !tainted[name] }
	found := false
	var operand func(parts []syntax.WordPart, quoted bool)
	operand = func(parts []syntax.WordPart, quoted bool) {
		for _, p := range parts {
			switch p := p.(type) {
			case *syntax.Lit:
				if quoted {
					found = found || strings.ContainsAny(p.Value, "$`")
					continue
				}
				for _, tok := range arithToken.FindAllString(p.Value, -1) {
					found = found || isNameStart(tok[0]) && !literal(tok)
				}
			case *syntax.SglQuoted:
				found = found || strings.ContainsAny(p.Value, "$`")
			case *syntax.DblQuoted:
				operand(p.Parts, true)
			case *syntax.ParamExp:
				found = found || !p.Length && (p.Param == nil || !literal(p.Param.Value))
			case *syntax.ArithmExp:
			default:
				found = true
			}
		}
	}
	var arith func(x syntax.ArithmExpr)
	arith = func(x syntax.ArithmExpr) {
		switch x := x.(type) {
		case *syntax.Word:
			operand(x.Parts, false)
		case *syntax.BinaryArithm:
			if x.Op != syntax.Assgn {
				arith(x.X)
			}
			arith(x.Y)
		case *syntax.UnaryArithm:
			arith(x.X)
		case *syntax.ParenArithm:
			arith(x.X)
		}
	}
	subscript := func(name string, idx syntax.ArithmExpr) {
		if w, ok := idx.(*syntax.Word); ok && (w.Lit() == "@" || w.Lit() == "*") || assoc[name] {
			return
		}
		arith(idx)
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.ArithmExp:
			arith(n.X)
		case *syntax.ArithmCmd:
			arith(n.X)
		case *syntax.LetClause:
			for _, x := range n.Exprs {
				arith(x)
			}
		case *syntax.CStyleLoop:
			arith(n.Init)
			arith(n.Cond)
			arith(n.Post)
		case *syntax.ParamExp:
			if n.Param != nil && n.Index != nil {
				subscript(n.Param.Value, n.Index)
			}
			if n.Slice != nil {
				arith(n.Slice.Offset)
				arith(n.Slice.Length)
			}
		case *syntax.Assign:
			if n.Name != nil && n.Index != nil {
				subscript(n.Name.Value, n.Index)
			}
			if n.Name != nil && n.Array != nil {
				for _, e := range n.Array.Elems {
					if e.Index != nil {
						subscript(n.Name.Value, e.Index)
					}
				}
			}
		case *syntax.BinaryTest:
			if n.Op >= syntax.TsEql && n.Op <= syntax.TsGtr {
				for _, x := range []syntax.TestExpr{n.X, n.Y} {
					if w, ok := x.(*syntax.Word); ok {
						operand(w.Parts, false)
					}
				}
			}
		}
		return true
	})
	return found
}

// pureWord reports a word whose value is surely a number expression: a
// literal without names, $ or `, or arithmetic expansions, ${#x} and
// digits.
func pureWord(w *syntax.Word) bool {
	var text strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			text.WriteString(p.Value)
		case *syntax.SglQuoted:
			text.WriteString(p.Value)
		case *syntax.ArithmExp:
		case *syntax.ParamExp:
			if !p.Length {
				return false
			}
		case *syntax.DblQuoted:
			if !pureWord(&syntax.Word{Parts: p.Parts}) {
				return false
			}
		default:
			return false
		}
	}
	s := text.String()
	if strings.ContainsAny(s, "$`") {
		return false
	}
	for _, loc := range arithToken.FindAllStringIndex(s, -1) {
		rest := s[loc[1]:]
		target := strings.HasPrefix(rest, "=") && !strings.HasPrefix(rest, "==") // x=1 assigns x: its value is not read
		if isNameStart(s[loc[0]]) && !target {
			return false
		}
	}
	return true
}

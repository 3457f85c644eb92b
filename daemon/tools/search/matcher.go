package search

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// matcher finds the lines (or, in multiline mode, the spans) of a text
// that match a Grep pattern. It is immutable and safe for concurrent use.
type matcher struct {
	re *regexp.Regexp
	// lit is a literal every match contains (nil if none was found); with
	// fold set it is lower-case ASCII and matched case-insensitively.
	lit  []byte
	fold bool
	rare int // index of lit's rarest byte (case-sensitive only)
	// also are other case-sensitive literals every match contains: a
	// candidate line must hold them all before the regex runs.
	also [][]byte
	// seq is a run of byte classes every match contains (prefilter.go),
	// or nil. Without lit it finds the lines the regexp runs on (lit is
	// dropped when too common, see denseLitBits); with lit it is checked
	// on the lines holding lit, being more selective.
	seq *classSeq
	// litOnly means the pattern is exactly lit: a line containing lit matches.
	litOnly   bool
	multiline bool
	// spansLines, in multiline mode, says a match may hold a newline;
	// when none can, ripgrep counts matching lines, not matches.
	spansLines bool
}

// PatternError is an invalid Grep pattern.
type PatternError struct {
	Pattern string
	Column  int // 1-based, in characters; 0 if unknown
	Msg     string
}

func (e *PatternError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("invalid regex %q at column %d: %s", e.Pattern, e.Column, e.Msg)
	}
	return fmt.Sprintf("invalid regex %q: %s", e.Pattern, e.Msg)
}

// compileMatcher compiles pattern with Go's RE2 syntax. ^ and $ match at
// line boundaries. Without multiline, no match can span a newline (a
// newline is removed from classes such as \s, as ripgrep does, and a
// literal \n is an error); with multiline, . also matches a newline.
func compileMatcher(pattern string, caseInsensitive, multiline bool) (*matcher, error) {
	tree, err := parsePattern(pattern, caseInsensitive, multiline)
	if err != nil {
		return nil, err
	}
	// Go's regexp compiles the pattern itself with the same flags, not
	// tree.String(): printing a tree with big case-folded classes takes
	// seconds ((?i)[^a]{300}), and what stripNewline removes makes no
	// difference to the regexp, which line search never gives a newline.
	flags := "(?m)"
	if caseInsensitive {
		flags = "(?im)"
	}
	if multiline {
		flags = flags[:len(flags)-1] + "s)"
	}
	re, err := regexp.Compile(flags + pattern)
	if err != nil {
		return nil, patternError(pattern, err)
	}
	m := &matcher{re: re, multiline: multiline, spansLines: multiline && matchesNewline(tree)}
	if !multiline {
		for _, l := range requiredLiterals(tree, nil) {
			m.also = append(m.also, []byte(string(l)))
		}
	}
	if lit, fold, ok := requiredLiteral(tree); ok && len(lit) > 0 {
		s := string(lit)
		if !fold {
			m.lit = []byte(s)
			m.rare = rareIndex(m.lit)
			for i, l := range m.also {
				if string(l) == s {
					m.also = append(m.also[:i:i], m.also[i+1:]...)
					break
				}
			}
			m.litOnly = tree.Op == syntax.OpLiteral && !multiline
		} else if run := asciiFoldRun(lit); len(run) > 0 {
			m.lit, m.fold = []byte(strings.ToLower(string(run))), true
		}
	}
	if !multiline {
		litBits := literalBits(m.lit, m.fold)
		m.seq = requiredSeq(tree, litBits)
		if m.seq != nil && m.lit != nil && !m.litOnly && litBits < denseLitBits {
			// The literal is so common that finding it costs more than
			// scanning for the run, which then finds the lines; the
			// literal is checked on them.
			if !m.fold {
				m.also = append(m.also, m.lit)
			}
			m.lit, m.fold = nil, false
		}
	}
	return m, nil
}

// parsePattern parses pattern as compileMatcher does and returns its
// simplified syntax tree, with the newline taken out of classes without
// multiline.
func parsePattern(pattern string, caseInsensitive, multiline bool) (*syntax.Regexp, error) {
	flags := syntax.Perl &^ syntax.OneLine
	if caseInsensitive {
		flags |= syntax.FoldCase
	}
	if multiline {
		flags |= syntax.DotNL
	}
	tree, err := syntax.Parse(pattern, flags)
	if err != nil {
		return nil, patternError(pattern, err)
	}
	if !multiline {
		if err := stripNewline(tree); err != nil {
			return nil, &PatternError{Pattern: pattern, Msg: err.Error()}
		}
	}
	return tree.Simplify(), nil
}

// denseLitBits is the selectivity (prefilter.go) under which a literal is
// too common to find the candidate lines when a more selective run is
// known: about one byte in 64 of source code or more, such as a common
// letter, or a letter of either case ("f" under -i). Measured on Go's
// source tree: (?i)fo+ba?r (f: 5.7 bits) is faster by the run, while
// [a-z]+_[a-z]+\( is faster by its "_" (6.6 bits).
const denseLitBits = 6

// patternError turns a regexp/syntax error into a PatternError with the
// column of the offending fragment.
func patternError(pattern string, err error) error {
	var se *syntax.Error
	if !errors.As(err, &se) {
		return &PatternError{Pattern: pattern, Msg: err.Error()}
	}
	pe := &PatternError{Pattern: pattern, Msg: fmt.Sprintf("%s: `%s`", se.Code, se.Expr)}
	if i := strings.Index(pattern, se.Expr); i >= 0 && se.Expr != "" {
		pe.Column = utf8.RuneCountInString(pattern[:i]) + 1
	}
	return pe
}

// stripNewline makes tree unable to match "\n", as ripgrep does for
// line-oriented search.
func stripNewline(re *syntax.Regexp) error {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return errors.New(`the literal "\n" is not allowed unless multiline is true`)
			}
		}
	case syntax.OpAnyChar:
		re.Op = syntax.OpAnyCharNotNL
	case syntax.OpCharClass:
		var out []rune
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if lo <= '\n' && '\n' <= hi {
				if lo < '\n' {
					out = append(out, lo, '\n'-1)
				}
				if hi > '\n' {
					out = append(out, '\n'+1, hi)
				}
				continue
			}
			out = append(out, lo, hi)
		}
		if len(out) == 0 {
			re.Op, re.Rune = syntax.OpNoMatch, nil
		} else {
			re.Rune = out
		}
	}
	for _, sub := range re.Sub {
		if err := stripNewline(sub); err != nil {
			return err
		}
	}
	return nil
}

// matchesNewline reports whether re has a part that can match "\n".
func matchesNewline(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpAnyChar:
		return true
	case syntax.OpLiteral:
		return slices.Contains(re.Rune, '\n')
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return true
			}
		}
		return false
	}
	return slices.ContainsFunc(re.Sub, matchesNewline)
}

// requiredLiterals appends the case-sensitive literals every match of re contains.
func requiredLiterals(re *syntax.Regexp, out [][]rune) [][]rune {
	switch re.Op {
	case syntax.OpLiteral:
		if !folds(re) {
			out = append(out, re.Rune)
		}
	case syntax.OpCapture, syntax.OpPlus:
		out = requiredLiterals(re.Sub[0], out)
	case syntax.OpRepeat:
		if re.Min >= 1 {
			out = requiredLiterals(re.Sub[0], out)
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			out = requiredLiterals(sub, out)
		}
	}
	return out
}

// folds reports whether the literal re matches other runes than its own:
// under -i, "_(" matches only itself.
func folds(re *syntax.Regexp) bool {
	if re.Flags&syntax.FoldCase == 0 {
		return false
	}
	for _, r := range re.Rune {
		if unicode.SimpleFold(r) != r {
			return true
		}
	}
	return false
}

// requiredLiteral returns the longest literal that every match of re contains.
func requiredLiteral(re *syntax.Regexp) (lit []rune, fold, ok bool) {
	switch re.Op {
	case syntax.OpLiteral:
		return re.Rune, folds(re), true
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiteral(re.Sub[0])
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			l, f, o := requiredLiteral(sub)
			if !o {
				continue
			}
			// Prefer case-sensitive literals, then longer ones.
			if !ok || (fold && !f) || (fold == f && len(l) > len(lit)) {
				lit, fold, ok = l, f, true
			}
		}
		return lit, fold, ok
	}
	return nil, false, false
}

// asciiFoldRun returns the most selective run of lit (matched ignoring
// case) whose runes fold to ASCII runes only, which indexFold finds
// exactly: 'k' also matches the KELVIN SIGN and 's' matches 'ſ', so
// "(?i)stop" is searched for as "top".
func asciiFoldRun(lit []rune) []rune {
	var best []rune
	bestBits := 0.0
	start := 0
	for i := 0; i <= len(lit); i++ {
		if i < len(lit) && foldsToASCII(lit[i]) {
			continue
		}
		if b := literalBits([]byte(strings.ToLower(string(lit[start:i]))), true); b > bestBits {
			best, bestBits = lit[start:i], b
		}
		start = i + 1
	}
	return best
}

// foldsToASCII reports whether r and every rune it matches ignoring case are ASCII.
func foldsToASCII(r rune) bool {
	for f := r; ; {
		if f >= utf8.RuneSelf {
			return false
		}
		if f = unicode.SimpleFold(f); f == r {
			return true
		}
	}
}

// index returns the index of the first occurrence of the literal in s, or -1.
func (m *matcher) index(s []byte) int {
	if !m.fold {
		return indexRare(s, m.lit, m.rare)
	}
	return indexFold(s, m.lit)
}

// indexFold finds lit (lower-case ASCII) in s ignoring ASCII case.
func indexFold(s, lit []byte) int {
	// Anchor on the first byte of lit that is not a letter, else on the
	// first letter (searching for both of its cases).
	k := 0
	for i, c := range lit {
		if !isLetter(c) {
			k = i
			break
		}
	}
	c := lit[k]
	if !isLetter(c) {
		for pos := k; pos < len(s); {
			j := bytes.IndexByte(s[pos:], c)
			if j < 0 {
				return -1
			}
			start := pos + j - k
			if start+len(lit) <= len(s) && bytes.EqualFold(s[start:start+len(lit)], lit) {
				return start
			}
			pos += j + 1
		}
		return -1
	}
	lo, up := c, c-'a'+'A'
	nextLo, nextUp := -2, -2 // -2: not searched yet
	for pos := k; pos < len(s); {
		if nextLo != -1 && nextLo < pos {
			if j := bytes.IndexByte(s[pos:], lo); j >= 0 {
				nextLo = pos + j
			} else {
				nextLo = -1
			}
		}
		if nextUp != -1 && nextUp < pos {
			if j := bytes.IndexByte(s[pos:], up); j >= 0 {
				nextUp = pos + j
			} else {
				nextUp = -1
			}
		}
		at := nextLo
		if at == -1 || (nextUp != -1 && nextUp < at) {
			at = nextUp
		}
		if at < 0 {
			return -1
		}
		start := at - k
		if start+len(lit) <= len(s) && bytes.EqualFold(s[start:start+len(lit)], lit) {
			return start
		}
		pos = at + 1
	}
	return -1
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// lineBounds returns the start and end (excluding "\n") of the line holding text[i].
func lineBounds(text []byte, i int) (int, int) {
	ls := bytes.LastIndexByte(text[:i], '\n') + 1
	le := bytes.IndexByte(text[i:], '\n')
	if le < 0 {
		return ls, len(text)
	}
	return ls, i + le
}

// nextLine finds the first matching line at or after pos (a line start).
// It returns the line's bounds, or ok=false when there is none.
func (m *matcher) nextLine(text []byte, pos int) (ls, le int, ok bool) {
	for pos <= len(text) {
		if m.lit != nil {
			i := m.index(text[pos:])
			if i < 0 {
				return 0, 0, false
			}
			ls, le = lineBounds(text, pos+i)
			if m.litOnly || (m.hasAll(text[ls:le]) && (m.seq == nil || m.seq.index(text[ls:le]) >= 0) && m.re.Match(text[ls:le])) {
				return ls, le, true
			}
			pos = le + 1
			continue
		}
		// Without a literal, run the regexp line by line: on short inputs
		// Go's regexp uses its backtracker, much faster than its NFA.
		for pos <= len(text) {
			if m.seq != nil {
				i := m.seq.index(text[pos:])
				if i < 0 {
					return 0, 0, false
				}
				pos = bytes.LastIndexByte(text[:pos+i], '\n') + 1
			}
			le := bytes.IndexByte(text[pos:], '\n')
			if le < 0 {
				le = len(text)
			} else {
				le += pos
			}
			if m.hasAll(text[pos:le]) && m.re.Match(text[pos:le]) {
				return pos, le, true
			}
			pos = le + 1
		}
		return 0, 0, false
	}
	return 0, 0, false
}

// hasAll reports whether line contains every literal in m.also.
func (m *matcher) hasAll(line []byte) bool {
	for _, l := range m.also {
		if !bytes.Contains(line, l) {
			return false
		}
	}
	return true
}

// eachMatch calls yield with the bounds of each match of m.re in text, in
// order: the matches FindAllIndex(text, -1) returns, without keeping them
// (that took ~110 bytes a match, 1 GB for a 10 MB line of one-byte
// matches). ReplaceAllFunc is the one regexp API that reuses its match
// positions; its output is the bytes between matches, at most text.
func (m *matcher) eachMatch(text []byte, yield func(s, e int)) {
	m.re.ReplaceAllFunc(text, func(match []byte) []byte {
		// match is text[s:e]: its capacity tells s.
		s := cap(text) - cap(match)
		yield(s, s+len(match))
		return nil
	})
}

// countMatches returns the number of matches of m.re in text, as
// len(FindAllIndex(text, -1)) but without keeping them. A literal's are
// counted as bytes, as ripgrep and nextLine find them (the regexp would
// also count an invalid byte as a "\uFFFD").
func (m *matcher) countMatches(text []byte) int {
	if m.litOnly {
		return bytes.Count(text, m.lit)
	}
	n := 0
	m.eachMatch(text, func(int, int) { n++ })
	return n
}

// matchAny reports whether text has a match.
func (m *matcher) matchAny(text []byte) bool {
	if m.multiline {
		if m.lit != nil && m.index(text) < 0 {
			return false
		}
		return m.re.Match(text)
	}
	_, _, ok := m.nextLine(text, 0)
	return ok
}

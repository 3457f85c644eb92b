package search

import (
	"math/rand/v2"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// describeSeq renders a run of byte sets as a regexp-like string, e.g.
// "[A-Z][A-Z][0-9]"; ranges of three or more bytes are shown as a-b. An
// ASCII run is "ascii:RUN", followed by " else RUN" if it has another.
func describeSeq(s *classSeq) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	if s.ascii {
		b.WriteString("ascii:")
	}
	for i := 0; i < 64 && s.last>>i != 0; i++ {
		var members []byte
		for c := range 256 {
			if s.mask[c]&(1<<i) != 0 {
				members = append(members, byte(c))
			}
		}
		if len(members) == 1 {
			b.WriteByte(members[0])
			continue
		}
		b.WriteByte('[')
		for j := 0; j < len(members); {
			k := j
			for k+1 < len(members) && members[k+1] == members[k]+1 {
				k++
			}
			b.WriteByte(members[j])
			if k-j >= 2 {
				b.WriteByte('-')
				b.WriteByte(members[k])
			} else if k > j {
				b.WriteByte(members[k])
			}
			j = k + 1
		}
		b.WriteByte(']')
	}
	if s.other != nil {
		b.WriteString(" else " + describeSeq(s.other))
	}
	return b.String()
}

func TestRequiredSeq(t *testing.T) {
	cases := []struct {
		pattern string
		fold    bool
		want    string // "" when no prefilter is worth it
	}{
		{`[A-Z]{4}[0-9]{2}`, false, "[A-Z][A-Z][A-Z][A-Z][0-9][0-9]"},
		{`\b[a-z]+_[a-z]+\(`, false, "[a-z]_[a-z]"},
		{`(?i)fo+ba?r`, false, "[Oo][Bb]"},
		{`fo+ba?r`, true, "[Oo][Bb]"},
		{`\d{3}-\d{4}`, false, "[0-9][0-9][0-9]-[0-9][0-9][0-9][0-9]"},
		{`x(ab|cd)y`, false, "x[ac][bd]y"},
		{`x(ab|c)y`, false, "[bc]y"},
		{`(?:[A-Z]\w*\.)+[A-Z]`, false, ".[A-Z]"},
		{`[A-Z]{2,}\d`, false, "[A-Z][0-9]"},
		// 'k' folds to the KELVIN SIGN, three bytes: no fixed run, but
		// one on ASCII lines; a line with other bytes must hold the run
		// after "else" (without one, it is left to the regexp).
		{`(?i)[A-Z]{4}`, false, "ascii:[A-Za-z][A-Za-z][A-Za-z][A-Za-z]"},
		{`[A-Z]{4}[0-9]{2}`, true, "ascii:[A-Za-z][A-Za-z][A-Za-z][A-Za-z][0-9][0-9] else [0-9][0-9]"},
		{`[0-9].[0-9]`, false, "ascii:[0-9][\x00-\t\v-\x7f][0-9] else [0-9]"},
		// A literal finds the lines; a run no better than it is not used.
		// ('k' folds to the KELVIN SIGN: the literal of (?i)ak9 is "9".)
		{`(?i)ak9`, false, "ascii:[Aa][Kk]9"},
		{`(?i)ab9`, false, ""},
		{`ab[0-9]`, false, "ab[0-9]"},
		{`abcd[a-z ]`, false, ""},
		{`_[a-z]_[a-z]_`, false, "_[a-z]_[a-z]_"},
		// No ASCII line matches.
		{`é[0-9]`, false, "ascii:[][0-9] else \xc3\xa9[0-9]"},
		// U+FFFD also matches invalid bytes.
		{"(?:\uFFFD|é)[0-9]", false, "ascii:[][0-9] else [0-9]"},
		{`\pL\d`, true, "[0-9]"},
		{`.*`, false, ""},
		{`[a-z]+`, false, ""},
		{`\pL\d`, false, "[0-9]"},
		{`^\s*$`, false, ""},
		{`a*b?`, false, ""},
	}
	for _, tc := range cases {
		m, err := compileMatcher(tc.pattern, tc.fold, false)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		if got := describeSeq(m.seq); got != tc.want {
			t.Errorf("required run of %q (fold %v) = %q, want %q", tc.pattern, tc.fold, got, tc.want)
		}
	}
}

// TestMatcherPrefilterChoice checks how lines are found: by a literal
// (lit, also), by a run (seq), or both.
func TestMatcherPrefilterChoice(t *testing.T) {
	cases := []struct {
		pattern string
		fold    bool
		lit     string // "" for none; "i:" prefix when matched ignoring case
		also    string // joined by ","
		seq     string
	}{
		{`[A-Z]{4}[0-9]{2}`, false, "", "", "[A-Z][A-Z][A-Z][A-Z][0-9][0-9]"},
		{`errors\.New\(`, false, "errors.New(", "", ""},
		{`[a-z]+_[a-z]+\(`, false, "_", "(", "[a-z]_[a-z]"},
		// "_" and "(" have no case: -i leaves them literals.
		{`\b[a-z]+_[a-z]+\(`, true, "_", "(", "ascii:[A-Za-z]_[A-Za-z]"},
		// "f" of either case is too common to search for: the run finds
		// the lines.
		{`(?i)fo+ba?r`, false, "", "", "[Oo][Bb]"},
		{`(?i)hello`, false, "i:hello", "", ""},
		// 's' also matches 'ſ' and 'k' the KELVIN SIGN, which indexFold
		// does not find: the literal is the best run without them.
		{`(?i)stop`, false, "i:top", "", "ascii:[Ss][Tt][Oo][Pp]"},
		{`kelvin`, true, "i:elvin", "", "ascii:[Kk][Ee][Ll][Vv][Ii][Nn]"},
		{`(?i)ak9`, false, "i:9", "", "ascii:[Aa][Kk]9"},
		{`(?i)sk`, false, "", "", "ascii:[Ss][Kk]"},
	}
	for _, tc := range cases {
		m, err := compileMatcher(tc.pattern, tc.fold, false)
		if err != nil {
			t.Fatal(err)
		}
		lit := string(m.lit)
		if m.fold {
			lit = "i:" + lit
		}
		var also []string
		for _, a := range m.also {
			also = append(also, string(a))
		}
		if lit != tc.lit || strings.Join(also, ",") != tc.also || describeSeq(m.seq) != tc.seq {
			t.Errorf("%q (fold %v): lit %q, also %q, run %q; want %q, %q, %q", tc.pattern, tc.fold, lit, also, describeSeq(m.seq), tc.lit, tc.also, tc.seq)
		}
	}
}

func TestClassSeqIndexASCII(t *testing.T) {
	m, err := compileMatcher(`[A-Z]{4}[0-9]{2}`, true, false)
	if err != nil {
		t.Fatal(err)
	}
	s := m.seq
	if s == nil || !s.ascii || s.other == nil {
		t.Fatalf("run %q, want an ASCII run with another", describeSeq(s))
	}
	for _, tc := range []struct {
		text string
		want int
	}{
		{"abcd12", 5},
		{"abc12\nxyzw99 z", 11},
		{"abc12\n\u00e9 abcd1 one digit\u00e9\nlast", -1}, // no [0-9][0-9] on the non-ASCII line
		{"\u00e9 no digits\n\u00e9 but 12\nABCD", 13},     // its first non-ASCII byte
		{"\u00e9", -1},
		{"\xff12", 0},
		{"", -1},
	} {
		if got := s.index([]byte(tc.text)); got != tc.want {
			t.Errorf("index(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// fullSeqs returns the runs seqOf finds for pattern in line mode, for any
// line and for ASCII lines, however unselective (none if empty), so that
// the soundness checks see every run.
func fullSeqs(t testing.TB, pattern string, fold bool) []*classSeq {
	tree, err := parsePattern(pattern, fold, false)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []*classSeq
	fac, afac := seqOf(tree, false).fac, seqOf(tree, true).fac
	var other *classSeq
	if len(fac) > 0 {
		// Both scans, whichever newClassSeq chose.
		other = newClassSeq(fac, false, nil)
		flipped := *other
		flipped.skip = !other.skip
		seqs = append(seqs, other, &flipped)
	}
	if len(afac) > 0 {
		seqs = append(seqs, newClassSeq(afac, true, nil), newClassSeq(afac, true, other))
	}
	return seqs
}

// prefilterPatterns are the patterns the soundness checks try.
var prefilterPatterns = []string{
	`[A-Z]{4}[0-9]{2}`, `\b[a-z]+_[a-z]+\(`, `(?i)fo+ba?r`, `x(ab|cd)y`, `x(ab|c)y`, `[A-Z]{2,}\d`,
	`(?i)ak9`, `é[0-9]`, "\uFFFD[0-9]", `\d{3}-\d{4}`, `(a|bc)+[0-9]x`, `(?i)k[0-9]s`, `[^a-z][0-9]{2}`, `[a-z]`, `(?i)ſ\d`, `\x{212a}[a-c]`, "(?:\uFFFD|é)[0-9]",
	`(\w\d|\d\w)\W`, `a{3,5}[xy]{2}`, `^[a-f]\d$`, `(?i)(?:ab){2}\b`, `[[:upper:]][[:digit:]]`,
}

// TestPrefilterSound checks on random lines that the required run is in
// every line the regexp matches.
func TestPrefilterSound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	// Single bytes and pieces of the patterns, so that lines match often.
	var pieces []string
	for _, c := range []byte("aAbBcCfFoOrRkKsSxXyz_(09-5 \t.\xff\xc3") {
		pieces = append(pieces, string(c))
	}
	pieces = append(pieces, "é", "\uFFFD", "\u212a", "\u017f", "ab", "AB", "cd", "aaa", "xy", "123", "foo", "BAR", "ABCD", "_b(", "4567")
	for _, pattern := range prefilterPatterns {
		for _, fold := range []bool{false, true} {
			m, err := compileMatcher(pattern, fold, false)
			if err != nil {
				t.Fatal(err)
			}
			seqs := fullSeqs(t, pattern, fold)
			hits := 0
			for range 5000 {
				var line []byte
				for range r.IntN(10) {
					line = append(line, pieces[r.IntN(len(pieces))]...)
				}
				if !m.re.Match(line) {
					continue
				}
				hits++
				for _, seq := range seqs {
					if seq.index(line) < 0 {
						t.Fatalf("%+q (fold %v) matches %+q, which lacks the run %+q (ascii %v)", pattern, fold, line, describeSeq(seq), seq.ascii)
					}
				}
			}
			t.Logf("%q fold=%v: %d matching lines checked", pattern, fold, hits)
		}
	}
}

// FuzzPrefilter checks that a pattern's required run is in every line its
// regexp matches.
func FuzzPrefilter(f *testing.F) {
	for i, p := range prefilterPatterns {
		f.Add(p, "say ABCD12 or foo_bar( or FOoBR, ak9 \u212a9 é1", i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, fold bool) {
		if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
			return
		}
		m, err := compileMatcher(pattern, fold, false)
		if err != nil {
			return
		}
		seqs := fullSeqs(t, pattern, fold)
		for _, line := range strings.Split(text, "\n") {
			if !m.re.MatchString(line) {
				continue
			}
			for _, seq := range seqs {
				if seq.index([]byte(line)) < 0 {
					t.Fatalf("%+q (fold %v) matches %+q, which lacks the run %+q (ascii %v)", pattern, fold, line, describeSeq(seq), seq.ascii)
				}
			}
		}
	})
}

// randomPattern builds a random regexp of the grammar the prefilters
// analyse: literals (with runes that fold to non-ASCII ones, invalid-byte
// stand-ins and multi-byte runes), classes (ranges, negation, Perl and
// Unicode classes), anchors and word boundaries, alternations, groups
// with case flags, and repetitions with counts.
func randomPattern(r *rand.Rand, depth int) string {
	atoms := []string{
		"a", "b", "k", "s", "A", "K", "S", "0", "1", "_", "(", " ", "é", "ſ", "\u212a", "\ufffd", "ab", "kS", "foo", "_(",
		"[a-z]", "[A-Z]", "[0-9]", "[^a-z]", "[^ ]", "[A-Za-z]", "[a-fK]", "[ks]", `\d`, `\w`, `\s`, `\D`, `\W`, `\S`, ".",
		`\pL`, `\p{Lu}`, `\PL`, "[[:upper:]]", "[[:digit:]]", `[é0-9]`, `\x{17F}`, `[^\x00-\x7f]`,
	}
	if depth <= 0 || r.IntN(3) == 0 {
		return atoms[r.IntN(len(atoms))]
	}
	sub := func() string { return randomPattern(r, depth-1) }
	switch r.IntN(10) {
	case 0, 1, 2:
		return sub() + sub()
	case 3:
		return sub() + sub() + sub()
	case 4:
		return "(?:" + sub() + "|" + sub() + ")"
	case 5:
		return []string{"(?i:", "(?-i:", "(", "(?:"}[r.IntN(4)] + sub() + ")"
	case 6:
		return []string{"^", "$", `\b`, `\B`}[r.IntN(4)] + sub()
	case 7:
		return sub() + []string{"^", "$", `\b`, `\B`}[r.IntN(4)]
	default:
		return "(?:" + sub() + ")" + []string{"*", "+", "?", "{2}", "{3}", "{1,3}", "{2,}", "{0,2}", "+?"}[r.IntN(9)]
	}
}

// randomText builds lines from pieces that the random patterns match
// often: letters and digits of both cases, folding traps, invalid bytes,
// CR, multi-byte runes.
func randomText(r *rand.Rand, lines int) []byte {
	pieces := []string{
		"a", "b", "k", "s", "A", "K", "S", "0", "1", "9", "_", "(", " ", "\t", "\r", "x", "Z", "é", "É", "ſ", "\u212a",
		"\ufffd", "\xff", "\xc3", "\xe2\x84", "日", "ab", "AB", "kS", "foo", "FOO", "_(", "ABCD12", "sk9", "\u0391",
	}
	var b []byte
	for l := range lines {
		if l > 0 {
			b = append(b, '\n')
		}
		for range r.IntN(12) {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
	}
	return b
}

// matchingLines returns the numbers of the lines the matcher finds, and
// those the regexp alone matches.
func matchingLines(m *matcher, text []byte) (got, want []int) {
	starts := []int{0}
	for i, c := range text {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	for n, ls := range starts {
		le := len(text)
		if n+1 < len(starts) {
			le = starts[n+1] - 1
		}
		if m.re.Match(text[ls:le]) {
			want = append(want, n)
		}
	}
	for pos := 0; ; {
		ls, le, ok := m.nextLine(text, pos)
		if !ok {
			break
		}
		n, _ := slices.BinarySearch(starts, ls)
		got = append(got, n)
		pos = le + 1
	}
	return got, want
}

// checkMatcherLines fails when the matcher's lines differ from the
// regexp's, or matchAny disagrees: a prefilter (literal, other literals,
// class run) rejected a line the regexp matches, or let one through
// that it does not.
func checkMatcherLines(t *testing.T, pattern string, fold bool, text []byte) {
	t.Helper()
	m, err := compileMatcher(pattern, fold, false)
	if err != nil {
		return
	}
	if tree, _ := parsePattern(pattern, fold, false); hasLiteralRune(tree, utf8.RuneError) {
		// A literal U+FFFD is searched for as its bytes, so an invalid
		// byte does not match it, as in rg, though Go's regexp reads one
		// as U+FFFD: compare on valid UTF-8.
		text = []byte(strings.ToValidUTF8(string(text), ""))
	}
	got, want := matchingLines(m, text)
	if !slices.Equal(got, want) {
		lines := strings.Split(string(text), "\n")
		var missed []string
		for _, n := range want {
			if !slices.Contains(got, n) {
				missed = append(missed, lines[n])
			}
		}
		t.Fatalf("%+q (fold %v; literal %+q fold %v, also %+q, run %+q): lines %v, the regexp matches %v; missed %+q",
			pattern, fold, m.lit, m.fold, m.also, describeSeq(m.seq), got, want, missed)
	}
	if m.matchAny(text) != (len(want) > 0) {
		t.Fatalf("%+q (fold %v): matchAny %v, the regexp matches lines %v", pattern, fold, !m.matchAny(text), want)
	}
}

// hasLiteralRune reports whether a literal of re holds r.
func hasLiteralRune(re *syntax.Regexp, r rune) bool {
	if re.Op == syntax.OpLiteral && slices.Contains(re.Rune, r) {
		return true
	}
	return slices.ContainsFunc(re.Sub, func(sub *syntax.Regexp) bool { return hasLiteralRune(sub, r) })
}

// TestMatcherRandomPatterns is a property test: for random patterns and
// texts, the lines the matcher finds with all its prefilters are exactly
// the lines its regexp matches.
func TestMatcherRandomPatterns(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	n := 5000
	if testing.Short() || raceDetector {
		n = 500
	}
	for range n {
		pattern := randomPattern(r, 4)
		fold := r.IntN(3) == 0
		for range 3 {
			checkMatcherLines(t, pattern, fold, randomText(r, 40))
		}
	}
	for _, pattern := range prefilterPatterns {
		for _, fold := range []bool{false, true} {
			for range 50 {
				checkMatcherLines(t, pattern, fold, randomText(r, 40))
			}
		}
	}
}

// FuzzMatcherLines checks that the matcher finds exactly the lines its
// regexp matches, for any pattern and text.
func FuzzMatcherLines(f *testing.F) {
	for i, p := range prefilterPatterns {
		f.Add(p, "say ABCD12 or foo_bar( or FOoBR\nak9 \u212a9 é1\n\xffABCD12\nſTOP34", i%2 == 0)
	}
	f.Fuzz(func(t *testing.T, pattern, text string, fold bool) {
		checkMatcherLines(t, pattern, fold, []byte(text))
	})
}

// allRuns returns the end of every run index finds in t, searching on
// after each.
func allRuns(t []byte, index func([]byte) int) []int {
	var ends []int
	for pos := 0; pos < len(t); {
		i := index(t[pos:])
		if i < 0 {
			break
		}
		ends = append(ends, pos+i)
		pos += i + 1
	}
	return ends
}

// TestClassSeqScansAgree checks that the backward scan (indexSkip) finds
// the same runs as the forward one for the runs of random patterns.
func TestClassSeqScansAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	tried := 0
	for range 3000 {
		pattern := randomPattern(r, 4)
		tree, err := parsePattern(pattern, r.IntN(3) == 0, false)
		if err != nil {
			continue
		}
		fac := seqOf(tree, false).fac
		if len(fac) == 0 {
			continue
		}
		tried++
		s := newClassSeq(fac, false, nil)
		for range 3 {
			text := randomText(r, 20)
			if f, k := allRuns(text, s.indexForward), allRuns(text, s.indexSkip); !slices.Equal(f, k) {
				t.Fatalf("run %+q of %+q in %+q: forward scan finds %v, backward %v", describeSeq(s), pattern, text, f, k)
			}
		}
	}
	if tried < 500 {
		t.Fatalf("only %d random patterns had a run", tried)
	}
}

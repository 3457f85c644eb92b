package search

import (
	"bytes"
	"math"
	"math/bits"
	"regexp/syntax"
	"unicode"
	"unicode/utf8"
)

// A pattern without a useful literal (`[A-Z]{4}[0-9]{2}`) still says
// something about the bytes of every match: it holds a run of bytes, each
// from a known set (four upper-case letters, then two digits). classSeq
// finds such runs with a shift-and scan (one table load and three
// operations a byte), or, when most bytes are in none of the sets, with a
// backward scan that mostly looks at one byte in n, so Go's regexp, which
// costs 15–30 ns a byte, only runs on the lines that hold one. The run is derived from the pattern's
// syntax tree (seqOf) and is sound: every match of the regexp contains
// it, so a line without it has no match; the regexp decides on the rest.
//
// A character class with a non-ASCII member has no fixed bytes: under -i,
// [A-Z] also matches 'ſ' (U+017F, two bytes) and the KELVIN SIGN (three),
// and U+FFFD matches any invalid byte. On a line of ASCII bytes only,
// though, every character is one byte and only the ASCII members count,
// so seqOf also derives an ASCII run, sound for such lines; a classSeq
// built from it checks a line with another byte for the run that holds on
// any line instead, or leaves it to the regexp.

// maxSeq is the longest run seqOf keeps (a classSeq could hold 64, the
// bits of a word): sixteen sets are selective enough, and longer runs make
// the analysis of a huge pattern slow.
const maxSeq = 16

// byteSet is a set of bytes.
type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }
func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }

func (s byteSet) union(t byteSet) byteSet {
	return byteSet{s[0] | t[0], s[1] | t[1], s[2] | t[2], s[3] | t[3]}
}

// classSeq finds the first run of bytes b₀…bₙ₋₁ with each bᵢ in the i-th
// set of the sequence it was built from. It is immutable.
type classSeq struct {
	mask [256]uint64 // bit i is set in mask[c] when c is in the i-th set
	last uint64      // the bit of the sequence's last set
	// rev[c] has bit n-1-i set when c is in the i-th set of n; skip says
	// index reads windows backwards with it (indexSkip).
	rev  [256]uint64
	n    int
	skip bool
	// ascii says the run holds on lines of ASCII bytes only: a line with
	// another byte is a candidate if it holds other (nil: always).
	ascii bool
	other *classSeq
}

func newClassSeq(seq []byteSet, ascii bool, other *classSeq) *classSeq {
	n := len(seq)
	s := &classSeq{last: 1 << (n - 1), n: n, ascii: ascii, other: other}
	var union byteSet
	for i, set := range seq {
		union = union.union(set)
		for c := range 256 {
			if set.has(byte(c)) {
				s.mask[c] |= 1 << i
				s.rev[c] |= 1 << (n - 1 - i)
			}
		}
	}
	s.skip = !ascii && n >= minSkipLen && setBits(union) >= minSkipBits
	return s
}

// The backward scan pays when a run is long and most bytes are in none
// of its sets, so that most windows are left after one byte: on Go's
// source tree, [A-Z]{4}[0-9]{2} (upper case and digits: about one byte in
// eight) scans 3 times faster than forwards. minSkipBits is −log₂ of the
// share of bytes in some set (setBits of their union).
const (
	minSkipLen  = 3
	minSkipBits = 2
)

// index returns the index of the last byte of the first run in t, or -1;
// with s.ascii, of a byte of the first candidate line. t starts a line.
func (s *classSeq) index(t []byte) int {
	if s.ascii {
		return s.indexASCII(t)
	}
	if s.skip {
		return s.indexSkip(t)
	}
	return s.indexForward(t)
}

// indexForward is index by a shift-and scan: one table load and three
// operations a byte.
func (s *classSeq) indexForward(t []byte) int {
	var d uint64 // bit i: the run's first i+1 sets match the bytes ending here
	for i, c := range t {
		d = (d<<1 | 1) & s.mask[c]
		if d&s.last != 0 {
			return i
		}
	}
	return -1
}

// indexSkip is index by backward windows (BNDM, Navarro and Raffinot): a
// window of n bytes is read from its end while the bytes read are a part
// of a run; then it moves on to where the longest start of a run read
// begins, n bytes on when none was, without missing a run.
func (s *classSeq) indexSkip(t []byte) int {
	n := s.n
	high := uint64(1) << (n - 1)
	full := high<<1 - 1
	for pos := 0; pos+n <= len(t); {
		// Bit n-1-i of d: the bytes read, t[pos+j:pos+n], match the
		// sets from the i-th on.
		d, shift := full, n
		for j := n - 1; j >= 0; j-- {
			d &= s.rev[t[pos+j]]
			if d == 0 {
				break
			}
			if d&high != 0 {
				if j == 0 {
					return pos + n - 1
				}
				shift = j // t[pos+j:pos+n] starts a run
			}
			d = d << 1 & full
		}
		pos += shift
	}
	return -1
}

func (s *classSeq) indexASCII(t []byte) int {
	var d uint64
	for i := 0; i < len(t); i++ {
		c := t[i]
		if c >= utf8.RuneSelf {
			ls := bytes.LastIndexByte(t[:i], '\n') + 1
			le := bytes.IndexByte(t[i:], '\n')
			if le < 0 {
				le = len(t)
			} else {
				le += i
			}
			if s.other == nil || s.other.index(t[ls:le]) >= 0 {
				return i
			}
			i, d = le, 0 // on to the next line
			continue
		}
		d = (d<<1 | 1) & s.mask[c]
		if d&s.last != 0 {
			return i
		}
	}
	return -1
}

// seqInfo is what seqOf knows about the strings a regexp matches. Every
// match starts with a run of pre, ends with a run of suf and contains a
// run of fac; exact means every match is exactly a run of pre (then pre,
// suf and fac are the same). Empty sequences say nothing.
type seqInfo struct {
	exact         bool
	pre, suf, fac []byteSet
}

// exact is the info of a regexp that matches exactly the runs of seq.
func (a *seqAnalysis) exact(seq []byteSet) seqInfo {
	if len(seq) > maxSeq {
		return seqInfo{pre: seq[:maxSeq], suf: seq[len(seq)-maxSeq:], fac: a.best(seq[:maxSeq], seq[len(seq)-maxSeq:])}
	}
	return seqInfo{exact: true, pre: seq, suf: seq, fac: seq}
}

// requiredSeq returns a prefilter for the line-oriented regexp re, or nil
// when no run it finds would rule out enough lines to pay for the scan:
// it must be more selective than minSeqBits and, when the lines are
// found by a literal of litBits, than that literal by minSeqGain.
//
// The ASCII run is taken when it is more selective than the other by
// minASCIIGain: it costs a test a byte and the regexp on non-ASCII lines.
func requiredSeq(re *syntax.Regexp, litBits float64) *classSeq {
	anyLine, asciiLine := newSeqAnalysis(false), newSeqAnalysis(true)
	fac := anyLine.of(re).fac
	b := anyLine.seqBits(fac)
	useful := func(b float64) bool { return b >= minSeqBits && (litBits == 0 || b >= litBits+minSeqGain) }
	afac := asciiLine.of(re).fac
	if ab := asciiLine.seqBits(afac); ab >= b+minASCIIGain && useful(ab) {
		var other *classSeq
		if len(fac) > 0 && useful(b) {
			other = newClassSeq(fac, false, nil)
		}
		return newClassSeq(afac, true, other)
	}
	if len(fac) == 0 || !useful(b) {
		return nil
	}
	return newClassSeq(fac, false, nil)
}

// minSeqBits is the least selectivity (−log₂ of the chance that the run
// starts at a given byte of source code) worth a scan; minSeqGain is what
// it must add to a literal's, minASCIIGain what an ASCII run must add.
const (
	minSeqBits   = 2
	minSeqGain   = 1
	minASCIIGain = 1
)

// literalBits is the selectivity of a literal (0 for none); with fold set
// it is lower-case ASCII matched ignoring case.
func literalBits(lit []byte, fold bool) float64 {
	total := 0.0
	for _, c := range lit {
		p := byteFreq[c]
		if fold && isLetter(c) {
			p += byteFreq[c-'a'+'A']
		}
		total -= math.Log2(p)
	}
	return total
}

// seqAnalysis derives the seqInfo of regexps, for any line or, with ascii
// set, for lines of ASCII bytes only. bits caches seqBits' figure of each
// set seen.
type seqAnalysis struct {
	ascii bool
	bits  map[byteSet]float64
}

func newSeqAnalysis(ascii bool) *seqAnalysis {
	return &seqAnalysis{ascii: ascii, bits: map[byteSet]float64{}}
}

// seqOf analyses re (simplified, without newlines for line search); with
// ascii set, for lines of ASCII bytes only.
func seqOf(re *syntax.Regexp, ascii bool) seqInfo { return newSeqAnalysis(ascii).of(re) }

func (a *seqAnalysis) of(re *syntax.Regexp) seqInfo {
	ascii := a.ascii
	switch re.Op {
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		// Zero-width: the runs on either side still follow each other.
		return seqInfo{exact: true}
	case syntax.OpLiteral:
		info := seqInfo{exact: true}
		fold := re.Flags&syntax.FoldCase != 0
		for _, r := range re.Rune {
			info = a.concat(info, a.rune(r, fold))
		}
		return info
	case syntax.OpCharClass:
		var set byteSet
		for i := 0; i+1 < len(re.Rune); i += 2 {
			lo, hi := re.Rune[i], re.Rune[i+1]
			if hi >= utf8.RuneSelf {
				if !ascii {
					// A non-ASCII member is several bytes (and
					// U+FFFD matches any invalid byte): no fixed run.
					return seqInfo{}
				}
				hi = utf8.RuneSelf - 1
			}
			for r := lo; r <= hi; r++ {
				set.add(byte(r))
			}
		}
		return a.exact([]byteSet{set})
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		if !ascii {
			return seqInfo{}
		}
		var set byteSet
		for c := range byte(utf8.RuneSelf) {
			if c != '\n' {
				set.add(c)
			}
		}
		return a.exact([]byteSet{set})
	case syntax.OpCapture:
		return a.of(re.Sub[0])
	case syntax.OpPlus:
		sub := a.of(re.Sub[0])
		return seqInfo{pre: sub.pre, suf: sub.suf, fac: sub.fac}
	case syntax.OpRepeat:
		if re.Min == 0 {
			return seqInfo{}
		}
		sub := a.of(re.Sub[0])
		if re.Min == re.Max && sub.exact {
			info := seqInfo{exact: true}
			for range re.Min {
				info = a.concat(info, sub)
			}
			return info
		}
		return seqInfo{pre: sub.pre, suf: sub.suf, fac: sub.fac}
	case syntax.OpConcat:
		info := seqInfo{exact: true}
		for _, sub := range re.Sub {
			info = a.concat(info, a.of(sub))
		}
		return info
	case syntax.OpAlternate:
		return a.alternate(re.Sub)
	}
	// OpStar, OpQuest, OpNoMatch: nothing fixed.
	return seqInfo{}
}

// rune is the info of a literal rune, folded if fold is set.
func (a *seqAnalysis) rune(r rune, fold bool) seqInfo {
	var set byteSet
	if a.ascii {
		// Only the ASCII members of the case-folding orbit (none: the
		// set is empty and no ASCII line matches).
		f := r
		for {
			if f < utf8.RuneSelf {
				set.add(byte(f))
			}
			if !fold {
				break
			}
			if f = unicode.SimpleFold(f); f == r {
				break
			}
		}
		return a.exact([]byteSet{set})
	}
	if r == utf8.RuneError {
		return seqInfo{} // it also matches any invalid byte
	}
	if !fold || unicode.SimpleFold(r) == r {
		if r < utf8.RuneSelf {
			set.add(byte(r))
			return a.exact([]byteSet{set})
		}
		var buf [utf8.UTFMax]byte
		n := utf8.EncodeRune(buf[:], r)
		seq := make([]byteSet, n)
		for i := range n {
			seq[i].add(buf[i])
		}
		return a.exact(seq)
	}
	// The case-folding orbit, one byte each only if all of it is ASCII
	// ('k' folds to the three-byte KELVIN SIGN too).
	f := r
	for {
		if f >= utf8.RuneSelf {
			return seqInfo{}
		}
		set.add(byte(f))
		if f = unicode.SimpleFold(f); f == r {
			break
		}
	}
	return a.exact([]byteSet{set})
}

// concat is the info of a match of x followed by a match of y.
func (a *seqAnalysis) concat(x, y seqInfo) seqInfo {
	if x.exact && y.exact {
		return a.exact(join(x.pre, y.pre))
	}
	var out seqInfo
	out.pre = x.pre
	if x.exact {
		out.pre = first(join(x.pre, y.pre))
	}
	out.suf = y.suf
	if y.exact {
		out.suf = lastOf(join(x.suf, y.suf))
	}
	// Where a match of x ends and one of y starts.
	out.fac = a.best(x.fac, y.fac, first(join(x.suf, y.pre)), out.pre, out.suf)
	return out
}

// alternate is the info of a match of one of subs.
func (a *seqAnalysis) alternate(subs []*syntax.Regexp) seqInfo {
	infos := make([]seqInfo, len(subs))
	exact, n := true, -1
	minPre, minSuf := maxSeq, maxSeq
	for i, sub := range subs {
		infos[i] = a.of(sub)
		if !infos[i].exact || (n >= 0 && len(infos[i].pre) != n) {
			exact = false
		}
		n = len(infos[i].pre)
		minPre, minSuf = min(minPre, len(infos[i].pre)), min(minSuf, len(infos[i].suf))
	}
	pre := make([]byteSet, minPre)
	suf := make([]byteSet, minSuf)
	for _, info := range infos {
		for j := range pre {
			pre[j] = pre[j].union(info.pre[j])
		}
		for j := range suf {
			suf[j] = suf[j].union(info.suf[len(info.suf)-minSuf+j])
		}
	}
	if exact {
		return a.exact(pre)
	}
	return seqInfo{pre: pre, suf: suf, fac: a.best(pre, suf)}
}

func join(a, b []byteSet) []byteSet {
	return append(append(make([]byteSet, 0, len(a)+len(b)), a...), b...)
}

// first and lastOf cut a sequence to maxSeq sets (any part of a run is a run).
func first(s []byteSet) []byteSet { return s[:min(len(s), maxSeq)] }

func lastOf(s []byteSet) []byteSet { return s[len(s)-min(len(s), maxSeq):] }

// best returns the most selective of seqs.
func (a *seqAnalysis) best(seqs ...[]byteSet) []byteSet {
	var best []byteSet
	bestBits := 0.0
	for _, s := range seqs {
		if b := a.seqBits(s); b > bestBits {
			best, bestBits = s, b
		}
	}
	return best
}

// seqBits estimates how selective a run is: −log₂ of the chance that it
// starts at a given byte of source code.
func (a *seqAnalysis) seqBits(seq []byteSet) float64 {
	total := 0.0
	for _, set := range seq {
		b, ok := a.bits[set]
		if !ok {
			b = setBits(set)
			a.bits[set] = b
		}
		total += b
	}
	return total
}

// setBits is −log₂ of the chance that a byte of source code is in set.
func setBits(set byteSet) float64 {
	p := 0.0
	for w, word := range set {
		for word != 0 {
			c := w<<6 | bits.TrailingZeros64(word)
			p += byteFreq[c]
			word &= word - 1
		}
	}
	return -math.Log2(min(max(p, minFreq), 1))
}

// minFreq stands for an empty set's chance in seqBits, to keep it finite.
const minFreq = 1e-9

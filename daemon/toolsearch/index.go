package toolsearch

import (
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// BM25 parameters, and how much a match in the name counts against one in
// the description.
const (
	bm25K1     = 1.2
	bm25B      = 0.75
	nameWeight = 2.5
	descWeight = 1.0
	// prefixWeight scales a query word absent from the index that is a
	// prefix of indexed words ("repo" → "repository"), applied to each.
	prefixWeight = 0.5
	// minPrefix is the shortest query word expanded by prefix.
	minPrefix = 3
)

// stopWords are dropped from descriptions and queries (never from names).
var stopWords = map[string]bool{
	"a": true, "an": true, "the": true, "and": true, "or": true, "of": true, "to": true,
	"in": true, "on": true, "for": true, "with": true, "by": true, "from": true, "at": true,
	"as": true, "is": true, "are": true, "be": true, "it": true, "its": true, "this": true,
	"that": true, "these": true, "into": true, "i": true, "me": true, "my": true, "we": true,
	"you": true, "your": true, "can": true, "will": true, "do": true, "does": true,
	"how": true, "what": true, "which": true, "some": true, "any": true, "all": true,
}

// synonymGroups are words tool descriptions use for the same action; a
// query word also matches the others of its group, at synonymWeight.
var synonymGroups = [][]string{
	{"create", "new", "add", "make"},
	{"delete", "remove"},
	{"search", "find", "lookup"},
	{"get", "fetch", "retrieve"},
	{"send", "post"},
	{"update", "edit", "modify", "change"},
	{"run", "execute"},
	{"list", "show", "enumerate"},
}

// synonymWeight scales a match through a synonym.
const synonymWeight = 0.5

// synonyms maps a stemmed word to the stemmed other words of its group.
var synonyms = func() map[string][]string {
	m := map[string][]string{}
	for _, g := range synonymGroups {
		for _, w := range g {
			for _, o := range g {
				if o != w {
					m[stem(w)] = append(m[stem(w)], stem(o))
				}
			}
		}
	}
	return m
}()

// Index ranks a fixed set of tools for keyword queries with BM25 over two
// fields: the name's parts (split on "__", "_", "-" and camelCase, so the
// "mcp" prefix and the server name are parts too) and the description's
// words, lower-cased, lightly stemmed, stop words dropped from descriptions.
// A query word also matches its few action synonyms (new → create, remove →
// delete, ...) and, when no tool has it, the indexed words it begins
// ("screensh" → screenshot), both at a lower weight; a tool's score is
// scaled by the share of query words it matches.
// Build it once per tool set; it is immutable and safe for concurrent use.
type Index struct {
	tools  []tool.Tool
	names  []string       // model-facing names, in tools' order
	lower  []string       // names lower-cased
	byName map[string]int // name → position
	fold   map[string]int // lower-cased name → first position
	// postings maps a stemmed term to the documents holding it.
	postings map[string][]posting
	vocab    []string  // the terms, sorted, for prefix expansion
	normName []float64 // k1 * (1 - b + b * len/avg) of each name field
	normDesc []float64 // the same for each description
}

// posting is one document's term frequencies of one term.
type posting struct {
	doc        int32
	name, desc uint16
}

// NewIndex indexes tools (their Spec: name and description), in order.
// Later tools with a name already seen are left out of the index.
func NewIndex(tools []tool.Tool) *Index {
	ix := &Index{
		byName:   make(map[string]int, len(tools)),
		fold:     make(map[string]int, len(tools)),
		postings: map[string][]posting{},
	}
	var nameLens, descLens []int
	// tf and terms are one document's term frequencies, in first-seen order
	// (so postings are built in document order).
	type termTF struct {
		term string
		p    posting
	}
	tf := map[string]int{}
	var terms []termTF
	totalName, totalDesc := 0, 0
	for _, t := range tools {
		s := t.Spec()
		if _, dup := ix.byName[s.Name]; dup {
			continue
		}
		doc := len(ix.tools)
		ix.tools = append(ix.tools, t)
		ix.names = append(ix.names, s.Name)
		l := strings.ToLower(s.Name)
		ix.lower = append(ix.lower, l)
		ix.byName[s.Name] = doc
		if _, ok := ix.fold[l]; !ok {
			ix.fold[l] = doc
		}
		nameTerms := nameTokens(s.Name)
		descTerms := textTokens(s.Description)
		nameLens = append(nameLens, len(nameTerms))
		descLens = append(descLens, len(descTerms))
		totalName += len(nameTerms)
		totalDesc += len(descTerms)
		clear(tf)
		terms = terms[:0]
		get := func(term string) *posting {
			i, ok := tf[term]
			if !ok {
				i = len(terms)
				tf[term] = i
				terms = append(terms, termTF{term: term, p: posting{doc: int32(doc)}})
			}
			return &terms[i].p
		}
		for _, w := range nameTerms {
			if p := get(w); p.name < math.MaxUint16 {
				p.name++
			}
		}
		for _, w := range descTerms {
			if p := get(w); p.desc < math.MaxUint16 {
				p.desc++
			}
		}
		for _, tt := range terms {
			ix.postings[tt.term] = append(ix.postings[tt.term], tt.p)
		}
	}
	n := len(ix.tools)
	avgName, avgDesc := 1.0, 1.0
	if n > 0 {
		avgName = math.Max(float64(totalName)/float64(n), 1)
		avgDesc = math.Max(float64(totalDesc)/float64(n), 1)
	}
	ix.normName = make([]float64, n)
	ix.normDesc = make([]float64, n)
	for i := range n {
		ix.normName[i] = bm25K1 * (1 - bm25B + bm25B*float64(nameLens[i])/avgName)
		ix.normDesc[i] = bm25K1 * (1 - bm25B + bm25B*float64(descLens[i])/avgDesc)
	}
	ix.vocab = make([]string, 0, len(ix.postings))
	for term := range ix.postings {
		ix.vocab = append(ix.vocab, term)
	}
	sort.Strings(ix.vocab)
	return ix
}

// Len returns the number of tools indexed.
func (ix *Index) Len() int { return len(ix.tools) }

// Tools returns the indexed tools in order. The caller must not change the slice.
func (ix *Index) Tools() []tool.Tool { return ix.tools }

// Lookup returns the tool with this exact name.
func (ix *Index) Lookup(name string) (tool.Tool, bool) {
	i, ok := ix.byName[name]
	if !ok {
		return nil, false
	}
	return ix.tools[i], true
}

// idf is BM25's inverse document frequency (always positive).
func (ix *Index) idf(df int) float64 {
	n := float64(len(ix.tools))
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// score returns each document's score for the query terms: the sum of
// its BM25 scores times the share of the terms it matches (so a tool
// matching every word beats one matching a rare word often). A term the
// index lacks is expanded to the indexed terms it is a prefix of, at
// prefixWeight.
func (ix *Index) score(terms []string) []float64 {
	n := len(ix.tools)
	acc := make([]float64, n)
	if len(terms) == 0 {
		return acc
	}
	hits := make([]uint16, n)
	mark := make([]uint16, n) // 1 + the last term that counted a hit
	for ti, t := range terms {
		id := uint16(ti + 1)
		for _, syn := range synonyms[t] {
			if ps, ok := ix.postings[syn]; ok {
				ix.addTerm(ps, synonymWeight, acc, hits, mark, id)
			}
		}
		if ps, ok := ix.postings[t]; ok {
			ix.addTerm(ps, 1, acc, hits, mark, id)
			continue
		}
		if utf8.RuneCountInString(t) < minPrefix {
			continue
		}
		for i := sort.SearchStrings(ix.vocab, t); i < len(ix.vocab) && strings.HasPrefix(ix.vocab[i], t); i++ {
			ix.addTerm(ix.postings[ix.vocab[i]], prefixWeight, acc, hits, mark, id)
		}
	}
	for d, h := range hits {
		if h > 0 {
			acc[d] *= float64(h) / float64(len(terms))
		}
	}
	return acc
}

func (ix *Index) addTerm(ps []posting, weight float64, acc []float64, hits, mark []uint16, id uint16) {
	w := weight * ix.idf(len(ps))
	for _, p := range ps {
		var s float64
		if p.name > 0 {
			tf := float64(p.name)
			s += nameWeight * tf * (bm25K1 + 1) / (tf + ix.normName[p.doc])
		}
		if p.desc > 0 {
			tf := float64(p.desc)
			s += descWeight * tf * (bm25K1 + 1) / (tf + ix.normDesc[p.doc])
		}
		acc[p.doc] += w * s
		if mark[p.doc] != id {
			mark[p.doc] = id
			hits[p.doc]++
		}
	}
}

// nameTokens splits a tool name into its stemmed, lower-cased parts:
// "mcp__slack__sendMessage" → mcp, slack, send, messag.
func nameTokens(name string) []string {
	var out []string
	for _, w := range words(name) {
		out = append(out, stem(w))
	}
	return out
}

// textTokens splits free text (a description, a query) into stemmed,
// lower-cased words without stop words.
func textTokens(text string) []string {
	var out []string
	for _, w := range words(text) {
		if stopWords[w] {
			continue
		}
		out = append(out, stem(w))
	}
	return out
}

// words splits s into lower-cased words: runs of letters and digits,
// further split at camelCase boundaries ("sendHTTPRequest" → send, http,
// request).
func words(s string) []string {
	var out []string
	start := -1
	flush := func(end int) {
		if start >= 0 {
			for _, w := range camelSplit(s[start:end]) {
				out = append(out, strings.ToLower(w))
			}
			start = -1
		}
	}
	for i, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		flush(i)
	}
	flush(len(s))
	return out
}

// camelSplit splits a run of letters and digits at lower→Upper and at
// Upper→Upper+lower ("HTTPServer" → HTTP, Server).
func camelSplit(s string) []string {
	if isASCIILower(s) {
		return []string{s}
	}
	rs := []rune(s)
	var out []string
	start := 0
	for i := 1; i < len(rs); i++ {
		prev, cur := rs[i-1], rs[i]
		boundary := unicode.IsUpper(cur) && (unicode.IsLower(prev) || unicode.IsDigit(prev))
		if !boundary && unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(rs) && unicode.IsLower(rs[i+1]) {
			boundary = true
		}
		if boundary {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// stem strips common English endings so that "messages", "message",
// "created", "creating" and "create" meet: plural -s/-es/-ies, -ing, -ed,
// a final -e, and a doubled final consonant left by -ing/-ed ("running").
// It is deliberately light: both the index and queries go through it.
func stem(w string) string {
	if len(w) <= 3 || !isASCIILetters(w) {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		w = w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	stripped := false
	switch {
	case strings.HasSuffix(w, "ing") && len(w) >= 6:
		w, stripped = w[:len(w)-3], true
	case strings.HasSuffix(w, "ed") && len(w) >= 5:
		w, stripped = w[:len(w)-2], true
	}
	if stripped {
		if n := len(w); n >= 2 && w[n-1] == w[n-2] && !strings.ContainsRune("aeioulsz", rune(w[n-1])) {
			w = w[:n-1]
		}
	}
	if len(w) > 3 && strings.HasSuffix(w, "e") && !strings.HasSuffix(w, "ee") {
		w = w[:len(w)-1]
	}
	return w
}

func isASCIILetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// isASCIILower reports whether s holds only lower-case ASCII letters and
// digits (no camelCase boundary possible).
func isASCIILower(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

package toolsearch

import (
	"math"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// DefaultMaxResults is the number of tools a query returns when the caller
// gives no positive maximum.
const DefaultMaxResults = 5

// SelectPrefix starts a query naming tools exactly: "select:A,B".
const SelectPrefix = "select:"

// mcpPrefix starts the name of every MCP tool (mcp__SERVER__TOOL).
const mcpPrefix = "mcp__"

// Search finds tools for a query, best first:
//
//   - "select:A,B" returns the tools named exactly A and B (case-insensitive
//     when no exact match), in the order given, unknown names left out, with
//     no limit but the list;
//   - a query that is exactly a tool's name returns that tool;
//   - a word "mcp__srv__" (a name prefix ending in "__"; "mcp__srv" naming a
//     server works too) keeps only that server's tools (none for an unknown
//     server), in index order unless other words rank them;
//   - a word "+term" keeps only tools whose lower-cased name contains term;
//     the other words (and term) rank them;
//   - other words are keywords ranked with BM25; a tool matching none of
//     them is not returned.
//
// At most max tools are returned (DefaultMaxResults when max <= 0), except
// for select:. Ties keep index order. Search is safe for concurrent use.
func (ix *Index) Search(query string, max int) []tool.Tool {
	if max <= 0 {
		max = DefaultMaxResults
	}
	q := strings.TrimSpace(query)
	if rest, ok := cutPrefixFold(q, SelectPrefix); ok {
		return ix.selectNames(rest)
	}
	if i, ok := ix.byName[q]; ok {
		return []tool.Tool{ix.tools[i]}
	}
	if i, ok := ix.fold[strings.ToLower(q)]; ok && !strings.ContainsAny(q, " \t") {
		return []tool.Tool{ix.tools[i]}
	}

	var prefixes, required, keywords []string
	for _, f := range strings.Fields(q) {
		lf := strings.ToLower(f)
		switch {
		case strings.HasPrefix(lf, mcpPrefix) && len(lf) > len(mcpPrefix)+2 && strings.HasSuffix(lf, "__"),
			strings.HasPrefix(lf, mcpPrefix) && ix.isServerPrefix(lf):
			// "mcp__srv__" always restricts (to nothing for an unknown
			// server); "mcp__srv" only when srv is a server.
			prefixes = append(prefixes, serverPrefix(lf))
		case strings.HasPrefix(f, "+") && len(f) > 1:
			term := strings.ToLower(f[1:])
			required = append(required, term)
			keywords = append(keywords, term)
		default:
			keywords = append(keywords, f)
		}
	}
	terms := dedupe(textTokens(strings.Join(keywords, " ")))
	if len(terms) > math.MaxUint16-1 {
		terms = terms[:math.MaxUint16-1]
	}
	filtered := len(prefixes) > 0 || len(required) > 0
	if !filtered && len(terms) == 0 {
		return nil
	}

	acc := ix.score(terms)
	top := newTopK(max)
	for doc, s := range acc {
		if filtered {
			if !ix.keep(doc, prefixes, required) {
				continue
			}
		} else if s <= 0 {
			continue
		}
		top.add(doc, s)
	}
	out := make([]tool.Tool, 0, len(top.docs))
	for _, d := range top.docs {
		out = append(out, ix.tools[d])
	}
	return out
}

// selectNames resolves "A,B" (commas or spaces) to known tools in order.
func (ix *Index) selectNames(list string) []tool.Tool {
	var out []tool.Tool
	seen := map[int]bool{}
	for _, n := range strings.FieldsFunc(list, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		i, ok := ix.byName[n]
		if !ok {
			i, ok = ix.fold[strings.ToLower(n)]
		}
		if ok && !seen[i] {
			seen[i] = true
			out = append(out, ix.tools[i])
		}
	}
	return out
}

// isServerPrefix reports whether the lower-cased word names a server: it
// ends in "__" and is a prefix of some tool's name, or adding "__" makes it
// one.
func (ix *Index) isServerPrefix(lw string) bool {
	p := serverPrefix(lw)
	if len(p) <= len(mcpPrefix)+2 {
		return false
	}
	for _, n := range ix.lower {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// serverPrefix returns lw ending in "__".
func serverPrefix(lw string) string {
	if strings.HasSuffix(lw, "__") {
		return lw
	}
	return strings.TrimSuffix(lw, "_") + "__"
}

// keep reports whether doc's name has one of the prefixes (if any) and
// contains every required term.
func (ix *Index) keep(doc int, prefixes, required []string) bool {
	n := ix.lower[doc]
	if len(prefixes) > 0 {
		ok := false
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	for _, r := range required {
		if !strings.Contains(n, r) {
			return false
		}
	}
	return true
}

// topK keeps the k best (score, then lower doc) documents, best first.
type topK struct {
	k      int
	docs   []int
	scores []float64
}

func newTopK(k int) *topK {
	return &topK{k: k, docs: make([]int, 0, min(k, 64)), scores: make([]float64, 0, min(k, 64))}
}

// add offers a document; documents must be offered in increasing doc order
// so that ties keep index order.
func (t *topK) add(doc int, s float64) {
	n := len(t.docs)
	if n == t.k && s <= t.scores[n-1] {
		return
	}
	i := n
	for i > 0 && t.scores[i-1] < s {
		i--
	}
	if n < t.k {
		t.docs = append(t.docs, 0)
		t.scores = append(t.scores, 0)
	} else {
		n-- // the last one falls off
	}
	copy(t.docs[i+1:n+1], t.docs[i:n])
	copy(t.scores[i+1:n+1], t.scores[i:n])
	t.docs[i], t.scores[i] = doc, s
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func dedupe(ws []string) []string {
	seen := make(map[string]bool, len(ws))
	out := ws[:0]
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

package cmdutil

import (
	"fmt"
	"sort"
	"strings"
)

// maxSuggestions bounds every "did you mean" list.
const maxSuggestions = 3

// Suggest returns the names of candidates nearest to name: at most three,
// nearest first, only those close enough to be a typo of it (a small edit
// distance, or one name a prefix of the other).
func Suggest(name string, candidates []string) []string {
	type scored struct {
		name string
		d    int
	}
	lname := strings.ToLower(name)
	limit := max(2, len([]rune(name))/3)
	var hits []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		if c == "" || c == name || seen[c] {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		d := editDistance(lname, lc)
		switch {
		case lname == lc:
			d = 0
		case len(lname) >= 3 && (strings.HasPrefix(lc, lname) || strings.HasPrefix(lname, lc)):
			d = min(d, 1)
		case len(lname) >= 4 && strings.Contains(lc, lname):
			d = min(d, 2)
		}
		if d <= limit {
			hits = append(hits, scored{c, d})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].d != hits[j].d {
			return hits[i].d < hits[j].d
		}
		return hits[i].name < hits[j].name
	})
	var out []string
	for i := 0; i < len(hits) && i < maxSuggestions; i++ {
		out = append(out, hits[i].name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b (in runes), with a
// transposition of neighbours counted as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// DidYouMean is " (did you mean A, B or C?)" for the suggestions of name
// among candidates, or "" when none is close.
func DidYouMean(name string, candidates []string) string {
	return PhraseSuggestions(Suggest(name, candidates))
}

// PhraseSuggestions is "; did you mean A, B or C?", or "" for none.
func PhraseSuggestions(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; did you mean %s?", s[0])
	}
	return fmt.Sprintf("; did you mean %s or %s?", strings.Join(s[:len(s)-1], ", "), s[len(s)-1])
}

// Contains reports whether list holds s.
func Contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

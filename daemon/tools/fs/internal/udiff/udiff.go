// Package udiff computes line-based differences (Myers' O(ND) algorithm) and
// renders them as unified diffs, for the displays of the file-editing tools.
//
// It compares whole lines including their terminators, so a change of line
// ending or of the final newline shows up as a change. It holds no state and
// is safe for concurrent use.
package udiff

import (
	"fmt"
	"strings"
)

// Op is the kind of one line of an edit script.
type Op int8

// The operations of an edit script.
const (
	Equal  Op = iota // the line is in both texts
	Delete           // the line is only in the old text
	Insert           // the line is only in the new text
)

// Line is one line of an edit script. Text includes its terminator ("\n" or
// "\r\n"), except for a last line that has none.
type Line struct {
	Op   Op
	Text string
}

// Hunk is a group of changes with surrounding context, as in a unified diff.
// Starts are 1-based; a start with zero lines names the line before the hunk.
type Hunk struct {
	OldStart, OldLines int
	NewStart, NewLines int
	Lines              []Line
}

// MaxEditDistance bounds the work of Diff: when the texts differ by more lines
// than this (after their common prefix and suffix are removed), Diff reports
// the whole differing middle as deleted and inserted instead of searching for
// the shortest script. The result is still a correct diff, only a longer one.
const MaxEditDistance = 2000

// Split splits s into lines, each keeping its "\n" terminator. A last line
// without a newline is kept as it is. An empty s has no lines.
func Split(s string) []string {
	if s == "" {
		return nil
	}
	lines := make([]string, 0, strings.Count(s, "\n")+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			lines = append(lines, s)
			break
		}
		lines = append(lines, s[:i+1])
		s = s[i+1:]
	}
	return lines
}

// Diff returns an edit script that turns a into b: every line of a and b in
// order, each marked Equal, Delete or Insert.
func Diff(a, b []string) []Line {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	out := make([]Line, 0, len(a)+len(b)-pre-suf)
	for _, l := range a[:pre] {
		out = append(out, Line{Equal, l})
	}
	out = append(out, myers(a[pre:len(a)-suf], b[pre:len(b)-suf])...)
	for _, l := range a[len(a)-suf:] {
		out = append(out, Line{Equal, l})
	}
	return out
}

// myers is Myers' greedy algorithm with the trace kept for the backtrack.
// The trace costs O(D²) memory, which MaxEditDistance bounds.
func myers(a, b []string) []Line {
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return replaceAll(a, b)
	}
	maxD := min(n+m, MaxEditDistance)
	off := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int // trace[d] holds v[-d-1..d+1] as it was before step d
	for d := 0; d <= maxD; d++ {
		snap := make([]int, 2*d+3)
		copy(snap, v[off-d-1:off+d+2])
		trace = append(trace, snap)
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(a, b, trace)
			}
		}
	}
	return replaceAll(a, b)
}

func backtrack(a, b []string, trace [][]int) []Line {
	var rev []Line
	x, y := len(a), len(b)
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d]
		at := func(k int) int { return v[k+d+1] }
		k := x - y
		var prevK int
		if k == -d || (k != d && at(k-1) < at(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			rev = append(rev, Line{Equal, a[x-1]})
			x--
			y--
		}
		if d > 0 {
			if x == prevX {
				rev = append(rev, Line{Insert, b[y-1]})
			} else {
				rev = append(rev, Line{Delete, a[x-1]})
			}
		}
		x, y = prevX, prevY
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

func replaceAll(a, b []string) []Line {
	out := make([]Line, 0, len(a)+len(b))
	for _, l := range a {
		out = append(out, Line{Delete, l})
	}
	for _, l := range b {
		out = append(out, Line{Insert, l})
	}
	return out
}

// Hunks groups the changes of an edit script into hunks with up to context
// lines of unchanged text around them. Changes closer than 2*context lines
// share a hunk. An edit script without changes has no hunks.
func Hunks(script []Line, context int) []Hunk {
	if context < 0 {
		context = 0
	}
	// oldBefore[i], newBefore[i]: lines of each text before entry i.
	oldBefore := make([]int, len(script)+1)
	newBefore := make([]int, len(script)+1)
	var changes []int
	for i, l := range script {
		oldBefore[i+1], newBefore[i+1] = oldBefore[i], newBefore[i]
		if l.Op != Insert {
			oldBefore[i+1]++
		}
		if l.Op != Delete {
			newBefore[i+1]++
		}
		if l.Op != Equal {
			changes = append(changes, i)
		}
	}
	var hunks []Hunk
	for ci := 0; ci < len(changes); {
		first := changes[ci]
		last := first
		ci++
		for ci < len(changes) && changes[ci]-last-1 <= 2*context {
			last = changes[ci]
			ci++
		}
		s := max(0, first-context)
		e := min(len(script), last+context+1)
		h := Hunk{
			OldStart: oldBefore[s] + 1, OldLines: oldBefore[e] - oldBefore[s],
			NewStart: newBefore[s] + 1, NewLines: newBefore[e] - newBefore[s],
			Lines: script[s:e],
		}
		if h.OldLines == 0 {
			h.OldStart--
		}
		if h.NewLines == 0 {
			h.NewStart--
		}
		hunks = append(hunks, h)
	}
	return hunks
}

// Unified returns the unified diff of two texts with the given lines of
// context, headed "--- oldName" and "+++ newName"; "" when they are equal.
// Line terminators are not printed; a last line without one is followed by
// "\ No newline at end of file", as diff(1) does.
func Unified(oldName, newName, a, b string, context int) string {
	return Render(oldName, newName, Hunks(Diff(Split(a), Split(b)), context))
}

// Render renders hunks as a unified diff, as Unified does; "" for no hunks.
func Render(oldName, newName string, hunks []Hunk) string {
	if len(hunks) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", oldName, newName)
	for _, h := range hunks {
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", rangeSpec(h.OldStart, h.OldLines), rangeSpec(h.NewStart, h.NewLines))
		for _, l := range h.Lines {
			sb.WriteByte(" -+"[l.Op])
			text, eol := strings.CutSuffix(l.Text, "\n")
			text = strings.TrimSuffix(text, "\r")
			sb.WriteString(text)
			sb.WriteByte('\n')
			if !eol {
				sb.WriteString("\\ No newline at end of file\n")
			}
		}
	}
	return sb.String()
}

func rangeSpec(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

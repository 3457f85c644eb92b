package search

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// abLine returns a line of n bytes of "abab…": it ends with a or b as n
// is odd or even, so that b$ tells a whole line from a piece of one.
func abLine(n int) string {
	return strings.Repeat("ab", n/2+1)[:n]
}

// makeLongLineTree writes files whose lines are longer than chunk, the
// read size of the stream search (files and count modes), with lengths
// around its multiples, so that every chunk ends inside a line.
func makeLongLineTree(t *testing.T, chunk int) string {
	t.Helper()
	root := t.TempDir()
	var mixed []string
	for _, n := range []int{chunk - 2, chunk - 1, chunk, chunk + 1, 1, 2*chunk + 1, 3, 3*chunk + 2, chunk / 2, 2 * chunk} {
		mixed = append(mixed, abLine(n))
	}
	files := map[string]string{
		"one.txt":   abLine(chunk + chunk/2),                                         // a single line, no line end
		"onenl.txt": abLine(2*chunk+chunk/3) + "\n",                                  // a single line
		"mixed.txt": strings.Join(mixed, "\n") + "\n",                                // lines across every boundary
		"cross.txt": strings.Repeat("a", chunk-1) + "XY" + abLine(chunk) + "\nXY\n",  // XY across the first boundary
		"ends.txt":  abLine(chunk+1) + "\n" + abLine(chunk) + "\n" + abLine(3*chunk), // the last line has no line end
	}
	writeFiles(t, root, files)
	return root
}

// longLineCases are the oracle cases of makeLongLineTree: lines counted
// and matches (-o) counted in count mode, and files mode, with patterns
// that a piece of a line matches differently than the whole line; and
// content and multiline searches, with many matches in a long line.
func longLineCases() []oracleCase {
	var cases []oracleCase
	for _, pat := range []string{"a", "b$", "^b", "XY", "ab", "[ab]{5}$"} {
		cases = append(cases,
			oracleCase{"count " + pat, "", map[string]any{"pattern": pat, "output_mode": "count"}, []string{"-c", "-H", pat}, false},
			oracleCase{"count -o " + pat, "", map[string]any{"pattern": pat, "output_mode": "count", "-o": true}, []string{"-c", "-H", "-o", pat}, false},
			oracleCase{"files " + pat, "", map[string]any{"pattern": pat}, []string{"-l", pat}, false},
		)
	}
	u := []string{"-U", "--multiline-dotall"}
	cases = append(cases,
		oracleCase{"content XY", "", map[string]any{"pattern": "XY", "output_mode": "content"}, []string{"-n", "-H", "--sort", "path", "XY"}, true},
		oracleCase{"content multiline", "", map[string]any{"pattern": "[ab]", "output_mode": "content", "multiline": true}, append([]string{"-n", "-H", "--sort", "path", "[ab]"}, u...), true},
		oracleCase{"content multiline across lines", "", map[string]any{"pattern": "b\nXY", "output_mode": "content", "multiline": true}, append([]string{"-n", "-H", "--sort", "path", "b\nXY"}, u...), true},
		oracleCase{"count multiline", "", map[string]any{"pattern": "[ab]", "output_mode": "count", "multiline": true}, append([]string{"-c", "-H", "[ab]"}, u...), false},
		oracleCase{"count multiline -o", "", map[string]any{"pattern": "[ab]", "output_mode": "count", "multiline": true, "-o": true}, append([]string{"-c", "-H", "-o", "[ab]"}, u...), false},
	)
	return cases
}

// TestGrepLongLinesMatchRipgrep compares Grep with rg on lines longer
// than the stream search's chunk: a chunk must end at a line end, or a
// line is counted once per chunk it spans (a 20 MB line counted 2) and
// a match across the cut is lost. A small chunk puts the boundaries
// everywhere; one file is over the real chunk size.
func TestGrepLongLinesMatchRipgrep(t *testing.T) {
	needTool(t, "rg")
	const small = 4096
	root := makeLongLineTree(t, small)
	grep := &Grep{chunk: small}
	for _, tc := range longLineCases() {
		t.Run(tc.name, func(t *testing.T) {
			checkOracle(t, grep, root, tc, false)
		})
	}
	t.Run("real chunk size", func(t *testing.T) {
		if testing.Short() {
			t.Skip("writes a 20 MB line")
		}
		root := t.TempDir()
		big := strings.Repeat("a", chunkSize+chunkSize/4) + "\nXa\n"
		if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(big), 0o644); err != nil {
			t.Fatal(err)
		}
		grep, _ := tools()
		out, _ := call(t, grep, root, map[string]any{"pattern": "a", "output_mode": "count", "-o": true})
		if want := fmt.Sprintf("Found %d matches in 1 file", chunkSize+chunkSize/4+1); !strings.HasSuffix(out, want) {
			t.Errorf("count -o: got\n%s\nwant it to end with %q", out, want)
		}
		for _, tc := range []oracleCase{
			{"count", "", map[string]any{"pattern": "a", "output_mode": "count"}, []string{"-c", "-H", "a"}, false},
			{"count end", "", map[string]any{"pattern": "aX|a$", "output_mode": "count"}, []string{"-c", "-H", "aX|a$"}, false},
			{"files", "", map[string]any{"pattern": "aXa"}, []string{"-l", "aXa"}, false},
		} {
			checkOracle(t, grep, root, tc, false)
		}
	})
}

// TestGrepLongLineAllocatesPerLine checks that a line with a match at
// every byte costs no allocation per match: the N of a line too long to
// print ("[Omitted long line with N matches]"), a count with -o and a
// multiline search must go through the matches without keeping them
// (FindAllIndex took ~110 bytes a match: 1 GB for a 10 MB line). Each
// call is measured on a line of n matches and on one of the same length
// with a single match.
func TestGrepLongLineAllocatesPerLine(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector allocates at each call of the regexp's callback")
	}
	const n = 1 << 18
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"many.txt": strings.Repeat("a", n) + "\n",
		"one.txt":  strings.Repeat("b", n-1) + "a\n",
	})
	grep, _ := tools()
	for _, tc := range []struct {
		name  string
		input map[string]any
	}{
		{"content", map[string]any{"pattern": "[ac]", "output_mode": "content"}},
		{"content literal", map[string]any{"pattern": "a", "output_mode": "content"}},
		{"content multiline", map[string]any{"pattern": "[ac]", "output_mode": "content", "multiline": true}},
		{"count -o", map[string]any{"pattern": "[ac]", "output_mode": "count", "-o": true}},
		{"count multiline", map[string]any{"pattern": "[ac]", "output_mode": "count", "multiline": true}},
		{"count multiline -o", map[string]any{"pattern": "[ac]", "output_mode": "count", "multiline": true, "-o": true}},
		{"files", map[string]any{"pattern": "[ac]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := func(file string) float64 {
				input := map[string]any{"path": filepath.Join(root, file)}
				for k, v := range tc.input {
					input[k] = v
				}
				return testing.AllocsPerRun(2, func() {
					if out, isErr := call(t, grep, root, input); isErr || out == "No matches found" {
						t.Fatalf("Grep %v: %s", input, out)
					}
				})
			}
			many, one := allocs("many.txt"), allocs("one.txt")
			if many-one > n/64 {
				t.Errorf("Grep %v: %.0f allocations for %d matches in a line, %.0f for one", tc.input, many, n, one)
			}
		})
	}
}

// checkEachMatch checks that eachMatch and countMatches find the matches
// FindAllIndex finds, for pattern compiled as Grep compiles it.
func checkEachMatch(t *testing.T, pattern string, fold, multiline bool, text []byte) {
	t.Helper()
	m, err := compileMatcher(pattern, fold, multiline)
	if err != nil {
		return
	}
	var got [][]int
	m.eachMatch(text, func(s, e int) { got = append(got, []int{s, e}) })
	want := m.re.FindAllIndex(text, -1)
	if !slices.EqualFunc(got, want, slices.Equal[[]int]) {
		t.Errorf("eachMatch of %q (fold %v, multiline %v) on %q = %v, FindAllIndex %v", pattern, fold, multiline, text, got, want)
	}
	// A literal is counted as bytes, where the regexp reads an invalid
	// byte as U+FFFD.
	bytesOnly := m.litOnly && bytes.ContainsRune(m.lit, utf8.RuneError) && !utf8.Valid(text)
	if n := m.countMatches(text); n != len(want) && !bytesOnly {
		t.Errorf("countMatches of %q (fold %v, multiline %v) on %q = %d, want %d", pattern, fold, multiline, text, n, len(want))
	}
}

// TestEachMatchIsFindAllIndex checks eachMatch against FindAllIndex on
// empty matches (which must not abut a match), invalid UTF-8, literals
// and random patterns.
func TestEachMatchIsFindAllIndex(t *testing.T) {
	texts := []string{"", "a", "aaa", "baab", "ab\nba\n\nb", "\xffa\xc3\xa9\xc3a", "é日本a", "aa aa\n", "x\n"}
	for _, p := range []string{"a", "a*", "b*", "x*|a", "(?:)", "^", "$", `\b`, `\B`, "a|", "|a", ".", ".*", "^a*$", "aa", "\ufffd", "é", "a?b?"} {
		for _, s := range texts {
			for _, multiline := range []bool{false, true} {
				checkEachMatch(t, p, false, multiline, []byte(s))
				checkEachMatch(t, p, true, multiline, []byte(s))
			}
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	n := 2000
	if testing.Short() || raceDetector {
		n = 300
	}
	for range n {
		checkEachMatch(t, randomPattern(r, 4), r.IntN(3) == 0, r.IntN(2) == 0, randomText(r, 8))
	}
}

// A file read whole (content mode) past the first chunk is read into a
// buffer sized from its length once, not grown by doubling: the bytes
// allocated stay near the file's size (they were about twice it, and more
// for a file just past a power of two).
func TestGrepWholeFileAllocatesItsSizeOnce(t *testing.T) {
	if raceDetector {
		t.Skip("the race detector's own allocations")
	}
	const size = 6<<20 + 100 // just past a power of two: the worst case of doubling
	root := t.TempDir()
	line := strings.Repeat("x", 99) + "\n"
	writeFiles(t, root, map[string]string{"big.txt": strings.Repeat(line, size/len(line)) + "needle\n"})
	grep := &Grep{chunk: 64 << 10}
	input := map[string]any{"pattern": "needle", "output_mode": "content", "path": filepath.Join(root, "big.txt")}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if out, isErr := call(t, grep, root, input); isErr || !strings.Contains(out, "needle") {
		t.Fatalf("Grep: %s", out)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > size+size/2 {
		t.Errorf("Grep of a %d-byte file allocated %d bytes", size, got)
	}
}

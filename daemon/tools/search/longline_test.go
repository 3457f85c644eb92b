package search

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
// that a piece of a line matches differently than the whole line.
func longLineCases() []oracleCase {
	var cases []oracleCase
	for _, pat := range []string{"a", "b$", "^b", "XY", "ab", "[ab]{5}$"} {
		cases = append(cases,
			oracleCase{"count " + pat, "", map[string]any{"pattern": pat, "output_mode": "count"}, []string{"-c", "-H", pat}, false},
			oracleCase{"count -o " + pat, "", map[string]any{"pattern": pat, "output_mode": "count", "-o": true}, []string{"-c", "-H", "-o", pat}, false},
			oracleCase{"files " + pat, "", map[string]any{"pattern": pat}, []string{"-l", pat}, false},
		)
	}
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
		for _, tc := range []oracleCase{
			{"count", "", map[string]any{"pattern": "a", "output_mode": "count"}, []string{"-c", "-H", "a"}, false},
			{"count end", "", map[string]any{"pattern": "aX|a$", "output_mode": "count"}, []string{"-c", "-H", "aX|a$"}, false},
			{"files", "", map[string]any{"pattern": "aXa"}, []string{"-l", "aXa"}, false},
		} {
			checkOracle(t, grep, root, tc, false)
		}
	})
}

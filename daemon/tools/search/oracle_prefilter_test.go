package search

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The prefilter oracle searches a tree made to trip the class-run and
// literal prefilters (prefilter.go, matcher.go) with patterns of every
// kind they analyse, in every output mode, with and without -i, and
// compares each result with rg's. A prefilter that rejected a line the
// regexp matches shows here as a line rg finds and Grep does not.

// prefilterLines are lines that the oracle patterns match or almost
// match: runs cut short, case-folding traps (the KELVIN SIGN folds to k,
// 'ſ' to s), non-ASCII letters next to the runs, CRLF ends.
var prefilterLines = []string{
	"ABCD12 starts a line", "an id XYZW99 inside", "ABC12 too short", "abcd12 lower case", "AbCd12 mixed case",
	"\u212aELV12 kelvin sign", "\u017fTOP34 long s", "kelvin KELVIN \u212aelvin", "stop STOP \u017ftop9",
	"ABCDE123456 a longer run", "ABCD1 2 split", "ABCD\t12 tab", "end ABCD12", "ABCD12",
	"foo_bar(x)", "\tcall snake_case_name(1)", "_leading(no)", "foo_(no)", "x_y (no)", "FOO_BAR(upper)",
	"FooBAR fooobar FOBR fobar", "f\u00f6\u00f6bar", "fOoBaR", "fbar foar",
	"phone 555-1234 and 55-12345", "hex deadBEEF 0123abcd cafe", "xxyy xxxxx x",
	"\u00c4BCD12 umlaut first", "\u00e9ABCD12 accent before", "ABCD12\u00e9 accent after", "\u00e91 \u00e9x",
	"\u0391\u0392\u0393\u039412 greek", "\u0430\u0431\u0432\u0433 cyrillic", "\u65e5\u672c ABCD12 \u8a9e", "emoji \U0001F600 XYZW34",
	"real \ufffd replacement 7", "AB12CD34", "a1b2c3x ccc9x", "12-34 5.6 7x8",
	"", "   ", "last\tline",
}

// makePrefilterTree writes the oracle's files into a new directory.
func makePrefilterTree(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	lf := strings.Join(prefilterLines, "\n") + "\n"
	long := strings.Repeat("x", 520) + " ABCD12 EFGH34 foo_bar( foobar\n" +
		strings.Repeat("ab ", 40000) + "XYZW56 at the end of a long line\n" +
		strings.Repeat("ABC1 ", 30000) + "\n" +
		strings.Repeat("y", 494) + "ABCD12\n" + // 500 bytes with its line end
		strings.Repeat("y", 495) + "ABCD12\n"
	files := map[string]string{
		"lf.txt":   lf,
		"crlf.txt": strings.ReplaceAll(lf, "\n", "\r\n"),
		"nonl.txt": "first line\nno newline at the end ABCD12",
		"long.txt": long,
		// Invalid UTF-8 next to and inside runs: rg matches nothing
		// with an invalid byte, Go's regexp reads it as U+FFFD, so the
		// patterns that could match one skip this file (asciiSafe).
		"invalid.txt": "\xffABCD12 after an invalid byte\nABCD\xff12 inside\nok XYZW99 \xc3\nlone \xc3( byte\n\xe2\x82 cut off ABCD12\n\xc0\xaf overlong\nfoo_bar(\xff)\n",
		"ctx.txt":     "c1\nc2 ABCD12\nc3\nc4\nc5\nc6 XYZW98\nc7 EFGH76\nc8\nc9\nc10\nc11\nc12\nc13 foo_bar(\nc14\n",
		// Binary files: rg and Grep skip a file with a NUL byte.
		"bin.dat":  "ABCD12\x00foo_bar(\n",
		"late.dat": strings.Repeat("filler line\n", 1000) + "ABCD12\n\x00\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// prefilterPattern is an oracle pattern. Go's regexp and rg's differ on
// non-ASCII text for \b, \w, \d and \s (ASCII in Go, Unicode in rg) and
// on invalid UTF-8 for whatever can match U+FFFD (., \W, negated
// classes): such a pattern has the files to skip.
type prefilterPattern struct {
	pattern string
	skip    string // a glob for Grep's glob and rg -g, or ""
}

// asciiOnly skips the files with non-ASCII text; validOnly the one with invalid UTF-8.
const (
	asciiOnly = "!{lf,crlf,invalid}.txt"
	validOnly = "!invalid.txt"
)

var prefilterOraclePatterns = []prefilterPattern{
	{`[A-Z]{4}[0-9]{2}`, ""},
	{`\b[A-Z]{4}[0-9]{2}\b`, asciiOnly},
	{`^[A-Z]{4}[0-9]{2}`, ""},
	{`[A-Z]{4}[0-9]{2}$`, ""},
	{`[A-Z]{4}[0-9]{2}\r?$`, ""},
	{`(?:ABCD|XYZW|EFGH)[0-9]{2}`, ""},
	{`(?:[A-Z]{4}|[a-z]{3})[0-9]{2}`, ""},
	{`[A-Z]{4}[0-9]{2}|foo_bar`, ""},
	{`[^a-z ][0-9]{2}`, validOnly},
	{`[A-Fa-f0-9]{8}`, ""},
	{`[[:upper:]]{2}[[:digit:]]{2,3}`, ""},
	{`\p{Lu}{4}[0-9]{2}`, ""},
	{`\p{Greek}+[0-9]`, ""},
	{`[^\P{L}a-z]`, ""},
	{`x{2,5}`, ""},
	{`[0-9]{3,}-[0-9]{4}`, ""},
	{`\d{3}-\d{4}`, ""},
	{`(?i)kelvin`, ""},
	{`(?i)k[a-z]{3}[0-9]`, ""},
	{`(?i)\x{17F}top[0-9]`, ""},
	{`(?i)stop`, ""},
	{`fo+ba?r`, ""},
	{`\b[a-z]+_[a-z]+\(`, asciiOnly},
	{`[a-z]+_[a-z]+\(`, ""},
	{`é[0-9x]`, ""},
	{`\x{FFFD}`, ""},
	{`.{3}[0-9]{2}$`, validOnly},
	{`[0-9].[0-9]`, validOnly},
	{`(a|b|c)+[0-9]x`, ""},
	{`\D[0-9]{2}\D`, validOnly},
	{`^\s*$`, ""},
	{`^$`, ""},
	{`[A-Z][0-9][A-Z][0-9]`, ""},
	{`[a-z][0-9][a-z][0-9][a-z][0-9]x`, ""},
}

// prefilterModes are the output modes and options each pattern is tried with.
var prefilterModes = []struct {
	name   string
	input  map[string]any
	rgArgs []string
	sorted bool // rg --sort path; the output is compared in order
}{
	{"files", map[string]any{}, []string{"-l"}, false},
	{"count", map[string]any{"output_mode": "count"}, []string{"-c", "-H"}, false},
	{"count -o", map[string]any{"output_mode": "count", "-o": true}, []string{"-c", "-H", "-o"}, false},
	{"content", map[string]any{"output_mode": "content"}, []string{"-n", "-H"}, true},
	{"content -o", map[string]any{"output_mode": "content", "-o": true}, []string{"-n", "-H", "-o"}, true},
	{"content -C 1", map[string]any{"output_mode": "content", "-C": 1}, []string{"-n", "-H", "-C", "1"}, true},
	{"content -A 2 -B 1", map[string]any{"output_mode": "content", "-A": 2, "-B": 1}, []string{"-n", "-H", "-A", "2", "-B", "1"}, true},
}

// TestGrepPrefilterMatchesRipgrep compares Grep with rg for every oracle
// pattern, mode and case setting, and for some in multiline mode (where
// no class run is used). With the race detector, which makes the regexp
// on the long lines many times slower, only in count mode (which decides
// every line) and content mode with context.
func TestGrepPrefilterMatchesRipgrep(t *testing.T) {
	needTool(t, "rg")
	root := makePrefilterTree(t)
	grep, _ := tools()
	var cases []oracleCase
	for _, p := range prefilterOraclePatterns {
		for _, fold := range []bool{false, true} {
			for _, mode := range prefilterModes {
				if raceDetector && mode.name != "count" && mode.name != "content -C 1" {
					continue
				}
				input := map[string]any{"pattern": p.pattern, "-i": fold}
				for k, v := range mode.input {
					input[k] = v
				}
				args := append([]string{}, mode.rgArgs...)
				if mode.sorted {
					args = append(args, "--sort", "path")
				}
				if fold {
					args = append(args, "-i")
				}
				if p.skip != "" {
					input["glob"] = p.skip
					args = append(args, "-g", p.skip)
				}
				args = append(args, "-e", p.pattern)
				cases = append(cases, oracleCase{fmt.Sprintf("%s -i=%v %s", mode.name, fold, p.pattern), "", input, args, mode.sorted})
			}
		}
	}
	for _, p := range []string{`[A-Z]{4}[0-9]{2}`, `[A-Z]{4}\r?\n[a-z]`, `(?i)[a-z]{4}[0-9]{2}\s+\S`} {
		cases = append(cases,
			oracleCase{"multiline files " + p, "", map[string]any{"pattern": p, "multiline": true, "glob": validOnly},
				[]string{"-l", "-U", "--multiline-dotall", "-g", validOnly, "-e", p}, false},
			oracleCase{"multiline count " + p, "", map[string]any{"pattern": p, "multiline": true, "output_mode": "count", "glob": validOnly},
				[]string{"-c", "-H", "-U", "--multiline-dotall", "-g", validOnly, "-e", p}, false},
		)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkOracle(t, grep, root, tc, false)
		})
	}
}

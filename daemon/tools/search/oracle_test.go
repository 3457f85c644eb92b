package search

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// vcsExcludes are the globs that exclude version-control directories, as
// Claude Code passes them to ripgrep.
var vcsExcludes = []string{"!.git", "!.svn", "!.hg", "!.bzr", "!.jj", "!.sl"}

// makeTree builds a tree that exercises ignore files, hidden files,
// binary files, symbolic links and version-control directories.
func makeTree(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		".git/HEAD":              "ref: refs/heads/main foo\n",
		".git/config":            "[core] foo\n",
		".git/info/exclude":      "excluded.txt\n",
		".gitignore":             "# comment\n\n*.log\n!keep.log\nbuild/\n/anchored.txt\nsub/deep/*.tmp\ndocs/**/*.md\ntrailing.txt   \n\\#hash.txt\n",
		".ignore":                "ignored_by_ignore.txt\n",
		".rgignore":              "rgonly.txt\n",
		"a.txt":                  "foo bar\nsecond line\nthird foo\n",
		"b.go":                   "package b\n\nfunc Foo() error {\n\treturn errors.New(\"foo\")\n}\n",
		"c.py":                   "def foo():\n    return 'FOO'\n",
		"keep.log":               "foo kept\n",
		"x.log":                  "foo ignored\n",
		"anchored.txt":           "foo anchored\n",
		"excluded.txt":           "foo excluded\n",
		"ignored_by_ignore.txt":  "foo\n",
		"rgonly.txt":             "foo\n",
		"trailing.txt":           "foo\n",
		"#hash.txt":              "foo\n",
		".hidden.txt":            "foo hidden\n",
		".hiddendir/f.txt":       "foo in hidden dir\n",
		"empty.txt":              "",
		"crlf.txt":               "foo\r\nbar\r\n",
		"nonl.txt":               "last foo",
		"docs/x.md":              "foo doc\n",
		"docs/a/b.md":            "foo doc\n",
		"docs/a/c.txt":           "foo doc\n",
		"sub/.gitignore":         "!x.log\nlocal.txt\n/only_here.txt\n",
		"sub/x.log":              "foo re-included\n",
		"sub/y.log":              "foo still ignored\n",
		"sub/local.txt":          "foo\n",
		"sub/only_here.txt":      "foo\n",
		"sub/anchored.txt":       "foo not anchored here\n",
		"sub/deep/only_here.txt": "foo\n",
		"sub/deep/a.tmp":         "foo\n",
		"sub/deep/b.txt":         "foo deep\nline two\nfoo three\n",
		"sub/build/out.txt":      "foo built\n",
		"sub2/build":             "foo a file named build\n",
		"nested/.git":            "gitdir: ../.git/modules/nested\n",
		"nested/z.log":           "foo nested repo\n",
		".svn/entries":           "foo\n",
		".hg/store":              "foo\n",
		"deep/.jj/x":             "foo\n",
		"dir with space/ü.txt":   "foo ünïcode\n",
		"ctx.txt":                "l1\nl2 foo\nl3\nl4\nl5\nl6\nl7 foo\nl8\nl9\nl10\nl11\nl12 foo\nl13\n",
		"long.txt":               strings.Repeat("x", 600) + " foo foo\nshort foo\n" + strings.Repeat("y", 600) + "\nz foo\n",
		"multi.txt":              "func a() {\n\treturn nil\n}\nfunc b() {\n\tfoo()\n}\n",
		"case.txt":               "FOO upper\nFoo title\nfOo mixed\n",
		"vendor/lib/v.go":        "package lib // foo\n",
		"ids.txt":                noLiteralText,
		// 499 and 500 bytes: rg counts the line end against --max-columns.
		"cols.txt":                  strings.Repeat("x", 495) + " foo\n" + strings.Repeat("x", 496) + " foo\n" + strings.Repeat("x", 496) + " foo",
		"sub/.ignore":               "!ignored_by_ignore.txt\n",
		"sub/ignored_by_ignore.txt": "foo\n",
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bins := map[string][]byte{
		"bin.dat":      []byte("foo\x00bar\n"),
		"late_nul.txt": append(append([]byte("foo\n"), bytes.Repeat([]byte("a\n"), 6000)...), 0),
	}
	for name, content := range bins {
		if err := os.WriteFile(filepath.Join(root, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link.txt": "a.txt", "linkdir": "sub", "broken": "nowhere"} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	// Distinct modification times, so the newest-first order is checkable.
	i := 0
	_ = filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			i++
			mt := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
			_ = os.Chtimes(p, mt, mt)
		}
		return nil
	})
	return root
}

// noLiteralText has lines that the patterns without a literal
// (noLiteralPatterns) match or almost match, case-folding traps included.
var noLiteralText = strings.Join([]string{
	"ABCD12 starts a line", "an id XYZW99 inside", "ABC12 too short", "abcd12 lower case", "AbCd12 mixed case",
	"\u212aELV12 kelvin sign", "\u017fTOP34 long s", "ABCDE123456 a longer run", "ABCD1 2 split",
	"foo_bar(x)", "\tcall snake_case_name(1)", "_leading(no)", "foo_(no)", "x_y (no)", "FOO_BAR(upper)",
	"FooBAR fooobar FOBR fobar", "f\u00f6\u00f6bar", "fOoBaR", "fbar foar",
	strings.Repeat("x", 520) + " ABCD12 EFGH34 foo_bar( foobar",
	"", "last\tline",
}, "\n") + "\n"

// noLiteralPatterns are patterns without a literal worth searching for,
// which the class-run prefilter (prefilter.go) serves.
var noLiteralPatterns = []string{`[A-Z]{4}[0-9]{2}`, `\b[a-z]+_[a-z]+\(`, `(?i)fo+ba?r`}

// noLiteralCases are oracle cases for noLiteralPatterns in every output
// mode, with and without -i.
func noLiteralCases() []oracleCase {
	var cases []oracleCase
	for _, p := range noLiteralPatterns {
		for _, fold := range []bool{false, true} {
			var i []string
			if fold {
				i = []string{"-i"}
			}
			name := func(mode string) string { return fmt.Sprintf("no literal %s %s -i=%v", mode, p, fold) }
			cases = append(cases,
				oracleCase{name("files"), "", map[string]any{"pattern": p, "-i": fold}, append([]string{"-l", p}, i...), false},
				oracleCase{name("count"), "", map[string]any{"pattern": p, "-i": fold, "output_mode": "count"}, append([]string{"-c", "-H", p}, i...), false},
				oracleCase{name("content"), "", map[string]any{"pattern": p, "-i": fold, "output_mode": "content"}, append([]string{"-n", "-H", "--sort", "path", p}, i...), true},
			)
		}
	}
	return cases
}

// oracleEnv isolates ripgrep and fd from the user's configuration.
func oracleEnv(t testing.TB) []string {
	home := t.TempDir()
	return []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home, "PATH=" + os.Getenv("PATH")}
}

func needTool(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (it is the test oracle)", name)
	}
}

// rg runs ripgrep with the options Grep mimics, in dir, and returns its output.
func rg(t testing.TB, dir string, args ...string) string {
	t.Helper()
	full := []string{"--no-config", "--hidden", "--no-follow", "--max-columns", "500", "--color", "never", "--no-heading"}
	for _, g := range vcsExcludes {
		full = append(full, "-g", g)
	}
	full = append(full, args...)
	cmd := exec.Command("rg", full...)
	cmd.Dir = dir
	cmd.Env = oracleEnv(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("rg %q: %v: %s", full, err, stderr.String())
		}
	}
	return string(out)
}

// fd runs fdfind listing files that match an absolute glob under root.
func fd(t testing.TB, root, absGlob string, extra ...string) string {
	t.Helper()
	args := []string{"--hidden", "--no-follow", "--type", "f", "--color", "never", "--full-path", "--glob", absGlob}
	for _, g := range vcsExcludes {
		args = append(args, "--exclude", strings.TrimPrefix(g, "!"))
	}
	args = append(args, extra...)
	args = append(args, root)
	cmd := exec.Command("fdfind", args...)
	cmd.Env = oracleEnv(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fdfind %q: %v: %s", args, err, stderr.String())
	}
	return string(out)
}

// lines splits output into sorted, non-empty lines.
func lines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	sort.Strings(out)
	return out
}

var longLineMarker = regexp.MustCompile(`\[Omitted long line with \d+ match(es)?\]`)

// relLines turns our output (absolute paths) into rg's (relative to dir)
// and drops our summary lines.
func relLines(out, dir string) []string {
	var res []string
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, "Found ") || strings.HasPrefix(l, "(") {
			continue
		}
		l = strings.TrimPrefix(l, dir+"/")
		// ripgrep 13 writes the older marker.
		l = longLineMarker.ReplaceAllString(l, "[Omitted long matching line]")
		res = append(res, l)
	}
	return res
}

func TestGrepMatchesRipgrep(t *testing.T) {
	needTool(t, "rg")
	root := makeTree(t)
	grep, _ := tools()
	cases := []oracleCase{
		{"files literal", "", map[string]any{"pattern": "foo"}, []string{"-l", "foo"}, false},
		{"files regex", "", map[string]any{"pattern": `f[aeiou]+\b`}, []string{"-l", `f[aeiou]+\b`}, false},
		{"files from subdir (parent ignore files)", "sub", map[string]any{"pattern": "foo"}, []string{"-l", "foo"}, false},
		{"files case-insensitive", "", map[string]any{"pattern": "FOO", "-i": true}, []string{"-l", "-i", "FOO"}, false},
		{"files glob", "", map[string]any{"pattern": "foo", "glob": "*.txt"}, []string{"-l", "-g", "*.txt", "foo"}, false},
		{"files negated glob", "", map[string]any{"pattern": "foo", "glob": "!*.txt"}, []string{"-l", "-g", "!*.txt", "foo"}, false},
		{"files glob overrides gitignore", "", map[string]any{"pattern": "foo", "glob": "*.log"}, []string{"-l", "-g", "*.log", "foo"}, false},
		{"files anchored glob", "", map[string]any{"pattern": "foo", "glob": "sub/**"}, []string{"-l", "-g", "sub/**", "foo"}, false},
		{"files type", "", map[string]any{"pattern": "foo", "type": "go"}, []string{"-l", "-t", "go", "foo"}, false},
		{"files type py", "", map[string]any{"pattern": "(?i)foo", "type": "py"}, []string{"-l", "-t", "py", "(?i)foo"}, false},
		{"files multiline", "", map[string]any{"pattern": `\{\n\treturn`, "multiline": true}, []string{"-l", "-U", "--multiline-dotall", `\{\n\treturn`}, false},
		{"files no literal", "", map[string]any{"pattern": `^[a-z]\d+\s`}, []string{"-l", `^[a-z]\d+\s`}, false},
		{"count", "", map[string]any{"pattern": "foo", "output_mode": "count"}, []string{"-c", "-H", "foo"}, false},
		{"count only matching", "", map[string]any{"pattern": "foo", "output_mode": "count", "-o": true}, []string{"-c", "-H", "-o", "foo"}, false},
		{"count multiline", "", map[string]any{"pattern": `\}\nfunc`, "output_mode": "count", "multiline": true}, []string{"-c", "-H", "-U", "--multiline-dotall", `\}\nfunc`}, false},
		{"content", "", map[string]any{"pattern": "foo", "output_mode": "content", "head_limit": 0}, []string{"-n", "-H", "--sort", "path", "foo"}, true},
		{"content no line numbers", "", map[string]any{"pattern": "foo", "output_mode": "content", "-n": false, "head_limit": 0}, []string{"-N", "-H", "--sort", "path", "foo"}, true},
		{"content context", "", map[string]any{"pattern": "foo", "output_mode": "content", "-C": 2, "head_limit": 0, "glob": "!long.txt"}, []string{"-n", "-H", "--sort", "path", "-C", "2", "-g", "!long.txt", "foo"}, true},
		{"content after before", "", map[string]any{"pattern": "foo", "output_mode": "content", "-A": 1, "-B": 3, "head_limit": 0, "glob": "!long.txt"}, []string{"-n", "-H", "--sort", "path", "-A", "1", "-B", "3", "-g", "!long.txt", "foo"}, true},
		{"content only matching", "", map[string]any{"pattern": `fo+ \pL+`, "output_mode": "content", "-o": true, "head_limit": 0}, []string{"-n", "-H", "--sort", "path", "-o", `fo+ \pL+`}, true},
		{"content multiline", "", map[string]any{"pattern": `\{\n.*foo`, "output_mode": "content", "multiline": true, "head_limit": 0}, []string{"-n", "-H", "--sort", "path", "-U", "--multiline-dotall", `\{\n.*foo`}, true},
		{"content ignore case", "", map[string]any{"pattern": "foo", "output_mode": "content", "-i": true, "head_limit": 0, "glob": "!long.txt"}, []string{"-n", "-H", "--sort", "path", "-i", "-g", "!long.txt", "foo"}, true},
		{"content anchors", "", map[string]any{"pattern": `^l\d+$`, "output_mode": "content", "head_limit": 0}, []string{"-n", "-H", "--sort", "path", `^l\d+$`}, true},
	}
	cases = append(cases, noLiteralCases()...)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkOracle(t, grep, root, tc, true)
		})
	}
}

// oracleCase is a Grep call and the rg arguments that must give the same output.
type oracleCase struct {
	name    string
	dir     string // relative to the tree's root
	input   map[string]any
	rgArgs  []string
	ordered bool // compare content output in order (rg --sort path)
}

// checkOracle runs tc with Grep and rg in root/tc.dir and compares the
// outputs; withGuard also checks that a ReadGuard denying nothing changes
// nothing.
func checkOracle(t *testing.T, grep tool.Tool, root string, tc oracleCase, withGuard bool) {
	t.Helper()
	dir := filepath.Join(root, tc.dir)
	want := rg(t, dir, tc.rgArgs...)
	input := map[string]any{}
	for k, v := range tc.input {
		input[k] = v
	}
	if _, ok := input["head_limit"]; !ok {
		input["head_limit"] = 0
	}
	got, isErr := call(t, grep, dir, input)
	if isErr {
		t.Fatalf("Grep failed: %s", got)
	}
	if withGuard {
		if guarded, _ := callGuarded(t, grep, dir, input, denyNothing()); guarded != got {
			t.Errorf("Grep %v with a guard denying nothing differs:\n%s", tc.input, cmp.Diff(got, guarded))
		}
	}
	if got == "No matches found" {
		got = ""
	}
	g := relLines(got, dir)
	w := strings.Split(strings.TrimSuffix(want, "\n"), "\n")
	if want == "" {
		w = nil
	}
	if !tc.ordered {
		sort.Strings(g)
		sort.Strings(w)
	}
	if diff := cmp.Diff(w, g); diff != "" {
		t.Errorf("Grep %v differs from rg %q (-rg +grep):\n%s", tc.input, tc.rgArgs, diff)
	}
}

// TestGrepGorootNoLiteralMatchesRipgrep compares Grep with rg on Go's
// source tree for the patterns without a literal, in every output mode;
// with the race detector, which makes a search several times slower, only
// in count mode (which decides every line), -i for the second pattern.
func TestGrepGorootNoLiteralMatchesRipgrep(t *testing.T) {
	needTool(t, "rg")
	if testing.Short() {
		t.Skip("searches Go's source tree")
	}
	grep, _ := tools()
	for _, tc := range noLiteralCases() {
		fold := slices.Contains(tc.rgArgs, "-i")
		if raceDetector && (tc.rgArgs[0] != "-c" || fold != (tc.input["pattern"] == noLiteralPatterns[1])) {
			continue
		}
		// rg --sort path orders a directory before a file that extends
		// its name ("debug/" before "debug.go"), Grep by byte.
		tc.ordered = false
		t.Run(tc.name, func(t *testing.T) {
			checkOracle(t, grep, filepath.Join(runtime.GOROOT(), "src"), tc, false)
		})
	}
}

func TestGlobMatchesFd(t *testing.T) {
	needTool(t, "fdfind")
	root := makeTree(t)
	// fd reads .fdignore where ripgrep reads .rgignore.
	for _, d := range []string{root} {
		data, err := os.ReadFile(filepath.Join(d, ".rgignore"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, ".fdignore"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, glob := tools()
	noIgnore := false
	globNoIgnore := Tools(&Options{RespectGitignore: &noIgnore})[0]
	cases := []struct {
		pattern string
		dir     string
	}{
		{"**/*", ""},
		{"**/*.txt", ""},
		{"*.txt", ""},
		{"*", "sub"},
		{"sub/**/*.txt", ""},
		{"**/deep/*", ""},
		{"**/*.{log,md}", ""},
		{"docs/*/*", ""},
		{"**/.*", ""},
		{"[a-c].*", ""},
		{"**/*.nomatch", ""},
		{"**/*.txt", "sub"},
	}
	for _, tc := range cases {
		t.Run(tc.pattern+"@"+tc.dir, func(t *testing.T) {
			dir := filepath.Join(root, tc.dir)
			for _, v := range []struct {
				tool  any
				extra []string
			}{{glob, nil}, {globNoIgnore, []string{"--no-ignore"}}} {
				want := lines(fd(t, dir, dir+"/"+tc.pattern, v.extra...))
				tl := glob
				if v.extra != nil {
					tl = globNoIgnore
				}
				got, isErr := call(t, tl, dir, map[string]any{"pattern": tc.pattern})
				if isErr {
					t.Fatalf("Glob failed: %s", got)
				}
				if guarded, _ := callGuarded(t, tl, dir, map[string]any{"pattern": tc.pattern}, denyNothing()); guarded != got {
					t.Errorf("Glob %q with a guard denying nothing differs:\n%s", tc.pattern, cmp.Diff(got, guarded))
				}
				var g []string
				if got != "No files found" {
					g = lines(got)
				}
				g = slices.DeleteFunc(g, func(s string) bool { return strings.HasPrefix(s, "(") })
				if len(want) > maxGlobResults {
					t.Fatalf("test pattern matches too many files")
				}
				if diff := cmp.Diff(want, g); diff != "" {
					t.Errorf("Glob %q in %s (extra %v) differs from fdfind (-fd +glob):\n%s", tc.pattern, dir, v.extra, diff)
				}
			}
		})
	}
}

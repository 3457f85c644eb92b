package search

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestGrepErrorsAndEdgeCases(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"a.go":    "package a\nfunc Hello() {}\n",
		"b.md":    "# Hello\nhello world\n",
		"c/d.txt": "HELLO there\nbye\n",
	})
	grep, _ := tools()
	cases := []struct {
		name    string
		input   map[string]any
		wantErr bool
		want    []string // substrings of the output
		notWant []string
	}{
		{"invalid regex names the column", map[string]any{"pattern": `foo(bar|baz`}, true, []string{"invalid regex", "missing closing )"}, nil},
		{"invalid escape names the column", map[string]any{"pattern": `ab\qc`}, true, []string{"column 3", `\q`}, nil},
		{"literal newline needs multiline", map[string]any{"pattern": `a\nb`}, true, []string{"multiline"}, nil},
		{"no matches is not an error", map[string]any{"pattern": "zzz_nothing"}, false, []string{"No matches found"}, nil},
		{"missing path", map[string]any{"pattern": "x", "path": "nope"}, true, []string{"does not exist"}, nil},
		{"bad output mode", map[string]any{"pattern": "x", "output_mode": "lines"}, true, []string{"output_mode"}, nil},
		{"unknown type", map[string]any{"pattern": "x", "type": "klingon"}, true, []string{"unknown file type", "go"}, nil},
		{"bad glob", map[string]any{"pattern": "x", "glob": "[abc"}, true, []string{"not a valid glob"}, nil},
		{"case sensitive by default", map[string]any{"pattern": "hello", "output_mode": "content"}, false, []string{"b.md:2:hello world"}, []string{"HELLO", "# Hello"}},
		{"ignore case", map[string]any{"pattern": "hello", "-i": true, "output_mode": "count"}, false, []string{"a.go:1", "b.md:2", "d.txt:1"}, nil},
		{"type", map[string]any{"pattern": "(?i)hello", "type": "md"}, false, []string{"b.md"}, []string{"a.go", "d.txt"}},
		{"glob", map[string]any{"pattern": "(?i)hello", "glob": "*.{go,txt}"}, false, []string{"a.go", "d.txt"}, []string{"b.md"}},
		{"path is a file", map[string]any{"pattern": "bye", "path": "c/d.txt", "output_mode": "content"}, false, []string{filepath.Join(root, "c/d.txt") + ":2:bye"}, nil},
		{"multiline", map[string]any{"pattern": `HELLO.*\nbye`, "multiline": true, "output_mode": "content"}, false, []string{"d.txt:1:HELLO there", "d.txt:2:bye"}, nil},
		{"multiline dot matches newline", map[string]any{"pattern": `there.bye`, "multiline": true}, false, []string{"d.txt"}, nil},
		{"without multiline no match spans lines", map[string]any{"pattern": `there\sbye`}, false, []string{"No matches found"}, nil},
		{"line numbers off", map[string]any{"pattern": "bye", "output_mode": "content", "-n": false}, false, []string{"d.txt:bye"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, isErr := call(t, grep, root, tc.input)
			if isErr != tc.wantErr {
				t.Fatalf("error = %v, want %v; output:\n%s", isErr, tc.wantErr, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not contain %q:\n%s", w, out)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output contains %q:\n%s", w, out)
				}
			}
		})
	}
}

func TestGrepPatternErrorColumn(t *testing.T) {
	_, err := compileMatcher(`abc[z-a]`, false, false)
	pe, ok := err.(*PatternError)
	if !ok || pe.Column != 5 {
		t.Fatalf("err = %v (%T), want a PatternError at column 5", err, err)
	}
}

func TestGrepHeadLimitOffsetAndOrder(t *testing.T) {
	root := t.TempDir()
	var names []string
	for i := range 30 {
		name := fmt.Sprintf("f%02d.txt", i)
		names = append(names, name)
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte("needle\nneedle\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// f00 is the oldest, f29 the newest.
		mt := time.Date(2024, 1, 1, 0, i, 0, 0, time.UTC)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	grep, _ := tools()
	out, _ := call(t, grep, root, map[string]any{"pattern": "needle", "head_limit": 5, "offset": 2})
	var want []string
	for i := 27; i >= 23; i-- {
		want = append(want, filepath.Join(root, names[i]))
	}
	got := strings.Split(out, "\n")
	if got[0] != "Found 30 files" {
		t.Errorf("first line = %q", got[0])
	}
	if diff := cmp.Diff(want, got[1:6]); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if !strings.Contains(out, "(results truncated: 23 more; use offset=7 to see more)") {
		t.Errorf("no truncation note:\n%s", out)
	}
	// Content: 60 lines, the default head_limit of 250 keeps all.
	out, _ = call(t, grep, root, map[string]any{"pattern": "needle", "output_mode": "content"})
	if n := strings.Count(out, ":needle"); n != 60 || strings.Contains(out, "truncated") {
		t.Errorf("content has %d matches:\n%s", n, out)
	}
	out, _ = call(t, grep, root, map[string]any{"pattern": "needle", "output_mode": "content", "head_limit": 10, "offset": 55})
	if n := strings.Count(out, ":needle"); n != 5 || strings.Contains(out, "truncated") {
		t.Errorf("paged content has %d matches:\n%s", n, out)
	}
	out, _ = call(t, grep, root, map[string]any{"pattern": "needle", "output_mode": "count", "head_limit": 1})
	if !strings.Contains(out, filepath.Join(root, "f00.txt")+":2") || !strings.Contains(out, "29 more") || !strings.Contains(out, "60 matching lines in 30 files") {
		t.Errorf("count output:\n%s", out)
	}
}

func TestGlobBehaviour(t *testing.T) {
	root := t.TempDir()
	for i := range 120 {
		writeFiles(t, root, map[string]string{fmt.Sprintf("many/f%03d.go", i): "x"})
	}
	writeFiles(t, root, map[string]string{"one/a.md": "x", "one/b.md": "x"})
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(root, "one/a.md"), old, old); err != nil {
		t.Fatal(err)
	}
	_, glob := tools()
	out, isErr := call(t, glob, root, map[string]any{"pattern": "many/*.go"})
	got := strings.Split(out, "\n")
	if isErr || len(got) != maxGlobResults+1 || got[maxGlobResults] != "(results truncated: 20 more; use a more specific pattern or path)" {
		t.Errorf("truncated glob: %d lines, last %q", len(got), got[len(got)-1])
	}
	out, _ = call(t, glob, root, map[string]any{"pattern": "**/*.md"})
	if want := filepath.Join(root, "one/b.md") + "\n" + filepath.Join(root, "one/a.md"); out != want {
		t.Errorf("newest first: got\n%s\nwant\n%s", out, want)
	}
	out, _ = call(t, glob, "/", map[string]any{"pattern": filepath.Join(root, "one", "*.md")})
	if strings.Count(out, "\n") != 1 {
		t.Errorf("absolute pattern: %s", out)
	}
	out, _ = call(t, glob, root, map[string]any{"pattern": "one/a.md"})
	if out != filepath.Join(root, "one/a.md") {
		t.Errorf("literal pattern: %s", out)
	}
	out, isErr = call(t, glob, root, map[string]any{"pattern": "**/*.rs"})
	if isErr || out != "No files found" {
		t.Errorf("no match: %v %s", isErr, out)
	}
	out, isErr = call(t, glob, root, map[string]any{"pattern": "*", "path": "missing"})
	if !isErr || !strings.Contains(out, "does not exist") {
		t.Errorf("missing path: %v %s", isErr, out)
	}
	out, isErr = call(t, glob, root, map[string]any{"pattern": "{a,b"})
	if !isErr || !strings.Contains(out, "not a valid glob") {
		t.Errorf("bad pattern: %v %s", isErr, out)
	}
}

func TestAttributesAndPermission(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"in/x.txt": "x"})
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(filepath.Join(root, "in"), link); err != nil {
		t.Fatal(err)
	}
	for _, tl := range Tools(nil) {
		a := tl.Attributes(json.RawMessage(`{}`))
		if !a.ReadOnly || !a.ConcurrencySafe || a.Destructive || a.MaxResultChars != maxResultChars {
			t.Errorf("%s attributes = %+v", tl.Spec().Name, a)
		}
		if s := tl.Spec(); s.Description == "" || !json.Valid(s.InputSchema) {
			t.Errorf("%s spec is incomplete", s.Name)
		}
		for _, tc := range []struct {
			path   string
			want   string
			inside bool
		}{
			{"in", filepath.Join(root, "in"), true},
			{link, filepath.Join(root, "in"), true},
			{"/usr", "/usr", false},
		} {
			raw, _ := json.Marshal(map[string]any{"pattern": "*", "path": tc.path})
			acc, err := tl.CheckPermission(context.Background(), &tool.Call{Input: raw, Env: tooltest.At(root)})
			if err != nil {
				t.Fatal(err)
			}
			want := tool.Access{Kind: tool.AccessRead, Paths: []string{tc.want}, Reads: []string{tc.want}, InsideWorkingDirs: tc.inside}
			if diff := cmp.Diff(want, acc); diff != "" {
				t.Errorf("%s %s access (-want +got):\n%s", tl.Spec().Name, tc.path, diff)
			}
		}
	}
}

// TestPermissionReads checks the search root each call reports in Reads,
// for Read(spec) rules: the directory actually walked, symlinks resolved.
func TestPermissionReads(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string]string{"src/a.go": "x", "secrets/key": "k"})
	writeFiles(t, outside, map[string]string{"data/x.txt": "x"})
	if err := os.Symlink(filepath.Join(outside, "data"), filepath.Join(root, "data")); err != nil {
		t.Fatal(err)
	}
	grep, glob := tools()
	for _, tc := range []struct {
		tl     tool.Tool
		input  map[string]any
		want   string
		inside bool
	}{
		{grep, map[string]any{"pattern": "x"}, root, true},
		{grep, map[string]any{"pattern": "x", "path": "secrets"}, filepath.Join(root, "secrets"), true},
		{grep, map[string]any{"pattern": "x", "path": "secrets/key"}, filepath.Join(root, "secrets/key"), true},
		{grep, map[string]any{"pattern": "x", "path": filepath.Join(root, "src/../secrets")}, filepath.Join(root, "secrets"), true},
		{grep, map[string]any{"pattern": "x", "path": "data"}, filepath.Join(outside, "data"), false},
		{grep, map[string]any{"pattern": "x", "path": ".."}, filepath.Dir(root), false},
		{glob, map[string]any{"pattern": "**/*.go"}, root, true},
		{glob, map[string]any{"pattern": "secrets/*"}, filepath.Join(root, "secrets"), true},
		{glob, map[string]any{"pattern": "secrets/key"}, filepath.Join(root, "secrets"), true},
		{glob, map[string]any{"pattern": "*", "path": "data"}, filepath.Join(outside, "data"), false},
		{glob, map[string]any{"pattern": "data/*.txt"}, filepath.Join(outside, "data"), false},
		{glob, map[string]any{"pattern": filepath.Join(outside, "**")}, outside, false},
		{glob, map[string]any{"pattern": "../*"}, filepath.Dir(root), false},
	} {
		raw, _ := json.Marshal(tc.input)
		acc, err := tc.tl.CheckPermission(t.Context(), &tool.Call{Input: raw, Env: tooltest.At(root)})
		if err != nil {
			t.Fatal(err)
		}
		if len(acc.Reads) != 1 || acc.Reads[0] != tc.want || acc.InsideWorkingDirs != tc.inside || len(acc.Writes) != 0 {
			t.Errorf("%s %v: access = %+v, want Reads [%s], inside %v", tc.tl.Spec().Name, tc.input, acc, tc.want, tc.inside)
		}
	}
}

func TestCompileGlob(t *testing.T) {
	cases := []struct {
		line      string
		name, rel string
		isDir     bool
		want      decision
	}{
		{"*.log", "a.log", "x/a.log", false, ignore},
		{"!keep.log", "keep.log", "keep.log", false, whitelist},
		{"build/", "build", "a/build", false, noMatch},
		{"build/", "build", "a/build", true, ignore},
		{"/top", "top", "a/top", false, noMatch},
		{"/top", "top", "top", false, ignore},
		{"a/*.go", "x.go", "a/x.go", false, ignore},
		{"a/*.go", "x.go", "a/b/x.go", false, noMatch},
		{"**/gen", "gen", "a/b/gen", true, ignore},
		{"doc/**", "x", "doc/a/x", false, ignore},
		{"doc/**", "doc", "doc", true, noMatch},
		{`\#x`, "#x", "#x", false, ignore},
		{"# comment", "# comment", "# comment", false, noMatch},
		{"x\\ ", "x ", "x ", false, ignore},
	}
	for _, tc := range cases {
		var s globSet
		if p, ok := compileGlob(tc.line, false); ok {
			s.add(p)
		}
		rel := relPath{name: tc.name, dirRel: filepath.Dir(tc.rel)}
		if rel.dirRel == "." {
			rel.dirRel = ""
		}
		if got := s.matched(tc.name, &rel, tc.isDir); got != tc.want {
			t.Errorf("%q on %q (dir %v) = %d, want %d", tc.line, tc.rel, tc.isDir, got, tc.want)
		}
	}
}

func TestGrepBigFileStreams(t *testing.T) {
	root := t.TempDir()
	p := filepath.Join(root, "big.txt")
	line := strings.Repeat("abcdefghij", 9) + "\n" // 91 bytes
	var b strings.Builder
	for b.Len() < 2*chunkSize+1000 {
		b.WriteString(line)
	}
	b.WriteString("the needle is at the end\n")
	b.WriteString(line)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	grep, _ := tools()
	out, _ := call(t, grep, root, map[string]any{"pattern": "needle"})
	if !strings.Contains(out, p) {
		t.Errorf("files mode:\n%s", out)
	}
	if guarded, _ := callGuarded(t, grep, root, map[string]any{"pattern": "needle"}, denyNothing()); guarded != out {
		t.Errorf("files mode with a guard denying nothing:\n%s", guarded)
	}
	out, _ = call(t, grep, root, map[string]any{"pattern": "abcdefghij$", "output_mode": "count"})
	want := fmt.Sprintf("%s:%d", p, strings.Count(b.String(), line))
	if !strings.Contains(out, want) {
		t.Errorf("count mode: got\n%s\nwant %s", out, want)
	}
	out, _ = call(t, grep, root, map[string]any{"pattern": "needle", "output_mode": "content", "-B": 1})
	n := strings.Count(b.String()[:strings.Index(b.String(), "the needle")], "\n") + 1
	if !strings.Contains(out, fmt.Sprintf("%s:%d:the needle is at the end", p, n)) || !strings.Contains(out, fmt.Sprintf("%s-%d-abc", p, n-1)) {
		t.Errorf("content mode:\n%s", out)
	}
}

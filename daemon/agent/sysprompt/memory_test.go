package sysprompt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// write creates path (and its directories) holding content.
func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

// loaded is a MemoryFile with paths relative to the test's directory.
type loaded struct {
	Path, Scope, ImportedBy string
	Cut                     int
}

func summarize(base string, files []MemoryFile) []loaded {
	rel := func(p string) string {
		if p == "" {
			return ""
		}
		r, err := filepath.Rel(base, p)
		if err != nil {
			return p
		}
		return filepath.ToSlash(r)
	}
	var out []loaded
	for _, f := range files {
		out = append(out, loaded{rel(f.Path), f.Scope, rel(f.ImportedBy), f.Cut})
	}
	return out
}

// tree is a home, a config home and a repository with memory files at
// several levels; the cwd is repo/sub/deep.
type tree struct {
	base, home, config, repo, cwd string
}

func newTree(t *testing.T) tree {
	t.Helper()
	base := t.TempDir()
	tr := tree{
		base:   base,
		home:   filepath.Join(base, "home"),
		config: filepath.Join(base, "config"),
		repo:   filepath.Join(base, "work", "repo"),
	}
	tr.cwd = filepath.Join(tr.repo, "sub", "deep")
	write(t, filepath.Join(tr.home, ".claude", "CLAUDE.md"), "user prefs\n@~/notes/user-extra.md\n")
	write(t, filepath.Join(tr.home, "notes", "user-extra.md"), "user extra\n")
	write(t, filepath.Join(tr.home, "notes", "outside.md"), "secret from home\n")
	write(t, filepath.Join(tr.config, "tackle", "CLAUDE.md"), "tackle user\n")

	// Above the repository root: never loaded.
	write(t, filepath.Join(base, "work", "CLAUDE.md"), "above the root\n")

	mkdir(t, filepath.Join(tr.repo, ".git"))
	write(t, filepath.Join(tr.repo, "CLAUDE.md"), strings.Join([]string{
		"# Root",                  // 1
		"Style: @docs/style.md",   // 2
		"@./AGENTS.md",            // 3
		"```",                     // 4
		"@fenced.md",              // 5
		"```",                     // 6
		"Run `@span.md` to build", // 7
		"@missing/file.md",        // 8
		"Ask @alice for review.",  // 9
		"",
	}, "\n"))
	write(t, filepath.Join(tr.repo, "docs", "style.md"), "style\n@../a.md\n")
	write(t, filepath.Join(tr.repo, "a.md"), "A\n@b.md\n")
	write(t, filepath.Join(tr.repo, "b.md"), "B\n@a.md\n@docs/style.md\n") // a cycle
	write(t, filepath.Join(tr.repo, "AGENTS.md"), "agents\n")
	write(t, filepath.Join(tr.repo, "fenced.md"), "must not load\n")
	write(t, filepath.Join(tr.repo, "span.md"), "must not load\n")
	write(t, filepath.Join(tr.repo, ".claude", "CLAUDE.md"), "dot claude\n")
	write(t, filepath.Join(tr.repo, "CLAUDE.local.md"), "local\n")

	mkdir(t, filepath.Join(tr.repo, "sub"))
	if err := syscall.Mkfifo(filepath.Join(tr.repo, "sub", "CLAUDE.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(tr.repo, "sub", ".tackle", "CLAUDE.md"), "tackle sub\n")
	write(t, filepath.Join(tr.cwd, "CLAUDE.md"), "deep\n@~/notes/outside.md\n")
	write(t, filepath.Join(tr.cwd, "AGENTS.md"), "deep agents\n")
	return tr
}

func (tr tree) options() MemoryOptions {
	return MemoryOptions{Cwd: tr.cwd, Home: tr.home, ConfigHome: tr.config}
}

func TestMemory(t *testing.T) {
	tr := newTree(t)
	files, problems := Memory(tr.options())

	want := []loaded{
		{"home/.claude/CLAUDE.md", ScopeUser, "", 0},
		{"home/notes/user-extra.md", ScopeUser, "home/.claude/CLAUDE.md", 0},
		{"config/tackle/CLAUDE.md", ScopeUser, "", 0},
		{"work/repo/CLAUDE.md", ScopeProject, "", 0},
		{"work/repo/docs/style.md", ScopeProject, "work/repo/CLAUDE.md", 0},
		{"work/repo/a.md", ScopeProject, "work/repo/docs/style.md", 0},
		{"work/repo/b.md", ScopeProject, "work/repo/a.md", 0},
		{"work/repo/AGENTS.md", ScopeProject, "work/repo/CLAUDE.md", 0},
		{"work/repo/.claude/CLAUDE.md", ScopeProject, "", 0},
		{"work/repo/CLAUDE.local.md", ScopeLocal, "", 0},
		// work/repo/AGENTS.md is not loaded twice; sub/CLAUDE.md is a FIFO.
		{"work/repo/sub/.tackle/CLAUDE.md", ScopeProject, "", 0},
		{"work/repo/sub/deep/CLAUDE.md", ScopeProject, "", 0},
		{"work/repo/sub/deep/AGENTS.md", ScopeProject, "", 0},
	}
	if diff := cmp.Diff(want, summarize(tr.base, files)); diff != "" {
		t.Errorf("Memory files (-want +got):\n%s", diff)
	}
	if files[3].Content != "# Root\nStyle: @docs/style.md\n@./AGENTS.md\n```\n@fenced.md\n```\nRun `@span.md` to build\n@missing/file.md\nAsk @alice for review.\n" {
		t.Errorf("root CLAUDE.md content = %q, want the file as written", files[3].Content)
	}

	type prob struct {
		Path string
		Line int
		Has  string
	}
	wantProblems := []prob{
		{"work/repo/CLAUDE.md", 8, "@missing/file.md is not imported: " + filepath.Join(tr.repo, "missing", "file.md") + " does not exist"},
		{"work/repo/sub/CLAUDE.md", 0, "not loaded: it is a FIFO, not a regular file"},
		{"work/repo/sub/deep/CLAUDE.md", 2, "@~/notes/outside.md is not imported: " + filepath.Join(tr.home, "notes", "outside.md") + " is outside the project (" + tr.repo + "); a project's memory files reach outside it only in a trusted project (tackle trust " + tr.repo + ")"},
	}
	var gotProblems []prob
	for i, p := range problems {
		rel, _ := filepath.Rel(tr.base, p.Path)
		gotProblems = append(gotProblems, prob{rel, p.Line, p.Message})
		if i < len(wantProblems) && p.Message == wantProblems[i].Has {
			gotProblems[i].Has = wantProblems[i].Has
		}
	}
	if diff := cmp.Diff(wantProblems, gotProblems); diff != "" {
		t.Errorf("problems (-want +got):\n%s", diff)
	}
	for _, f := range files {
		if strings.Contains(f.Content, "must not load") || strings.Contains(f.Content, "secret") || strings.Contains(f.Content, "above the root") {
			t.Errorf("%s loaded: %q", f.Path, f.Content)
		}
	}
	if got := problems[0].Error(); got != filepath.Join(tr.repo, "CLAUDE.md")+":8: "+wantProblems[0].Has {
		t.Errorf("Problem.Error() = %q", got)
	}
}

// In a trusted project a project file may import from the home directory.
func TestMemoryTrusted(t *testing.T) {
	tr := newTree(t)
	opts := tr.options()
	opts.Trusted = true
	files, problems := Memory(opts)
	got := summarize(tr.base, files)
	last := got[len(got)-2]
	if want := (loaded{"home/notes/outside.md", ScopeProject, "work/repo/sub/deep/CLAUDE.md", 0}); last != want {
		t.Errorf("the file before the last = %+v, want %+v", last, want)
	}
	if len(problems) != 2 {
		t.Errorf("problems = %v, want the missing import and the FIFO", problems)
	}
}

func TestMemoryNoRepository(t *testing.T) {
	base := t.TempDir()
	if root, ok := RepoRoot(base); ok {
		t.Skipf("the temporary directory is inside a repository (%s)", root)
	}
	cwd := filepath.Join(base, "a", "b")
	write(t, filepath.Join(base, "a", "CLAUDE.md"), "parent\n")
	write(t, filepath.Join(cwd, "CLAUDE.md"), "cwd\n")
	files, problems := Memory(MemoryOptions{Cwd: cwd, Home: filepath.Join(base, "nohome"), ConfigHome: filepath.Join(base, "noconfig")})
	if diff := cmp.Diff([]loaded{{"a/b/CLAUDE.md", ScopeProject, "", 0}}, summarize(base, files)); diff != "" {
		t.Errorf("Memory outside a repository (-want +got):\n%s", diff)
	}
	if len(problems) != 0 {
		t.Errorf("problems = %v", problems)
	}
}

func TestRepoRoot(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	mkdir(t, filepath.Join(repo, "x", "y"))
	write(t, filepath.Join(repo, ".git"), "gitdir: /elsewhere\n") // a linked work tree
	for _, dir := range []string{repo, filepath.Join(repo, "x", "y"), filepath.Join(repo, "x", "y", "missing")} {
		if got, ok := RepoRoot(dir); !ok || got != repo {
			t.Errorf("RepoRoot(%s) = %q, %v, want %q", dir, got, ok, repo)
		}
	}
}

func TestMemorySymlinks(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	mkdir(t, filepath.Join(repo, ".git"))
	write(t, filepath.Join(repo, "AGENTS.md"), "shared\n")
	if err := os.Symlink("AGENTS.md", filepath.Join(repo, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(base, "private", "notes.md"), "private notes\n")
	if err := os.Symlink(filepath.Join(base, "private", "notes.md"), filepath.Join(repo, "CLAUDE.local.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(repo, "zero.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, ".claude", "CLAUDE.md"), "@../zero.md\n@../CLAUDE.md\n@../dir\n")
	mkdir(t, filepath.Join(repo, "dir"))
	write(t, filepath.Join(repo, ".tackle", "CLAUDE.md"), "binary: @../bin.md\n")
	write(t, filepath.Join(repo, "bin.md"), "\x00\x01")

	opts := MemoryOptions{Cwd: repo, Home: filepath.Join(base, "h"), ConfigHome: filepath.Join(base, "c")}
	files, problems := Memory(opts)
	want := []loaded{
		{"repo/CLAUDE.md", ScopeProject, "", 0}, // AGENTS.md is the same file
		{"repo/.claude/CLAUDE.md", ScopeProject, "", 0},
		{"repo/.tackle/CLAUDE.md", ScopeProject, "", 0},
	}
	if diff := cmp.Diff(want, summarize(base, files)); diff != "" {
		t.Errorf("Memory (-want +got):\n%s", diff)
	}
	var msgs []string
	for _, p := range problems {
		msgs = append(msgs, p.Message)
	}
	wantMsgs := []string{
		"@../zero.md is not imported: " + filepath.Join(repo, "zero.md") + " leads to /dev/zero, outside the project",
		"@../dir is not imported: " + filepath.Join(repo, "dir") + " is a directory, not a regular file",
		"not loaded: it leads to " + filepath.Join(base, "private", "notes.md") + ", outside the project (" + repo + ")",
		"@../bin.md is not imported: " + filepath.Join(repo, "bin.md") + " is not a text file",
	}
	if len(msgs) != len(wantMsgs) {
		t.Fatalf("problems = %q, want %d", msgs, len(wantMsgs))
	}
	for i := range wantMsgs {
		if !strings.HasPrefix(msgs[i], wantMsgs[i]) {
			t.Errorf("problem %d = %q, want it to start %q", i, msgs[i], wantMsgs[i])
		}
	}

	// Trusted, the private file loads; /dev/zero is still refused by safefile.
	opts.Trusted = true
	files, problems = Memory(opts)
	if got := summarize(base, files); len(got) != 4 || got[2].Path != "repo/CLAUDE.local.md" || files[2].Content != "private notes\n" {
		t.Errorf("trusted: files = %+v", got)
	}
	if len(problems) != 3 || !strings.Contains(problems[0].Message, "/zero.md is a character device, not a regular file") {
		t.Errorf("trusted: problems = %v", problems)
	}
}

func TestMemoryUnreadable(t *testing.T) {
	base := t.TempDir()
	mkdir(t, filepath.Join(base, ".git"))
	write(t, filepath.Join(base, "CLAUDE.md"), strings.Repeat("x", 1<<20+1))
	write(t, filepath.Join(base, "AGENTS.md"), "fine\n")
	files, problems := Memory(MemoryOptions{Cwd: base, Home: filepath.Join(base, "h"), ConfigHome: filepath.Join(base, "c")})
	if diff := cmp.Diff([]loaded{{"AGENTS.md", ScopeProject, "", 0}}, summarize(base, files)); diff != "" {
		t.Errorf("Memory (-want +got):\n%s", diff)
	}
	if len(problems) != 1 || !strings.HasPrefix(problems[0].Message, "not loaded: it is ") || !strings.HasSuffix(problems[0].Message, ", over the limit of 1 MiB") {
		t.Errorf("problems = %v", problems)
	}
	if os.Geteuid() == 0 {
		return // root reads a file of mode 000
	}
	if err := os.Chmod(filepath.Join(base, "AGENTS.md"), 0); err != nil {
		t.Fatal(err)
	}
	_, problems = Memory(MemoryOptions{Cwd: base, Home: filepath.Join(base, "h"), ConfigHome: filepath.Join(base, "c")})
	if len(problems) != 2 || problems[1].Message != "not loaded: it cannot be read (permission denied)" {
		t.Errorf("problems = %v", problems)
	}
}

func TestMemoryImportDepth(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	mkdir(t, filepath.Join(repo, ".git"))
	write(t, filepath.Join(repo, "CLAUDE.md"), "top\n@c1.md\n")
	for i := 1; i <= 7; i++ {
		write(t, filepath.Join(repo, fmt.Sprintf("c%d.md", i)), fmt.Sprintf("level %d\n@c%d.md\n", i, i+1))
	}
	files, problems := Memory(MemoryOptions{Cwd: repo, Home: filepath.Join(base, "h"), ConfigHome: filepath.Join(base, "c")})
	if len(files) != 1+MaxImportDepth {
		t.Fatalf("loaded %d files, want the top one and %d imports: %+v", len(files), MaxImportDepth, summarize(base, files))
	}
	if last := files[len(files)-1]; last.Path != filepath.Join(repo, "c5.md") {
		t.Errorf("the deepest file loaded is %s, want c5.md", last.Path)
	}
	if len(problems) != 1 || problems[0].Path != filepath.Join(repo, "c5.md") || problems[0].Line != 2 ||
		problems[0].Message != "@c6.md is not imported: this file is already 5 imports away from a memory file, the most that is followed" {
		t.Errorf("problems = %v, want one at c5.md:2", problems)
	}
}

func TestMemoryImportPunctuation(t *testing.T) {
	base := t.TempDir()
	mkdir(t, filepath.Join(base, ".git"))
	write(t, filepath.Join(base, "CLAUDE.md"), "See @docs/x.md. And (@y.md), and `@z.md`.\n")
	write(t, filepath.Join(base, "docs", "x.md"), "x\n")
	write(t, filepath.Join(base, "y.md"), "y\n")
	files, problems := Memory(MemoryOptions{Cwd: base, Home: filepath.Join(base, "h"), ConfigHome: filepath.Join(base, "c")})
	// (@y.md) is no import: the @ follows a parenthesis.
	if diff := cmp.Diff([]loaded{{"CLAUDE.md", ScopeProject, "", 0}, {"docs/x.md", ScopeProject, "CLAUDE.md", 0}}, summarize(base, files)); diff != "" {
		t.Errorf("Memory (-want +got):\n%s", diff)
	}
	if len(problems) != 0 {
		t.Errorf("problems = %v", problems)
	}
}

func TestMemoryBudget(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	home := filepath.Join(base, "home")
	mkdir(t, filepath.Join(repo, ".git"))
	line := strings.Repeat("é", 99) + "\n" // 100 characters, 199 bytes
	write(t, filepath.Join(home, ".claude", "CLAUDE.md"), strings.Repeat(line, 300))
	write(t, filepath.Join(repo, "CLAUDE.md"), strings.Repeat(line, 200))
	write(t, filepath.Join(repo, "sub", "CLAUDE.md"), "nearest\n")
	opts := MemoryOptions{Cwd: filepath.Join(repo, "sub"), Home: home, ConfigHome: filepath.Join(base, "c")}

	files, problems := Memory(opts)
	total := 0
	for _, f := range files {
		total += utf8.RuneCountInString(f.Content)
	}
	if total > DefaultBudget {
		t.Errorf("the files hold %d characters, over %d", total, DefaultBudget)
	}
	// 50,008 characters: the user file loses the last 10,008, cut to whole
	// lines (101 of them); the project files are whole.
	if files[0].Cut != 10100 || utf8.RuneCountInString(files[0].Content) != 19900 || !strings.HasSuffix(files[0].Content, "\n") {
		t.Errorf("user file: cut %d, kept %d characters", files[0].Cut, utf8.RuneCountInString(files[0].Content))
	}
	if files[1].Cut != 0 || files[2].Cut != 0 || files[2].Content != "nearest\n" {
		t.Errorf("project files cut: %+v", summarize(base, files))
	}
	if len(problems) != 1 || problems[0].Path != files[0].Path ||
		!strings.Contains(problems[0].Message, "the last 10100 of its 30000 characters are left out: the memory files hold 50008 characters, over the budget of 40000") {
		t.Errorf("problems = %v", problems)
	}

	// A small budget leaves the user file out and cuts the next one to
	// whole lines.
	opts.Budget = 10_000
	files, problems = Memory(opts)
	if files[0].Content != "" || files[0].Cut != 30000 || files[1].Cut != 10100 || files[1].Content != strings.Repeat(line, 99) || files[2].Cut != 0 {
		t.Errorf("budget 10000: %+v", summarize(base, files))
	}
	if len(problems) != 2 || !strings.HasPrefix(problems[0].Message, "it is left out: ") {
		t.Errorf("budget 10000: problems = %v", problems)
	}

	opts.Budget = -1
	if files, problems = Memory(opts); len(problems) != 0 || files[0].Cut != 0 {
		t.Errorf("no budget: problems = %v", problems)
	}
}

func TestCutTo(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"ab\ncd\n", 10, "ab\ncd\n"},
		{"ab\ncd\n", 6, "ab\ncd\n"},
		{"ab\ncd\n", 5, "ab\n"},
		{"ab\ncd\n", 2, "ab"},
		{"abcdef", 3, "abc"},
		{"ééé", 2, "éé"},
		{"x", 0, ""},
	} {
		if got := cutTo(tc.s, tc.n); got != tc.want {
			t.Errorf("cutTo(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

// BenchmarkMemory loads the memory of a cwd ten directories below the
// repository root, with a CLAUDE.md and an import at every level.
func BenchmarkMemory(b *testing.B) {
	base := b.TempDir()
	repo := filepath.Join(base, "repo")
	mkdir(b, filepath.Join(repo, ".git"))
	dir := repo
	for i := range 10 {
		write(b, filepath.Join(dir, "CLAUDE.md"), fmt.Sprintf("# Level %d\n\nSome instructions.\n@notes.md\n\n```\n@not-an-import.md\n```\n", i))
		write(b, filepath.Join(dir, "notes.md"), strings.Repeat("a note about this level\n", 20))
		if i%3 == 0 {
			write(b, filepath.Join(dir, "AGENTS.md"), "agents\n")
		}
		dir = filepath.Join(dir, fmt.Sprintf("d%d", i))
	}
	mkdir(b, dir)
	opts := MemoryOptions{Cwd: dir, Home: filepath.Join(base, "home"), ConfigHome: filepath.Join(base, "config")}
	if files, problems := Memory(opts); len(files) != 24 || len(problems) != 0 {
		b.Fatalf("Memory: %d files, problems %v", len(files), problems)
	}
	b.ReportAllocs()
	for b.Loop() {
		Memory(opts)
	}
}

package search

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// fakeGuard is a test double of the session's Read deny rules: it denies
// the directories in dirs with everything below them, and the files
// (device, inode) in files. It records the files DeniedFile was asked about.
type fakeGuard struct {
	dirs  []string
	files map[[2]uint64]bool

	mu    sync.Mutex // guards asked
	asked map[[2]uint64]int
}

var _ tool.ReadGuard = (*fakeGuard)(nil)

// denyNothing returns a guard that denies nothing, as the pipeline's would
// when a Read deny rule applies to the session but not to this tree.
func denyNothing() *fakeGuard { return &fakeGuard{dirs: []string{"/nonexistent"}} }

func (g *fakeGuard) Denied(p string) bool {
	for _, d := range g.dirs {
		if within(p, d) {
			return true
		}
	}
	return false
}

func (g *fakeGuard) DeniedFile(dev, ino uint64) bool {
	k := [2]uint64{dev, ino}
	g.mu.Lock()
	if g.asked == nil {
		g.asked = map[[2]uint64]int{}
	}
	g.asked[k]++
	g.mu.Unlock()
	return g.files[k]
}

// inode returns the (device, inode) of the file at p.
func inode(t *testing.T, p string) [2]uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(p, &st); err != nil {
		t.Fatal(err)
	}
	return [2]uint64{uint64(st.Dev), st.Ino}
}

// deniedTree builds a tree with a secret (secrets/k), a hard link to it
// elsewhere (docs/k.txt), a denied directory of many files (private/),
// two allowed files that are hard links of each other (shared/) and
// allowed files sharing the secret's word ("password"). It returns the
// root (symlinks resolved), a guard denying secrets/ and private/ (and
// the secret's inode), and the allowed hard link's inode.
func deniedTree(t *testing.T) (string, *fakeGuard, [2]uint64) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"secrets/k":    "password = hunter2\n",
		"notes.txt":    "password policy: rotate\n",
		"src/main.go":  "package main // password prompt\n",
		"shared/a.txt": "password reset\n",
	}
	for i := range 40 {
		files[fmt.Sprintf("private/f%02d.txt", i)] = fmt.Sprintf("password private%02d\n", i)
	}
	writeFiles(t, root, files)
	for link, target := range map[string]string{"docs/k.txt": "secrets/k", "shared/b.txt": "shared/a.txt"} {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(link)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(filepath.Join(root, target), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	g := &fakeGuard{
		dirs:  []string{filepath.Join(root, "secrets"), filepath.Join(root, "private")},
		files: map[[2]uint64]bool{inode(t, filepath.Join(root, "secrets/k")): true},
	}
	return root, g, inode(t, filepath.Join(root, "shared/a.txt"))
}

// leaks are the strings no guarded output may contain: the secret, its
// path and its hard link's, and the denied directory.
var leaks = []string{"hunter2", "secrets", "k.txt", "private"}

func checkNoLeak(t *testing.T, what, out string) {
	t.Helper()
	for _, l := range leaks {
		if strings.Contains(out, l) {
			t.Errorf("%s: output contains %q:\n%s", what, l, out)
		}
	}
}

func TestGrepSkipsDenied(t *testing.T) {
	root, g, shared := deniedTree(t)
	grep, _ := tools()
	three := "\n\n(3 paths skipped: a Read deny rule covers them)"
	for _, tc := range []struct {
		name  string
		input map[string]any
		want  []string // lines the output has, besides the note
	}{
		{"files", map[string]any{"pattern": "password"}, []string{"Found 4 files", "notes.txt", "main.go", "shared/a.txt", "shared/b.txt"}},
		{"content", map[string]any{"pattern": "password", "output_mode": "content"}, []string{"notes.txt:1:password policy", "shared/b.txt:1:password reset"}},
		{"content with context", map[string]any{"pattern": "pass", "output_mode": "content", "-C": 2, "-o": true}, []string{"notes.txt:1:pass"}},
		{"count", map[string]any{"pattern": "password", "output_mode": "count"}, []string{"shared/a.txt:1", "Found 4 matching lines in 4 files"}},
		{"multiline", map[string]any{"pattern": `password\s+\w+`, "multiline": true, "output_mode": "count"}, []string{"notes.txt:1"}},
		{"only the secret matches", map[string]any{"pattern": "hunter2"}, []string{"No matches found"}},
		{"only the secret matches, content", map[string]any{"pattern": "hunter2", "output_mode": "content"}, []string{"No matches found"}},
		{"head_limit", map[string]any{"pattern": "password", "head_limit": 1}, []string{"Found 4 files", "(results truncated: 3 more; use offset=1 to see more)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, isErr := callGuarded(t, grep, root, tc.input, g)
			if isErr {
				t.Fatalf("Grep failed: %s", out)
			}
			checkNoLeak(t, tc.name, out)
			if !strings.HasSuffix(out, three) {
				t.Errorf("output does not end with %q:\n%s", three, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output does not contain %q:\n%s", w, out)
				}
			}
		})
	}
	// DeniedFile is asked only about files with more than one link.
	for k := range g.asked {
		if k != shared && !g.files[k] {
			t.Errorf("DeniedFile asked about %v, a file with one link", k)
		}
	}
	if g.asked[shared] == 0 {
		t.Errorf("DeniedFile never asked about shared/a.txt, a file with two links")
	}
}

func TestGrepDeniedRoots(t *testing.T) {
	root, g, _ := deniedTree(t)
	grep, _ := tools()
	for _, tc := range []struct {
		path    string
		wantErr bool
		want    string
	}{
		// The permission stage denies these by path; the tool holds too.
		{"secrets/k", true, "was not searched: a Read deny rule covers it"},
		{"secrets", false, "No matches found\n\n(1 path skipped: a Read deny rule covers it)"},
		// A hard link to the secret is the secret.
		{"docs/k.txt", true, "was not searched: a Read deny rule covers it (a hard link to a denied file counts as that file)"},
		{"docs", false, "No matches found\n\n(1 path skipped: a Read deny rule covers it)"},
		{"shared/a.txt", false, "Found 1 file\n" + filepath.Join(root, "shared/a.txt")},
	} {
		for _, mode := range []string{modeFiles, modeContent, modeCount} {
			out, isErr := callGuarded(t, grep, root, map[string]any{"pattern": "password", "path": tc.path, "output_mode": mode}, g)
			if strings.Contains(out, "hunter2") {
				t.Errorf("%s %s: output has the secret:\n%s", tc.path, mode, out)
			}
			if isErr != tc.wantErr {
				t.Errorf("%s %s: error = %v, want %v:\n%s", tc.path, mode, isErr, tc.wantErr, out)
			}
			if mode == modeFiles && !strings.Contains(out, tc.want) {
				t.Errorf("%s: output does not contain %q:\n%s", tc.path, tc.want, out)
			}
		}
	}
}

func TestGlobSkipsDenied(t *testing.T) {
	root, g, _ := deniedTree(t)
	_, glob := tools()
	noIgnore := false
	globNoIgnore := Tools(&Options{RespectGitignore: &noIgnore})[0]
	for _, tc := range []struct {
		pattern string
		want    string // the output's last line
		files   int    // files listed
	}{
		{"**/*", "(3 paths skipped: a Read deny rule covers them)", 4},
		{"**/*.txt", "(3 paths skipped: a Read deny rule covers them)", 3},
		{"**/k*", "(3 paths skipped: a Read deny rule covers them)", 0},
		// Only what could match counts: a directory that might hold
		// a match (not descended), a file whose name matches.
		{"**/*.go", "(2 paths skipped: a Read deny rule covers them)", 1},
		{"docs/*", "(1 path skipped: a Read deny rule covers it)", 0},
		{"docs/k.txt", "(1 path skipped: a Read deny rule covers it)", 0},
		{"shared/*", filepath.Join(root, "shared/b.txt"), 2}, // one inode: same mtime, by path
		{"secrets/k", "(1 path skipped: a Read deny rule covers it)", 0},
		{"secrets/*", "(1 path skipped: a Read deny rule covers it)", 0},
		{"private/**", "(1 path skipped: a Read deny rule covers it)", 0},
	} {
		for _, tl := range []tool.Tool{glob, globNoIgnore} {
			out, isErr := callGuarded(t, tl, root, map[string]any{"pattern": tc.pattern}, g)
			if isErr {
				t.Fatalf("Glob %s failed: %s", tc.pattern, out)
			}
			checkNoLeak(t, tc.pattern, out)
			lines := strings.Split(out, "\n")
			if last := lines[len(lines)-1]; last != tc.want {
				t.Errorf("Glob %s: last line %q, want %q:\n%s", tc.pattern, last, tc.want, out)
			}
			listed := 0
			for _, l := range lines {
				if strings.HasPrefix(l, root) {
					listed++
				}
			}
			if listed != tc.files {
				t.Errorf("Glob %s: %d files listed, want %d:\n%s", tc.pattern, listed, tc.files, out)
			}
			if tc.files == 0 && lines[0] != "No files found" {
				t.Errorf("Glob %s: first line %q, want No files found", tc.pattern, lines[0])
			}
		}
	}
}

// TestGuardSymlinkedRoot searches through a symbolic link to the tree: the
// deny rules name the real paths, and still hold.
func TestGuardSymlinkedRoot(t *testing.T) {
	root, g, _ := deniedTree(t)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	grep, glob := tools()
	for _, mode := range []string{modeFiles, modeContent, modeCount} {
		out, _ := callGuarded(t, grep, link, map[string]any{"pattern": "password", "output_mode": mode}, g)
		checkNoLeak(t, "Grep "+mode, out)
		if !strings.HasSuffix(out, "(3 paths skipped: a Read deny rule covers them)") || !strings.Contains(out, filepath.Join(link, "notes.txt")) {
			t.Errorf("Grep %s through a symlink:\n%s", mode, out)
		}
	}
	out, _ := callGuarded(t, glob, link, map[string]any{"pattern": "**/*"}, g)
	checkNoLeak(t, "Glob", out)
	if !strings.HasSuffix(out, "(3 paths skipped: a Read deny rule covers them)") {
		t.Errorf("Glob through a symlink:\n%s", out)
	}
	out, isErr := callGuarded(t, grep, link, map[string]any{"pattern": "password", "path": "secrets/k"}, g)
	if !isErr || strings.Contains(out, "hunter2") {
		t.Errorf("Grep of the secret through a symlink: error %v:\n%s", isErr, out)
	}
}

// TestGuardDenyingNothing checks that a guard that denies nothing changes
// no result, and that without a guard the secret is found (the tree is
// one where the other tests would fail without the guard).
func TestGuardDenyingNothing(t *testing.T) {
	nothing := denyNothing()
	grep, glob := tools()
	denied, _, _ := deniedTree(t)
	for _, root := range []string{makeTree(t), denied} {
		for _, in := range []map[string]any{
			{"pattern": "foo|password"},
			{"pattern": "foo|password", "output_mode": "content", "-C": 1},
			{"pattern": "foo|password", "output_mode": "count"},
			{"pattern": "foo|password", "path": "a.txt"},
			{"pattern": `\{\n`, "multiline": true, "output_mode": "content"},
		} {
			in["head_limit"] = 0
			want, _ := call(t, grep, root, in)
			got, _ := callGuarded(t, grep, root, in, nothing)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Grep %v with a guard denying nothing (-none +guard):\n%s", in, diff)
			}
		}
		for _, pat := range []string{"**/*", "**/*.txt", "sub/**", "a.txt", "docs/k.txt"} {
			want, _ := call(t, glob, root, map[string]any{"pattern": pat})
			got, _ := callGuarded(t, glob, root, map[string]any{"pattern": pat}, nothing)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Glob %s with a guard denying nothing (-none +guard):\n%s", pat, diff)
			}
		}
	}
	out, _ := call(t, grep, denied, map[string]any{"pattern": "password", "output_mode": "content"})
	if !strings.Contains(out, "hunter2") || strings.Contains(out, "skipped") {
		t.Errorf("without a guard the secret is found, nothing skipped:\n%s", out)
	}
}

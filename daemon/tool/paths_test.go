package tool_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestRealPath(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(base, "real")
	other := filepath.Join(base, "other")
	for _, d := range []string{real, other} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(real, "f.txt"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(base, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(real, "abs")                         // absolute link to a directory
	link("real", "rel")                       // relative link to a directory
	link(filepath.Join(other, "new"), "dang") // dangling, absolute
	link("other/newdir", "dangrel")           // dangling, relative
	link("dang", "chain")                     // a link to a dangling link
	link("self", "self")                      // a loop of one
	link("loopb", "loopa")                    // a loop of two
	link("loopa", "loopb")                    //
	link(filepath.Join(base, "loopa"), "intoloop")

	for _, tc := range []struct {
		name string
		in   string
		want []string // any of these
	}{
		{"existing file", filepath.Join(real, "f.txt"), []string{filepath.Join(real, "f.txt")}},
		{"uncleaned", base + "//real/./f.txt", []string{filepath.Join(real, "f.txt")}},
		{"existing dir", real, []string{real}},
		{"through absolute link", filepath.Join(base, "abs", "f.txt"), []string{filepath.Join(real, "f.txt")}},
		{"through relative link", filepath.Join(base, "rel", "f.txt"), []string{filepath.Join(real, "f.txt")}},
		{"non-existent tail", filepath.Join(base, "rel", "a", "b", "c.txt"), []string{filepath.Join(real, "a", "b", "c.txt")}},
		{"non-existent file", filepath.Join(base, "abs", "new.txt"), []string{filepath.Join(real, "new.txt")}},
		{"dangling symlink", filepath.Join(base, "dang"), []string{filepath.Join(other, "new")}},
		{"dangling relative symlink", filepath.Join(base, "dangrel", "x"), []string{filepath.Join(other, "newdir", "x")}},
		{"chain to dangling symlink", filepath.Join(base, "chain", "x"), []string{filepath.Join(other, "new", "x")}},
		{"symlink to itself", filepath.Join(base, "self"), []string{filepath.Join(base, "self")}},
		{"symlink loop", filepath.Join(base, "loopa", "x"), []string{filepath.Join(base, "loopa", "x"), filepath.Join(base, "loopb", "x")}},
		{"link into a loop", filepath.Join(base, "intoloop"), []string{filepath.Join(base, "loopa"), filepath.Join(base, "loopb")}},
		{"nothing exists below root", "/tackle-no-such-dir/a/b", []string{"/tackle-no-such-dir/a/b"}},
		{"root", "/", []string{"/"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tool.RealPath(tc.in); !slices.Contains(tc.want, got) {
				t.Errorf("RealPath(%q) = %q, want one of %q", tc.in, got, tc.want)
			}
		})
	}
}

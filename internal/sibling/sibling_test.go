package sibling

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFind(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{filepath.Join(a, "prog"), 0o644}, {filepath.Join(b, "prog"), 0o755}} {
		if err := os.WriteFile(f.path, []byte("#!/bin/sh\n"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(a, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	pathList := "relative" + string(filepath.ListSeparator) + a + string(filepath.ListSeparator) + b
	// a's prog is not executable: b's is found.
	if got := Find("prog", pathList); got != filepath.Join(b, "prog") {
		t.Fatalf("Find = %q, want %q", got, filepath.Join(b, "prog"))
	}
	if got := Find("dir", pathList); got != "" {
		t.Fatalf("a directory was found: %q", got)
	}
	// A relative entry never supplies a program.
	wd, _ := os.Getwd()
	t.Cleanup(func() { os.Chdir(wd) })
	if err := os.Chdir(b); err != nil {
		t.Fatal(err)
	}
	if got := Find("prog", "."); got != "" {
		t.Fatalf("found through a relative PATH entry: %q", got)
	}
	// Next to this executable comes first.
	self, _ := os.Executable()
	if got := Find(filepath.Base(self), b); got != self {
		t.Fatalf("Find(self) = %q, want %q", got, self)
	}
}

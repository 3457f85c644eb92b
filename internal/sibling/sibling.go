// Package sibling finds tackle's other programs: tackle-sandbox-exec for
// tackled, tackled for the test programs. They are installed side by side,
// so the directory of the running executable comes first, then $PATH.
// (The CLI's own lookup of tackled, in clients/client, follows the same
// order; clients import only gen/, clients/ and daemon/socket.)
package sibling

import (
	"os"
	"path/filepath"
)

// Find returns the path of the executable file name next to this
// program, else in the absolute directories of pathList (a $PATH value;
// relative entries are skipped, so the current directory never supplies a
// program), or "" when there is none.
func Find(name, pathList string) string {
	if self, err := os.Executable(); err == nil {
		if p := filepath.Join(filepath.Dir(self), name); Executable(p) {
			return p
		}
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		if p := filepath.Join(dir, name); Executable(p) {
			return p
		}
	}
	return ""
}

// Executable reports whether p is a regular file someone may execute.
func Executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

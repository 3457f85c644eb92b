package tool

import (
	"os"
	"path/filepath"
)

// maxSymlinkHops bounds how many dangling symlinks RealPath follows before
// it gives up on a loop.
const maxSymlinkHops = 40

// RealPath returns the path p, cleaned, with its symbolic links resolved,
// the way the kernel would resolve it for a write. For a path that does not
// exist yet it resolves the nearest existing parent and appends the rest; a
// dangling symlink on the way is followed to where it points (relative
// targets against the link's directory), as a write through it would be.
// When a symlink loop (more than 40 dangling links in a row) stops the
// resolution, it returns the path it had reached: p itself for a link to
// itself, else a path through one of the loop's links. p is cleaned
// lexically first,
// so a ".." after a symlink is applied to the path as written; callers pass
// absolute, cleaned paths.
func RealPath(p string) string {
	p = filepath.Clean(p)
	for range maxSymlinkHops {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return r
		}
		var rest []string
		dir := p
		for {
			parent := filepath.Dir(dir)
			if parent == dir {
				return p
			}
			rest = append([]string{filepath.Base(dir)}, rest...)
			dir = parent
			r, err := filepath.EvalSymlinks(dir)
			if err != nil {
				continue
			}
			target, err := os.Readlink(filepath.Join(r, rest[0]))
			if err != nil {
				return filepath.Join(append([]string{r}, rest...)...)
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(r, target)
			}
			p = filepath.Join(append([]string{target}, rest[1:]...)...)
			break
		}
	}
	return p // a symlink loop: the path reached
}

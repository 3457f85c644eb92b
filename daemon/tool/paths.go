package tool

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
	if strings.Count(p, "/") >= kernelDepth {
		if r, ok := resolved(p); ok {
			return r
		}
	}
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

// kernelDepth is the number of components from which resolved is cheaper
// than filepath.EvalSymlinks, whose lstats cost about 1.1 µs each where
// resolved's three system calls cost about 5 µs at any depth
// (BenchmarkRealPath: 3.7 against 5.2 µs for three components, 10 against
// 5.4 for nine).
const kernelDepth = 5

// oPath is Linux's O_PATH, which package syscall does not name: the open
// resolves the path and opens nothing (no permission on the file needed, a
// FIFO does not block, a device is not opened).
const oPath = 0x200000

// resolved returns the path of the file p names as the kernel resolved it,
// for a p that resolves (exists, through any links): opened with O_PATH and
// its name read back from /proc/self/fd, three system calls where
// filepath.EvalSymlinks makes an lstat per component (musl's realpath does
// the same). The name is what EvalSymlinks returns for such a path
// (TestResolvedIsEvalSymlinks). It reports false when p does not resolve
// (missing, a dangling link, a loop, a file on the way) and when the name is
// not a plain absolute path (no /proc, a file deleted meanwhile, one outside
// the process's root): RealPath then resolves p itself.
func resolved(p string) (string, bool) {
	var fd int
	for {
		var err error
		if fd, err = syscall.Open(p, oPath|syscall.O_CLOEXEC, 0); err == nil {
			break
		}
		if err != syscall.EINTR {
			return "", false
		}
	}
	defer syscall.Close(fd)
	var buf [syscall.PathMax]byte
	var link [len("/proc/self/fd/") + 20]byte
	n, err := syscall.Readlink(string(strconv.AppendInt(append(link[:0], "/proc/self/fd/"...), int64(fd), 10)), buf[:])
	if err != nil || n <= 0 || n == len(buf) || buf[0] != '/' {
		return "", false
	}
	r := string(buf[:n])
	if strings.HasSuffix(r, " (deleted)") {
		return "", false
	}
	return r, true
}

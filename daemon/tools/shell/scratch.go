package shell

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// scratchFile is a small file the daemon shares with a shell: the file
// its EXIT trap writes its final directory to, or a warm shell's script.
// Scratch files are kept and reused (getScratch, putScratch): creating
// and removing a file costs about 0.15 ms on a disk here (the sandbox's
// scratch directory is on one), more than running `true` does.
//
// The daemon opens one only as the file it created: never through a
// symbolic link, and only if it is still the same inode. In the sandbox's
// scratch directory a command may replace the path with a link to any
// file, and the daemon must not then write a script into, or read a
// directory from, that file. It holds no descriptor between uses.
type scratchFile struct {
	path     string
	dir      string // the directory it is in (the pool's key)
	dev, ino uint64
}

// newScratch creates a scratch file in dir.
func newScratch(dir string) (*scratchFile, error) {
	f, err := os.CreateTemp(dir, "tackle-shell-*")
	if err != nil {
		return nil, fmt.Errorf("creating a file for the shell: %w", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("creating a file for the shell: %w", err)
	}
	return &scratchFile{path: f.Name(), dir: dir, dev: st.Dev, ino: st.Ino}, nil
}

// open opens it for reading and writing, if its path still names it.
func (sf *scratchFile) open() (*os.File, error) {
	fd, err := unix.Open(sf.path, unix.O_RDWR|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", sf.path, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Dev != sf.dev || st.Ino != sf.ino || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("%s is no longer the file the daemon made", sf.path)
	}
	return os.NewFile(uintptr(fd), sf.path), nil
}

// intact reports whether its path still names it (a command may have
// removed or replaced it).
func (sf *scratchFile) intact() bool {
	var st unix.Stat_t
	return unix.Lstat(sf.path, &st) == nil && st.Dev == sf.dev && st.Ino == sf.ino
}

// write makes it hold exactly b (nil: empties it).
func (sf *scratchFile) write(b []byte) error {
	f, err := sf.open()
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Truncate(0); err != nil {
		return err
	}
	if len(b) > 0 {
		_, err = f.WriteAt(b, 0)
	}
	return err
}

// readCwd returns the directory a shell's EXIT trap recorded in it ("" if
// none).
func (sf *scratchFile) readCwd() string {
	f, err := sf.open()
	if err != nil {
		return ""
	}
	defer f.Close()
	b := make([]byte, 8<<10)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF || n == len(b) {
		return ""
	}
	d := strings.TrimSuffix(string(b[:n]), "\n")
	if !filepath.IsAbs(d) || strings.Contains(d, "\n") {
		return ""
	}
	return d
}

// maxScratch bounds the files kept for reuse per directory.
const maxScratch = 8

// getScratch returns an empty scratch file in dir, reused or new.
func (s *Shells) getScratch(dir string) (*scratchFile, error) {
	s.mu.Lock()
	free := s.scratch[dir]
	var sf *scratchFile
	if n := len(free); n > 0 {
		sf = free[n-1]
		s.scratch[dir] = free[:n-1]
	}
	s.mu.Unlock()
	if sf != nil && sf.write(nil) == nil {
		return sf, nil
	}
	return newScratch(dir) // a file no longer the daemon's is left alone
}

// putScratch keeps sf for reuse (up to maxScratch per directory; after
// Close none), else removes it.
func (s *Shells) putScratch(sf *scratchFile) {
	if !sf.intact() {
		return
	}
	s.mu.Lock()
	if !s.closed && len(s.scratch[sf.dir]) < maxScratch {
		s.scratch[sf.dir] = append(s.scratch[sf.dir], sf)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	sf.remove()
}

// remove removes sf if its path still names it.
func (sf *scratchFile) remove() {
	if sf.intact() {
		os.Remove(sf.path)
	}
}

// dropScratch removes the files kept for reuse.
func (s *Shells) dropScratch() {
	s.mu.Lock()
	all := s.scratch
	s.scratch = map[string][]*scratchFile{}
	s.mu.Unlock()
	for _, free := range all {
		for _, sf := range free {
			sf.remove()
		}
	}
}

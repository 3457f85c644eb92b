package shell

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// scratchFile is a small file the daemon shares with a shell: the file
// its EXIT trap writes its final directory to, or a warm shell's script.
// Those of a session's sandbox are kept and reused (getScratch,
// putScratch): creating and removing a file costs about 0.15 ms on a disk
// here (the sandbox's scratch directory is on one, in the state
// directory), more than running `true` does. The daemon's own go in a
// memory file system where there is one (scratchDir), where a file costs
// ~0.01 ms; they are not kept, so that a daemon that is killed leaves
// there only the files of the commands it was running.
//
// The daemon opens one only as the file it created: never through a
// symbolic link, and only if it is still the same inode. In the sandbox's
// scratch directory a command may replace the path with a link to any
// file, and the daemon must not then write a script into, or read a
// directory from, that file. It holds no descriptor between uses.
type scratchFile struct {
	path     string
	key      scratchKey // where it is kept for reuse
	dev, ino uint64
}

// scratchKey is a directory of scratch files: the daemon's (session "")
// or a session's sandbox's.
type scratchKey struct{ session, dir string }

// scratchFor is where the scratch files of env's session's commands go:
// a memory file system when there is one (see scratchDir), or the
// session's sandbox's scratch directory (writable inside it).
func (s *Shells) scratchFor(env tool.Env, sandboxed bool) scratchKey {
	if sandboxed && s.opts.Sandbox != nil {
		return scratchKey{env.SessionID(), s.opts.Sandbox.ScratchDir(env)}
	}
	return scratchKey{"", scratchDir()}
}

// newScratch creates a scratch file in key's directory.
func newScratch(key scratchKey) (*scratchFile, error) {
	f, err := os.CreateTemp(key.dir, "tackle-shell-*")
	if err != nil {
		return nil, fmt.Errorf("creating a file for the shell: %w", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("creating a file for the shell: %w", err)
	}
	return &scratchFile{path: f.Name(), key: key, dev: st.Dev, ino: st.Ino}, nil
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

// getScratch returns an empty scratch file in key's directory, reused or
// new.
func (s *Shells) getScratch(key scratchKey) (*scratchFile, error) {
	s.mu.Lock()
	free := s.scratch[key]
	var sf *scratchFile
	if n := len(free); n > 0 {
		sf = free[n-1]
		if n == 1 {
			delete(s.scratch, key)
		} else {
			s.scratch[key] = free[:n-1]
		}
	}
	s.mu.Unlock()
	if sf != nil && sf.write(nil) == nil {
		return sf, nil
	}
	return newScratch(key) // a file no longer the daemon's is left alone
}

// putScratch keeps sf for reuse if it is a sandbox's (up to maxScratch
// per directory; none after Close or for a session that ended), else
// removes it.
func (s *Shells) putScratch(sf *scratchFile) {
	if !sf.intact() {
		return
	}
	s.mu.Lock()
	if sf.key.session != "" && !s.closed && !s.ended[sf.key.session] && len(s.scratch[sf.key]) < maxScratch {
		s.scratch[sf.key] = append(s.scratch[sf.key], sf)
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

// dropScratch removes the files kept for reuse of a session's sandbox
// (all if all).
func (s *Shells) dropScratch(session string, all bool) {
	var drop []*scratchFile
	s.mu.Lock()
	for k, free := range s.scratch {
		if all || k.session == session && session != "" {
			drop = append(drop, free...)
			delete(s.scratch, k)
		}
	}
	s.mu.Unlock()
	for _, sf := range drop {
		sf.remove()
	}
}

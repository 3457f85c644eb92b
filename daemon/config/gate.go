package config

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// gate answers the stats of settings files from memory while the kernel
// reports that nothing they depend on changed. Load stats about a dozen
// files at every turn (most of them absent), so that an edited file applies
// to the next batch; with the gate that is one read of an inotify
// descriptor that returns at once when nothing happened.
//
// Why a stat it answers is never stale: inotify queues an event before the
// system call that made the change returns, so a change made before a Load
// began is in the queue when Load drains it (sync) — the same guarantee as
// statting. Before a path's stamp is kept, every directory on its way is
// watched for changes of the next name (created, deleted, renamed, its
// attributes changed), and the file itself for changes of its content and
// attributes (through any of its hard links); the watches are set before
// the path is statted, so a change in between only costs a second stat. A
// path the gate cannot see whole is statted every time, as before: one
// with a symlink on its way (its target can change where no watch looks),
// one on a file system whose changes may come from elsewhere (NFS, SMB,
// FUSE, 9p: only local file systems are gated), one the watch limit does
// not allow. Not seen, as with any inotify watcher: a mount over a
// directory on the way, and writes through a shared memory mapping.
type statGate struct {
	mu      sync.Mutex
	fd      int // the inotify descriptor; -1 when gating is off
	entries map[string]stamp
	watches map[int32]*gateWatch
	buf     []byte
	// hits and misses count the stats answered from memory and made.
	hits, misses uint64
}

// gateWatch is what one watch descriptor guards.
type gateWatch struct {
	names map[string]map[string]bool // a name in the directory → the paths that depend on it
	self  map[string]bool            // paths that depend on the watched file or directory itself
}

// Bounds of the gate: past them, a path is statted every time.
const (
	maxGateEntries = 4096
	maxGateWatches = 1024
)

// Watch masks: a directory on the way (its entries and its own
// attributes, moves and deletion), and a settings file (content,
// attributes, moves and deletion).
const (
	gateDirMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_MASK_ADD
	gateFileMask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
		unix.IN_DONT_FOLLOW | unix.IN_MASK_ADD
)

// gate returns the process's statGate, made at its first use (the stats
// it answers are the file system's, so every Loader and Trust shares it).
var gate = sync.OnceValue(newStatGate)

func newStatGate() *statGate {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		fd = -1
	}
	return &statGate{fd: fd, entries: map[string]stamp{}, watches: map[int32]*gateWatch{}, buf: make([]byte, 16<<10)}
}

// sync drops the stamps of the paths the changes queued since the last
// sync concern: one read when nothing changed.
func (g *statGate) sync() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.fd >= 0 {
		n, err := unix.Read(g.fd, g.buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			if err != nil && err != unix.EAGAIN {
				g.offLocked() // the descriptor is broken: stat every time from now on
			}
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			// struct inotify_event: wd, mask, cookie, len, then len bytes of name.
			wd := int32(binary.NativeEndian.Uint32(g.buf[off:]))
			mask := binary.NativeEndian.Uint32(g.buf[off+4:])
			size := int(binary.NativeEndian.Uint32(g.buf[off+12:]))
			name := ""
			if size > 0 {
				end := min(off+unix.SizeofInotifyEvent+size, n)
				name = strings.TrimRight(string(g.buf[off+unix.SizeofInotifyEvent:end]), "\x00")
			}
			g.eventLocked(wd, mask, name)
			off += unix.SizeofInotifyEvent + size
		}
	}
}

// eventLocked drops the stamps one event concerns.
func (g *statGate) eventLocked(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		clear(g.entries)
		return
	}
	w := g.watches[wd]
	if w == nil {
		return
	}
	if name != "" && mask&unix.IN_IGNORED == 0 {
		for p := range w.names[name] {
			delete(g.entries, p)
		}
		delete(w.names, name)
		return
	}
	// The watched object itself changed, moved or went away.
	for _, paths := range w.names {
		for p := range paths {
			delete(g.entries, p)
		}
	}
	for p := range w.self {
		delete(g.entries, p)
	}
	clear(w.names)
	clear(w.self)
	if mask&unix.IN_IGNORED != 0 {
		delete(g.watches, wd)
	}
}

// offLocked turns gating off for good.
func (g *statGate) offLocked() {
	unix.Close(g.fd)
	g.fd = -1
	clear(g.entries)
	clear(g.watches)
}

// stat returns path's stamp: from memory when the path is gated and no
// change concerning it was synced since, else from the file system.
func (g *statGate) stat(path string) stamp {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st, ok := g.entries[path]; ok {
		g.hits++
		return st
	}
	g.misses++
	if g.fd < 0 || len(g.entries) >= maxGateEntries || !g.armLocked(path) {
		return statFile(path)
	}
	st := statFile(path)
	g.entries[path] = st
	return st
}

// armLocked sets the watches that see every change to what stat(path)
// returns, and reports whether it could.
func (g *statGate) armLocked(path string) bool {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || path == "/" {
		return false
	}
	names := strings.Split(path[1:], "/")
	dir := "/"
	for i, name := range names {
		wd, ok := g.watchLocked(dir, gateDirMask)
		if !ok {
			return false
		}
		g.dependLocked(wd, name, path)
		child := filepath.Join(dir, name)
		var st unix.Stat_t
		if err := unix.Lstat(child, &st); err != nil {
			// Absent (or a file where a directory should be): the watch
			// on dir sees it appear.
			return err == unix.ENOENT || err == unix.ENOTDIR
		}
		switch mode := st.Mode & unix.S_IFMT; {
		case mode == unix.S_IFLNK:
			return false
		case i == len(names)-1:
			wd, ok := g.watchLocked(child, gateFileMask)
			if ok {
				g.dependLocked(wd, "", path)
			}
			return ok
		case mode != unix.S_IFDIR:
			return true // stat(path) fails with ENOTDIR until this entry changes
		}
		dir = child
	}
	return false
}

// watchLocked watches p (on a local file system only) and returns its
// watch descriptor.
func (g *statGate) watchLocked(p string, mask uint32) (int32, bool) {
	if len(g.watches) >= maxGateWatches {
		return 0, false
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(p, &fs); err != nil || !localFS(int64(fs.Type)) {
		return 0, false
	}
	wd, err := unix.InotifyAddWatch(g.fd, p, mask)
	if err != nil {
		return 0, false
	}
	if g.watches[int32(wd)] == nil {
		g.watches[int32(wd)] = &gateWatch{names: map[string]map[string]bool{}, self: map[string]bool{}}
	}
	return int32(wd), true
}

// dependLocked records that path depends on name in wd's directory ("":
// on the watched object itself).
func (g *statGate) dependLocked(wd int32, name, path string) {
	w := g.watches[wd]
	if name == "" {
		w.self[path] = true
		return
	}
	if w.names[name] == nil {
		w.names[name] = map[string]bool{}
	}
	w.names[name][path] = true
}

// localFS reports whether the file system of that statfs type reports
// every change through inotify (its files change only through this
// kernel).
func localFS(t int64) bool {
	switch t {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.F2FS_SUPER_MAGIC, unix.RAMFS_MAGIC, 0x2fc12fc1 /* zfs */, 0xca451a4e /* bcachefs */ :
		return true
	}
	return false
}

package proc

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// TagVar is the environment variable Start adds to every process while a
// record file is kept: the daemon run's tag, which descendants inherit
// even when they leave the process group (setsid), so that the next
// daemon can find them.
const TagVar = "TACKLE_DAEMON_RUN"

// RecordFile is the name of the record file in the state directory.
const RecordFile = "running-groups.json"

// Record is the record file's content: the daemon that wrote it and the
// process groups it had running.
type Record struct {
	Version int `json:"version"`
	// PID and Start (/proc/PID/stat starttime) are the daemon's, so a
	// daemon still running is never mistaken for a dead one.
	PID    int     `json:"pid"`
	Start  uint64  `json:"start"`
	BootID string  `json:"boot_id"`
	Tag    string  `json:"tag"`
	Groups []Group `json:"groups"`
}

// Group is one recorded process group: its leader's pid (the pgid) and
// start time, and what it was.
type Group struct {
	PGID  int    `json:"pgid"`
	Start uint64 `json:"start"`
	What  string `json:"what"`
}

// registry is the process-wide state.
type registry struct {
	// forkMu is held (read) while a child is forked and made owned, and
	// (write) while the reaper judges and reaps a child.
	forkMu sync.RWMutex

	mu     sync.Mutex // guards the fields below
	owned  map[int]*Handle
	groups map[int]*Handle
	path   string        // the record file; "" when none is kept
	file   *os.File      // path, open for writing
	size   int           // the length of the record last written
	dirty  chan struct{} // wakes the recorder; made by the first Recover
	runTag string
	self   Record
	werr   error // the last error writing the record
}

var global = registry{owned: map[int]*Handle{}, groups: map[int]*Handle{}}

// TagEnv is the TagVar entry Start adds to a process's environment, for a
// process started otherwise on the daemon's behalf (a sandboxed command,
// which the sandbox's server starts); "" while no record is kept.
func TagEnv() string {
	if t := global.tag(); t != "" {
		return TagVar + "=" + t
	}
	return ""
}

func (r *registry) tag() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runTag
}

func (r *registry) own(h *Handle) {
	r.mu.Lock()
	r.owned[h.pid] = h
	r.mu.Unlock()
}

func (r *registry) isOwned(pid int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.owned[pid]
	return ok
}

// record lists h's group for the recorder to write, if a record file is
// kept. The write is off the start's path (reading the start time of a
// process that is just exec'ing costs more than the rest of Start) and
// waits recordDelay: a daemon killed before it lands leaves the group
// unrecorded, its leader killed by Pdeathsig and the rest found by the
// run's tag.
func (r *registry) record(h *Handle) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.file == nil {
		return
	}
	r.groups[h.pgid] = h
	select {
	case r.dirty <- struct{}{}:
	default: // a write is due already
	}
}

// recordDelay is how long the recorder lets new groups wait: most tool
// processes (a `git status`, a hook) are gone by then and cost no write.
const recordDelay = 20 * time.Millisecond

// recorder writes the record file when a group was added: it reads the
// new groups' start times, then writes the groups still running. For the
// life of the process, from the first Recover.
func (r *registry) recorder() {
	var todo []*Handle
	for range r.dirty {
		time.Sleep(recordDelay)
		r.mu.Lock()
		todo = todo[:0]
		for _, h := range r.groups {
			if h.start == 0 {
				todo = append(todo, h)
			}
		}
		r.mu.Unlock()
		starts := make([]uint64, len(todo))
		for i, h := range todo {
			starts[i], _ = starttime(h.pid)
		}
		r.mu.Lock()
		for i, h := range todo {
			h.start = starts[i]
		}
		r.writeLocked()
		r.mu.Unlock()
	}
}

// release forgets h. The record file is not rewritten for it: the next
// Start's write drops the group, and until then the group listed is gone
// or still this run's (a member that outlived its leader), which is what
// killLeftovers' checks tell apart.
func (r *registry) release(h *Handle) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.owned[h.pid] == h {
		delete(r.owned, h.pid)
	}
	if r.groups[h.pgid] == h {
		delete(r.groups, h.pgid)
	}
}

// writeLocked writes the record into the record file, in place: one
// write at offset 0, padded with spaces to the previous length (JSON
// allows them), then a truncation, so that the file holds a whole record
// at every moment the daemon may be killed. It is not synced: the record
// must outlive the daemon, not the machine, whose processes die with it.
func (r *registry) writeLocked() {
	if r.file == nil {
		return
	}
	rec := r.self
	rec.Groups = make([]Group, 0, len(r.groups))
	for _, h := range r.groups {
		if h.start != 0 { // 0: gone before its start time was read
			rec.Groups = append(rec.Groups, Group{PGID: h.pgid, Start: h.start, What: h.what})
		}
	}
	b, err := json.Marshal(rec)
	if err != nil {
		r.werr = err
		return
	}
	n := len(b)
	for len(b) < r.size {
		b = append(b, ' ')
	}
	if _, err := r.file.WriteAt(b, 0); err != nil {
		r.werr = err
		return
	}
	if n < r.size {
		if err := r.file.Truncate(int64(n)); err != nil {
			r.werr = err
			return
		}
	}
	r.size = n
}

// Killed is a process group (or, with ByTag, a single process) of the
// previous daemon that Recover killed.
type Killed struct {
	PGID  int    // the group; 0 for a process found by its tag
	PID   int    // the process found by its tag
	What  string // as recorded ("bash", "hook", "mcp"); "" for ByTag
	ByTag bool
}

func (k Killed) String() string {
	if k.ByTag {
		return fmt.Sprintf("process %d (left its group)", k.PID)
	}
	return fmt.Sprintf("process group %d (%s)", k.PGID, k.What)
}

// Recover kills what the daemon that last kept the record file at path
// left running (see killLeftovers), unless that daemon is still running
// or the machine has rebooted since. Then this daemon records its own
// groups in path under a fresh tag. Call it once, at start-up, before any
// Start.
func Recover(path string) ([]Killed, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs // the keeper runs in /
	}
	var killed []Killed
	var rerr error
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		rerr = fmt.Errorf("reading the previous daemon's process record: %w", err)
	default:
		var prev Record
		if err := json.Unmarshal(b, &prev); err != nil {
			rerr = fmt.Errorf("reading the previous daemon's process record %s: %w", path, err)
		} else {
			killed = killLeftovers(&prev, "")
		}
	}

	// A daemon started from a tool command (a test run, a nested tackle)
	// inherits its parent daemon's tag: its processes carry its own.
	os.Unsetenv(TagVar)
	tagBytes := make([]byte, 12)
	_, _ = rand.Read(tagBytes)
	self := Record{Version: 1, PID: os.Getpid(), BootID: bootID(), Tag: hex.EncodeToString(tagBytes)}
	self.Start, _ = starttime(self.PID)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil && rerr == nil {
		rerr = err
	}
	// O_NOFOLLOW: the state directory is the user's own, but a link
	// planted there must not make the daemon write elsewhere.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		if rerr == nil {
			rerr = fmt.Errorf("writing the process record: %w", err)
		}
		return killed, rerr
	}
	global.mu.Lock()
	if global.dirty == nil {
		global.dirty = make(chan struct{}, 1)
		go global.recorder()
	}
	if global.file != nil {
		global.file.Close()
	}
	global.path, global.file, global.size, global.self, global.runTag = path, f, 0, self, self.Tag
	global.werr = nil
	global.writeLocked()
	werr := global.werr
	global.mu.Unlock()
	if werr != nil && rerr == nil {
		rerr = fmt.Errorf("writing the process record: %w", werr)
	}
	return killed, rerr
}

// StopRecording removes the record file and keeps no more (a daemon
// stopping cleanly, once its processes are gone).
func StopRecording() {
	global.mu.Lock()
	defer global.mu.Unlock()
	if global.path != "" {
		os.Remove(global.path)
		global.file.Close()
		global.path, global.file, global.size = "", nil, 0
	}
}

// killLeftovers kills what prev lists and still runs, and nothing else:
//   - a recorded group whose leader still runs — the same process: the
//     same pid and start time — and is this user's;
//   - a recorded group whose leader is gone but in which a process of this
//     user carries prev's tag (which proves the group is prev's: its id
//     cannot have been reused while a member lived);
//   - each process of this user that carries prev's tag and started after
//     prev's daemon (the descendants that left their group).
//
// A pid reused by an unrelated process has another start time and no tag,
// and another user's processes are never signalled, even by root.
//
// dying is the tag of a daemon known to be dying (the keeper saw it go):
// prev is then acted on only if it is that daemon's record, whatever its
// pid's state (it may not be a zombie yet). With dying "", prev is
// skipped if its daemon still runs.
func killLeftovers(prev *Record, dying string) []Killed {
	if prev.BootID != "" && prev.BootID != bootID() {
		return nil // rebooted: nothing of it runs
	}
	switch {
	case dying != "":
		if prev.Tag != dying {
			return nil // another daemon's record: the next daemon wrote it
		}
	case prev.PID > 0 && prev.PID != os.Getpid():
		if p, err := readStat(prev.PID); err == nil && p.start == prev.Start && p.state != 'Z' && p.state != 'X' {
			return nil // that daemon still runs
		}
	}
	uid := os.Getuid()
	self := os.Getpid()
	procs := listProcs()
	// The processes of this user that carry prev's tag.
	var taggedProcs []procInfo
	if prev.Tag != "" {
		for _, p := range procs {
			if p.pid == self || p.start < prev.Start || p.state == 'Z' {
				continue
			}
			if u, err := realUID(p.pid); err != nil || u != uid {
				continue
			}
			if has, _ := hasTag(p.pid, prev.Tag); has {
				taggedProcs = append(taggedProcs, p)
			}
		}
	}
	var killed []Killed
	groups := map[int]bool{} // the groups killed whole
	for _, g := range prev.Groups {
		if g.PGID <= 1 || g.Start == 0 {
			continue
		}
		hit := false
		if p, err := readStat(g.PGID); err == nil {
			// The leader runs (it was not killed by Pdeathsig: a setuid
			// program drops it), or its pid was reused — then the old
			// group is empty, as a pid in use as a pgid is not reused.
			// The start time is in clock ticks: a pid reused within
			// the same tick (which takes a wrap of the pid space) is
			// told apart by the tag, which the leader carries unless
			// it cleared its environment or cannot be read (setuid).
			u, uerr := realUID(g.PGID)
			hit = p.start == g.Start && p.pgrp == g.PGID && uerr == nil && u == uid
			if hit && prev.Tag != "" {
				has, readable := hasTag(g.PGID, prev.Tag)
				hit = has || !readable
			}
		} else {
			for _, p := range taggedProcs {
				if p.pgrp == g.PGID {
					hit = true
					break
				}
			}
		}
		if hit && syscall.Kill(-g.PGID, syscall.SIGKILL) == nil {
			killed = append(killed, Killed{PGID: g.PGID, What: g.What})
			groups[g.PGID] = true
		}
	}
	for _, p := range taggedProcs {
		if !groups[p.pgrp] && killExact(p.pid, p.start) {
			killed = append(killed, Killed{PID: p.pid, ByTag: true})
		}
	}
	return killed
}

// killExact sends SIGKILL to pid if it is still the process that started
// at start: through a pidfd, which names one process for good, opened
// before the start time is checked, so a pid reused in between is never
// hit. It reports whether the signal was sent.
func killExact(pid int, start uint64) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) {
			return false // gone
		}
		// A kernel before 5.3: check, then kill.
		st, err := starttime(pid)
		return err == nil && st == start && syscall.Kill(pid, syscall.SIGKILL) == nil
	}
	defer unix.Close(fd)
	if st, err := starttime(pid); err != nil || st != start {
		return false
	}
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
}

// hasTag reports whether pid's environment holds TagVar=tag, and whether
// it could be read at all.
func hasTag(pid int, tag string) (has, readable bool) {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false, false
	}
	return bytes.Contains(append(env, 0), []byte(TagVar+"="+tag+"\x00")), true
}

// realUID is the real user id of pid, from /proc/<pid>/status.
func realUID(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			return strconv.Atoi(f[0])
		}
	}
	return 0, errors.New("no Uid line in /proc/" + strconv.Itoa(pid) + "/status")
}

// procInfo is what /proc/<pid>/stat says of a process.
type procInfo struct {
	pid, ppid, pgrp, sid int
	state                byte
	start                uint64
}

// readStat parses /proc/<pid>/stat.
func readStat(pid int) (procInfo, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return procInfo{}, errors.New("malformed stat")
	}
	p := procInfo{pid: pid, state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	p.sid, _ = strconv.Atoi(f[3])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, nil
}

// starttime is /proc/<pid>/stat's starttime (clock ticks since boot).
func starttime(pid int) (uint64, error) {
	p, err := readStat(pid)
	return p.start, err
}

// listProcs reads every process's stat.
func listProcs() []procInfo {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procInfo
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, err := readStat(pid); err == nil {
			out = append(out, p)
		}
	}
	return out
}

var bootOnce = sync.OnceValue(func() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
})

func bootID() string { return bootOnce() }

// now is for tests.
var now = time.Now

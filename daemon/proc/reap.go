package proc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// zombieGrace is how long a zombie child that looks like a direct child
// (the daemon's session, its own or the daemon's process group) is left
// for whoever started it to wait for. os/exec waits at once (its Wait is
// blocked in waitid when the child exits), so a zombie that stays that
// long is nobody's.
const zombieGrace = 5 * time.Second

// zombieSeen is when a zombie under zombieGrace was first seen, and its
// start time, which tells it from a later process with the same pid.
type zombieSeen struct {
	start uint64
	at    time.Time
}

// reap is the reaper: it blocks in waitid(P_ALL, WEXITED|WNOWAIT), which
// reports an exited child without reaping it, and then decides:
//   - a pid started by Start and not released is its owner's: the reaper
//     waits (backing off) for the owner to take it;
//   - another child that is plainly adopted — in a session or a process
//     group that is neither the daemon's nor its own, as the orphans of a
//     tool's group and setsid'd processes are — is reaped at once;
//   - any other zombie child (one started with os/exec elsewhere, or an
//     orphan in the daemon's own group) is reaped once it has been a
//     zombie for zombieGrace.
//
// With no child at all, it waits for the next Start (or a second).
func (r *registry) reap() {
	self := os.Getpid()
	selfPgrp, selfSid := unix.Getpgrp(), 0
	if sid, err := unix.Getsid(0); err == nil {
		selfSid = sid
	}
	seen := map[int]zombieSeen{} // zombies under zombieGrace
	backoff := time.Duration(0)
	last := 0 // the pid waitid reported last
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOWAIT, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			clear(seen)
			idle(time.Second)
			continue
		case err != nil:
			idle(time.Second)
			continue
		}
		pid := int(siginfoPid(&info))
		if pid != last {
			backoff = 0 // another zombie: the waits below are for one that stays
		}
		last = pid
		// Most often the child's owner has reaped it since waitid
		// reported it: judging that one pid is enough. An owned zombie
		// (or one under the grace) that stays hides the others from
		// waitid: after a while every child is judged.
		kids := []int{pid}
		if r.isOwned(pid) {
			// The owner's Wait is about to take it; look again soon.
			backoff = min(max(2*backoff, time.Millisecond), time.Second)
			idle(backoff)
			if backoff < 100*time.Millisecond {
				continue
			}
			kids = nil
		} else if backoff >= 100*time.Millisecond {
			kids = nil
		}
		if !r.sweep(kids, self, selfPgrp, selfSid, seen) {
			backoff = 0
			continue
		}
		backoff = min(max(2*backoff, time.Millisecond), time.Second)
		idle(backoff)
	}
}

// sweep reaps those of kids (nil: every child) that are zombies and
// nobody's, and reports whether zombies are left among them (owned ones,
// or ones under the grace).
func (r *registry) sweep(kids []int, self, selfPgrp, selfSid int, seen map[int]zombieSeen) (pending bool) {
	r.forkMu.Lock()
	defer r.forkMu.Unlock()
	all := kids == nil
	if all {
		kids = children(self)
	}
	alive := make(map[int]bool, len(kids))
	t := now()
	for _, pid := range kids {
		alive[pid] = true
		p, err := readStat(pid)
		if err != nil || p.state != 'Z' || p.ppid != self {
			delete(seen, pid) // reaped by its owner: the pid may be reused
			continue
		}
		if r.isOwned(pid) {
			pending = true
			continue
		}
		adopted := p.sid != selfSid || (p.pgrp != pid && p.pgrp != selfPgrp)
		if !adopted {
			first, ok := seen[pid]
			if !ok || first.start != p.start {
				seen[pid] = zombieSeen{start: p.start, at: t}
				pending = true
				continue
			}
			if t.Sub(first.at) < zombieGrace {
				pending = true
				continue
			}
		}
		reapPid(pid)
		delete(seen, pid)
	}
	if all {
		for pid := range seen {
			if !alive[pid] {
				delete(seen, pid)
			}
		}
	}
	return pending
}

// reapPid reaps pid if it has exited.
func reapPid(pid int) {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG, nil)
		if !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// children lists the process's children, from every thread's
// /proc/self/task/<tid>/children (a child belongs to the thread that
// forked it or adopted it).
func children(self int) []int {
	files, _ := filepath.Glob("/proc/" + strconv.Itoa(self) + "/task/*/children")
	var out []int
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(s); err == nil {
				out = append(out, pid)
			}
		}
	}
	return out
}

// idle blocks in poll(2) on the forkers' wake-up pipe's read end for at
// most d, without reading it (a Start's byte is for a forker; it only cuts
// the idle short). A system call, not a channel, so goleak ignores it.
func idle(d time.Duration) {
	fds := []unix.PollFd{{Fd: int32(wakeR), Events: unix.POLLIN}}
	deadline := time.Now().Add(d)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		n, err := unix.Poll(fds, int(max(left/time.Millisecond, 1)))
		if err == nil && n > 0 {
			// A byte is waiting for a forker: it will be read; sleep
			// out a little so as not to spin on it.
			unix.Nanosleep(&unix.Timespec{Nsec: int64(min(left, time.Millisecond))}, nil) //nolint:errcheck // a shorter sleep is fine
			return
		}
		if err != nil && !errors.Is(err, unix.EINTR) {
			return
		}
	}
}

// siginfoPid is si_pid of a waitid result: on Linux the first field of
// the union that follows si_signo, si_errno and si_code (padded to 8).
func siginfoPid(info *unix.Siginfo) int32 {
	return *(*int32)(unsafe.Add(unsafe.Pointer(info), 16))
}

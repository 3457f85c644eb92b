// Package proc starts the daemon's child processes — tool commands, hooks,
// MCP servers — so that none outlives the daemon or is left a zombie.
//
// Start (and Run) start an *exec.Cmd as the leader of a new process group
// with Pdeathsig SIGKILL, from one of a few goroutines locked for the life
// of the process to their OS threads. Pdeathsig fires when the *thread*
// that forked the child exits, not the process; the Go runtime ends a
// thread only when a goroutine exits while locked to it (as
// sandboxnet's enter does when it cannot leave a namespace), so a child
// forked from an ordinary goroutine could be killed at a random moment.
// The forker threads never exit, so the signal comes exactly when the
// daemon dies, SIGKILL included.
//
// Pdeathsig only reaches the group leader. While the daemon lives, the
// owners kill whole groups; when it dies, what survives of a group is
// killed at once by the keeper (keeper.go), a small process that sees the
// daemon go, and else by the next daemon: every started group is written
// to a record file (Record), and both kill the groups (and the processes
// carrying the daemon's run tag in their environment — a setsid'd
// grandchild has left the group) that the record lists and that are
// still running, checked by start time, tag and user so that a reused pid
// or another user's process is never hit.
//
// The first Start makes the daemon a child subreaper, so orphans of its
// children (a hook's `sleep 30 &`, a Bash call's setsid child) become its
// children, and a reaper goroutine reaps them (reap.go) without taking the
// exit status of a child somebody waits for: it never reaps a pid started
// here and not yet released, and reaps other children only when they are
// plainly adopted (another session or another process group than the
// daemon's own and their own) or have stayed zombies for a while. So a
// process started elsewhere in the daemon in a session of its own must be
// owned (Start, or as the keeper is), or its exit status could be taken.
//
// The package holds process-wide state on purpose: threads, children, the
// subreaper flag and Pdeathsig are attributes of the process, not of a
// daemon value. Its goroutines idle in system calls (goleak ignores those).
package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// forkers is how many locked threads start processes. Forking holds
// syscall.ForkLock anyway; more than one lets a slow start (the sandbox
// entering a namespace) not hold up the others.
const forkers = 4

// Handle is a process started by Start. Its owner waits for it (cmd.Wait)
// and then calls Release.
type Handle struct {
	pid, pgid int
	start     uint64 // /proc/<pid>/stat starttime, 0 until the recorder reads it (guarded by global.mu)
	what      string
	once      sync.Once
}

// Pid is the process's id (and its process group's).
func (h *Handle) Pid() int { return h.pid }

// Release says the owner has waited for the process and is done with its
// process group: the reaper may reap the pid's successors, and the group
// is no longer recorded for the next daemon. Call it after cmd.Wait has
// returned (and, for a group the owner kills, after that). Idempotent.
func (h *Handle) Release() {
	h.once.Do(func() { global.release(h) })
}

type startReq struct {
	fn     func() error
	enters bool // fn enters a namespace (Start's enter)
	done   chan error
}

var (
	initOnce sync.Once
	initErr  error
	inited   atomic.Bool // Init has run: starts go through the forkers
	reqs     = make(chan startReq, 64)
	wakeR    int // read end of the forkers' wake-up pipe
	wakeW    int
)

// Init makes the process a child subreaper (Subreaper) and starts the
// forker threads and the reaper, for the life of the process. The daemon's
// main calls it at start-up. Without it — the in-process daemons of tests,
// whose packages check that no goroutine outlives them — Start forks on
// the calling goroutine's thread (Pdeathsig is then tied to a thread of
// the runtime's pool, which lives as long as no goroutine exits locked to
// it) and nothing reaps adopted orphans. It reports whether the subreaper
// could be set (commands still run without it).
func Init() error {
	initOnce.Do(func() {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			initErr = fmt.Errorf("making the forkers' pipe: %w", err)
			return
		}
		wakeR, wakeW = p[0], p[1]
		for range forkers {
			go forker()
		}
		initErr = Subreaper()
		go global.reap()
		inited.Store(true)
	})
	return initErr
}

var (
	subreaperOnce sync.Once
	subreaperErr  error
)

// Subreaper makes this process a child subreaper (prctl
// PR_SET_CHILD_SUBREAPER): the orphans of its descendants become its
// children instead of init's. Once per process.
func Subreaper() error {
	subreaperOnce.Do(func() {
		if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			subreaperErr = fmt.Errorf("becoming a child subreaper: %w", err)
		}
	})
	return subreaperErr
}

// forker runs starts on a thread it never leaves, idling in read(2) on the
// wake-up pipe: one byte per request.
func forker() {
	runtime.LockOSThread() // never unlocked: the thread lives as long as the process
	var netns uint64
	if st, err := os.Stat("/proc/thread-self/ns/net"); err == nil {
		netns = st.Sys().(*syscall.Stat_t).Ino
	}
	var b [1]byte
	for {
		if _, err := unix.Read(wakeR, b[:]); err != nil {
			continue // EINTR
		}
		r := <-reqs
		r.done <- r.fn()
		// A start that entered a namespace and could not leave it
		// (sandboxnet's enter keeps its thread locked then) leaves
		// this thread unusable: park it for good — exiting would kill
		// its children — and let a fresh forker take its place.
		if r.enters && netns != 0 {
			if st, err := os.Stat("/proc/thread-self/ns/net"); err == nil && st.Sys().(*syscall.Stat_t).Ino != netns {
				go forker()
				select {}
			}
		}
	}
}

// onForker runs fn on a forker thread and returns its error. enters says
// that fn enters a namespace.
func onForker(fn func() error, enters bool) error {
	r := startReq{fn: fn, enters: enters, done: make(chan error, 1)}
	reqs <- r
	for {
		_, err := unix.Write(wakeW, []byte{0})
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	return <-r.done
}

// Start starts cmd (as cmd.Start) as the leader of a new process group
// (unless its SysProcAttr sets Setsid or Setpgid) with Pdeathsig SIGKILL
// (unless set), from a thread that lives as long as the process, and
// records its group for the next daemon. enter, if not nil, runs the
// start (it is passed cmd.Start) where it must happen, e.g. a thread
// inside a network namespace; it runs on the forker thread. what names
// the process in the record ("bash", "hook", "mcp"). The owner must wait
// for cmd and then call Release.
func Start(cmd *exec.Cmd, what string, enter func(start func() error) error) (*Handle, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	a := cmd.SysProcAttr
	if !a.Setsid && !a.Setpgid {
		a.Setpgid = true
	}
	if a.Pdeathsig == 0 {
		a.Pdeathsig = syscall.SIGKILL
	}
	if tag := global.tag(); tag != "" {
		env := cmd.Env
		if env == nil {
			env = os.Environ()
		}
		cmd.Env = append(env[:len(env):len(env)], TagVar+"="+tag)
	}
	start := cmd.Start
	if enter != nil {
		start = func() error { return enter(cmd.Start) }
	}
	var h *Handle
	fork := func() error {
		global.forkMu.RLock() // the reaper does not judge children while one is being forked
		defer global.forkMu.RUnlock()
		if err := start(); err != nil {
			return err
		}
		h = &Handle{pid: cmd.Process.Pid, pgid: cmd.Process.Pid, what: what}
		global.own(h)
		return nil
	}
	var err error
	if inited.Load() {
		err = onForker(fork, enter != nil)
	} else {
		err = fork()
	}
	if err != nil {
		return nil, err
	}
	if a.Setpgid && a.Pgid != 0 {
		h.pgid = a.Pgid
	}
	global.record(h)
	return h, nil
}

// Run starts cmd as Start does, waits for it and releases it.
func Run(cmd *exec.Cmd, what string) error {
	h, err := Start(cmd, what, nil)
	if err != nil {
		return err
	}
	defer h.Release()
	return cmd.Wait()
}

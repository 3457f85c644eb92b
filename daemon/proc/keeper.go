package proc

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
)

// KeeperArg, as the first argument of the daemon's binary, makes it the
// keeper (RunKeeper) instead of a daemon.
const KeeperArg = "__tackle-proc-keeper"

// StartKeeper starts the keeper: the daemon's binary again, in a session
// of its own (`tackled __tackle-proc-keeper RECORD TAG` in ps), holding
// the read end of a pipe whose write end only this process has. When the
// daemon dies — SIGKILL included — the pipe reads end of file and the
// keeper kills what the record file (kept by Recover) lists and every
// process carrying this run's tag: the descendants that left the process
// group (setsid, double fork), which Pdeathsig on the leader does not
// reach and which would otherwise run on until the next daemon starts.
// After a clean stop the record is gone and the keeper just exits. Call
// it after Recover and Init.
func StartKeeper() error {
	global.mu.Lock()
	path, tag := global.path, global.runTag
	global.mu.Unlock()
	if path == "" {
		return fmt.Errorf("starting the process keeper: no record file is kept")
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("starting the process keeper: %w", err)
	}
	r, w, err := os.Pipe() // close-on-exec: no tool process inherits w
	if err != nil {
		return fmt.Errorf("starting the process keeper: %w", err)
	}
	cmd := exec.Command(exe, KeeperArg, path, tag)
	cmd.Stdin = r
	cmd.Dir = "/"
	// No Pdeathsig, of course: it outlives the daemon by design. Its
	// own session keeps it out of a kill of the daemon's group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	// Owned, so that the reaper leaves its exit status to cmd.Wait.
	global.forkMu.RLock()
	err = cmd.Start()
	var h *Handle
	if err == nil {
		h = &Handle{pid: cmd.Process.Pid, pgid: cmd.Process.Pid, what: "keeper"}
		global.own(h)
	}
	global.forkMu.RUnlock()
	r.Close()
	if err != nil {
		w.Close()
		return fmt.Errorf("starting the process keeper: %w", err)
	}
	keeperW = w // held open for the life of the process
	go func() {
		cmd.Wait() //nolint:errcheck // it exits when this process does, or when killed
		h.Release()
	}()
	return nil
}

// keeperW is the write end of the keeper's pipe, never closed: the
// process's exit closes it.
var keeperW *os.File

// RunKeeper is the keeper's main: args are the arguments after KeeperArg
// (the record file and the daemon run's tag). It returns the exit status.
func RunKeeper(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tackled "+KeeperArg+" RECORD-FILE TAG")
		return 2
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the daemon is gone
	b, err := os.ReadFile(args[0])
	if err != nil {
		return 0 // a clean stop removed it
	}
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return 1
	}
	killLeftovers(&rec, args[1])
	return 0
}

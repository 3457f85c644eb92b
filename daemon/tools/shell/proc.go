package shell

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/proc"
)

// process is one running shell: bash, the leader of its own process group,
// started by the daemon (cmd) or by an Executor (remote).
type process struct {
	remote Started
	cmd    *exec.Cmd
	h      *proc.Handle // released once bash is waited for and its group is gone
	pgid   int
	settle time.Duration // Wrapped.Settle
	done   chan struct{} // closed by wait once bash has been waited for
	// state is bash's exit state, set before done is closed.
	state *os.ProcessState
}

// becomeSubreaper makes this process the reaper of its orphaned
// descendants (proc.Subreaper), so the processes a shell leaves behind can
// be reaped by process group (see reapGroup); in the daemon proc's reaper
// also reaps those that leave the group (setsid).
func becomeSubreaper() error { return proc.Subreaper() }

// startProc starts argv (a shell -c script, or the sandbox running one)
// in dir with env, stdin /dev/null and stdout and stderr to out, in a new
// process group; what names it in package proc's record. The caller must
// call wait (usually in a goroutine).
func startProc(wr *Wrapped, dir string, out *os.File, what string) (*process, error) {
	defer wr.closeExtra()
	if wr.Exec != nil {
		st, err := wr.Exec.Start(wr.Argv, wr.Env, dir, out, wr.ExtraFiles)
		if err != nil {
			return nil, fmt.Errorf("starting %s in the sandbox: %w", wr.Argv[0], err)
		}
		return &process{remote: st, done: make(chan struct{})}, nil
	}
	cmd := exec.Command(wr.Argv[0], wr.Argv[1:]...)
	cmd.Dir = dir
	cmd.Env = wr.Env
	cmd.Stdin = nil // the null device
	cmd.Stdout = out
	cmd.Stderr = out
	// Its own group, Pdeathsig, forked from a thread that never exits,
	// recorded for the next daemon: see package proc.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.ExtraFiles = wr.ExtraFiles
	h, err := proc.Start(cmd, what, wr.Enter)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", wr.Argv[0], err)
	}
	return &process{cmd: cmd, h: h, pgid: cmd.Process.Pid, settle: wr.Settle, done: make(chan struct{})}, nil
}

// wait waits for bash to exit and closes done.
func (p *process) wait() {
	if p.remote != nil {
		<-p.remote.Done()
		close(p.done)
		return
	}
	p.cmd.Wait() //nolint:errcheck // the exit state is what matters, in ProcessState
	p.state = p.cmd.ProcessState
	close(p.done)
}

// exited reports whether bash has exited and been waited for.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// startErr is why an Executor could not start the command (after done),
// or nil.
func (p *process) startErr() error {
	if p.remote == nil {
		return nil
	}
	if !p.exited() {
		return nil
	}
	if p.remote.StartFailed() {
		return fmt.Errorf("in the sandbox: %w", p.remote.Err())
	}
	return nil
}

// release gives the process back to package proc (its group leaves the
// record, its pid is the reaper's again) once bash has been waited for:
// at once if it has, else when it is (terminate gave up on it), so that
// the reaper never takes bash's exit status from wait.
func (p *process) release() {
	if p.remote != nil {
		return
	}
	if p.exited() {
		p.h.Release()
	} else {
		go func() {
			<-p.done
			p.h.Release()
		}()
	}
}

// exitCode is bash's exit status, 128+N for a signal N (as shells report
// it), -1 if unknown. Valid after done.
func (p *process) exitCode() int {
	if p.remote != nil {
		return p.remote.ExitCode()
	}
	if p.state == nil {
		return -1
	}
	if ws, ok := p.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return p.state.ExitCode()
}

// hardLimit bounds the wait for a group after SIGKILL (a process stuck in
// uninterruptible sleep cannot be helped).
const hardLimit = 5 * time.Second

// terminate kills the whole process group: SIGTERM (and SIGCONT, so that
// stopped processes see it), then SIGKILL after grace for whatever is left,
// and reaps it. It returns once bash has been waited for and the group is
// gone, or after hardLimit more. It is safe to call concurrently and after
// bash exited.
func (p *process) terminate(grace time.Duration) {
	if p.remote != nil {
		p.terminateRemote(grace)
		return
	}
	defer p.release()
	signalGroup(p.pgid, unix.SIGTERM)
	signalGroup(p.pgid, unix.SIGCONT)
	deadline := time.Now().Add(grace)
	t := time.NewTimer(grace)
	select {
	case <-p.done:
		t.Stop()
		if waitGroup(p.pgid, deadline) {
			return
		}
	case <-t.C:
	}
	signalGroup(p.pgid, unix.SIGKILL)
	t = time.NewTimer(hardLimit)
	defer t.Stop()
	select {
	case <-p.done:
	case <-t.C:
		return
	}
	waitGroup(p.pgid, time.Now().Add(hardLimit))
}

// cleanup is for a shell whose bash has exited on its own (done is
// closed): it reaps what exited of its group and kills what is still
// running (as terminate). It reports whether anything was left running.
func (p *process) cleanup(grace time.Duration) (leftovers bool) {
	if p.remote != nil {
		return false // Done means nothing of it is left
	}
	defer p.release()
	if reapGroup(p.pgid) || p.settle > 0 && waitGroup(p.pgid, time.Now().Add(p.settle)) {
		return false
	}
	p.terminate(grace)
	return true
}

// terminateRemote is terminate for a command an Executor started: SIGTERM
// to its group, SIGKILL after grace, which ends everything it started.
func (p *process) terminateRemote(grace time.Duration) {
	p.remote.Signal(unix.SIGTERM)
	p.remote.Signal(unix.SIGCONT)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return
	case <-t.C:
	}
	p.remote.Signal(unix.SIGKILL)
	t.Reset(hardLimit)
	select {
	case <-p.done:
	case <-t.C:
	}
}

func signalGroup(pgid int, sig unix.Signal) {
	if err := unix.Kill(-pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		// EPERM would mean a reused id: nothing of ours to signal.
		return
	}
}

// reapGroup waits for the exited processes of the group that are our
// children (bash's orphans, thanks to becomeSubreaper) and reports whether
// no process is left in the group. Call it only after bash itself has been
// waited for, or it could reap bash under os/exec's feet.
func reapGroup(pgid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PGID, pgid, &info, unix.WEXITED|unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || info.Signo == 0 {
			break // ECHILD (none of ours left) or none exited yet
		}
	}
	return errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}

// waitGroup reaps the group until it is gone or deadline passes, and
// reports whether it is gone. The group's members are dying or may be
// about to be reparented to us, which no event tells, so it polls with a
// short backoff.
func waitGroup(pgid int, deadline time.Time) bool {
	delay := 200 * time.Microsecond
	for {
		if reapGroup(pgid) {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(delay, left))
		delay = min(delay*2, 20*time.Millisecond)
	}
}

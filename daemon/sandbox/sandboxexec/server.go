package sandboxexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// FDFlag is the server's flag naming the descriptor of its socket.
const FDFlag = "--fd"

// Serve runs the server (the tackle-sandbox-exec binary's main; args are
// its arguments) until the daemon closes the socket, and returns the exit
// code. Every command still running then is killed.
func Serve(args []string) int {
	fd := -1
	if len(args) == 2 && args[0] == FDFlag {
		fd, _ = strconv.Atoi(args[1])
	}
	if fd < 3 {
		fmt.Fprintf(os.Stderr, "usage: tackle-sandbox-exec %s N (run by tackled inside the Bash sandbox)\n", FDFlag)
		return 2
	}
	// The commands are forked from this thread only: Pdeathsig follows
	// the thread that forked, and the capability sets emptied below are
	// this thread's.
	runtime.LockOSThread()
	if err := dropForChildren(); err != nil {
		fmt.Fprintln(os.Stderr, "tackle-sandbox-exec:", err)
		return 1
	}
	closeOnExecAbove()
	if typ, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil || typ != unix.SOCK_STREAM {
		fmt.Fprintln(os.Stderr, "tackle-sandbox-exec: the control descriptor is not a stream socket")
		return 1
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		fmt.Fprintln(os.Stderr, "tackle-sandbox-exec: the control socket:", err)
		return 1
	}
	uc := rawConn{fd}
	s := &server{c: uc, running: map[uint64]*exec.Cmd{}}
	if err := s.send(reply{Op: "ready"}); err != nil {
		return 1
	}
	for {
		var r request
		fds, err := readFrame(uc, &r)
		if err != nil {
			break // the daemon closed the socket, or died
		}
		switch r.Op {
		case "run":
			s.run(r, fds)
		case "signal":
			closeFDs(fds)
			s.signal(r)
		default:
			closeFDs(fds)
			s.send(reply{Op: "error", ID: r.ID, Err: "unknown operation " + strconv.Quote(r.Op)}) //nolint:errcheck // the read loop sees a broken socket
		}
	}
	s.mu.Lock()
	for _, cmd := range s.running {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) //nolint:errcheck // gone already
	}
	s.mu.Unlock()
	return 0
}

type server struct {
	c   rawConn
	wmu sync.Mutex // one frame at a time
	mu  sync.Mutex // guards running
	// running are the commands not yet waited for, by request id.
	running map[uint64]*exec.Cmd
}

func (s *server) send(r reply) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return writeFrame(s.c, r)
}

// run starts a command, its shell the init of a PID namespace of its own
// and the leader of its process group, and waits for it on a goroutine.
func (s *server) run(r request, fds []int) {
	if len(fds) < 1 || len(fds) > 1+maxExtra || len(r.Argv) == 0 || !strings.HasPrefix(r.Argv[0], "/") {
		closeFDs(fds)
		s.send(reply{Op: "error", ID: r.ID, Err: fmt.Sprintf("a run needs an absolute command path, an output descriptor and at most %d more", maxExtra)}) //nolint:errcheck // see Serve
		return
	}
	out := os.NewFile(uintptr(fds[0]), "output")
	cmd := &exec.Cmd{Path: r.Argv[0], Args: r.Argv, Env: r.Env, Dir: r.Dir, Stdout: out, Stderr: out}
	for i, fd := range fds[1:] {
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(fd), fmt.Sprint("extra ", i)))
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err := cmd.Start()
	out.Close()
	for _, f := range cmd.ExtraFiles {
		f.Close()
	}
	if err != nil {
		s.send(reply{Op: "error", ID: r.ID, Err: err.Error()}) //nolint:errcheck // see Serve
		return
	}
	s.mu.Lock()
	s.running[r.ID] = cmd
	s.mu.Unlock()
	go func() {
		cmd.Wait() //nolint:errcheck // the status is what is told
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		s.mu.Lock()
		delete(s.running, r.ID)
		s.mu.Unlock()
		s.send(reply{Op: "exited", ID: r.ID, Status: uint32(ws)}) //nolint:errcheck // see Serve
	}()
}

// signal signals a command's process group. The shell, being its PID
// namespace's init, takes from here only the signals it handles and
// SIGKILL, which ends the namespace.
func (s *server) signal(r request) {
	s.mu.Lock()
	cmd := s.running[r.ID]
	s.mu.Unlock()
	if cmd == nil || r.Sig <= 0 || r.Sig > 64 {
		return // it exited already
	}
	syscall.Kill(-cmd.Process.Pid, syscall.Signal(r.Sig)) //nolint:errcheck // it may have just exited
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		closeFD(fd)
	}
}

// dropForChildren empties this thread's capability bounding, ambient and
// inheritable sets and keeps only CAP_SYS_ADMIN (for CLONE_NEWPID) in its
// effective and permitted ones, so that whatever it forks and execs has no
// capability, even as uid 0. It needs CAP_SETPCAP for the bounding set
// (bubblewrap grants it with CAP_SYS_ADMIN).
func dropForChildren() error {
	last := 40
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("reading the capabilities: %w", err)
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("emptying the capability bounding set: %w", err)
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	keep := data[0].Permitted & (1 << unix.CAP_SYS_ADMIN) // below 32, in the first word
	data = [2]unix.CapUserData{{Effective: keep, Permitted: keep}}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("dropping the capabilities: %w", err)
	}
	return nil
}

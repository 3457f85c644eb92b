package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/proc"
	"github.com/tackle-agent/tackle/daemon/sandbox/sandboxexec"
	"github.com/tackle-agent/tackle/daemon/tools/shell"
	"github.com/tackle-agent/tackle/internal/sibling"
)

// This file keeps the sandboxes that sandboxed commands start in: one per
// session and policy, made once by bubblewrap with tackle-sandbox-exec as
// its one process (package sandboxexec), which starts each command there.
// A new policy (the settings or the rules changed) gets a new sandbox, and
// the old one ends once its last command has. Without the helper binary,
// each command gets a bubblewrap of its own (Policy.Command), which costs
// several times more.

// SandboxExecName is the helper's file name, looked for next to tackled.
const SandboxExecName = "tackle-sandbox-exec"

// serverStart bounds the wait for a new sandbox to be ready.
const serverStart = 10 * time.Second

// sandboxIdle is how long a sandbox no command used is kept (default).
const sandboxIdle = 10 * time.Minute

// warmShellIdle is how long a warm shell waits for a command (at most;
// see shell.Options.WarmShellIdle).
const warmShellIdle = 5 * time.Minute

// execServers are the sandboxes of the daemon's sessions.
type execServers struct {
	exe  string        // the helper; "" when not found
	idle time.Duration // a sandbox unused this long ends (the next command makes it again)
	mu   sync.Mutex
	// byKey are the live sandboxes by session and command line.
	byKey  map[string]*execServer
	closed bool
}

// execServer is one sandbox and its server.
type execServer struct {
	key, session string
	client       *sandboxexec.Client
	// guarded by execServers.mu:
	lastUsed time.Time
	idle     *time.Timer // ends it once unused for execServers.idle
}

// findSandboxExec is the helper's path: opt if set, else next to this
// executable, else in $PATH; "" if none is found.
func findSandboxExec(opt string) string {
	if opt != "" {
		return opt
	}
	return sibling.Find(SandboxExecName, os.Getenv("PATH"))
}

// server returns the session's sandbox for the server command line argv,
// starting it (through enter, in the session's network namespace) if
// there is none; seccomp says bubblewrap reads the seccomp filter from
// descriptor 3.
func (x *execServers) server(session string, argv []string, seccomp bool, enter func(func() error) error) (*execServer, error) {
	key := session + "\x00" + strings.Join(argv, "\x00")
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, errors.New("the daemon is stopping")
	}
	if s := x.byKey[key]; s != nil {
		select {
		case <-s.client.Gone():
			delete(x.byKey, key) // killed: make it again
		default:
			s.lastUsed = time.Now()
			return s, nil
		}
	}
	s, err := startExecServer(argv, seccomp, enter)
	if err != nil {
		return nil, err
	}
	s.key, s.session, s.lastUsed = key, session, time.Now()
	if x.idle > 0 {
		s.idle = time.AfterFunc(x.idle, func() { x.endIdle(s) })
	}
	// The session's other sandboxes are of an older policy: they take no
	// new command, and end once their last one has.
	for k, old := range x.byKey {
		if old.session == session {
			delete(x.byKey, k)
			if old.idle != nil {
				old.idle.Stop()
			}
			go old.retire()
		}
	}
	x.byKey[key] = s
	return s, nil
}

// endIdle ends s if no command used it for x.idle and none runs in it,
// else looks again when it may be.
func (x *execServers) endIdle(s *execServer) {
	x.mu.Lock()
	if x.byKey[s.key] != s {
		x.mu.Unlock()
		return // retired or closed already
	}
	if left := x.idle - time.Since(s.lastUsed); left > 0 || s.client.Busy() > 0 {
		s.idle.Reset(max(left, time.Second))
		x.mu.Unlock()
		return
	}
	delete(x.byKey, s.key)
	x.mu.Unlock()
	s.client.Close()
}

// retire ends a sandbox once no command runs in it.
func (s *execServer) retire() {
	for s.client.Busy() > 0 {
		select {
		case <-s.client.Gone():
			return
		case <-time.After(time.Second):
		}
	}
	s.client.Close()
}

// close ends every sandbox (the daemon stops); their commands die with them.
func (x *execServers) close() {
	x.mu.Lock()
	x.closed = true
	all := x.byKey
	x.byKey = nil
	x.mu.Unlock()
	for _, s := range all {
		if s.idle != nil {
			s.idle.Stop()
		}
		s.client.Close()
	}
}

// count is how many sandboxes are running (for status).
func (x *execServers) count(session string) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, s := range x.byKey {
		if s.session == session {
			n++
		}
	}
	return n
}

// startExecServer starts bubblewrap running the server, its socket on the
// last descriptor argv names, and waits until it is ready.
func startExecServer(argv []string, seccomp bool, enter func(func() error) error) (*execServer, error) {
	var filter *os.File
	if seccomp {
		f, err := seccompFile()
		if err != nil {
			return nil, err
		}
		defer f.Close()
		filter = f
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("making the sandbox's socket: %w", err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "sandbox-exec"), os.NewFile(uintptr(pair[1]), "sandbox-exec")
	defer ours.Close()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{}
	if filter != nil {
		cmd.ExtraFiles = []*os.File{filter, theirs}
	} else {
		cmd.ExtraFiles = []*os.File{theirs}
	}
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	h, err := proc.Start(cmd, "sandbox exec server", enter)
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("starting the sandbox: %w", err)
	}
	go func() {
		_ = cmd.Wait()
		h.Release()
	}()
	nc, err := net.FileConn(ours)
	if err != nil {
		cmd.Process.Kill() //nolint:errcheck // it may be gone
		return nil, err
	}
	c, err := sandboxexec.NewClient(nc.(*net.UnixConn), serverStart)
	if err != nil {
		cmd.Process.Kill() //nolint:errcheck // it may be gone
		if why := strings.TrimSpace(stderr.String()); why != "" {
			err = fmt.Errorf("%w: %s", err, why)
		}
		return nil, err
	}
	return &execServer{client: c}, nil
}

var _ shell.Executor = (*execServer)(nil)

// Start implements shell.Executor.
func (s *execServer) Start(argv, env []string, dir string, out *os.File, extra []*os.File) (shell.Started, error) {
	if tag := proc.TagEnv(); tag != "" {
		env = append(env[:len(env):len(env)], tag) // found by the next daemon, as every process of this one
	}
	k, err := s.client.Run(argv, env, dir, out, extra...)
	if err != nil {
		return nil, err
	}
	return execCall{k}, nil
}

// execCall implements shell.Started.
type execCall struct{ k *sandboxexec.Call }

func (c execCall) Done() <-chan struct{} { return c.k.Done() }

func (c execCall) ExitCode() int {
	ws, err := c.k.Status()
	switch {
	case err != nil:
		return -1
	case ws.Signaled():
		return 128 + int(ws.Signal())
	default:
		return ws.ExitStatus()
	}
}

func (c execCall) Err() error {
	_, err := c.k.Status()
	return err
}

func (c execCall) StartFailed() bool {
	var se *sandboxexec.StartError
	return errors.As(c.Err(), &se)
}

func (c execCall) Signal(sig unix.Signal) { c.k.Signal(syscall.Signal(sig)) } //nolint:errcheck // a server gone has ended the command

// initShell makes a shell's script fit to be its PID namespace's init:
// an init takes no signal it has no handler for, so SIGTERM (how a call
// is cancelled) gets one that exits as a shell killed by it would.
func initShell(argv []string) []string {
	if len(argv) == 3 && argv[1] == "-c" {
		return []string{argv[0], argv[1], "trap 'exit 143' TERM; " + argv[2]}
	}
	return argv
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

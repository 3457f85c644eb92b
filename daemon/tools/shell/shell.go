// Package shell implements the Bash tool and the background shells behind
// BashOutput and KillShell.
//
// Every command runs as `/bin/bash -c COMMAND` in its own process group, in
// the session's current directory with the session's environment and stdin
// from /dev/null. A foreground command owns its process group: when it ends,
// times out or is cancelled, whatever is left of the group is killed
// (SIGTERM, then SIGKILL after KillGrace) and reaped. Output is streamed to
// the pipeline's progress callback, kept in memory only up to the result
// cap, and beyond that written in full to a file in the session's output
// directory, so memory use does not depend on how much a command prints.
//
// Shells is the daemon-wide registry of background shells, keyed by session:
// a shell id is only visible to the session that started it. To reap the
// processes a command leaves behind, the first command run makes the daemon
// a child subreaper (prctl PR_SET_CHILD_SUBREAPER), so the orphans of a
// shell's process group become the daemon's children and are reaped by
// process group (waitid P_PGID) once the shell's bash has been waited for;
// this package never waits for processes outside the groups it started.
//
// The package sees sessions only through tool.Env and changes them only
// through a Result's Modifier (SetCwd for cd). It does not decide
// permissions: CheckPermission reports the command, whether it is
// read-only inside the working directories, and what it runs, reads and
// writes (access.go; the values its word expansions evaluate as code in
// evaluate.go, the trees it reads whole in recursive.go, what git prints
// in gitread.go).
package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// ErrNotFound is returned (wrapped) for a shell id that the session does not have.
var ErrNotFound = errors.New("shell not found")

// errClosed is returned for a background start after Close.
var errClosed = errors.New("the shell registry is closed (the daemon is stopping)")

// Sandboxer runs commands in the OS sandbox (the daemon's, from the
// session's sandbox settings).
type Sandboxer interface {
	// Decide says how the command of a call runs: Sandboxed (with the
	// note the permission stage shows, when auto-allow applies), or not
	// (Refuse set when it must not run at all: the sandbox is required
	// and unavailable, or dangerouslyDisableSandbox is not allowed).
	// commands are its simple commands (for excludedCommands).
	Decide(env tool.Env, commands []string, disable bool) SandboxDecision
	// Wrap returns how argv runs in the sandbox in dir; writable are
	// files the shell itself must write (its final-directory file).
	Wrap(env tool.Env, dir string, argv, environ, writable []string) (*Wrapped, error)
	// ScratchDir is a directory writable inside the sandbox of env's
	// session, for the files the shell itself writes.
	ScratchDir(env tool.Env) string
}

// Executor starts commands where they must run (a server inside the
// sandbox), in place of a process of the daemon's own.
type Executor interface {
	// Start starts argv in dir with env, stdin the null device, stdout
	// and stderr to out, extra open from descriptor 3 on, its shell the
	// leader of its process group.
	Start(argv, env []string, dir string, out *os.File, extra []*os.File) (Started, error)
}

// Started is a command an Executor started.
type Started interface {
	// Done is closed once the command has exited and nothing it started
	// is left running.
	Done() <-chan struct{}
	// ExitCode is the shell's exit status, 128+N for a signal N, -1 if
	// unknown (see Err). Valid after Done.
	ExitCode() int
	// Err is why there is no exit status: the command could not be
	// started (StartFailed says so), or its executor ended first. Valid
	// after Done.
	Err() error
	// StartFailed reports whether Err is a failure to start.
	StartFailed() bool
	// Signal signals the command's process group; SIGKILL ends it and
	// everything it started.
	Signal(sig unix.Signal)
}

// Wrapped is a sandboxed command line.
type Wrapped struct {
	Argv, Env []string
	// Exec, if set, starts the command (Argv, Env, ExtraFiles) instead of
	// the daemon; Enter and Settle are then unused.
	Exec Executor
	// Enter, if set, runs start (which starts the process) where the
	// process must be started from: a thread inside the session's
	// network namespace.
	Enter func(start func() error) error
	// ExtraFiles are passed to the process from descriptor 3 on, and
	// closed in this process once it started.
	ExtraFiles []*os.File
	// Settle is how long the process group may take to empty after the
	// command exited before what is left counts as left running (the
	// sandbox's inner process ends just after the outer one).
	Settle time.Duration
	// Again, if set, returns another command line (a shell -c script)
	// wrapped as this one, under the same policy, without making the
	// policy again; the shell it runs needs no file of its own writable.
	Again func(argv []string) *Wrapped
}

// closeExtra closes ExtraFiles, for a command line that has started or
// never will.
func (w *Wrapped) closeExtra() {
	for _, f := range w.ExtraFiles {
		f.Close()
	}
}

// SandboxDecision is how a command runs.
type SandboxDecision struct {
	Sandboxed bool
	// AutoAllow is the note for tool.Access.Sandboxed: set when a
	// sandboxed command needs no prompt.
	AutoAllow string
	// Refuse, if set, is why the command must not run.
	Refuse string
	// Notice, if set, is told with the result (the sandbox is
	// unavailable and the command ran outside it).
	Notice string
	// ForceAsk, if set, makes the command ask whatever the analysis says
	// (it runs outside a sandbox that the settings enable).
	ForceAsk string
}

// Tasks are background tasks other than shells (sub-agents), which
// BashOutput/TaskOutput and KillShell/TaskStop reach by id. Ids never
// clash with shells' (bash_N).
type Tasks interface {
	// Has reports whether id is a task of the session.
	Has(sessionID, id string) bool
	// Output is the task's state and output; block waits for its end, at
	// most wait.
	Output(ctx context.Context, sessionID, id string, block bool, wait time.Duration) (string, error)
	// Stop stops the task and says what became of it.
	Stop(sessionID, id string) (string, error)
}

// Options configures Shells. A nil *Options means the defaults.
type Options struct {
	// MaxOutputChars caps the output a result holds (30000; at most 47000,
	// so that the pipeline never persists a Bash result a second time).
	MaxOutputChars int
	// DefaultTimeout is a foreground command's timeout when none is given (120 s).
	DefaultTimeout time.Duration
	// MaxTimeout is the largest foreground timeout; larger ones are clamped (600 s).
	MaxTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL (2 s).
	KillGrace time.Duration
	// Shell is the shell binary, run as SHELL -c COMMAND (/bin/bash).
	Shell string
	// DefaultLifetime is a background shell's lifetime when none is given (30 min).
	DefaultLifetime time.Duration
	// MaxLifetime is the largest background lifetime; larger ones are clamped (2 h).
	MaxLifetime time.Duration
	// OnChange is called when a background shell starts, exits or is killed,
	// never with a lock held; it may be nil.
	OnChange func(sessionID string, info event.ShellInfo)
	// Sandbox, if set, runs commands in the OS sandbox.
	Sandbox Sandboxer
	// Tasks, if set, are the session's other background tasks (its
	// sub-agents): TaskOutput and TaskStop reach them by id too.
	Tasks Tasks
	// NoWarmShell starts every command's bash when the command comes,
	// never ahead of it (see warm.go).
	NoWarmShell bool
	// WarmShellIdle is how long a warm shell waits for a command before
	// it ends (5 min).
	WarmShellIdle time.Duration
	// Logger receives problems no caller can be told about (nil: none).
	Logger hclog.Logger
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.MaxOutputChars <= 0 {
		c.MaxOutputChars = 30000
	}
	if c.DefaultTimeout <= 0 {
		c.DefaultTimeout = 120 * time.Second
	}
	if c.MaxTimeout <= 0 {
		c.MaxTimeout = 600 * time.Second
	}
	if c.DefaultTimeout > c.MaxTimeout {
		c.DefaultTimeout = c.MaxTimeout
	}
	if c.KillGrace <= 0 {
		c.KillGrace = 2 * time.Second
	}
	if c.Shell == "" {
		c.Shell = "/bin/bash"
	}
	if c.DefaultLifetime <= 0 {
		c.DefaultLifetime = 30 * time.Minute
	}
	if c.MaxLifetime <= 0 {
		c.MaxLifetime = 2 * time.Hour
	}
	if c.DefaultLifetime > c.MaxLifetime {
		c.DefaultLifetime = c.MaxLifetime
	}
	if c.WarmShellIdle <= 0 {
		c.WarmShellIdle = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	return c
}

// Shells runs Bash commands and holds the background shells of every
// session. It is safe for concurrent use. New starts nothing; each
// background shell has one goroutine that waits for it.
type Shells struct {
	opts Options

	mu       sync.Mutex // guards the fields below
	sessions map[string]*sessionShells
	// warm are the bashes waiting for the next commands, by session;
	// warming counts those being started. warmCount and warmingCount
	// are their totals.
	warm                    map[string][]*warm
	warming                 map[string]int
	warmCount, warmingCount int
	scratch                 map[scratchKey][]*scratchFile // files kept for reuse
	ended                   map[string]bool               // sessions KillSession ended (their files are not kept)
	closed                  bool

	wg      sync.WaitGroup // one per running background shell
	warmWG  sync.WaitGroup // one per warm shell being started or ended
	warmOff atomic.Bool    // the shell cannot run warm (too old a bash)
}

// sessionShells are the background shells of one session.
type sessionShells struct {
	next int                 // the number of the last shell id handed out
	byID map[string]*bgShell // running and ended shells
}

// New returns a registry with the options (nil means defaults).
func New(opts *Options) *Shells {
	return &Shells{opts: opts.withDefaults(), sessions: map[string]*sessionShells{}, warm: map[string][]*warm{}, warming: map[string]int{},
		scratch: map[scratchKey][]*scratchFile{}, ended: map[string]bool{}}
}

// Tools returns Bash, BashOutput (alias TaskOutput) and KillShell (aliases
// TaskStop, KillBash), in that order.
func (s *Shells) Tools() []tool.Tool {
	return []tool.Tool{&Bash{s: s}, &BashOutput{s: s}, &KillShell{s: s}}
}

// List returns the background shells of a session, oldest first.
func (s *Shells) List(sessionID string) []event.ShellInfo {
	s.mu.Lock()
	ss := s.sessions[sessionID]
	var shells []*bgShell
	if ss != nil {
		for _, sh := range ss.byID {
			shells = append(shells, sh)
		}
	}
	s.mu.Unlock()
	sort.Slice(shells, func(i, j int) bool { return shells[i].num < shells[j].num })
	out := make([]event.ShellInfo, 0, len(shells))
	for _, sh := range shells {
		out = append(out, sh.info())
	}
	return out
}

// lookup returns a shell of the session, or an error wrapping ErrNotFound.
func (s *Shells) lookup(sessionID, id string) (*bgShell, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[sessionID]; ss != nil {
		if sh := ss.byID[id]; sh != nil {
			return sh, nil
		}
	}
	return nil, fmt.Errorf("%w: no shell %q in session %s", ErrNotFound, id, sessionID)
}

// ids returns the shell ids of a session, oldest first, for error messages.
func (s *Shells) ids(sessionID string) []string {
	var out []string
	for _, i := range s.List(sessionID) {
		out = append(out, i.ID)
	}
	return out
}

// Read returns up to max bytes of a shell's output from byte offset, the
// offset to read from next, and the shell's state. It is for clients
// (`tackle shells tail`) and does not move the model's BashOutput cursor.
// An offset past the end returns no data and the current end; max <= 0
// means 64 KiB.
func (s *Shells) Read(sessionID, id string, offset int64, max int) (data []byte, next int64, info event.ShellInfo, err error) {
	sh, err := s.lookup(sessionID, id)
	if err != nil {
		return nil, offset, info, err
	}
	if max <= 0 {
		max = 64 << 10
	}
	if offset < 0 {
		offset = 0
	}
	info = sh.info() // before reading: data read covers at least OutputBytes of an ended shell
	f, err := os.Open(sh.path)
	if err != nil {
		return nil, offset, info, fmt.Errorf("reading output of shell %s: %w", id, err)
	}
	defer f.Close()
	buf := make([]byte, max)
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, offset, info, fmt.Errorf("reading output of shell %s: %w", id, err)
	}
	return buf[:n], offset + int64(n), info, nil
}

// Kill kills a background shell's process group (SIGTERM, then SIGKILL
// after KillGrace) and waits for it. Killing a shell that already ended
// returns its final state and no error.
func (s *Shells) Kill(sessionID, id string) (event.ShellInfo, error) {
	sh, err := s.lookup(sessionID, id)
	if err != nil {
		return event.ShellInfo{}, err
	}
	sh.kill(killedByRequest)
	<-sh.ended
	return sh.info(), nil
}

// KillSession kills every background shell of a session, waits for them
// and forgets them (their ids become unknown). It is meant for session
// deletion: a shell started for the same session id afterwards begins a
// new, empty set.
func (s *Shells) KillSession(sessionID string) {
	s.mu.Lock()
	ss := s.sessions[sessionID]
	delete(s.sessions, sessionID)
	var shells []*bgShell
	if ss != nil {
		for _, sh := range ss.byID {
			shells = append(shells, sh)
		}
	}
	s.ended[sessionID] = true
	s.mu.Unlock()
	s.endWarmOf(sessionID, false)
	killAll(shells)
	s.dropScratch(sessionID, false)
}

// Close kills every background shell and warm shell of every session and
// waits for them. Later background starts fail; foreground commands still
// run, each in a shell of its own. It is idempotent.
func (s *Shells) Close() {
	s.mu.Lock()
	s.closed = true
	var all []*bgShell
	for _, ss := range s.sessions {
		for _, sh := range ss.byID {
			all = append(all, sh)
		}
	}
	s.mu.Unlock()
	s.endWarmOf("", true)
	killAll(all)
	s.wg.Wait()
	s.warmWG.Wait()
	s.dropScratch("", true)
}

// killAll kills shells in parallel and waits for them.
func killAll(shells []*bgShell) {
	var wg sync.WaitGroup
	for _, sh := range shells {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh.kill(killedByShutdown)
			<-sh.ended
		}()
	}
	wg.Wait()
}

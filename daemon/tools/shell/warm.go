package shell

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Warm shells.
//
// Starting bash costs about a millisecond here (fork and exec, the
// dynamic loader, bash's own start-up), more than running a small command
// does. So once a session has run a foreground command, the bash for its
// next one is started ahead of time, with what the next command most
// likely needs (the same shell, directory and environment, the same
// sandbox), and waits before it has read any command: blocked reading one
// byte from a pipe. When the next command comes with that directory,
// environment and sandbox, the daemon writes the script to the warm
// shell's script file and the byte to the pipe; the shell reads the file
// and evaluates it. Otherwise (the directory, the environment or the
// sandbox's policy changed, or the warm shell died) the warm shell is
// ended and the command starts as before. Either way warm shells for the
// commands after are started at once (two are kept, see warmPerSession).
// A warm shell nobody used for WarmShellIdle ends; so do a session's when
// the session is deleted, and all at Close.
//
// A warm command is the process a cold one is: bash, the leader of its own
// process group, started by package proc (Pdeathsig, the record, the
// reaper) or by the sandbox's exec server (the init of its own pid
// namespace there), with the environment, directory, stdin and output
// pipe the cold one would have, and nothing else open. What differs is
// visible only to a script that looks for it: the script runs through
// eval (a syntax error reads "bash: eval: line 1: …" rather than
// "bash: -c: line 1: …"), BASH_EXECUTION_STRING is the waiting shell's,
// and SECONDS restarts from 0 when the command comes.

// warmUnsupported is the exit status of a warm shell whose bash is older
// than 4.4 (its mapfile has no -d): it exits at once, and warm shells stay
// off from then on.
const warmUnsupported = 97

// maxWarm bounds the warm shells waiting at once, over all sessions.
const maxWarm = 16

// warm is a bash waiting for its command.
type warm struct {
	key    string   // warmKey of the command it is ready for
	exec   Executor // the sandbox it waits in (nil: none)
	p      *process
	out    *os.File     // the read end of its output pipe
	start  *os.File     // the write end of the pipe it waits on
	script *scratchFile // the file it evaluates
	timer  *time.Timer
}

// warmKey says which commands a warm shell can run: those of the same
// shell, directory and environment.
func warmKey(shell, dir string, environ []string) string {
	n := len(shell) + len(dir) + 2
	for _, kv := range environ {
		n += len(kv) + 1
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(shell)
	b.WriteByte(0)
	b.WriteString(dir)
	for _, kv := range environ {
		b.WriteByte(0)
		b.WriteString(kv)
	}
	return b.String()
}

// warmable reports whether a command line wr (a shell -c script, alone
// or in a sandbox) may run in a warm shell: bash (the waiting script is
// bash's), run by the daemon or by a sandbox's exec server (a sandbox of
// its own per command is made for that command), whose start-up reads no
// file (BASH_ENV would be read when the shell starts, not when the
// command comes).
func (s *Shells) warmable(wr *Wrapped, sandboxed bool) bool {
	if s.opts.NoWarmShell || s.warmOff.Load() || filepath.Base(s.opts.Shell) != "bash" || sandboxed && wr.Exec == nil {
		return false
	}
	for _, kv := range wr.Env {
		if strings.HasPrefix(kv, "BASH_ENV=") {
			return false
		}
	}
	return true
}

// runWarm runs script (the command line wr, in dir) in a warm shell of
// the session if one is ready for it, and returns that shell, or nil when
// the command must start cold; either way it starts warm shells for the
// session's next commands.
func (s *Shells) runWarm(env tool.Env, wr *Wrapped, sandboxed bool, dir, script string, environ []string) *warm {
	if !s.warmable(wr, sandboxed) {
		return nil
	}
	w := s.takeWarm(env.SessionID(), warmKey(wr.Argv[0], dir, wr.Env), wr.Exec)
	if w != nil {
		if err := w.run(script); err != nil {
			s.opts.Logger.Debug("a warm shell could not take its command: starting it cold", "error", err)
			s.endWarm(w)
			w = nil
		}
	}
	s.prepareWarm(warmSpec{env: env, sandboxed: sandboxed, dir: dir, environ: environ, again: wr.Again})
	return w
}

// warmSpec is what a warm shell is started for: the session (env), the
// directory and environment of its commands, in the sandbox or not; again,
// if set, wraps its command line as the command's that led to it was
// (Wrapped.Again).
type warmSpec struct {
	env       tool.Env
	sandboxed bool
	dir       string
	environ   []string
	again     func(argv []string) *Wrapped
}

// takeWarm returns a warm shell of the session ready for key (no longer
// the session's), or nil; it ends those that are not ready for it (another
// key, or exited).
func (s *Shells) takeWarm(sessionID, key string, exec Executor) *warm {
	var got *warm
	var stale []*warm
	s.mu.Lock()
	keep := s.warm[sessionID][:0]
	for _, w := range s.warm[sessionID] {
		switch {
		case w.key != key || w.exec != exec || w.p.exited():
			stale = append(stale, w)
		case got == nil:
			got = w
		default:
			keep = append(keep, w)
		}
	}
	if len(keep) == 0 {
		delete(s.warm, sessionID)
	} else {
		s.warm[sessionID] = keep
	}
	s.warmCount -= len(stale)
	if got != nil {
		s.warmCount--
	}
	s.mu.Unlock()
	for _, w := range stale {
		w.timer.Stop()
		if w.p.exited() && w.p.exitCode() == warmUnsupported {
			s.warmOff.Store(true)
			s.opts.Logger.Info("this bash is older than 4.4: every command starts its own shell", "shell", s.opts.Shell)
		}
		s.endWarm(w)
	}
	if got != nil {
		got.timer.Stop()
	}
	return got
}

// run hands script to the warm shell. It fails if the shell is gone (it
// has then been ended; start the command cold).
func (w *warm) run(script string) error {
	if err := w.script.write([]byte(script)); err != nil {
		return fmt.Errorf("writing the script of a warm shell: %w", err)
	}
	if _, err := w.start.Write([]byte{'.'}); err != nil {
		return fmt.Errorf("starting a warm shell's command: %w", err)
	}
	w.start.Close()
	return nil
}

// warmPerSession is how many warm shells a session keeps: two, so that
// one has finished starting when commands come back to back (a bash
// takes about as long to start as a small command takes to run).
const warmPerSession = 2

// prepareWarm starts, in the background, warm shells for the session's
// next commands (in dir with environ, sandboxed or not) until it has
// warmPerSession, ready or starting, or maxWarm wait in all.
func (s *Shells) prepareWarm(spec warmSpec) {
	sessionID := spec.env.SessionID()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.closed && !s.ended[sessionID] && len(s.warm[sessionID])+s.warming[sessionID] < warmPerSession && s.warmCount+s.warmingCount < maxWarm {
		s.warming[sessionID]++
		s.warmingCount++
		s.warmWG.Add(1)
		go s.addWarm(spec)
	}
}

// addWarm starts a warm shell and makes it the session's.
func (s *Shells) addWarm(spec warmSpec) {
	defer s.warmWG.Done()
	sessionID := spec.env.SessionID()
	w, err := s.startWarm(spec)
	s.mu.Lock()
	if s.warming[sessionID]--; s.warming[sessionID] == 0 {
		delete(s.warming, sessionID)
	}
	s.warmingCount--
	if err != nil {
		s.mu.Unlock()
		if !errors.Is(err, errNoWarm) {
			s.opts.Logger.Warn("starting a warm shell", "session", sessionID, "error", err)
		}
		return
	}
	if s.closed || s.ended[sessionID] {
		// Closed, or the session deleted while this shell started: its
		// KillSession has ended the others already.
		s.mu.Unlock()
		s.endWarm(w)
		return
	}
	s.warm[sessionID] = append(s.warm[sessionID], w)
	s.warmCount++
	w.timer = time.AfterFunc(s.opts.WarmShellIdle, func() { s.expireWarm(sessionID, w) })
	s.mu.Unlock()
}

// expireWarm ends a warm shell that waited WarmShellIdle, unless it was
// taken.
func (s *Shells) expireWarm(sessionID string, w *warm) {
	s.mu.Lock()
	ws := s.warm[sessionID]
	i := slices.Index(ws, w)
	if i >= 0 {
		ws = slices.Delete(ws, i, i+1)
		if len(ws) == 0 {
			delete(s.warm, sessionID)
		} else {
			s.warm[sessionID] = ws
		}
		s.warmCount--
	}
	s.mu.Unlock()
	if i >= 0 {
		s.endWarm(w)
	}
}

// errNoWarm is startWarm's error when the command line is not one a warm
// shell can run (the sandbox has no exec server just now).
var errNoWarm = errors.New("no warm shell for this command line")

// startWarm starts a bash that waits for one byte on descriptor 3, then
// evaluates its script file (see the package's warm shells), for spec.
func (s *Shells) startWarm(spec warmSpec) (*warm, error) {
	env, sandboxed, dir := spec.env, spec.sandboxed, spec.dir
	script, err := s.getScratch(s.scratchFor(env, sandboxed))
	if err != nil {
		return nil, fmt.Errorf("the script file: %w", err)
	}
	// The byte read, descriptor 3 goes; the script is read whole (it has
	// no NUL: Validate refuses one) and evaluated with the reader's own
	// variable unset first and $_ the shell's path, as bash starts it.
	waiter := fmt.Sprintf("((BASH_VERSINFO[0]*100+BASH_VERSINFO[1] >= 404)) || exit %d; "+
		"read -r -n 1 -u 3 _tackle_s || exit 0; exec 3<&-; mapfile -d '' _tackle_s < %s || exit 126; SECONDS=0; "+
		`eval "unset _tackle_s; : \"$BASH\"; ${_tackle_s[0]}"`, warmUnsupported, shq(script.path))
	var wr *Wrapped
	if sandboxed && spec.again != nil {
		wr = spec.again([]string{s.opts.Shell, "-c", waiter}) // the policy just made for the command
	} else {
		wr, err = s.command(env, waiter, dir, spec.environ, sandboxed)
	}
	if err == nil && !s.warmable(wr, sandboxed) {
		wr.closeExtra()
		err = errNoWarm
	}
	if err != nil {
		s.putScratch(script)
		return nil, err
	}
	gr, gw, err := os.Pipe()
	if err != nil {
		s.putScratch(script)
		return nil, fmt.Errorf("creating the pipe it waits on: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		s.putScratch(script)
		gr.Close()
		gw.Close()
		return nil, fmt.Errorf("creating the output pipe: %w", err)
	}
	unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20) //nolint:errcheck // a larger pipe is only faster
	wr.ExtraFiles = []*os.File{gr}
	p, err := startProc(wr, dir, w, "warm bash") // closes gr
	w.Close()
	if err != nil {
		s.putScratch(script)
		gw.Close()
		r.Close()
		return nil, err
	}
	go p.wait()
	return &warm{key: warmKey(wr.Argv[0], dir, wr.Env), exec: wr.Exec, p: p, out: r, start: gw, script: script}, nil
}

// endWarm ends a warm shell nobody will use: it is killed (it holds no
// command) and waited for in the background.
func (s *Shells) endWarm(w *warm) {
	w.start.Close()
	w.out.Close()
	s.warmWG.Add(1)
	go func() {
		defer s.warmWG.Done()
		w.p.terminate(s.opts.KillGrace)
		s.putScratch(w.script)
	}()
}

// endWarmOf ends the warm shells of one session (all sessions if all).
func (s *Shells) endWarmOf(sessionID string, all bool) {
	s.mu.Lock()
	var ws []*warm
	for id, l := range s.warm {
		if all || id == sessionID {
			ws = append(ws, l...)
			s.warmCount -= len(l)
			delete(s.warm, id)
		}
	}
	s.mu.Unlock()
	for _, w := range ws {
		w.timer.Stop()
		s.endWarm(w)
	}
}

package daemon

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/sandbox"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tools/shell"
)

// This file connects the Bash tool to the OS sandbox (package sandbox):
// from the session's sandbox settings it decides whether a command runs
// sandboxed, builds the command's policy (working directories writable,
// protected paths and denied reads held, no network but the session's
// proxy) and wraps the command line in bubblewrap.

// sandboxLayer implements shell.Sandboxer.
type sandboxLayer struct {
	d *Daemon
	// bwrap is bubblewrap's path ("" finds it in $PATH).
	bwrap string
	net   *sandboxNet
	exec  *execServers

	// read is the sandbox settings of the settings last read (the loader
	// hands out one *config.Settings until a file changes): a Bash call
	// asks for them four times, and a problem is logged once.
	readMu sync.Mutex
	readOf *config.Settings
	read   sandbox.Settings
}

func newSandboxLayer(d *Daemon) *sandboxLayer {
	return &sandboxLayer{d: d, bwrap: d.opts.Bwrap, net: newSandboxNet(d),
		exec: &execServers{exe: findSandboxExec(d.opts.SandboxExec), idle: cmp.Or(d.opts.SandboxIdle, sandboxIdle), byKey: map[string]*execServer{}}}
}

var _ shell.Sandboxer = (*sandboxLayer)(nil)

// settings are the sandbox settings of env's project, as its session's
// turn read them (Session.Settings: the same snapshot the permission
// stage's rules come from).
func (l *sandboxLayer) settings(env tool.Env) sandbox.Settings {
	var st *config.Settings
	if sess, ok := env.(*session.Session); ok {
		st = sess.Settings()
	}
	if st == nil {
		st, _ = l.d.loader.Load(rootOf(env))
	}
	l.readMu.Lock()
	defer l.readMu.Unlock()
	if st == nil || st != l.readOf {
		s, problems := sandbox.Read(st)
		for _, p := range problems {
			l.d.log.Warn("sandbox settings", "problem", p)
		}
		l.readOf, l.read = st, s
	}
	return l.read
}

// Decide implements shell.Sandboxer.
func (l *sandboxLayer) Decide(env tool.Env, commands []string, disable bool) shell.SandboxDecision {
	s := l.settings(env)
	if !s.Enabled {
		return shell.SandboxDecision{}
	}
	if disable {
		if !s.AllowUnsandboxed {
			return shell.SandboxDecision{Refuse: "This command asked to run outside the sandbox (dangerouslyDisableSandbox), which the settings do not allow (sandbox.allowUnsandboxedCommands is false): run it without dangerouslyDisableSandbox."}
		}
		return shell.SandboxDecision{ForceAsk: "it asks to run outside the sandbox (dangerouslyDisableSandbox)"}
	}
	if s.ExcludedCommand(commands) {
		return shell.SandboxDecision{}
	}
	if a := sandbox.Probe(l.bwrap); !a.OK {
		if s.FailIfUnavailable {
			return shell.SandboxDecision{Refuse: "The sandbox is required here (sandbox.failIfUnavailable), but it cannot run on this machine: " + a.Why + ". The command was not run."}
		}
		return shell.SandboxDecision{Notice: "The sandbox is enabled but cannot run on this machine (" + a.Why + "): the command went through the normal permission flow, unsandboxed."}
	}
	d := shell.SandboxDecision{Sandboxed: true}
	if s.AutoAllow {
		d.AutoAllow = describePolicy(&s)
	}
	return d
}

// describePolicy says what a sandboxed command may do, for the permission
// stage's reason and tackle explain.
func describePolicy(s *sandbox.Settings) string {
	var b strings.Builder
	b.WriteString("writes only in the working directories and the session's temporary directory")
	if len(s.AllowWrite) > 0 {
		b.WriteString(" and " + strings.Join(s.AllowWrite, ", "))
	}
	b.WriteString("; network only through tackle's proxy")
	if len(s.AllowedDomains) > 0 {
		b.WriteString(" to " + strings.Join(s.AllowedDomains, ", ") + " (other domains ask)")
	} else {
		b.WriteString(" (every domain asks)")
	}
	return b.String()
}

// Wrap implements shell.Sandboxer.
func (l *sandboxLayer) Wrap(env tool.Env, dir string, argv, environ, writable []string) (*shell.Wrapped, error) {
	s := l.settings(env)
	a := sandbox.Probe(l.bwrap)
	if !a.OK {
		return nil, fmt.Errorf("the sandbox cannot run here: %s", a.Why)
	}
	sess, err := l.d.sessions.Get(context.Background(), env.SessionID())
	if err != nil {
		return nil, err
	}
	root := sess.Root()
	rules := l.d.turnRules(sess)
	dirs := sess.WorkingDirs()
	p, err := s.Prepare(sandbox.Options{
		WorkingDirs: dirs, TempDir: l.tempDir(sess.ID()), Home: l.d.opts.Home,
		DenyRead: rules.ReadDenyPaths(sess.Cwd(), root, l.d.opts.Home, dirs),
		Mask:     l.masked(),
	})
	if err != nil {
		return nil, err
	}
	netEnv, enter, err := l.net.attach(sess, p, &s)
	if err != nil {
		return nil, err
	}
	env2 := sandboxEnv(environ, &s, l.tempDir(sess.ID()), netEnv)
	if l.exec.exe != "" && len(argv) > 0 && filepath.IsAbs(argv[0]) {
		fd := 3
		if p.Seccomp {
			fd = 4
		}
		if srvArgv, ok := p.ServerCommand(a.Bwrap, l.exec.exe, fd); ok && allWithin(writable, p.Write) {
			srv, err := l.exec.server(sess.ID(), srvArgv, p.Seccomp, enter)
			if err == nil {
				again := func(argv []string) *shell.Wrapped {
					return &shell.Wrapped{Argv: initShell(argv), Env: env2, Exec: srv}
				}
				w := again(argv)
				w.Again = again
				return w, nil
			}
			l.d.log.Warn("the sandbox's exec server could not start: this command gets a sandbox of its own", "session", sess.ID(), "error", err)
		}
	}
	p.Binds = append(p.Binds, writable...)
	w := &shell.Wrapped{Argv: p.Command(a.Bwrap, dir, argv), Env: env2, Enter: enter,
		Settle: 100 * time.Millisecond}
	if p.Seccomp {
		f, err := seccompFile()
		if err != nil {
			return nil, err
		}
		w.ExtraFiles = []*os.File{f}
	}
	return w, nil
}

// ScratchDir implements shell.Sandboxer: the session's temporary
// directory, writable inside its sandbox.
func (l *sandboxLayer) ScratchDir(env tool.Env) string {
	dir := l.tempDir(env.SessionID())
	os.MkdirAll(dir, 0o700) //nolint:errcheck // creating a file there then fails, and says why
	return dir
}

// allWithin reports whether every path lies inside one of dirs.
func allWithin(paths, dirs []string) bool {
	for _, p := range paths {
		if !slices.ContainsFunc(dirs, func(d string) bool { return strings.HasPrefix(p, d+string(filepath.Separator)) }) {
			return false
		}
	}
	return true
}

// seccompFile is a pipe holding the seccomp filter, for bubblewrap to read.
func seccompFile() (*os.File, error) {
	prog, err := sandbox.SeccompProgram()
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	_, err = w.Write(prog) // far below a pipe's buffer
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// masked are tackle's own directories, which no sandboxed command sees:
// the state directory and the socket's.
func (l *sandboxLayer) masked() []string {
	m := []string{l.d.opts.StateDir}
	if l.d.opts.Socket != "" {
		m = append(m, filepath.Dir(l.d.opts.Socket))
	}
	return m
}

// tempDir is the session's temporary directory inside the sandbox.
func (l *sandboxLayer) tempDir(session string) string {
	return filepath.Join(l.d.opts.StateDir, "sandbox", session, "tmp")
}

// sandboxEnv is a sandboxed command's environment: without the hidden
// variables, with TMPDIR and the proxy's variables.
func sandboxEnv(environ []string, s *sandbox.Settings, tmp string, extra []string) []string {
	hidden := map[string]bool{"TMPDIR": true}
	for _, e := range extra {
		k, _, _ := strings.Cut(e, "=")
		hidden[k] = true
	}
	for _, h := range s.HiddenEnv {
		hidden[h] = true
	}
	out := make([]string, 0, len(environ)+len(extra)+1)
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if !hidden[k] {
			out = append(out, kv)
		}
	}
	out = append(out, "TMPDIR="+tmp)
	return append(out, extra...)
}

// Status implements server.Sandbox.
func (l *sandboxLayer) Status(sess *session.Session) server.SandboxStatus {
	st, _ := l.d.loader.Load(sess.Root())
	s, problems := sandbox.Read(st)
	a := sandbox.Probe(l.bwrap)
	out := server.SandboxStatus{
		Enabled: s.Enabled, Available: a.OK, WhyUnavailable: a.Why, Bwrap: a.Bwrap,
		AutoAllow: s.AutoAllow, AllowUnsandboxed: s.AllowUnsandboxed, FailIfUnavailable: s.FailIfUnavailable,
		AllowLocalBinding: s.AllowLocalBinding, Excluded: s.Excluded, AllowedDomains: s.AllowedDomains,
		DeniedDomains: s.DeniedDomains, HiddenEnv: s.HiddenEnv, Notes: problems, Network: "none",
	}
	for _, ig := range st.Ignored {
		if strings.HasPrefix(ig, "sandbox.") {
			out.Notes = append(out.Notes, "ignored (the project is not trusted): "+ig)
		}
	}
	if s.Enabled && !a.OK {
		if s.FailIfUnavailable {
			out.Notes = append(out.Notes, "Bash commands are refused until the sandbox can run (failIfUnavailable)")
		} else {
			out.Notes = append(out.Notes, "Bash commands run unsandboxed, through the normal permission flow")
		}
	}
	root := sess.Root()
	rules, _ := l.d.perms.rules(sess.ID(), root)
	dirs := sess.WorkingDirs()
	if p, err := s.Prepare(sandbox.Options{WorkingDirs: dirs, TempDir: l.tempDir(sess.ID()), Home: l.d.opts.Home,
		DenyRead: rules.ReadDenyPaths(sess.Cwd(), root, l.d.opts.Home, dirs), Mask: l.masked()}); err == nil {
		out.Hidden = append(out.Hidden, p.Mask...)
		out.Writable, out.ReadOnly = p.Write, p.ReadOnly
		out.Hidden = append(append(out.Hidden, p.HideFiles...), p.HideDirs...)
	} else {
		out.Notes = append(out.Notes, err.Error())
	}
	l.net.status(sess, &out)
	switch {
	case l.exec.exe == "":
		out.Notes = append(out.Notes, "each command gets a bubblewrap sandbox of its own ("+SandboxExecName+" is not installed next to tackled or in $PATH): several milliseconds a command")
	case s.Enabled && a.OK:
		out.Notes = append(out.Notes, fmt.Sprintf("commands start in a sandbox made once per policy by %s (%d running for this session)", l.exec.exe, l.exec.count(sess.ID())))
	}
	return out
}

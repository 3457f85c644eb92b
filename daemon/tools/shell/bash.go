package shell

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed bash.md
var bashDescription string

var bashSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "command": {"type": "string", "minLength": 1, "description": "The command to execute"},
    "timeout": {"type": "number", "exclusiveMinimum": 0, "description": "Optional timeout in milliseconds (max 600000). For run_in_background, the shell's lifetime (default 1800000, max 7200000)"},
    "description": {"type": "string", "description": "Clear, concise description of what this command does in 5-10 words, in active voice"},
    "run_in_background": {"type": "boolean", "description": "Set to true to run this command in the background. Use BashOutput to read the output later"},
    "dangerouslyDisableSandbox": {"type": "boolean", "description": "Set this to true to dangerously override sandbox mode and run commands without sandboxing (it then needs the user's approval; only when the settings allow unsandboxed commands)"}
  },
  "required": ["command"],
  "additionalProperties": false
}`)

// pipeGrace is how long the output pipe may stay open after the command's
// process group is gone (a process that left the group may hold it): then
// reading stops.
const pipeGrace = 250 * time.Millisecond

// Bash is the Bash tool. Its attributes depend on the command: read-only and
// concurrency-safe only for known read-only commands.
type Bash struct{ s *Shells }

type bashInput struct {
	Command         string   `json:"command"`
	Timeout         *float64 `json:"timeout"`
	Description     string   `json:"description"`
	RunInBackground bool     `json:"run_in_background"`
	DisableSandbox  bool     `json:"dangerouslyDisableSandbox"`
}

func decodeBash(input json.RawMessage) (bashInput, error) {
	var in bashInput
	if err := json.Unmarshal(input, &in); err != nil {
		return in, fmt.Errorf("the input is not valid JSON for Bash (%v); send an object with a \"command\" string", err)
	}
	return in, nil
}

// Spec implements tool.Tool.
func (t *Bash) Spec() tool.Spec {
	return tool.Spec{Name: "Bash", Description: bashDescription, InputSchema: bashSchema}
}

// Attributes implements tool.Tool: read-only and concurrency-safe only when
// every simple command is a known read-only one (see classify); destructive
// when some command is (rm, dd, git reset --hard, ...). Bash bounds its own
// result, so the pipeline's persistence threshold is set out of reach.
func (t *Bash) Attributes(input json.RawMessage) tool.Attributes {
	a := tool.Attributes{Origin: tool.OriginBuiltin, MaxResultChars: 1 << 30}
	in, err := decodeBash(input)
	if err != nil {
		return a
	}
	c := classify(in.Command)
	a.ReadOnly = c.Parsed && c.ReadOnly
	a.ConcurrencySafe = a.ReadOnly
	a.Destructive = c.Destructive
	return a
}

// Validate implements tool.Tool: the command is not blank and has no NUL byte.
func (t *Bash) Validate(ctx context.Context, call *tool.Call) error {
	in, err := decodeBash(call.Input)
	if err != nil {
		return err
	}
	if strings.TrimSpace(in.Command) == "" {
		return errors.New("the command is empty: give the shell command to run in \"command\"")
	}
	if strings.IndexByte(in.Command, 0) >= 0 {
		return errors.New("the command contains a NUL byte, which a shell command cannot hold: remove it")
	}
	if t.s != nil && t.s.opts.Sandbox != nil {
		// Refused before anyone is asked about it.
		if sd := t.s.opts.Sandbox.Decide(call.Env, analyzeAccess(call.Env, in.Command).Commands, in.DisableSandbox); sd.Refuse != "" {
			return errors.New(sd.Refuse)
		}
	}
	return nil
}

// CheckPermission implements tool.Tool: an exec access with the command,
// its simple commands (Commands), the files it reads and writes (Reads,
// Writes; Redirects, the writes that are redirections), the directories
// and repositories it reads whole (RecursiveReads, RepoReads) and why it
// must always be asked (AlwaysAsk); see access.go.
// InsideWorkingDirs is true only for a read-only command whose every
// path-like argument resolves inside the working directories.
func (t *Bash) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	in, err := decodeBash(call.Input)
	if err != nil {
		return tool.Access{}, err
	}
	acc := tool.Access{Kind: tool.AccessExec, Command: in.Command}
	c := classify(in.Command)
	if c.Parsed && c.ReadOnly {
		acc.Paths, acc.InsideWorkingDirs = resolveRefs(call.Env, c.Refs)
	}
	sa := analyzeAccess(call.Env, in.Command)
	acc.Commands, acc.Reads, acc.Writes, acc.AlwaysAsk = sa.Commands, sa.Reads, sa.Writes, sa.AlwaysAsk
	acc.Redirects, acc.RecursiveReads, acc.RepoReads = sa.Redirects, sa.RecursiveReads, sa.RepoReads
	if t.s != nil && t.s.opts.Sandbox != nil {
		sd := t.s.opts.Sandbox.Decide(call.Env, sa.Commands, in.DisableSandbox)
		acc.Sandboxed = sd.AutoAllow
		if sd.ForceAsk != "" && acc.AlwaysAsk == "" {
			acc.AlwaysAsk = sd.ForceAsk
		}
	}
	acc.CommandsReadOnly = make([]bool, len(acc.Commands))
	for i, cmd := range acc.Commands {
		// Relative paths resolve against the current directory: a command
		// after a cd may be judged outside when it is not, never the reverse
		// (and a cd outside the working directories needs a rule anyway).
		if cc := classify(cmd); cc.Parsed && cc.ReadOnly {
			_, acc.CommandsReadOnly[i] = resolveRefs(call.Env, cc.Refs)
		}
	}
	return acc, nil
}

// resolveRefs resolves the path words of a command against the current
// directory (and the targets of its cd commands) and reports whether all
// of them lie inside the working directories.
func resolveRefs(env tool.Env, refs []pathRef) (paths []string, inside bool) {
	dirs := env.WorkingDirs()
	bases := []string{env.Cwd()}
	inside = true
	for _, r := range refs {
		if r.Unsure {
			inside = false
			if r.Cd {
				bases = nil // later relative paths: unknown base
			}
			continue
		}
		p := r.Path
		if r.Glob {
			p = globDir(p)
		}
		var resolved []string
		if filepath.IsAbs(p) {
			resolved = []string{resolvePath(p)}
		} else {
			if len(bases) == 0 {
				inside = false
				continue
			}
			for _, b := range bases {
				resolved = append(resolved, resolvePath(filepath.Join(b, p)))
			}
		}
		for _, rp := range resolved {
			if rp == "" || !within(dirs, rp) {
				inside = false
			}
			if rp != "" {
				paths = append(paths, rp)
			}
		}
		if r.Cd {
			// Subshells may scope the cd: later paths must be inside from every base.
			for _, rp := range resolved {
				if rp != "" {
					bases = append(bases, rp)
				}
			}
		}
	}
	return paths, inside
}

// globDir is the directory part of a glob before its first glob character.
func globDir(p string) string {
	i := strings.IndexAny(p, "*?[{")
	if i < 0 {
		return p
	}
	d := p[:i]
	if j := strings.LastIndexByte(d, '/'); j >= 0 {
		return d[:j+1]
	}
	return "."
}

// resolvePath returns p absolute with symlinks resolved as far as it
// exists (tool.RealPath: a dangling symlink is followed to its target), or
// "" when that is unsure (a .. after a part that does not exist).
func resolvePath(p string) string {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real
	}
	if hasDotDot(p) {
		return ""
	}
	return tool.RealPath(p)
}

func hasDotDot(p string) bool {
	for _, s := range strings.Split(p, "/") {
		if s == ".." {
			return true
		}
	}
	return false
}

// within reports whether p is one of dirs or inside one.
func within(dirs []string, p string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// Run implements tool.Tool.
func (t *Bash) Run(ctx context.Context, call *tool.Call, progress tool.Progress) (*tool.Result, error) {
	in, err := decodeBash(call.Input)
	if err != nil {
		return nil, err
	}
	var sd SandboxDecision
	if t.s != nil && t.s.opts.Sandbox != nil {
		sd = t.s.opts.Sandbox.Decide(call.Env, analyzeAccess(call.Env, in.Command).Commands, in.DisableSandbox)
		if sd.Refuse != "" {
			return tool.ErrorResult(sd.Refuse), nil
		}
	}
	var res *tool.Result
	if in.RunInBackground {
		res, err = t.s.runBackground(call, in, sd.Sandboxed)
	} else {
		res, err = t.s.runForeground(ctx, call, in, progress, sd.Sandboxed)
	}
	if res != nil && sd.Notice != "" {
		res.Warning = sd.Notice
	}
	if res != nil && sd.Sandboxed && res.Warning == "" && sandboxRefusedWrite(res) {
		// A violation is told to the model in the output (the kernel's
		// message) and to the clients as a notice.
		res.Warning = "sandbox: a write outside the writable directories was refused (Read-only file system)"
	}
	return res, err
}

// sandboxRefusedWrite reports whether a sandboxed command's output shows
// a write the sandbox refused.
func sandboxRefusedWrite(r *tool.Result) bool {
	for _, c := range r.Content {
		if strings.Contains(c.Text, "Read-only file system") {
			return true
		}
	}
	return false
}

// command returns the command line of a shell running script in dir
// with environ: in the sandbox when sandboxed (writable: files the shell
// itself writes).
func (s *Shells) command(env tool.Env, script, dir string, environ []string, sandboxed bool, writable ...string) (*Wrapped, error) {
	argv := []string{s.opts.Shell, "-c", script}
	if !sandboxed || s.opts.Sandbox == nil {
		return &Wrapped{Argv: argv, Env: environ}, nil
	}
	return s.opts.Sandbox.Wrap(env, dir, argv, environ, writable)
}

// shellEnv is the environment a command runs with: the session's (its
// client's with the settings' env applied; the daemon's if the session has
// none), with PWD set to dir.
func shellEnv(env tool.Env, dir string) []string {
	e := env.Environ()
	if len(e) == 0 {
		e = os.Environ()
	}
	return append(e[:len(e):len(e)], "PWD="+dir)
}

// startDir returns the directory a command starts in: the session's
// current directory if it still exists inside the working directories,
// else the root (reset true).
func startDir(env tool.Env) (dir, root string, reset bool) {
	dirs := env.WorkingDirs()
	cur := env.Cwd()
	root = cur
	if len(dirs) > 0 {
		root = dirs[0]
	}
	if real, err := filepath.EvalSymlinks(cur); err == nil && within(dirs, real) {
		if fi, err := os.Stat(real); err == nil && fi.IsDir() {
			return real, root, false
		}
	}
	return root, root, true
}

// shq quotes s for the shell.
func shq(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// clampDuration converts a millisecond value, applying the default and the maximum.
func clampDuration(ms *float64, def, maxDur time.Duration, what string) (time.Duration, string) {
	if ms == nil {
		return def, ""
	}
	d := time.Duration(*ms * float64(time.Millisecond))
	if *ms > float64(maxDur/time.Millisecond) || d <= 0 {
		return maxDur, fmt.Sprintf("The %s of %.0f ms is over the maximum; it was clamped to %d ms.", what, *ms, maxDur/time.Millisecond)
	}
	return d, ""
}

var readBufs = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

// runForeground runs a command to its end, its timeout or ctx's end.
func (s *Shells) runForeground(ctx context.Context, call *tool.Call, in bashInput, progress tool.Progress, sandboxed bool) (*tool.Result, error) {
	if err := becomeSubreaper(); err != nil {
		s.opts.Logger.Warn("becoming a child subreaper: orphans of commands will not be reaped", "error", err)
	}
	timeout, clampNote := clampDuration(in.Timeout, s.opts.DefaultTimeout, s.opts.MaxTimeout, "timeout")
	env := call.Env
	dir, root, reset := startDir(env)

	cwdFile, err := s.getScratch(s.scratchFor(env, sandboxed))
	if err != nil {
		return nil, fmt.Errorf("the file for the shell's final directory: %w", err)
	}
	var p *process
	defer func() {
		// A shell that may still run (terminate gave up on it) could
		// write to the file after its next user emptied it.
		if p == nil || p.exited() {
			s.putScratch(cwdFile)
		} else {
			cwdFile.remove()
		}
	}()
	cwdPath := cwdFile.path
	script := "trap " + shq("pwd -P >| "+shq(cwdPath)) + " EXIT; " + in.Command

	environ := shellEnv(env, dir)
	inSandbox := sandboxed && s.opts.Sandbox != nil
	wr, err := s.command(env, script, dir, environ, inSandbox, cwdPath)
	if err != nil {
		return nil, err
	}
	var r *os.File
	if hot := s.runWarm(env, wr, inSandbox, dir, script, environ); hot != nil {
		wr.closeExtra()
		defer s.putScratch(hot.script) // bash read it before it ran anything
		p, r = hot.p, hot.out
	} else {
		var w *os.File
		r, w, err = os.Pipe()
		if err != nil {
			wr.closeExtra()
			return nil, fmt.Errorf("creating the output pipe: %w", err)
		}
		unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20) //nolint:errcheck // a larger pipe is only faster
		p, err = startProc(wr, dir, w, "bash")
		w.Close()
		if err != nil {
			r.Close()
			return nil, err
		}
		go p.wait()
	}
	lim := newLimits(s.opts.MaxOutputChars)
	col := newCollector(lim, func() (*os.File, error) { return createOutputFile(env, "bash-"+safeName(call.ID)+"-*.txt") }, progress)
	var stopAt atomic.Int64
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		bp := readBufs.Get().(*[]byte)
		defer readBufs.Put(bp)
		for {
			n, err := r.Read(*bp)
			if n > 0 {
				col.write((*bp)[:n])
			}
			if err != nil {
				return
			}
			if at := stopAt.Load(); at != 0 && time.Now().UnixNano() > at {
				return
			}
		}
	}()

	var timedOut, cancelled, leftovers bool
	timer := time.NewTimer(timeout)
	select {
	case <-p.done:
		leftovers = p.cleanup(s.opts.KillGrace)
	case <-timer.C:
		timedOut = true
		p.terminate(s.opts.KillGrace)
	case <-ctx.Done():
		cancelled = true
		p.terminate(s.opts.KillGrace)
	}
	timer.Stop()
	deadline := time.Now().Add(pipeGrace)
	stopAt.Store(deadline.UnixNano())
	r.SetReadDeadline(deadline) //nolint:errcheck // a pipe supports deadlines
	<-readDone
	r.Close()
	out := col.finish()
	if err := p.startErr(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", wr.Argv[0], err)
	}

	var notes []string
	if clampNote != "" {
		notes = append(notes, clampNote)
	}
	if p.remote != nil && p.remote.Err() != nil {
		notes = append(notes, "The sandbox ended before the command did ("+p.remote.Err().Error()+"): its exit status is unknown.")
	}
	res := &tool.Result{}
	code := -1
	if p.exited() {
		code = p.exitCode()
	}
	switch {
	case timedOut:
		res.IsError = true
		notes = append(notes, fmt.Sprintf("Command timed out after %s and was killed, with every process it started.", timeout))
	case cancelled:
		res.IsError = true
		notes = append(notes, "Command was cancelled and killed, with every process it started.")
	case code == 0:
	case code == 1 && exitOneMeaning(classify(in.Command).Last) != "":
		notes = append(notes, fmt.Sprintf("(exit code 1: %s)", exitOneMeaning(classify(in.Command).Last)))
	default:
		res.IsError = true
		notes = append(notes, fmt.Sprintf("Exit code %d", code))
	}
	if leftovers {
		notes = append(notes, "Processes the command left running in the background were stopped when it finished: use run_in_background for commands that should keep running.")
	}

	// The directory the shell ended in: cd persists inside the working directories.
	end := cwdFile.readCwd()
	var mod tool.Modifier
	switch {
	case !timedOut && !cancelled && end != "" && within(env.WorkingDirs(), end):
		if end != env.Cwd() {
			mod = func(m tool.Mutator) { m.SetCwd(end) }
		}
	case reset || (end != "" && !timedOut && !cancelled):
		mod = func(m tool.Mutator) { m.SetCwd(root) }
		reset = true
	}
	if reset {
		notes = append(notes, "Shell cwd was reset to "+root)
	}
	res.Modifier = mod

	text := strings.TrimRight(out.Text, "\n")
	if len(notes) > 0 {
		if text != "" {
			text += "\n"
		}
		text += strings.Join(notes, "\n")
	}
	res.Content = []tool.Content{tool.Text(text)}
	if code >= 0 {
		res.Display = fmt.Sprintf("exit %d", code)
	}
	return res, nil
}

var (
	scratchOnce sync.Once
	scratch     string
)

// scratchDir is where the small per-command file for the final directory
// goes: a memory file system when there is one ($XDG_RUNTIME_DIR, /dev/shm),
// since creating and removing a file on a disk costs more than running
// `true` (~0.2 ms against ~0.01 ms here).
func scratchDir() string {
	scratchOnce.Do(func() {
		scratch = os.TempDir()
		for _, d := range []string{os.Getenv("XDG_RUNTIME_DIR"), "/dev/shm"} {
			if d == "" {
				continue
			}
			if f, err := os.CreateTemp(d, "tackle-probe-*"); err == nil {
				f.Close()
				os.Remove(f.Name())
				scratch = d
				return
			}
		}
	})
	return scratch
}

// createOutputFile creates a file in the session's output directory.
func createOutputFile(env tool.Env, pattern string) (*os.File, error) {
	dir := env.OutputDir()
	if dir == "" {
		return nil, errors.New("the session has no output directory")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating output directory %q: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, fmt.Errorf("creating an output file in %q: %w", dir, err)
	}
	return f, nil
}

// safeName keeps a model-chosen call id from escaping the output directory.
func safeName(id string) string {
	var sb strings.Builder
	for _, r := range id {
		if sb.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			sb.WriteRune(r)
		default:
			sb.WriteByte('_')
		}
	}
	if sb.Len() == 0 {
		return "call"
	}
	return sb.String()
}

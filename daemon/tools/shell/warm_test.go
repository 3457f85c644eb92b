package shell

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// warmPids waits until the session has n warm shells ready and returns
// their pids.
func (h *harness) warmPids(t *testing.T, sessionID string, n int) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		h.s.mu.Lock()
		var pids []int
		for _, w := range h.s.warm[sessionID] {
			pids = append(pids, w.p.cmd.Process.Pid)
		}
		busy := h.s.warming[sessionID]
		h.s.mu.Unlock()
		if len(pids) == n && busy == 0 {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s: %d warm shells (%d starting), want %d", sessionID, len(pids), busy, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// alive reports whether pid is a process that has not exited (a zombie
// counts as exited).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+2:], "Z")
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("warm shell %d still runs", pid)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// A command in a warm shell gives what the same command gives in a shell
// started for it: output, exit status, the final directory, the process
// it runs in, its descriptors and environment. The one documented
// difference, eval's name in a syntax error, is checked on its own.
func TestWarmShellRunsLikeACold(t *testing.T) {
	scripts := []string{
		`echo "[$_]"; echo "$0"; echo "$#"; test "$(ps -o pgid= -p $$ | tr -d ' ')" = $$ && echo leader`,
		`echo out; echo err >&2; exit 3`,
		`cd /proc/$$/fd && for f in *; do echo "$f $(readlink $f | sed 's/:.*//')"; done`,
		`env | grep -v '^_=' | sort`,
		`set | grep -c '^_tackle_s'; echo "$SECONDS"`,
		`mkdir -p sub && cd sub && pwd`,
		`pwd; echo "$PWD"; echo "${OLDPWD-unset}"`,
		`shopt -p | sort | md5sum; set -o | md5sum; trap -p | grep -v EXIT`,
		`read x; echo "read: $? [$x]"`,
		`kill -TERM $$; echo never`,
		`printf 'a\nb\n' | while read l; do echo "<$l>"; done; echo "$LINENO"`,
		"cat <<'EOF'\nhere $HOME\nEOF",
		`f() { return 4; }; f; echo $?; return 2>/dev/null; echo after-return $?`,
	}
	run := func(noWarm bool) []string {
		h := newHarness(t, &Options{KillGrace: 300 * time.Millisecond, NoWarmShell: noWarm})
		env := newEnv(t)
		env.ID = "s_warmcmp"
		h.bash(t, env, map[string]any{"command": "true"})
		var outs []string
		for _, sc := range scripts {
			if !noWarm {
				h.warmPids(t, env.ID, warmPerSession)
			}
			o := h.bash(t, env, map[string]any{"command": sc})
			// The two sessions' directories differ by name only.
			norm := strings.NewReplacer(env.Root, "ROOT", filepath.Dir(env.Root), "HOME")
			outs = append(outs, fmt.Sprintf("%v|%s|%s", o.Res.IsError, norm.Replace(o.Text()), norm.Replace(env.Cwd())))
		}
		return outs
	}
	cold, warm := run(true), run(false)
	for i := range scripts {
		if cold[i] != warm[i] {
			t.Errorf("%s:\ncold: %s\nwarm: %s", scripts[i], cold[i], warm[i])
		}
	}

	h := newHarness(t, nil)
	env := newEnv(t)
	h.bash(t, env, map[string]any{"command": "true"})
	h.warmPids(t, env.ID, warmPerSession)
	o := h.call(t, env, "Bash", map[string]any{"command": "if then fi"})
	if !strings.Contains(o.Text(), "bash: eval: line 1: syntax error") || !strings.Contains(o.Text(), "Exit code 2") {
		t.Errorf("syntax error in a warm shell: %s", o.Text())
	}
}

// The next command runs in a shell that was waiting before it came; the
// session keeps warmPerSession of them, and each runs one command.
func TestWarmShellIsUsed(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	h.bash(t, env, map[string]any{"command": "true"})
	seen := map[int]bool{}
	for range 4 {
		waiting := h.warmPids(t, env.ID, warmPerSession)
		pid := firstLineInt(t, h.bash(t, env, map[string]any{"command": "echo $$"}).Text())
		if pid != waiting[0] {
			t.Fatalf("command ran in %d, the warm shells were %v", pid, waiting)
		}
		if seen[pid] {
			t.Fatalf("shell %d ran two commands", pid)
		}
		seen[pid] = true
		waitGone(t, pid)
	}
}

// A warm shell waits for a command of its directory and environment:
// another one ends it, and the command runs in a shell of its own.
func TestWarmShellOtherEnvironment(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	h.bash(t, env, map[string]any{"command": "true"})
	old := h.warmPids(t, env.ID, warmPerSession)
	env.Vars = append(env.Vars, "TACKLE_WARM_TEST=new")
	out := h.bash(t, env, map[string]any{"command": "echo $$; echo $TACKLE_WARM_TEST"}).Text()
	if pid := firstLineInt(t, out); pid == old[0] || pid == old[1] || !strings.HasSuffix(out, "\nnew") {
		t.Fatalf("command with a new environment: %q (old warm shells %v)", out, old)
	}
	waitGone(t, old...)

	// A cd moves the next command to another directory: the same.
	h.warmPids(t, env.ID, warmPerSession)
	if err := os.Mkdir(filepath.Join(env.Root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.bash(t, env, map[string]any{"command": "cd d"})
	old = h.warmPids(t, env.ID, warmPerSession)
	if out := h.bash(t, env, map[string]any{"command": "pwd"}).Text(); out != filepath.Join(env.Root, "d") {
		t.Fatalf("pwd after cd: %q", out)
	}
	waitGone(t, old...)
}

// A warm shell that died while it waited is not used: the command starts
// a shell of its own.
func TestWarmShellKilledWhileWaiting(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	h.bash(t, env, map[string]any{"command": "true"})
	for _, pid := range h.warmPids(t, env.ID, warmPerSession) {
		if err := unix.Kill(pid, unix.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if out := h.bash(t, env, map[string]any{"command": "echo ran"}).Text(); out != "ran" {
		t.Fatalf("after the warm shells were killed: %q", out)
	}
}

// Warm shells end when nobody uses them for WarmShellIdle, when their
// session is deleted and when the registry closes; none starts for a
// shell whose start-up reads a file (BASH_ENV) or with NoWarmShell.
func TestWarmShellEnds(t *testing.T) {
	h := newHarness(t, &Options{KillGrace: 300 * time.Millisecond, WarmShellIdle: 200 * time.Millisecond})
	env := newEnv(t)
	h.bash(t, env, map[string]any{"command": "true"})
	waitGone(t, h.warmPids(t, env.ID, warmPerSession)...)
	h.warmPids(t, env.ID, 0)

	h = newHarness(t, nil)
	h.bash(t, env, map[string]any{"command": "true"})
	pids := h.warmPids(t, env.ID, warmPerSession)
	h.s.KillSession(env.ID)
	waitGone(t, pids...)
	// A deleted session gets no warm shells again (one that was starting
	// when it was deleted ends); another session does.
	h.bash(t, env, map[string]any{"command": "true"})
	time.Sleep(50 * time.Millisecond)
	h.warmPids(t, env.ID, 0)
	env = newEnv(t)
	env.ID = "s_other"

	h.bash(t, env, map[string]any{"command": "true"})
	pids = h.warmPids(t, env.ID, warmPerSession)
	h.s.Close()
	waitGone(t, pids...)

	for _, o := range []*Options{nil, {NoWarmShell: true}} {
		h = newHarness(t, o)
		e := newEnv(t)
		if o == nil {
			rc := filepath.Join(e.Root, "rc")
			if err := os.WriteFile(rc, []byte("echo from-rc\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.Vars = append(e.Vars, "BASH_ENV="+rc)
		}
		for range 3 {
			h.bash(t, e, map[string]any{"command": "true"})
		}
		time.Sleep(50 * time.Millisecond)
		h.warmPids(t, e.ID, 0)
	}
}

// The daemon writes a warm shell's script, and reads a shell's final
// directory, through the descriptors of the files it created: a command
// that replaces those files with links (the sandbox's scratch directory
// is writable to commands) gets nothing written to the link's target,
// and the next command still runs.
func TestWarmShellScriptReplacedByALink(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("keep\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.bash(t, env, map[string]any{"command": "true"})
	var scripts []string
	for _, pid := range h.warmPids(t, env.ID, warmPerSession) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(string(b), "tackle-shell-")
		j := strings.IndexByte(string(b[i:]), '\'')
		scripts = append(scripts, filepath.Join(scratchDir(), string(b[i:i+j])))
	}
	cmd := "cwd=$(trap -p EXIT | grep -o '/[^ ]*/tackle-shell-[0-9]*'); " +
		"for f in " + strings.Join(scripts, " ") + " $cwd; do rm -f $f; ln -s " + victim + " $f; done; trap - EXIT; echo $cwd"
	scripts = append(scripts, h.bash(t, env, map[string]any{"command": cmd}).Text())
	for range 3 {
		if out := h.bash(t, env, map[string]any{"command": "echo ran"}).Text(); out != "ran" {
			t.Fatalf("after the links: %q", out)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep\n" {
		t.Fatalf("the link's target was written: %q", b)
	}
	for _, f := range scripts {
		if fi, err := os.Lstat(f); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the command's link was touched (%v)", f, err)
		}
		t.Cleanup(func() { os.Remove(f) })
	}
}

package shell

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"golang.org/x/sys/unix"
)

func TestOutputInterleavedAndSessionEnv(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	env.Vars = append(env.Vars, "TACKLE_TEST_VAR=from the client")
	o := h.bash(t, env, map[string]any{"command": `echo out; echo err >&2; echo "$TACKLE_TEST_VAR"; pwd`})
	if o.Failed() {
		t.Fatalf("failed: %s", o.Text())
	}
	if want := "out\nerr\nfrom the client\n" + env.Root; o.Text() != want {
		t.Errorf("output %q, want %q", o.Text(), want)
	}
	if got := strings.Join(o.Progress, ""); got != "out\nerr\nfrom the client\n"+env.Root+"\n" {
		t.Errorf("progress %q", got)
	}
	if o.Access.Kind != "exec" || o.Access.Command == "" {
		t.Errorf("access %+v", o.Access)
	}
}

func TestCwdPersistsInsideAndResetsOutside(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	sub := filepath.Join(env.Root, "sub dir")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Dir(env.Root)
	if err := os.Symlink(outside, filepath.Join(env.Root, "escape")); err != nil {
		t.Fatal(err)
	}

	o := h.bash(t, env, map[string]any{"command": `cd "sub dir"`})
	if o.Failed() || env.Cwd() != sub {
		t.Fatalf("after cd: %q, cwd %q", o.Text(), env.Cwd())
	}
	o = h.bash(t, env, map[string]any{"command": "pwd"})
	if o.Text() != sub {
		t.Errorf("pwd in the next call = %q, want %q", o.Text(), sub)
	}
	// An exit status does not stop the cd from persisting.
	o = h.bash(t, env, map[string]any{"command": "cd .. && false"})
	if env.Cwd() != env.Root || !strings.Contains(o.Text(), "Exit code 1") {
		t.Errorf("cd .. && false: %q, cwd %q", o.Text(), env.Cwd())
	}

	for _, cmd := range []string{"cd /", "cd ..", "cd escape", "cd sub\\ dir && cd ../escape"} {
		env.SetCwd(env.Root)
		o = h.bash(t, env, map[string]any{"command": cmd + " && pwd"})
		want := "Shell cwd was reset to " + env.Root
		if !strings.HasSuffix(o.Text(), want) || env.Cwd() != env.Root {
			t.Errorf("%s: result %q (want it to end with %q), cwd %q", cmd, o.Text(), want, env.Cwd())
		}
	}

	// A current directory that vanished: the command runs in the root, and says so.
	gone := filepath.Join(env.Root, "gone")
	os.Mkdir(gone, 0o700)
	env.SetCwd(gone)
	os.Remove(gone)
	o = h.bash(t, env, map[string]any{"command": "pwd"})
	if !strings.HasPrefix(o.Text(), env.Root+"\n") || !strings.HasSuffix(o.Text(), "Shell cwd was reset to "+env.Root) || env.Cwd() != env.Root {
		t.Errorf("vanished cwd: %q, cwd %q", o.Text(), env.Cwd())
	}
}

func TestEnvironmentDoesNotPersist(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	h.bash(t, env, map[string]any{"command": "export TACKLE_X=1; TACKLE_Y=2; alias ll=ls; f() { :; }"})
	o := h.bash(t, env, map[string]any{"command": `echo "${TACKLE_X:-unset} ${TACKLE_Y:-unset}"; type ll f 2>&1 | grep -c 'not found'`})
	if o.Text() != "unset unset\n2" {
		t.Errorf("got %q", o.Text())
	}
}

func TestExitCodes(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	os.WriteFile(filepath.Join(env.Root, "a"), []byte("one\n"), 0o600)
	os.WriteFile(filepath.Join(env.Root, "b"), []byte("two\n"), 0o600)
	tests := []struct {
		command string
		isError bool
		want    string
	}{
		{"true", false, ""},
		{"exit 3", true, "Exit code 3"},
		{"false", true, "Exit code 1"},
		{"echo partial; exit 42", true, "partial\nExit code 42"},
		{"grep nomatch a", false, "(exit code 1: no matches found)"},
		{"cat a | grep nomatch", false, "no matches found"},
		{"grep nomatch missing-file", true, "Exit code 2"},
		{"rg nomatch a", false, "no matches found"},
		{"diff a b > /dev/null", false, "the inputs differ"},
		{"test -f missing", false, "the condition is false"},
		{"[ 1 = 2 ]", false, "the condition is false"},
		{"[[ 1 == 2 ]]", false, "the condition is false"},
		{"git diff --no-index --quiet a b", false, "the inputs differ"},
		{"grep nomatch a; true", false, ""},
		{"grep one a && false", true, "Exit code 1"},
		{"ls missing-file", true, "Exit code 2"},
		{"kill -9 $$", true, "Exit code 137"},
	}
	for _, tc := range tests {
		t.Run(tc.command, func(t *testing.T) {
			o := h.bash(t, env, map[string]any{"command": tc.command})
			if o.Res.IsError != tc.isError || !strings.Contains(o.Text(), tc.want) {
				t.Errorf("IsError %v, text %q; want %v and %q", o.Res.IsError, o.Text(), tc.isError, tc.want)
			}
		})
	}
}

func TestTimeoutKillsWholeGroup(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	tests := []struct{ name, command string }{
		{"background and foreground sleep", "echo $$; sleep 100 & sleep 100"},
		{"a child that ignores SIGTERM", "echo $$; (trap '' TERM; exec sleep 100) & sleep 100"},
		{"a grandchild in a subshell", "echo $$; (sleep 100 &); (sleep 100 | cat) & wait"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := h.bash(t, env, map[string]any{"command": tc.command, "timeout": 300})
			if !o.Res.IsError || !strings.Contains(o.Text(), "timed out after 300ms") {
				t.Fatalf("result %q, want a timeout error", o.Text())
			}
			pgid := firstLineInt(t, o.Text())
			if !groupGone(pgid) {
				t.Errorf("process group %d still has processes after the timeout", pgid)
			}
		})
	}
}

func TestCancellationKillsGroup(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The command reports its pid through a FIFO, then the test cancels.
	fifo := filepath.Join(env.Root, "pid")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan outcome, 1)
	go func() {
		done <- h.callCtx(ctx, t, env, "Bash", map[string]any{"command": "echo $$ > pid; sleep 100 & sleep 100"})
	}()
	b, err := os.ReadFile(fifo) // blocks until the shell wrote its pid
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	o := <-done
	if !o.Res.IsError || !strings.Contains(o.Text(), "cancelled") {
		t.Errorf("result %q, want cancelled", o.Text())
	}
	if pgid := firstLineInt(t, string(b)); !groupGone(pgid) {
		t.Errorf("process group %d survived the cancellation", pgid)
	}
}

func TestGrandchildHoldingOutputOpen(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	// Within the group: it is stopped when the command finishes.
	o := h.bash(t, env, map[string]any{"command": "echo $$; (sleep 30 &) ; echo done", "timeout": 20000})
	if o.Res.IsError || !strings.Contains(o.Text(), "done") || !strings.Contains(o.Text(), "stopped when it finished") {
		t.Fatalf("result %q", o.Text())
	}
	if pgid := firstLineInt(t, o.Text()); !groupGone(pgid) {
		t.Errorf("group %d not gone", pgid)
	}
	// Out of the group (setsid): it is left alone, and the pipe is given up on.
	// (The command waits until the child is in its own session, so that the end of the
	// command does not race the setsid.)
	o = h.bash(t, env, map[string]any{"command": `setsid sleep 30 & pid=$!
while [ "$(cut -d' ' -f6 /proc/$pid/stat)" != "$pid" ]; do :; done; echo $pid; echo done`, "timeout": 20000})
	if o.Res.IsError || !strings.Contains(o.Text(), "done") {
		t.Fatalf("result %q", o.Text())
	}
	pid := firstLineInt(t, o.Text())
	if err := unix.Kill(pid, 0); err != nil {
		t.Fatalf("the setsid process %d is gone: %v", pid, err)
	}
	unix.Kill(pid, unix.SIGKILL)
	var ws unix.WaitStatus
	unix.Wait4(pid, &ws, 0, nil) // it was reparented to us (subreaper)
}

func TestStdinIsNull(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	o := h.bash(t, env, map[string]any{"command": `cat; read x; echo "read status $? [$x]"`, "timeout": 20000})
	if o.Text() != "read status 1 []" {
		t.Errorf("got %q", o.Text())
	}
}

func TestBinaryAndInvalidUTF8(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	o := h.bash(t, env, map[string]any{"command": `printf 'a\xff\xfeb\x00c\xe2\x82\xacd\xe2\x82'`})
	text := o.Text()
	if !utf8.ValidString(text) || text != "a\uFFFDb\x00c€d\uFFFD" {
		t.Errorf("got %q", text)
	}
	for _, p := range o.Progress {
		if !utf8.ValidString(p) {
			t.Errorf("invalid UTF-8 in progress %q", p)
		}
	}
	o = h.bash(t, env, map[string]any{"command": `head -c 300000 /dev/urandom`})
	if !utf8.ValidString(o.Text()) || !strings.Contains(o.Text(), "Output too large") {
		t.Errorf("random bytes: valid %v, %.200q", utf8.ValidString(o.Text()), o.Text())
	}
}

func TestProgressRunesAcrossChunks(t *testing.T) {
	var got []string
	c := newCollector(newLimits(1000), nil, func(s string) { got = append(got, s) })
	euro := []byte("€")
	c.write([]byte{'x', euro[0], euro[1]})
	c.prog.mu.Lock()
	c.prog.last = time.Time{} // let the next chunk through at once
	c.prog.mu.Unlock()
	c.write([]byte{euro[2], '\n'})
	out := c.finish()
	if strings.Join(got, "") != "x€\n" || out.Text != "x€\n" {
		t.Errorf("progress %q, text %q", got, out.Text)
	}
	for _, s := range got {
		if !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) {
			t.Errorf("progress chunk %q", s)
		}
	}
}

func TestProgressBounded(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	o := h.bash(t, env, map[string]any{"command": `seq 1 200000`})
	if len(o.Progress) == 0 {
		t.Fatal("no progress")
	}
	for _, p := range o.Progress {
		if len(p) > progressMaxBytes+100 {
			t.Errorf("a progress call of %d bytes", len(p))
		}
	}
	last := o.Progress[len(o.Progress)-1]
	if !strings.HasSuffix(last, "199999\n200000\n") {
		t.Errorf("last progress ends %q", last[max(0, len(last)-40):])
	}
}

func TestLargeOutputHeadTailFile(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	o := h.bash(t, env, map[string]any{"command": `seq 1 100000`})
	text := o.Text()
	if o.Res.IsError || len(text) > 31000 || !strings.HasPrefix(text, "Output too large: 588895 bytes in 100000 lines") {
		t.Fatalf("len %d, %.300q", len(text), text)
	}
	if !strings.Contains(text, "\n1\n2\n3\n") || !strings.HasSuffix(text, "\n99999\n100000") || !strings.Contains(text, " bytes omitted ...]") {
		i := strings.Index(text, "omitted")
		t.Errorf("head or tail missing (head %v, tail %v, marker %v): %.400q … %q … %q", strings.Contains(text, "\n1\n2\n3\n"),
			strings.HasSuffix(text, "\n99999\n100000"), strings.Contains(text, " bytes omitted ...]"),
			text, text[max(0, i-80):min(len(text), i+80)], text[max(0, len(text)-80):])
	}
	_, rest, _ := strings.Cut(text, "The whole output is in ")
	path, _, _ := strings.Cut(rest, ":")
	b, err := os.ReadFile(path)
	if err != nil || len(b) != 588895 || !strings.HasPrefix(path, env.Out) {
		t.Errorf("output file %q: %d bytes, %v", path, len(b), err)
	}
	// Multi-byte text over the byte budget but within the character cap stays whole.
	o = h.bash(t, env, map[string]any{"command": `for i in $(seq 1 2000); do printf 'ééééé'; done`})
	if strings.Contains(o.Text(), "Output too large") || utf8.RuneCountInString(o.Text()) != 10000 {
		t.Errorf("10000 two-byte runes: %.100q", o.Text())
	}
}

// TestGigabyte: 1 GB of output leaves memory flat and lands in the file.
func TestGigabyte(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GB of output")
	}
	h := newHarness(t, nil)
	env := newEnv(t)
	base := resetPeakRSS(t)
	start := time.Now()
	o := h.bash(t, env, map[string]any{"command": `head -c 1G /dev/zero | tr '\0' a; echo; echo end`})
	elapsed := time.Since(start)
	growth := peakRSS(t) - base
	if o.Res.IsError || !strings.HasPrefix(o.Text(), "Output too large: 1073741829 bytes in 2 lines") || !strings.HasSuffix(o.Text(), "aaaa\nend") {
		t.Fatalf("%.300q", o.Text())
	}
	_, rest, _ := strings.Cut(o.Text(), "The whole output is in ")
	path, _, _ := strings.Cut(rest, ":")
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != 1073741829 {
		t.Fatalf("output file: %v, %v", fi, err)
	}
	os.Remove(path)
	t.Logf("1 GB in %s (%.0f MB/s), peak RSS growth %d MB", elapsed, 1024/elapsed.Seconds(), growth>>20)
	if growth > 64<<20 {
		t.Errorf("peak RSS grew by %d MB, want < 64 MB", growth>>20)
	}
}

func TestTimeoutClampedAndDefault(t *testing.T) {
	h := newHarness(t, &Options{MaxTimeout: 5 * time.Second, KillGrace: 100 * time.Millisecond})
	env := newEnv(t)
	o := h.bash(t, env, map[string]any{"command": "echo ok", "timeout": 900000})
	if o.Res.IsError || !strings.Contains(o.Text(), "ok\nThe timeout of 900000 ms is over the maximum; it was clamped to 5000 ms.") {
		t.Errorf("got %q", o.Text())
	}
	if d, note := clampDuration(nil, 120*time.Second, 600*time.Second, "timeout"); d != 120*time.Second || note != "" {
		t.Errorf("default: %v %q", d, note)
	}
	ms := 600000.0
	if d, note := clampDuration(&ms, 120*time.Second, 600*time.Second, "timeout"); d != 600*time.Second || note != "" {
		t.Errorf("max: %v %q", d, note)
	}
}

func TestBadInput(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	tests := []struct {
		name   string
		input  map[string]any
		schema bool // a schema error, else a Validate error
		want   string
	}{
		{"empty command", map[string]any{"command": ""}, true, "minLength"},
		{"blank command", map[string]any{"command": "  \n\t"}, false, "the command is empty"},
		{"no command", map[string]any{"timeout": 10}, true, "command"},
		{"NUL byte", map[string]any{"command": "echo a\x00b"}, false, "NUL byte"},
		{"negative timeout", map[string]any{"command": "true", "timeout": -5}, true, "timeout"},
		{"unknown field", map[string]any{"command": "true", "cwd": "/"}, true, "cwd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := h.call(t, env, "Bash", tc.input)
			err := o.ValidateErr
			if tc.schema {
				err = o.SchemaErr
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("schema %v, validate %v; want %q", o.SchemaErr, o.ValidateErr, tc.want)
			}
		})
	}
	// An unparseable command still runs (bash reports the error) and is not read-only.
	o := h.bash(t, env, map[string]any{"command": "echo $("})
	if !o.Res.IsError || !strings.Contains(o.Text(), "Exit code 2") {
		t.Errorf("unparseable: %q", o.Text())
	}
	if a := h.tools["Bash"].Attributes([]byte(`{"command":"echo $("}`)); a.ReadOnly || a.ConcurrencySafe {
		t.Errorf("unparseable command classified %+v", a)
	}
}

func TestShellMissing(t *testing.T) {
	h := newHarness(t, &Options{Shell: "/nonexistent/bash"})
	env := newEnv(t)
	o := h.call(t, env, "Bash", map[string]any{"command": "true"})
	if o.RunErr == nil || !errors.Is(o.RunErr, os.ErrNotExist) {
		t.Errorf("got %v", o.RunErr)
	}
}

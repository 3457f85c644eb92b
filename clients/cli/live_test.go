package cli

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// TestCallLiveTerminal: on a terminal, tackle call Bash shows the command,
// its elapsed time and its output while it runs; Ctrl-C cancels the call,
// which ends with one result, cancelled.
func TestCallLiveTerminal(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command here")
	}
	tc := startTermChat(t, env(d), "call", "Bash",
		`{"command":"for i in 1 2 3; do echo line$i; done; echo 'half a li'; `+sleep+` 60"}`,
		"--cwd", dir, "--permission-mode", "bypassPermissions")
	tc.out.waitFor(t, "│ line3")
	tc.out.waitFor(t, "│ half a li")
	// The elapsed time counts up beside the command line.
	tc.out.waitForMatch(t, regexp.MustCompile(`Bash for i in 1 2 3; do echo line\$i; done; .*\(\d+\.\ds\)`))
	tc.keys("\x03") // Ctrl-C
	err = tc.wait()
	if err == nil || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("tackle call after Ctrl-C: %v, want exit status 1\n%s", err, tc.out.String())
	}
	tc.out.waitFor(t, "Bash cancelled") // the terminal may still hold output
	out := tc.out.String()
	if n := strings.Count(out, "Bash cancelled"); n != 1 {
		t.Errorf("the cancelled result is shown %d times:\n%s", n, out)
	}
	if !strings.Contains(out, "cancelling the calls") {
		t.Errorf("no word of the cancel:\n%s", out)
	}
}

// TestRunStreamsOutput: tackle run streams a command's output as it comes,
// under the call's line, and says how long a call that streamed took.
func TestRunStreamsOutput(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	fm.SetScript(fakemodel.Turns(
		fakemodel.Call("Bash", map[string]any{"command": "echo one; echo two; printf three"}),
		fakemodel.Say("Done."),
	))
	r := tackleEnv(t, environ, "", "run", "count", "--cwd", dir, "--permission-mode", "bypassPermissions").mustCode(t, 0)
	if !regexp.MustCompile(`● Bash echo one; echo two; printf three\n  │ one\n  │ two\n  │ three\n  ✓ Bash completed \(\d+\.\ds\)\n`).MatchString(r.stderr) {
		t.Errorf("run's stderr:\n%s", r.stderr)
	}
	if r.stdout != "Done.\n" {
		t.Errorf("run's stdout: %q", r.stdout)
	}
}

func TestLiveOutputLines(t *testing.T) {
	var l render.LiveOutput
	ev := func(id, text string) *tacklev1.Event {
		return &tacklev1.Event{Type: "call_progress", CallId: id, Text: text}
	}
	if got := l.Add(ev("a", "one\ntw")); strings.Join(got, "|") != "  │ one" {
		t.Errorf("add = %q", got)
	}
	if got := l.Add(ev("b", "other\n")); strings.Join(got, "|") != "  │ other" {
		t.Errorf("add b = %q", got)
	}
	if got := l.Add(ev("a", "o\r\n10%\r50%\r100%\n\tx\x1b[31m")); strings.Join(got, "|") != "  │ two|  │ 100%" {
		t.Errorf("add = %q", got)
	}
	rest, streamed := l.End("a")
	if strings.Join(rest, "|") != "  │  x[31m" || !streamed {
		t.Errorf("end = %q, %v", rest, streamed)
	}
	if rest, streamed := l.End("c"); rest != nil || streamed {
		t.Errorf("end of a silent call = %q, %v", rest, streamed)
	}
}

// TestRunLiveTerminal: on a terminal, tackle run shows a running call's
// elapsed time while it is silent.
func TestRunLiveTerminal(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command here")
	}
	_, fm, dir, environ := chatEnv(t, nil)
	fm.SetScript(fakemodel.Turns(
		fakemodel.Call("Bash", map[string]any{"command": sleep + " 1.6"}),
		fakemodel.Say("Slept."),
	))
	tc := startTermChat(t, environ, "run", "sleep a little", "--cwd", dir, "--permission-mode", "bypassPermissions")
	tc.out.waitForMatch(t, regexp.MustCompile(`Bash \S*sleep 1\.6 \(1\.\ds\)`))
	tc.out.waitFor(t, "Slept.")
	if err := tc.wait(); err != nil {
		t.Errorf("tackle run: %v\n%s", err, tc.out.String())
	}
}

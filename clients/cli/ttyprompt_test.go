package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// TestPromptOnTTYWhenStdinIsInput: tackle call X - reads its input from a
// pipe and still asks on the terminal (/dev/tty), where the answer is
// typed; without a terminal it says another client may answer.
func TestPromptOnTTYWhenStdinIsInput(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	target := filepath.Join(dir, "piped.txt")
	input := `{"file_path":"` + target + `","content":"from a pipe\n"}`
	tc := startTerm(t, env(d), strings.NewReader(input), "call", "Write", "-", "--cwd", dir)
	tc.out.waitFor(t, "Answer [y/a/n/f, default n]:")
	if !strings.Contains(tc.out.String(), "+from a pipe") {
		t.Errorf("the prompt on the terminal lacks the diff:\n%s", tc.out.String())
	}
	tc.keys("y\r")
	if err := tc.wait(); err != nil {
		t.Errorf("tackle call: %v\n%s", err, tc.out.String())
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "from a pipe\n" {
		t.Errorf("the allowed Write: %q, %v", b, err)
	}

	// No terminal (in-process, stdin a reader): the notice says who may answer.
	r := tackle(t, d, input, "call", "Write", "-", "--cwd", dir, "--permission-timeout", "1").mustCode(t, 1)
	if !strings.Contains(r.stderr, "another client may answer it, else it is denied") {
		t.Errorf("without a terminal:\n%s", r.stderr)
	}
}

// TestRunPromptOnTTY: tackle run - takes the prompt from a pipe and asks
// permission on the terminal.
func TestRunPromptOnTTY(t *testing.T) {
	_, fm, dir, environ := chatEnv(t, nil)
	target := filepath.Join(dir, "run.txt")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Call("Write", map[string]any{"file_path": target, "content": "ran\n"}),
		fakemodel.Say("Written."),
	))
	tc := startTerm(t, environ, strings.NewReader("write the file\n"), "run", "-", "--cwd", dir)
	tc.out.waitFor(t, "Answer [y/a/n/f, default n]:")
	tc.keys("y\r")
	if err := tc.wait(); err != nil {
		t.Errorf("tackle run: %v\n%s", err, tc.out.String())
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "ran\n" {
		t.Errorf("the allowed Write: %q, %v", b, err)
	}
}

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// inTerminal runs tackle with args under script(1), so that its stdin,
// stdout and stderr are a pseudo-terminal, feeding it input as typed keys.
// It returns what the terminal showed and tackle's exit code.
func (e *env) inTerminal(input string, args ...string) (string, int) {
	e.t.Helper()
	line := shellQuote(filepath.Join(binDir, "tackle"))
	for _, a := range args {
		line += " " + shellQuote(a)
	}
	cmd := exec.Command("script", "-qec", line, "/dev/null")
	cmd.Dir = e.project
	cmd.Env = append(append([]string(nil), e.vars...), "TERM=xterm-256color")
	for i, v := range cmd.Env {
		if v == "NO_COLOR=1" {
			cmd.Env[i] = "TACKLE_TEST_COLOR=1"
		}
	}
	cmd.Stdin = strings.NewReader(input)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	} else if err != nil {
		e.t.Fatalf("tackle %v in a terminal: %v\n%s", args, err, out)
	}
	return string(out), 0
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestTerminalColouredDiffAndPrompt(t *testing.T) {
	e := newEnv(t)
	path := e.write("t.txt", "one\ntwo\n")
	e.tackle("", "call", "Read", mustJSON(map[string]any{"file_path": path}))

	out, code := e.inTerminal("", "call", "Edit", mustJSON(map[string]any{"file_path": path, "old_string": "two", "new_string": "TWO"}), "--permission-mode", "acceptEdits")
	if code != 0 || !strings.Contains(out, "\x1b[") || !strings.Contains(out, "+TWO") || !strings.Contains(out, "-two") {
		t.Errorf("a terminal gets a coloured diff; got %q", out)
	}

	// In default mode the edit asks; the person at the terminal answers yes.
	out, code = e.inTerminal("y\n", "call", "Edit", mustJSON(map[string]any{"file_path": path, "old_string": "one", "new_string": "ONE"}))
	if code != 0 || !strings.Contains(out, "[y] yes, once") || !strings.Contains(out, "[f] no, and tell the model why") {
		t.Errorf("no permission prompt in the terminal: %q", out)
	}
	if b, _ := os.ReadFile(path); string(b) != "ONE\nTWO\n" {
		t.Errorf("after answering yes the file is %q", b)
	}
	// Answering no (or just Enter) denies.
	out, code = e.inTerminal("\n", "call", "Edit", mustJSON(map[string]any{"file_path": path, "old_string": "ONE", "new_string": "uno"}))
	if b, _ := os.ReadFile(path); code != 1 || string(b) != "ONE\nTWO\n" {
		t.Errorf("after answering no the file is %q (output %q)", b, out)
	}
}

func TestTerminalSpinnerNamesTheTool(t *testing.T) {
	e := newEnv(t)
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	// A case-insensitive regex with no literal over Go's whole tree runs
	// for about a second here: well past the spinner's 300 ms delay.
	root := strings.TrimSpace(string(goroot))
	out, code := e.inTerminal("", "call", "Grep", mustJSON(map[string]any{"pattern": "[a-z]{3}[0-9]{3}[a-z]{3}", "-i": true, "path": root, "head_limit": 1}),
		"--permission-mode", "bypassPermissions")
	if code != 0 || !strings.Contains(out, "⠋ Grep") {
		t.Errorf("no spinner naming Grep in the terminal (exit %d): %q", code, out)
	}
}

func TestTerminalPromptAlwaysAndFeedback(t *testing.T) {
	e := newEnv(t)
	// "a" allows always and asks where to save the rule: here, the project.
	out, code := e.inTerminal("a\np\n", "call", "Bash", mustJSON(map[string]any{"command": "mkdir built"}))
	if code != 0 || !strings.Contains(out, "[a] yes, always allow Bash(mkdir built:*)") || !strings.Contains(out, "[s]ession, [p]roject or [u]ser") {
		t.Fatalf("always answer in the terminal (exit %d): %q", code, out)
	}
	b, err := os.ReadFile(filepath.Join(e.project, ".tackle", "settings.local.json"))
	if err != nil || !strings.Contains(string(b), `"Bash(mkdir built:*)"`) {
		t.Errorf("the rule was not saved for the project: %s, %v", b, err)
	}
	// The saved rule applies: no prompt, even without a terminal.
	if r := e.tackle("", "call", "Bash", mustJSON(map[string]any{"command": "mkdir built -p"}), "--permission-timeout", "1"); r.code != 0 {
		t.Errorf("after allow-always the command still asks: %+v", r)
	}
	// "f" denies and passes the person's words to the model.
	out, code = e.inTerminal("f\nuse the tmp dir\n", "call", "Bash", mustJSON(map[string]any{"command": "touch x"}))
	if code != 1 || !strings.Contains(out, "use the tmp dir") {
		t.Errorf("feedback answer (exit %d): %q", code, out)
	}
	if _, err := os.Stat(filepath.Join(e.project, "x")); err == nil {
		t.Error("the denied command ran")
	}
}

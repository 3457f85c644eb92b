package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// sessionOf returns the id of the default session of the project directory.
func (e *env) sessionOf(dir string) string {
	e.t.Helper()
	var list []struct{ ID, Cwd string }
	e.json(&list, "", "sessions", "list")
	for _, s := range list {
		if s.Cwd == dir {
			return s.ID
		}
	}
	e.t.Fatalf("no session for %s in %v", dir, list)
	return ""
}

func TestTodoWriteThroughDaemon(t *testing.T) {
	e := newEnv(t)
	var res resultJSON
	todos := `{"todos":[{"content":"Build it","status":"in_progress","activeForm":"Building it"},` +
		`{"content":"Test it","status":"pending","activeForm":"Testing it"}]}`
	if r := e.json(&res, "", "call", "TodoWrite", todos); r.code != 0 || res.Status != "completed" {
		t.Fatalf("TodoWrite: code %d, %+v", r.code, res)
	}
	var shown struct {
		Todos []struct {
			Content, Status, ActiveForm string
		} `json:"todos"`
	}
	e.json(&shown, "", "sessions", "show", e.sessionOf(e.project))
	if len(shown.Todos) != 2 || shown.Todos[0].Content != "Build it" || shown.Todos[0].Status != "in_progress" ||
		shown.Todos[0].ActiveForm != "Building it" || shown.Todos[1].Status != "pending" {
		t.Errorf("sessions show todos = %+v", shown.Todos)
	}
	r := e.tackle("", "call", "TodoWrite", `{"todos":[{"content":"x","status":"finished","activeForm":"x"}]}`, "--json")
	if r.code != 1 || !strings.Contains(r.stdout, `"invalid"`) {
		t.Errorf("invalid status: code %d\n%s", r.code, r.stdout)
	}
}

func TestBackgroundShellThroughDaemon(t *testing.T) {
	e := newEnv(t)
	ready := filepath.Join(e.root, "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	var res resultJSON
	// The fifo tells the test that "hi" is written and which pid the shell has.
	cmd := "echo hi; echo $$ > " + ready + "; sleep 30"
	r := e.json(&res, "", "call", "Bash", mustJSON(map[string]any{"command": cmd, "run_in_background": true}),
		"--permission-mode", "bypassPermissions")
	if r.code != 0 || res.Status != "completed" {
		t.Fatalf("background Bash: code %d, %+v\n%s", r.code, res, r.stderr)
	}
	b, err := os.ReadFile(ready)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid %q: %v", b, err)
	}

	var shells []struct {
		ID, Command, Status string
		OutputPath          string `json:"output_path"`
	}
	e.json(&shells, "", "shells", "list")
	if len(shells) != 1 || shells[0].Status != "running" || shells[0].Command != cmd {
		t.Fatalf("shells list = %+v", shells)
	}
	id := shells[0].ID
	if !strings.Contains(res.text(), id) {
		t.Errorf("the Bash result does not name shell %s: %s", id, res.text())
	}

	r = e.tackle("", "shells", "tail", id)
	if r.code != 0 || r.stdout != "hi\n" {
		t.Errorf("shells tail: code %d, %q, %s", r.code, r.stdout, r.stderr)
	}
	r = e.tackle("", "shells", "kill", id)
	if r.code != 0 || strings.TrimSpace(r.stdout) != id+" killed" {
		t.Errorf("shells kill: code %d, %q, %s", r.code, r.stdout, r.stderr)
	}
	if alive(pid) {
		t.Errorf("shell process %d still runs after shells kill", pid)
	}
	e.json(&shells, "", "shells", "list")
	if len(shells) != 1 || shells[0].Status != "killed" {
		t.Errorf("shells list after kill = %+v", shells)
	}
	r = e.tackle("", "shells", "kill", "no-such-shell")
	if r.code != 2 || !strings.Contains(r.stderr, "no-such-shell") {
		t.Errorf("shells kill of an unknown id: code %d, %s", r.code, r.stderr)
	}
}

package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
)

const todoInput = `{"todos":[{"content":"Write tests","status":"completed","activeForm":"Writing tests"},` +
	`{"content":"Fix the bug","status":"in_progress","activeForm":"Fixing the bug"},` +
	`{"content":"Ship","status":"pending","activeForm":"Shipping"}]}`

// attachBackground runs `tackle attach` with args until the returned stop
// function is called; stop returns the exit code.
func attachBackground(t *testing.T, d *daemontest.Daemon, out, errb *lineBuffer, args ...string) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"attach"}, args...), strings.NewReader(""), out, errb, env(d))
	}()
	return func() int {
		cancel()
		return <-done
	}
}

func TestAttachRendersTodos(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	id := newSession(t, d, dir, "default")

	plain, plainErr := newLineBuffer(), newLineBuffer()
	stopPlain := attachBackground(t, d, plain, plainErr, "--session", id)
	asJSON, jsonErr := newLineBuffer(), newLineBuffer()
	stopJSON := attachBackground(t, d, asJSON, jsonErr, "--session", id, "--json")
	plain.waitFor(t, "session "+id)
	asJSON.waitFor(t, `"type":"snapshot"`)

	r := tackle(t, d, "", "call", "TodoWrite", todoInput, "--session", id).mustCode(t, 0)
	if !strings.Contains(r.stdout, "todos updated") || strings.Contains(r.stdout, "Todos have been modified") {
		t.Errorf("TodoWrite output:\n%s", r.stdout)
	}

	// Not a terminal: plain ASCII boxes, one task a line, under the event.
	plain.waitFor(t, "[ ] Ship")
	if code := stopPlain(); code != 0 {
		t.Errorf("attach exit code %d: %s", code, plainErr.String())
	}
	want := "todos_updated 3 todos: 1 completed, 1 in progress, 1 pending\n    [x] Write tests\n    [~] Fix the bug\n    [ ] Ship\n"
	if !strings.Contains(plain.String(), want) {
		t.Errorf("attach output lacks\n%s\nin\n%s", want, plain.String())
	}

	asJSON.waitFor(t, `"type":"todos_updated"`)
	if code := stopJSON(); code != 0 {
		t.Errorf("attach --json exit code %d: %s", code, jsonErr.String())
	}
	var found bool
	for _, line := range strings.Split(strings.TrimSpace(asJSON.String()), "\n") {
		var ev struct {
			Type    string `json:"type"`
			Session struct {
				Todos []map[string]string `json:"todos"`
			} `json:"session"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		if ev.Type == "todos_updated" {
			found = true
			if len(ev.Session.Todos) != 3 || ev.Session.Todos[1]["status"] != "in_progress" || ev.Session.Todos[1]["activeForm"] != "Fixing the bug" {
				t.Errorf("todos_updated todos = %v", ev.Session.Todos)
			}
		}
	}
	if !found {
		t.Errorf("no todos_updated line in:\n%s", asJSON.String())
	}

	// sessions show: the list as JSON, and rendered for people.
	r = tackle(t, d, "", "sessions", "show", id, "--json").mustCode(t, 0)
	var s struct {
		Todos []map[string]string `json:"todos"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || len(s.Todos) != 3 || s.Todos[2]["content"] != "Ship" {
		t.Errorf("sessions show --json todos = %v (%v)", s.Todos, err)
	}
	r = tackle(t, d, "", "sessions", "show", id).mustCode(t, 0)
	if !strings.Contains(r.stdout, "[~] Fix the bug") {
		t.Errorf("sessions show:\n%s", r.stdout)
	}

	// A later attach shows the list in the snapshot.
	snap, snapErr := newLineBuffer(), newLineBuffer()
	stop := attachBackground(t, d, snap, snapErr, "--session", id)
	snap.waitFor(t, "[ ] Ship")
	stop()

	// An invalid status is refused and says why.
	r = tackle(t, d, "", "call", "TodoWrite", `{"todos":[{"content":"a","status":"done","activeForm":"a"}]}`, "--session", id, "--json").mustCode(t, 1)
	if res := decodeResult(t, r.stdout); res.Status != "invalid" {
		t.Errorf("invalid status: result %+v", res)
	}
}

// fifo makes a named pipe in dir.
func fifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startBackground runs a background Bash call in the session and returns
// the shell id from `shells list --json` (the newest shell).
func startBackground(t *testing.T, d *daemontest.Daemon, id, command string) string {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"command": command, "run_in_background": true})
	tackle(t, d, "", "call", "Bash", string(in), "--session", id, "--permission-mode", "bypassPermissions").mustCode(t, 0)
	r := tackle(t, d, "", "shells", "list", "--session", id, "--json").mustCode(t, 0)
	var list []struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list) == 0 {
		t.Fatalf("shells list: %v\n%s", err, r.stdout)
	}
	return list[len(list)-1].ID
}

func TestShellsCommands(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	id := newSession(t, d, dir, "default")
	fifos := t.TempDir()

	events, eventsErr := newLineBuffer(), newLineBuffer()
	stopAttach := attachBackground(t, d, events, eventsErr, "--session", id)
	events.waitFor(t, "session "+id)
	jsonEvents, jsonErr := newLineBuffer(), newLineBuffer()
	stopJSON := attachBackground(t, d, jsonEvents, jsonErr, "--session", id, "--json")
	jsonEvents.waitFor(t, `"type":"snapshot"`)

	// A shell that prints, tells us it did, and waits.
	ready := fifo(t, fifos, "ready")
	sh := startBackground(t, d, id, "echo hi; echo ok > "+ready+"; exec /bin/sleep 30")
	if b, err := os.ReadFile(ready); err != nil || string(b) != "ok\n" {
		t.Fatalf("ready fifo: %q %v", b, err)
	}
	events.waitFor(t, "shell_updated shell "+sh+" running")
	jsonEvents.waitFor(t, `"type":"shell_updated"`)
	if code := stopJSON(); code != 0 {
		t.Errorf("attach --json exit code %d: %s", code, jsonErr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(jsonEvents.String()), "\n") {
		var ev struct {
			Type  string
			Shell *struct{ ID, Status, Command string }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %s", line)
		}
		if ev.Type == "shell_updated" && (ev.Shell == nil || ev.Shell.ID != sh || ev.Shell.Status != "running" || !strings.Contains(ev.Shell.Command, "echo hi")) {
			t.Errorf("shell_updated line: %s", line)
		}
	}
	// A client attaching now sees the shell in its snapshot.
	snap := tackleSnapshot(t, d, id)
	if !strings.Contains(snap, `"shells":[{`) || !strings.Contains(snap, sh) {
		t.Errorf("snapshot lacks shell %s: %s", sh, snap)
	}

	r := tackle(t, d, "", "shells", "list", "--session", id, "--json").mustCode(t, 0)
	var listed []struct {
		OutputPath string `json:"output_path"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &listed); err != nil || len(listed) != 1 || !strings.HasPrefix(listed[0].OutputPath, d.StateDir()) {
		t.Errorf("shells list: the output is not in the state directory %s:\n%s", d.StateDir(), r.stdout)
	}
	golden(t, "shells_list", normalize(t, r.stdout, map[string]string{dir: "$DIR", d.StateDir(): "$STATE", ready: "$READY"}))
	r = tackle(t, d, "", "shells", "list", "--session", id).mustCode(t, 0)
	if !strings.Contains(r.stdout, sh) || !strings.Contains(r.stdout, "running") {
		t.Errorf("shells list:\n%s", r.stdout)
	}

	r = tackle(t, d, "", "shells", "tail", sh, "--session", id).mustCode(t, 0)
	if r.stdout != "hi\n" {
		t.Errorf("shells tail = %q, want hi", r.stdout)
	}

	r = tackle(t, d, "", "shells", "kill", sh, "--session", id).mustCode(t, 0)
	if strings.TrimSpace(r.stdout) != sh+" killed" {
		t.Errorf("shells kill = %q", r.stdout)
	}
	events.waitFor(t, "shell_updated shell "+sh+" killed")

	// tail -f follows a running shell until it exits.
	gate := fifo(t, fifos, "gate")
	sh2 := startBackground(t, d, id, "echo one; read x < "+gate+"; echo two; exit 3")
	out, errb := newLineBuffer(), newLineBuffer()
	done := make(chan int, 1)
	go func() {
		done <- Main(context.Background(), []string{"shells", "tail", "-f", sh2, "--session", id}, strings.NewReader(""), out, errb, env(d))
	}()
	out.waitFor(t, "one\n")
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("tail -f exit code %d: %s", code, errb.String())
	}
	if out.String() != "one\ntwo\n" || !strings.Contains(errb.String(), "exited 3") {
		t.Errorf("tail -f = %q, stderr %q", out.String(), errb.String())
	}
	events.waitFor(t, "shell_updated shell "+sh2+" exited 3")

	// tail -f ends with 0 on an interrupt and leaves the shell running.
	ready3 := fifo(t, fifos, "ready3")
	sh3 := startBackground(t, d, id, "echo three; echo ok > "+ready3+"; exec /bin/sleep 30")
	os.ReadFile(ready3)
	ctx, cancel := context.WithCancel(context.Background())
	out = newLineBuffer()
	go func() {
		done <- Main(ctx, []string{"shells", "tail", "-f", sh3, "--session", id}, strings.NewReader(""), out, errb, env(d))
	}()
	out.waitFor(t, "three\n")
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("interrupted tail -f exit code %d", code)
	}
	r = tackle(t, d, "", "shells", "kill", sh3, "--session", id, "--json").mustCode(t, 0)
	var killed struct{ Status string }
	if err := json.Unmarshal([]byte(r.stdout), &killed); err != nil || killed.Status != "killed" {
		t.Errorf("shells kill --json = %s (%v)", r.stdout, err)
	}

	// Unknown shells: a clear error, exit 2.
	for _, args := range [][]string{{"tail", "nope"}, {"kill", "nope"}} {
		r = tackle(t, d, "", append([]string{"shells"}, append(args, "--session", id)...)...).mustCode(t, 2)
		if !strings.Contains(r.stderr, "nope") || !strings.Contains(r.stderr, "not found") {
			t.Errorf("shells %v: stderr %q", args, r.stderr)
		}
	}
	if code := stopAttach(); code != 0 {
		t.Errorf("attach exit code %d", code)
	}
}

// tackleSnapshot returns the snapshot line of `tackle attach --json`.
func tackleSnapshot(t *testing.T, d *daemontest.Daemon, id string) string {
	t.Helper()
	out, errb := newLineBuffer(), newLineBuffer()
	stop := attachBackground(t, d, out, errb, "--session", id, "--json")
	out.waitFor(t, "\n")
	stop()
	line, _, _ := strings.Cut(out.String(), "\n")
	return line
}

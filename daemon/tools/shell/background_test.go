package shell

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

// startBackground starts a background shell and returns its id.
func startBackground(t *testing.T, h *harness, env *tooltest.Env, input map[string]any) string {
	t.Helper()
	input["run_in_background"] = true
	o := h.bash(t, env, input)
	if o.Res.IsError {
		t.Fatalf("background start: %s", o.Text())
	}
	m := regexp.MustCompile(`with ID: (bash_\d+)`).FindStringSubmatch(o.Text())
	if m == nil {
		t.Fatalf("no shell id in %q", o.Text())
	}
	if info := h.waitChange(t); info.ID != m[1] || info.Status != "running" {
		t.Fatalf("OnChange at start: %+v", info)
	}
	return m[1]
}

func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestBackgroundStartTailExit(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	mkfifo(t, filepath.Join(env.Root, "ready"))
	mkfifo(t, filepath.Join(env.Root, "go"))
	id := startBackground(t, h, env, map[string]any{"command": `echo first; echo err >&2; echo > ready; read x < go; echo second; exit 3`})
	if id != "bash_1" {
		t.Errorf("first id %q", id)
	}
	if _, err := os.ReadFile(filepath.Join(env.Root, "ready")); err != nil { // the shell printed its first lines
		t.Fatal(err)
	}
	o := h.call(t, env, "BashOutput", map[string]any{"bash_id": id})
	if o.Failed() || o.Text() != "<status>running</status>\n<output>\nfirst\nerr\n</output>" {
		t.Errorf("first read: %q", o.Text())
	}
	o = h.call(t, env, "BashOutput", map[string]any{"bash_id": id})
	if o.Text() != "<status>running</status>\n<output>(no new output)</output>" {
		t.Errorf("second read: %q", o.Text())
	}
	if err := os.WriteFile(filepath.Join(env.Root, "go"), []byte("\n"), 0); err != nil {
		t.Fatal(err)
	}
	// TaskOutput (the alias) blocks until the shell ends by default.
	o = h.call(t, env, "TaskOutput", map[string]any{"task_id": id})
	if o.Text() != "<status>exited</status>\n<exit_code>3</exit_code>\n<output>\nsecond\n</output>" {
		t.Errorf("read after exit: %q", o.Text())
	}
	if info := h.waitChange(t); info.ID != id || info.Status != "exited" || info.ExitCode != 3 || info.OutputBytes != int64(len("first\nerr\nsecond\n")) {
		t.Errorf("OnChange at exit: %+v", info)
	}
	// Clients read with offsets, independent of the model's cursor.
	data, next, info, err := h.s.Read(env.ID, id, 0, 7)
	if err != nil || string(data) != "first\ne" || next != 7 || info.Status != "exited" {
		t.Errorf("Read(0, 7) = %q, %d, %+v, %v", data, next, info, err)
	}
	data, next, _, err = h.s.Read(env.ID, id, next, 0)
	if err != nil || string(data) != "rr\nsecond\n" || next != 17 {
		t.Errorf("Read(7) = %q, %d, %v", data, next, err)
	}
	if l := h.s.List(env.ID); len(l) != 1 || l[0].ID != id || l[0].Command == "" || !strings.HasPrefix(l[0].OutputPath, env.Out) {
		t.Errorf("List = %+v", l)
	}
	// A second shell gets the next id.
	if id2 := startBackground(t, h, env, map[string]any{"command": "true"}); id2 != "bash_2" {
		t.Errorf("second id %q", id2)
	}
	h.waitChange(t)
}

func TestBackgroundFilter(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	id := startBackground(t, h, env, map[string]any{"command": `printf 'apple\nbanana\navocado\ncherry\nalmond'`})
	h.waitChange(t) // exited
	o := h.call(t, env, "BashOutput", map[string]any{"bash_id": id, "filter": "^a"})
	if o.Text() != "<status>exited</status>\n<exit_code>0</exit_code>\n<output>\napple\navocado\nalmond\n</output>" {
		t.Errorf("filtered: %q", o.Text())
	}
	// The other lines were consumed.
	o = h.call(t, env, "BashOutput", map[string]any{"bash_id": id})
	if !strings.Contains(o.Text(), "(no new output)") {
		t.Errorf("after the filtered read: %q", o.Text())
	}
	o = h.call(t, env, "BashOutput", map[string]any{"bash_id": id, "filter": "(unclosed"})
	if o.ValidateErr == nil || !strings.Contains(o.ValidateErr.Error(), "missing closing )") {
		t.Errorf("bad filter: %v", o.ValidateErr)
	}
}

func TestKillShell(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	mkfifo(t, filepath.Join(env.Root, "pid"))
	id := startBackground(t, h, env, map[string]any{"command": `echo $$ > pid; sleep 100 & (trap '' TERM; sleep 100) & sleep 100`})
	b, err := os.ReadFile(filepath.Join(env.Root, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pgid := firstLineInt(t, string(b))
	for _, name := range []string{"KillShell", "TaskStop", "KillBash"} {
		o := h.call(t, env, name, map[string]any{"shell_id": id, "task_id": id})
		if o.SchemaErr == nil {
			t.Errorf("%s with both ids: no schema error", name)
		}
	}
	o := h.call(t, env, "TaskStop", map[string]any{"task_id": id})
	if o.Failed() || !strings.Contains(o.Text(), "Killed shell "+id) || !strings.Contains(o.Text(), "<status>killed</status>") {
		t.Errorf("kill: %q", o.Text())
	}
	if !groupGone(pgid) {
		t.Errorf("group %d survived KillShell", pgid)
	}
	if info := h.waitChange(t); info.Status != "killed" {
		t.Errorf("OnChange after kill: %+v", info)
	}
	o = h.call(t, env, "KillShell", map[string]any{"shell_id": id})
	if o.Failed() || !strings.Contains(o.Text(), "had already ended") {
		t.Errorf("second kill: %q", o.Text())
	}
	o = h.call(t, env, "BashOutput", map[string]any{"bash_id": id})
	if !strings.Contains(o.Text(), "<status>killed</status>") || !strings.Contains(o.Text(), killedByRequest) {
		t.Errorf("output after kill: %q", o.Text())
	}
}

func TestUnknownAndForeignShellIDs(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	o := h.call(t, env, "BashOutput", map[string]any{"bash_id": "bash_9"})
	if o.ValidateErr == nil || !strings.Contains(o.ValidateErr.Error(), `no background shell "bash_9"`) || !strings.Contains(o.ValidateErr.Error(), "no background shells") {
		t.Errorf("unknown id: %v", o.ValidateErr)
	}
	id := startBackground(t, h, env, map[string]any{"command": "true"})
	h.waitChange(t)
	other := newEnv(t)
	other.ID = "s_other"
	for _, tc := range []struct {
		name  string
		input map[string]any
	}{
		{"BashOutput", map[string]any{"bash_id": id}},
		{"KillShell", map[string]any{"shell_id": id}},
	} {
		o := h.call(t, other, tc.name, tc.input)
		if o.ValidateErr == nil || !strings.Contains(o.ValidateErr.Error(), "no background shell") {
			t.Errorf("%s of another session's shell: %v", tc.name, o.ValidateErr)
		}
	}
	if _, _, _, err := h.s.Read("s_other", id, 0, 0); !errors.Is(err, ErrNotFound) {
		t.Errorf("Read from another session: %v", err)
	}
	if _, err := h.s.Kill("s_other", id); !errors.Is(err, ErrNotFound) {
		t.Errorf("Kill from another session: %v", err)
	}
	o = h.call(t, env, "BashOutput", map[string]any{})
	if o.SchemaErr == nil {
		t.Error("BashOutput without an id: no schema error")
	}
	o = h.call(t, env, "BashOutput", map[string]any{"bash_id": "bash_99"})
	if o.ValidateErr == nil || !strings.Contains(o.ValidateErr.Error(), "shells: "+id) {
		t.Errorf("unknown id with shells: %v", o.ValidateErr)
	}
}

func TestKillSessionAndClose(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	a := startBackground(t, h, env, map[string]any{"command": "sleep 100"})
	b := startBackground(t, h, env, map[string]any{"command": "(trap '' TERM; sleep 100)"})
	other := newEnv(t)
	other.ID = "s_other"
	c := startBackground(t, h, other, map[string]any{"command": "sleep 100"})
	shA, _ := h.s.lookup(env.ID, a)
	shB, _ := h.s.lookup(env.ID, b)
	h.s.KillSession(env.ID)
	for _, sh := range []*bgShell{shA, shB} {
		if !groupGone(sh.proc.pgid) {
			t.Errorf("%s survived KillSession", sh.id)
		}
	}
	got := map[string]string{}
	for range 2 {
		info := h.waitChange(t)
		got[info.ID] = info.Status
	}
	if got[a] != "killed" || got[b] != "killed" {
		t.Errorf("OnChange after KillSession: %v", got)
	}
	if l := h.s.List(env.ID); len(l) != 0 {
		t.Errorf("List after KillSession: %+v", l)
	}
	if l := h.s.List(other.ID); len(l) != 1 || l[0].ID != c || l[0].Status != "running" {
		t.Errorf("the other session's shells: %+v", l)
	}
	shC, _ := h.s.lookup(other.ID, c)
	h.s.Close()
	if !groupGone(shC.proc.pgid) {
		t.Error("a shell survived Close")
	}
	if info := h.waitChange(t); info.ID != c || info.Status != "killed" {
		t.Errorf("OnChange after Close: %+v", info)
	}
	o := h.call(t, other, "Bash", map[string]any{"command": "true", "run_in_background": true})
	if !o.Failed() || !strings.Contains(o.Text(), "daemon is stopping") {
		t.Errorf("start after Close: %q", o.Text())
	}
	h.s.Close() // idempotent
}

func TestBackgroundLifetime(t *testing.T) {
	h := newHarness(t, nil)
	env := newEnv(t)
	id := startBackground(t, h, env, map[string]any{"command": "sleep 100", "timeout": 100})
	info := h.waitChange(t)
	if info.ID != id || info.Status != "killed" {
		t.Fatalf("after the lifetime: %+v", info)
	}
	o := h.call(t, env, "BashOutput", map[string]any{"bash_id": id})
	if !strings.Contains(o.Text(), killedByLifetime) {
		t.Errorf("%q", o.Text())
	}
	o = h.bash(t, env, map[string]any{"command": "true", "run_in_background": true, "timeout": 1e9})
	if !strings.Contains(o.Text(), "clamped to 7200000 ms") {
		t.Errorf("lifetime clamp: %q", o.Text())
	}
	h.waitChange(t)
	h.waitChange(t)
}

func TestBashOutputLargeNewOutput(t *testing.T) {
	h := newHarness(t, &Options{MaxOutputChars: 1000})
	env := newEnv(t)
	id := startBackground(t, h, env, map[string]any{"command": "seq 1 100000"})
	h.waitChange(t)
	o := h.call(t, env, "BashOutput", map[string]any{"bash_id": id})
	text := o.Text()
	if len(text) > 1500 || !strings.Contains(text, "Output too large: 588895 bytes") || !strings.Contains(text, "\n1\n2\n") || !strings.HasSuffix(text, "99999\n100000\n</output>") {
		t.Errorf("%d bytes: %q", len(text), text)
	}
	o = h.call(t, env, "BashOutput", map[string]any{"bash_id": id, "filter": "^9999[0-9]$"})
	if !strings.Contains(o.Text(), "no new output matching") {
		t.Errorf("all was consumed: %q", o.Text())
	}
}

package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

type statusJSON struct {
	Version       string `json:"version"`
	BuildID       string `json:"build_id"`
	PID           int    `json:"pid"`
	Socket        string `json:"socket"`
	UptimeSeconds *int64 `json:"uptime_seconds"`
	Sessions      *int   `json:"sessions"`
	PreviousExit  string `json:"previous_exit"`
}

type resultJSON struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Status  string `json:"status"`
	IsError bool   `json:"is_error"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		MimeType string `json:"mime_type"`
		Data     string `json:"data"`
	} `json:"content"`
}

func (r resultJSON) text() string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func TestAutostartStatusAndStop(t *testing.T) {
	e := newEnv(t)
	if r := e.tackle("", "status", "--no-autostart"); r.code != 2 || r.stderr == "" {
		t.Fatalf("status --no-autostart without a daemon: code %d, stderr %q; want 2 and a message", r.code, r.stderr)
	}
	var st statusJSON
	e.json(&st, "", "status")
	if st.Version == "" || st.BuildID == "" || st.PID <= 0 || st.UptimeSeconds == nil || st.Sessions == nil {
		t.Fatalf("status --json misses fields: %+v", st)
	}
	if st.Socket != e.socket {
		t.Errorf("socket = %q, want %q", st.Socket, e.socket)
	}
	fi, err := os.Stat(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	di, err := os.Stat(filepath.Dir(e.socket))
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("socket dir mode %v, want 0700", di.Mode().Perm())
	}
	// A second daemon on the same socket exits 1 with a clear message.
	second := exec.Command(filepath.Join(binDir, "tackled"), "--socket", e.socket)
	second.Env = e.vars
	out, err := second.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("second daemon: err %v, output %s; want exit status 1", err, out)
	}
	if !strings.Contains(string(out), "already running") {
		t.Errorf("second daemon said %q; want it to say a daemon is already running", out)
	}
	// The first one is still there.
	var again statusJSON
	e.json(&again, "", "status", "--no-autostart")
	if again.PID != st.PID {
		t.Errorf("pid changed from %d to %d", st.PID, again.PID)
	}
	if r := e.tackle("", "daemon", "stop"); r.code != 0 {
		t.Fatalf("daemon stop: %d %s", r.code, r.stderr)
	}
	if alive(st.PID) {
		t.Errorf("daemon pid %d still alive after daemon stop returned", st.PID)
	}
	if r := e.tackle("", "daemon", "stop"); r.code != 0 {
		t.Fatalf("daemon stop with none running: %d %s", r.code, r.stderr)
	}
}

func TestReadEditWriteThroughDaemon(t *testing.T) {
	e := newEnv(t)
	path := e.write("hello.txt", "alpha\r\nbeta\r\ngamma")
	var res resultJSON
	r := e.json(&res, "", "call", "Read", mustJSON(map[string]any{"file_path": path}))
	if r.code != 0 || res.Status != "completed" || res.IsError || res.Name != "Read" || res.ID == "" {
		t.Fatalf("Read: code %d, %+v", r.code, res)
	}
	if !strings.Contains(res.text(), "     2\tbeta") {
		t.Errorf("Read output %q lacks the numbered line", res.text())
	}
	// Default mode asks for an edit; with nobody to answer it is denied at the timeout.
	edit := mustJSON(map[string]any{"file_path": path, "old_string": "beta", "new_string": "BETA"})
	r = e.json(&res, "", "call", "Edit", edit, "--permission-timeout", "1")
	if r.code != 1 || res.Status != "denied" || !res.IsError {
		t.Fatalf("unanswered Edit: code %d, %+v; want denied", r.code, res)
	}
	if b, _ := os.ReadFile(path); string(b) != "alpha\r\nbeta\r\ngamma" {
		t.Fatalf("denied Edit changed the file: %q", b)
	}
	// acceptEdits allows edits inside the working directory; CRLF and the missing final newline survive.
	r = e.json(&res, "", "call", "Edit", edit, "--permission-mode", "acceptEdits")
	if r.code != 0 || res.Status != "completed" {
		t.Fatalf("Edit in acceptEdits: code %d, %+v", r.code, res)
	}
	if b, _ := os.ReadFile(path); string(b) != "alpha\r\nBETA\r\ngamma" {
		t.Fatalf("after Edit: %q", b)
	}
	// Without --json a person sees the diff.
	r = e.tackle("", "call", "Edit", mustJSON(map[string]any{"file_path": path, "old_string": "gamma", "new_string": "delta"}), "--permission-mode", "acceptEdits")
	if r.code != 0 || !strings.Contains(r.stdout, "-gamma") || !strings.Contains(r.stdout, "+delta") {
		t.Fatalf("human Edit output: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// The file changes behind the session's back: the next edit is refused until it is read again.
	if err := os.WriteFile(path, []byte("changed by someone else\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.json(&res, "", "call", "Edit", mustJSON(map[string]any{"file_path": path, "old_string": "changed", "new_string": "x"}), "--permission-mode", "acceptEdits")
	if r.code != 1 || res.Status != "invalid" || !strings.Contains(strings.ToLower(res.text()), "read it again") {
		t.Fatalf("edit of a changed file: code %d, %+v", r.code, res)
	}
	// Plan mode denies writes outright.
	r = e.json(&res, "", "call", "Write", mustJSON(map[string]any{"file_path": filepath.Join(e.project, "new.txt"), "content": "x"}), "--permission-mode", "plan")
	if r.code != 1 || res.Status != "denied" {
		t.Fatalf("Write in plan mode: code %d, %+v", r.code, res)
	}
	if _, err := os.Stat(filepath.Join(e.project, "new.txt")); err == nil {
		t.Fatal("Write in plan mode created the file")
	}
}

func TestBatchRunsInOrder(t *testing.T) {
	e := newEnv(t)
	a := e.write("a.go", "package a\n// needle\n")
	b := e.write("sub/b.go", "package b\n")
	in := mustJSON([]map[string]any{
		{"id": "c1", "name": "Read", "input": map[string]any{"file_path": a}},
		{"id": "c2", "name": "Glob", "input": map[string]any{"pattern": "**/*.go"}},
		{"id": "c3", "name": "Grep", "input": map[string]any{"pattern": "needle", "path": e.project}},
		{"id": "c4", "name": "Read", "input": map[string]any{"file_path": "relative.txt"}},
		{"id": "c5", "name": "NoSuchTool", "input": map[string]any{}},
	})
	var res []resultJSON
	r := e.json(&res, in, "batch")
	if r.code != 1 {
		t.Errorf("batch with failing calls: exit %d, want 1", r.code)
	}
	if len(res) != 5 {
		t.Fatalf("got %d results, want 5: %+v", len(res), res)
	}
	for i, want := range []string{"c1", "c2", "c3", "c4", "c5"} {
		if res[i].ID != want {
			t.Errorf("result %d has id %q, want %q", i, res[i].ID, want)
		}
	}
	if res[0].Status != "completed" || !strings.Contains(res[1].text(), b) || !strings.Contains(res[2].text(), a) {
		t.Errorf("unexpected results: %+v", res[:3])
	}
	if res[3].Status != "invalid" || !strings.Contains(res[3].text(), "absolute") {
		t.Errorf("relative path: %+v", res[3])
	}
	if res[4].Status != "invalid" || !strings.Contains(res[4].text(), "No such tool available: NoSuchTool") {
		t.Errorf("unknown tool: %+v", res[4])
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	var res resultJSON
	r := e.json(&res, "", "call", "Read", `{"file_path": `)
	if r.code != 1 || res.Status != "invalid" {
		t.Errorf("malformed JSON: code %d, %+v", r.code, res)
	}
	r = e.json(&res, "", "call", "Read", `{"limit": "ten", "bogus": 1}`)
	txt := res.text()
	if r.code != 1 || res.Status != "invalid" || !strings.Contains(txt, "file_path") || !strings.Contains(txt, "/limit") || !strings.Contains(txt, "bogus") {
		t.Errorf("schema violations must all be listed with paths: code %d, %q", r.code, txt)
	}
	r = e.json(&res, "", "call", "Read", mustJSON(map[string]any{"file_path": e.project}))
	if r.code != 1 || !res.IsError || !strings.Contains(res.text(), "Glob") {
		t.Errorf("directory to Read: code %d, %+v", r.code, res)
	}
	r = e.json(&res, "", "call", "Grep", mustJSON(map[string]any{"pattern": "a(b", "path": e.project}))
	if r.code != 1 || !res.IsError {
		t.Errorf("invalid regex: code %d, %+v", r.code, res)
	}
	r = e.json(&res, "", "call", "Glob", mustJSON(map[string]any{"pattern": "**/*.nothing"}))
	if r.code != 0 || res.IsError {
		t.Errorf("glob with no matches is not an error: code %d, %+v", r.code, res)
	}
	if r := e.tackle("", "call", "Read", "{}", "--permission-mode", "yolo"); r.code != 2 || r.stderr == "" {
		t.Errorf("bad --permission-mode: code %d, stderr %q; want 2", r.code, r.stderr)
	}
	// Outside the working directories a read asks; nobody answers; it is denied.
	outside := filepath.Join(e.root, "outside.txt")
	if err := os.WriteFile(outside, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = e.json(&res, "", "call", "Read", mustJSON(map[string]any{"file_path": outside}), "--permission-timeout", "1")
	if r.code != 1 || res.Status != "denied" || strings.Contains(res.text(), "secret") {
		t.Errorf("read outside the working directories: code %d, %+v", r.code, res)
	}
}

func TestSessionsSurviveSIGKILL(t *testing.T) {
	e := newEnv(t)
	var sess map[string]any
	e.json(&sess, "", "sessions", "new", "--cwd", e.project, "--permission-mode", "acceptEdits")
	id, _ := sess["id"].(string)
	if id == "" || sess["cwd"] != e.project || sess["permission_mode"] != "acceptEdits" {
		t.Fatalf("sessions new: %v", sess)
	}
	path := e.write("f.txt", "one\n")
	var res resultJSON
	e.json(&res, "", "call", "Read", mustJSON(map[string]any{"file_path": path}), "--session", id)
	if res.Status != "completed" {
		t.Fatalf("Read: %+v", res)
	}
	var st statusJSON
	e.json(&st, "", "status")
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, st.PID)
	// The next command starts a new daemon; the session, its read-state and its events are still there.
	var shown map[string]any
	e.json(&shown, "", "sessions", "show", id)
	if shown["cwd"] != e.project || shown["permission_mode"] != "acceptEdits" {
		t.Fatalf("sessions show after SIGKILL: %v", shown)
	}
	if _, ok := shown["todos"].([]any); !ok {
		t.Errorf("sessions show: todos = %v, want an array", shown["todos"])
	}
	r := e.json(&res, "", "call", "Edit", mustJSON(map[string]any{"file_path": path, "old_string": "one", "new_string": "two"}), "--session", id)
	if r.code != 0 || res.Status != "completed" {
		t.Fatalf("Edit after restart (read-state must survive): code %d, %+v", r.code, res)
	}
	events := attachUntil(t, e, id, func(ev map[string]any) bool {
		return ev["type"] == "call_result" && ev["tool"] == "Edit"
	})
	var results int
	for _, ev := range events {
		if ev["type"] == "call_result" {
			results++
		}
	}
	if results != 2 {
		t.Errorf("event log has %d call_result events, want 2 (Read before the kill, Edit after)", results)
	}
}

// attachUntil runs `tackle attach --from 0 --json` and returns the lines up to
// the first one for which done is true.
func attachUntil(t *testing.T, e *env, session string, done func(map[string]any) bool) []map[string]any {
	t.Helper()
	args := []string{"attach", "--from", "0", "--json"}
	if session != "" {
		args = append(args, "--session", session)
	}
	cmd := exec.Command(filepath.Join(binDir, "tackle"), args...)
	cmd.Dir, cmd.Env = e.project, e.vars
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}()
	timer := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	var got []map[string]any
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var lastSeq float64
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("attach printed a line that is not JSON: %q", sc.Text())
		}
		if _, ok := ev["type"]; !ok {
			t.Fatalf("attach line without type: %v", ev)
		}
		if ev["type"] != "snapshot" {
			seq, ok := ev["seq"].(float64)
			if !ok || seq <= lastSeq {
				t.Fatalf("attach line with a missing or non-increasing seq: %v", ev)
			}
			lastSeq = seq
		}
		got = append(got, ev)
		if done(ev) {
			return got
		}
	}
	t.Fatalf("attach ended before the expected event; got %d lines", len(got))
	return nil
}

func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still alive", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs. A zombie whose other threads are still
// exiting runs (it still holds its files, the socket among them).
func alive(pid int) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) || s[i+2] != 'Z' {
		return true
	}
	tasks, err := os.ReadDir(filepath.Join(dir, "task"))
	return err == nil && len(tasks) > 1
}

func TestSIGTERMCancelsWaitingCall(t *testing.T) {
	e := newEnv(t)
	var st statusJSON
	e.json(&st, "", "status")
	outside := filepath.Join(e.root, "elsewhere.txt")
	call := exec.Command(filepath.Join(binDir, "tackle"), "call", "Write",
		mustJSON(map[string]any{"file_path": outside, "content": "x"}), "--json", "--permission-timeout", "300")
	call.Dir, call.Env = e.project, e.vars
	var out strings.Builder
	call.Stdout = &out
	if err := call.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the call waits for a person, then stop the daemon.
	attachUntil(t, e, "", func(ev map[string]any) bool { return ev["type"] == "permission_requested" })
	if err := syscall.Kill(st.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitGone(t, st.PID)
	_ = call.Wait()
	if code := call.ProcessState.ExitCode(); code != 1 && code != 2 {
		t.Errorf("the waiting call exited %d; want 1 (cancelled) or 2 (connection lost)", code)
	}
	if code := call.ProcessState.ExitCode(); code == 1 {
		var res resultJSON
		if err := json.Unmarshal([]byte(out.String()), &res); err != nil || res.Status != "cancelled" {
			t.Errorf("the waiting call printed %q; want a cancelled result", out.String())
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("the cancelled Write ran")
	}
	// A new daemon shows the cancelled result in the event log.
	events := attachUntil(t, e, "", func(ev map[string]any) bool { return ev["type"] == "call_result" })
	last := events[len(events)-1]
	res, _ := last["result"].(map[string]any)
	if res == nil || res["status"] != "cancelled" {
		t.Errorf("call_result after SIGTERM: %v; want status cancelled", last)
	}
}

func TestGrpcurlListsTheAPI(t *testing.T) {
	e := newEnv(t)
	var st statusJSON
	e.json(&st, "", "status")
	grpcurl, err := filepath.Abs("../.bin/grpcurl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(grpcurl); err != nil {
		t.Fatalf("grpcurl is built by `make tools` (make test does it): %v", err)
	}
	out, err := exec.Command(grpcurl, "-plaintext", "-unix", e.socket, "list").CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl list: %v\n%s", err, out)
	}
	for _, want := range []string{"tackle.v1.TackleService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("grpcurl list does not show %s:\n%s", want, out)
		}
	}
	// The documented descriptors (built at the first reflection request):
	// describe shows the proto's comments.
	out, err = exec.Command(grpcurl, "-plaintext", "-unix", e.socket, "describe", "tackle.v1.Hello").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the client takes ServerMessage.events") {
		t.Errorf("grpcurl describe tackle.v1.Hello, without the proto's comments: %v\n%s", err, out)
	}
	out, err = exec.Command(grpcurl, "-plaintext", "-unix", e.socket, "tackle.v1.TackleService/Status").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"buildId": "`+st.BuildID+`"`) {
		t.Errorf("grpcurl Status: %v\n%s", err, out)
	}
}

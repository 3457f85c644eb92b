package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// project makes a working directory with a small file in it.
func project(t *testing.T) (dir, file string) {
	t.Helper()
	dir = t.TempDir()
	file = filepath.Join(dir, "hello.txt")
	if err := os.WriteFile(file, []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, file
}

func TestStatusJSON(t *testing.T) {
	d := daemontest.Start(t)
	r := tackle(t, d, "", "status", "--json").mustCode(t, 0)
	var st map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st["socket"] != d.Socket() || st["pid"] != float64(os.Getpid()) {
		t.Errorf("status = %v, want socket %s and pid %d", st, d.Socket(), os.Getpid())
	}
	golden(t, "status", normalize(t, r.stdout, nil))

	// For people: not JSON, but it names the socket.
	r = tackle(t, d, "", "status").mustCode(t, 0)
	if !strings.Contains(r.stdout, d.Socket()) {
		t.Errorf("status output does not name the socket:\n%s", r.stdout)
	}
}

func TestToolsJSON(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	r := tackle(t, d, "", "tools", "--cwd", dir, "--json").mustCode(t, 0)
	var tools []map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &tools); err != nil {
		t.Fatal(err)
	}
	if len(tools) == 0 {
		t.Fatal("no tools")
	}
	for _, tl := range tools {
		// The schema is a JSON object, not a string.
		if _, ok := tl["input_schema"].(map[string]any); !ok && tl["loaded"] == true {
			t.Errorf("tool %v: input_schema is %T, want an object", tl["name"], tl["input_schema"])
		}
		attrs, ok := tl["attributes"].(map[string]any)
		if !ok {
			t.Fatalf("tool %v has no attributes object", tl["name"])
		}
		for _, k := range []string{"read_only", "destructive", "concurrency_safe", "interactive", "deferred", "origin", "max_result_chars"} {
			if _, ok := attrs[k]; !ok {
				t.Errorf("tool %v: attributes lack %q", tl["name"], k)
			}
		}
		// Descriptions are prose that changes often; the golden keeps the shape.
		tl["description"] = "<description>"
	}
	b, _ := json.Marshal(tools)
	golden(t, "tools", normalize(t, string(b), nil))

	r = tackle(t, d, "", "tools", "--cwd", dir).mustCode(t, 0)
	if !strings.Contains(r.stdout, "Read") {
		t.Errorf("tools output lacks Read:\n%s", r.stdout)
	}
}

func TestCall(t *testing.T) {
	d := daemontest.Start(t)
	dir, file := project(t)
	repl := map[string]string{dir: "$DIR"}
	input := `{"file_path":"` + file + `"}`

	t.Run("json", func(t *testing.T) {
		r := tackle(t, d, "", "call", "Read", input, "--cwd", dir, "--json").mustCode(t, 0)
		golden(t, "call_read", normalize(t, r.stdout, repl))
	})
	t.Run("stdin", func(t *testing.T) {
		r := tackle(t, d, input, "call", "Read", "-", "--cwd", dir, "--json").mustCode(t, 0)
		golden(t, "call_read", normalize(t, r.stdout, repl))
	})
	t.Run("for people", func(t *testing.T) {
		r := tackle(t, d, "", "call", "Read", input, "--cwd", dir).mustCode(t, 0)
		if !strings.Contains(r.stdout, "     1\thello\n     2\tworld") {
			t.Errorf("Read output:\n%s", r.stdout)
		}
	})
	t.Run("malformed input", func(t *testing.T) {
		r := tackle(t, d, "", "call", "Read", `{"file_path": `, "--cwd", dir, "--json").mustCode(t, 1)
		res := decodeResult(t, r.stdout)
		if res.Status != "invalid" || !res.IsError {
			t.Errorf("result = %+v, want invalid is_error", res)
		}
	})
	t.Run("unknown tool", func(t *testing.T) {
		// --json keeps the result; the exit status is a usage error's.
		r := tackle(t, d, "", "call", "NoSuchTool", "{}", "--cwd", dir, "--json").mustCode(t, 2)
		res := decodeResult(t, r.stdout)
		if res.Status != "invalid" || !res.IsError || res.Name != "NoSuchTool" {
			t.Errorf("result = %+v, want NoSuchTool invalid is_error", res)
		}
		r = tackle(t, d, "", "call", "NoSuchTool", "--cwd", dir).mustCode(t, 2)
		if !strings.Contains(r.stderr, `unknown tool "NoSuchTool"`) {
			t.Errorf("stderr does not name the unknown tool:\n%s", r.stderr)
		}
	})
	t.Run("relative path", func(t *testing.T) {
		r := tackle(t, d, "", "call", "Read", `{"file_path":"hello.txt"}`, "--cwd", dir, "--json").mustCode(t, 1)
		if res := decodeResult(t, r.stdout); !res.IsError {
			t.Errorf("result = %+v, want is_error", res)
		}
	})
	t.Run("default session is reused", func(t *testing.T) {
		tackle(t, d, "", "call", "Read", input, "--cwd", dir).mustCode(t, 0)
		r := tackle(t, d, "", "sessions", "list", "--json").mustCode(t, 0)
		var list []map[string]any
		if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range list {
			if s["cwd"] == dir {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d sessions for %s, want 1:\n%s", n, dir, r.stdout)
		}
	})
	t.Run("TACKLE_SESSION", func(t *testing.T) {
		id := newSession(t, d, dir, "default")
		r := tackleEnv(t, env(d, "TACKLE_SESSION="+id), "", "call", "Read", input, "--json").mustCode(t, 0)
		decodeResult(t, r.stdout)
		r = tackle(t, d, "", "sessions", "show", id, "--json").mustCode(t, 0)
		var s map[string]any
		json.Unmarshal([]byte(r.stdout), &s)
		if s["last_seq"] == float64(0) {
			t.Errorf("the call did not run in session %s: %s", id, r.stdout)
		}
	})
}

// resultShape is the --json result of a call.
type resultShape struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Status  string `json:"status"`
	IsError bool   `json:"is_error"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func decodeResult(t *testing.T, s string) resultShape {
	t.Helper()
	var r resultShape
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, s)
	}
	if r.ID == "" || r.Content == nil {
		t.Errorf("result lacks id or content: %s", s)
	}
	return r
}

func newSession(t *testing.T, d *daemontest.Daemon, dir, mode string) string {
	t.Helper()
	r := tackle(t, d, "", "sessions", "new", "--cwd", dir, "--permission-mode", mode, "--json").mustCode(t, 0)
	var s struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.ID == "" {
		t.Fatalf("sessions new: %v\n%s", err, r.stdout)
	}
	return s.ID
}

func TestUsageErrors(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	tests := []struct {
		name    string
		stdin   string
		args    []string
		wantErr string
	}{
		{"unknown command", "", []string{"frobnicate"}, "unknown command"},
		{"unknown flag", "", []string{"status", "--frob"}, "unknown flag"},
		{"call without a name", "", []string{"call"}, "arg"},
		{"call with too many arguments", "", []string{"call", "Read", "{}", "extra"}, "arg"},
		{"bad permission mode", "", []string{"call", "Read", "{}", "--cwd", dir, "--permission-mode", "yolo"}, "--permission-mode"},
		{"bad permission timeout", "", []string{"call", "Read", "--permission-timeout", "soon"}, "permission-timeout"},
		{"batch not JSON", "[{", []string{"batch", "--cwd", dir}, "JSON array"},
		{"batch not an array", `{"name":"Read"}`, []string{"batch", "--cwd", dir}, "JSON array"},
		{"empty batch", `[]`, []string{"batch", "--cwd", dir}, "empty"},
		{"unknown session", "", []string{"call", "Read", "{}", "--session", "no-such-session"}, "no-such-session"},
		{"sessions show unknown", "", []string{"sessions", "show", "no-such-session"}, `no session "no-such-session"`},
		{"sessions new bad mode", "", []string{"sessions", "new", "--cwd", dir, "--permission-mode", "yolo"}, "--permission-mode"},
		{"mcp add with neither URL nor command", "", []string{"mcp", "add", "x"}, "NAME URL"},
		{"mcp add URL without transport", "", []string{"mcp", "add", "x", "http://127.0.0.1:9/mcp"}, "--transport http or sse"},
		{"mcp add bad scope", "", []string{"mcp", "add", "--scope", "team", "x", "--", "true"}, "--scope"},
		{"mcp add header on stdio", "", []string{"mcp", "add", "-H", "A: b", "x", "--", "true"}, "--header"},
		{"mcp add bad env", "", []string{"mcp", "add", "-e", "NOEQUALS", "x", "--", "true"}, "K=V"},
		{"mcp add-json not an object", "", []string{"mcp", "add-json", "x", "[1]"}, "JSON object"},
		{"mcp approve nothing", "", []string{"mcp", "approve"}, "--all"},
		{"mcp prompt bad argument", "", []string{"mcp", "prompt", "srv", "p", "novalue"}, "NAME=VALUE"},
		{"mcp serve with --session and --cwd", "", []string{"mcp", "serve", "--session", "s_1", "--cwd", dir}, "--session or --cwd, not both"},
		{"mcp serve unknown session", "", []string{"mcp", "serve", "--session", "no-such-session"}, `no session "no-such-session"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tackle(t, d, tt.stdin, tt.args...).mustCode(t, 2)
			if !strings.Contains(r.stderr, tt.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantErr, r.stderr)
			}
		})
	}
}

// mcp serve --session with a mistyped id names the nearest session, as
// the other commands do, and does not serve.
func TestMcpServeMistypedSession(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	sid := newSession(t, d, dir, "default")
	typo := sid[:len(sid)-1] + string("0123456789abcdef"[(strings.IndexByte("0123456789abcdef", sid[len(sid)-1])+1)%16])
	r := tackle(t, d, "", "mcp", "serve", "--session", typo).mustCode(t, 2)
	if !strings.Contains(r.stderr, "did you mean") || !strings.Contains(r.stderr, sid) {
		t.Errorf("stderr does not suggest %s for %s:\n%s", sid, typo, r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("serve wrote to stdout: %q", r.stdout)
	}
}

func TestBatchJSON(t *testing.T) {
	d := daemontest.Start(t)
	dir, file := project(t)
	other := filepath.Join(dir, "other.txt")
	if err := os.WriteFile(other, []byte("second file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	batch := `[
		{"id": "a", "name": "Read", "input": {"file_path": "` + file + `"}},
		{"name": "Read", "input": {"file_path": "` + other + `"}},
		{"id": "c", "name": "NoSuchTool", "input": {}}
	]`
	r := tackle(t, d, batch, "batch", "--cwd", dir, "--json").mustCode(t, 1)
	var res []resultShape
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 3 || res[0].ID != "a" || res[1].ID == "" || res[2].ID != "c" {
		t.Fatalf("results not in input order with ids: %+v", res)
	}
	golden(t, "batch", normalize(t, r.stdout, map[string]string{dir: "$DIR"}))

	ok := `[{"name": "Read", "input": {"file_path": "` + file + `"}}]`
	r = tackle(t, d, ok, "batch", "--cwd", dir).mustCode(t, 0)
	if !strings.Contains(r.stdout, "hello") {
		t.Errorf("batch output:\n%s", r.stdout)
	}
}

func TestSessions(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	repl := map[string]string{dir: "$DIR"}

	r := tackle(t, d, "", "sessions", "new", "--cwd", dir, "--permission-mode", "acceptEdits", "--json").mustCode(t, 0)
	golden(t, "sessions_new", normalize(t, r.stdout, repl))
	var s struct {
		ID             string          `json:"id"`
		Cwd            string          `json:"cwd"`
		PermissionMode string          `json:"permission_mode"`
		Todos          json.RawMessage `json:"todos"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}

	r = tackle(t, d, "", "sessions", "show", s.ID, "--json").mustCode(t, 0)
	golden(t, "sessions_show", normalize(t, r.stdout, repl))
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatal(err)
	}
	if s.Cwd != dir || s.PermissionMode != "acceptEdits" || string(s.Todos) != "[]" {
		t.Errorf("sessions show = %+v", s)
	}

	r = tackle(t, d, "", "sessions", "list", "--json").mustCode(t, 0)
	if !strings.Contains(r.stdout, s.ID) {
		t.Errorf("sessions list lacks %s:\n%s", s.ID, r.stdout)
	}
	r = tackle(t, d, "", "sessions", "list").mustCode(t, 0)
	if !strings.Contains(r.stdout, s.ID) || !strings.Contains(r.stdout, "acceptEdits") {
		t.Errorf("sessions list lacks %s:\n%s", s.ID, r.stdout)
	}

	tackle(t, d, "", "sessions", "rm", s.ID).mustCode(t, 0)
	tackle(t, d, "", "sessions", "show", s.ID).mustCode(t, 2)
}

func TestAttachJSON(t *testing.T) {
	d := daemontest.Start(t)
	dir, file := project(t)
	id := newSession(t, d, dir, "default")

	ctx, cancel := context.WithCancel(context.Background())
	out, errb := newLineBuffer(), newLineBuffer()
	done := make(chan int)
	go func() {
		done <- Main(ctx, []string{"attach", "--session", id, "--json"}, strings.NewReader(""), out, errb, env(d))
	}()
	out.waitFor(t, `"type":"snapshot"`)

	tackle(t, d, "", "call", "Read", `{"file_path":"`+file+`"}`, "--session", id).mustCode(t, 0)
	out.waitFor(t, `"type":"turn_ended"`)
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("attach exit code %d after interrupt, want 0; stderr:\n%s", code, errb.String())
	}

	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev struct {
			Seq  *uint64 `json:"seq"`
			Type string  `json:"type"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Seq == nil || ev.Type == "" {
			t.Errorf("line without seq and type: %s", line)
		}
		lines = append(lines, strings.TrimSuffix(normalize(t, line, map[string]string{dir: "$DIR"}), "\n"))
	}
	golden(t, "attach", "["+strings.Join(lines, ",\n")+"]\n")

	// --from replays what happened before.
	ctx, cancel = context.WithCancel(context.Background())
	out = newLineBuffer()
	go func() {
		done <- Main(ctx, []string{"attach", "--session", id, "--from", "1", "-v"}, strings.NewReader(""), out, errb, env(d))
	}()
	out.waitFor(t, "turn_ended")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("attach --from exit code %d, want 0", code)
	}
	if !strings.Contains(out.String(), "call_result Read") {
		t.Errorf("replay lacks the Read result:\n%s", out.String())
	}
}

func TestDaemonStop(t *testing.T) {
	d := daemontest.Start(t)
	tackle(t, d, "", "daemon", "stop").mustCode(t, 0)
	<-d.Done()
	// Gone: stopping again succeeds and starts nothing.
	tackle(t, d, "", "daemon", "stop").mustCode(t, 0)
	if _, err := os.Lstat(d.Socket()); !os.IsNotExist(err) {
		t.Errorf("socket after stop: %v", err)
	}
}

func TestNoAutostart(t *testing.T) {
	dir, err := os.MkdirTemp("", "tkn")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "tackled.sock")
	environ := []string{"TACKLE_SOCKET=" + sock, "HOME=" + dir, "PATH="}
	for _, args := range [][]string{
		{"--no-autostart", "status", "--json"},
		{"call", "Read", "{}", "--no-autostart", "--cwd", dir},
		{"--socket", sock, "--no-autostart", "sessions", "list"},
	} {
		r := tackleEnv(t, environ, "", args...).mustCode(t, 2)
		if !strings.Contains(r.stderr, "no tackled daemon") {
			t.Errorf("%v: stderr:\n%s", args, r.stderr)
		}
	}
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("a socket appeared: %v", err)
	}
}

// startCall runs `tackle call` in the background; the result comes on the channel.
func startCall(ctx context.Context, d *daemontest.Daemon, out, errb *lineBuffer, args ...string) <-chan int {
	done := make(chan int, 1)
	go func() {
		done <- Main(ctx, append([]string{"call"}, args...), strings.NewReader(""), out, errb, env(d))
	}()
	return done
}

// requestID finds the permission request id in tackle's notice on stderr.
func requestID(t *testing.T, stderr string) string {
	t.Helper()
	_, rest, ok := strings.Cut(stderr, "(request ")
	id, _, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 {
		t.Fatalf("no request id in:\n%s", stderr)
	}
	return id
}

func TestCallPermission(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	target := filepath.Join(dir, "new.txt")
	write := `{"file_path":"` + target + `","content":"one\ntwo\n"}`

	t.Run("another client answers", func(t *testing.T) {
		out, errb := newLineBuffer(), newLineBuffer()
		done := startCall(context.Background(), d, out, errb, "Write", write, "--cwd", dir)
		errb.waitFor(t, "waits for approval")
		sid := newestSession(t, d, dir)
		resp, err := d.Client().AnswerPermission(context.Background(), &tacklev1.AnswerPermissionRequest{
			Answer: &tacklev1.PermissionAnswer{SessionId: sid, RequestId: requestID(t, errb.String()), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE},
		})
		if err != nil || !resp.GetAccepted() {
			t.Fatalf("AnswerPermission: %v, %v", resp, err)
		}
		if code := <-done; code != 0 {
			t.Fatalf("exit code %d, want 0\n%s\n%s", code, out.String(), errb.String())
		}
		// For people, a Write shows a diff, uncoloured when stdout is no terminal.
		if !strings.Contains(out.String(), "+++ ") || !strings.Contains(out.String(), "+two") || strings.Contains(out.String(), "\x1b[") {
			t.Errorf("Write output is not a plain diff:\n%q", out.String())
		}
		if b, _ := os.ReadFile(target); string(b) != "one\ntwo\n" {
			t.Errorf("file = %q", b)
		}
	})
	t.Run("nobody answers", func(t *testing.T) {
		r := tackle(t, d, "", "call", "Write", `{"file_path":"`+filepath.Join(dir, "never.txt")+`","content":"x"}`,
			"--cwd", dir, "--permission-timeout", "1", "--json").mustCode(t, 1)
		if res := decodeResult(t, r.stdout); res.Status != "denied" {
			t.Errorf("result = %+v, want denied", res)
		}
		if !strings.Contains(r.stderr, "waits for approval") {
			t.Errorf("stderr does not say the call waits:\n%s", r.stderr)
		}
	})
	t.Run("plan mode denies", func(t *testing.T) {
		r := tackle(t, d, "", "call", "Write", write, "--cwd", dir, "--permission-mode", "plan", "--json").mustCode(t, 1)
		if res := decodeResult(t, r.stdout); res.Status != "denied" {
			t.Errorf("result = %+v, want denied", res)
		}
	})
	t.Run("interrupt cancels", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		out, errb := newLineBuffer(), newLineBuffer()
		done := startCall(ctx, d, out, errb, "Write", `{"file_path":"`+filepath.Join(dir, "cancelled.txt")+`","content":"x"}`, "--cwd", dir, "--json")
		errb.waitFor(t, "waits for approval")
		cancel()
		if code := <-done; code != 1 {
			t.Fatalf("exit code %d, want 1\n%s\n%s", code, out.String(), errb.String())
		}
		if res := decodeResult(t, out.String()); res.Status != "cancelled" {
			t.Errorf("result = %+v, want cancelled", res)
		}
	})
}

// newestSession is the id of the newest session of dir.
func newestSession(t *testing.T, d *daemontest.Daemon, dir string) string {
	t.Helper()
	r := tackle(t, d, "", "sessions", "list", "--json").mustCode(t, 0)
	var list []struct{ ID, Cwd string }
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Cwd == dir {
			return s.ID
		}
	}
	t.Fatalf("no session for %s", dir)
	return ""
}

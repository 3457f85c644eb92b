package integration

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

type mcpServerJSON struct {
	Name      string   `json:"name"`
	Scope     string   `json:"scope"`
	Source    string   `json:"source"`
	Transport string   `json:"transport"`
	State     string   `json:"state"`
	Error     string   `json:"error"`
	PID       int      `json:"pid"`
	Tools     int      `json:"tools"`
	Prompts   int      `json:"prompts"`
	Sessions  []string `json:"sessions"`
	Restarts  int      `json:"restarts"`
	LogPath   string   `json:"log_path"`
	ToolNames []string `json:"tool_names"`
	RetryAt   string   `json:"retry_at"`
	Attempts  int      `json:"attempts"`
}

// mcpServer returns the named server of `tackle mcp list` (with args).
func (e *env) mcpServer(name string, args ...string) (mcpServerJSON, bool) {
	e.t.Helper()
	var list []mcpServerJSON
	e.json(&list, "", append([]string{"mcp", "list"}, args...)...)
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
	}
	return mcpServerJSON{}, false
}

// waitMCP polls `tackle mcp list` until the named server satisfies ok, or
// fails after 60 s with the last state.
func (e *env) waitMCP(name string, ok func(mcpServerJSON) bool, args ...string) mcpServerJSON {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		s, found := e.mcpServer(name, args...)
		if found && ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("MCP server %s: still %+v after 60 s", name, s)
		}
		time.Sleep(100 * time.Millisecond) // polling a state another process changes
	}
}

func connected(s mcpServerJSON) bool { return s.State == "connected" && s.Tools > 0 }

// callJSON runs `tackle call NAME INPUT --json` with extra args.
func (e *env) callJSON(name string, input any, args ...string) (resultJSON, runResult) {
	e.t.Helper()
	var res resultJSON
	r := e.json(&res, "", append([]string{"call", name, mustJSON(input)}, args...)...)
	return res, r
}

// calledJSON is what callJSON returns, for callLater.
type calledJSON struct {
	res resultJSON
	r   runResult
}

// callLater runs callJSON in the background; its outcome comes on the
// channel.
func (e *env) callLater(name string, input any, args ...string) <-chan calledJSON {
	done := make(chan calledJSON, 1)
	go func() {
		res, r := e.callJSON(name, input, args...)
		done <- calledJSON{res, r}
	}()
	return done
}

// processesWith counts live processes whose environment holds marker.
func processesWith(t *testing.T, marker string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "environ"))
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte(marker)) {
			if st, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat")); err == nil && strings.Contains(string(st), ") Z ") {
				continue // a zombie is not a server
			}
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestMCPProjectServerNeedsTrustAndApproval(t *testing.T) {
	e := newEnv(t)
	bin := testpeers.Bin(t, "mcp-server-everything")
	marker := "TACKLE_MCP_MARKER=" + e.root
	e.write(".mcp.json", mustJSON(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": bin, "args": []string{"stdio"}, "env": map[string]string{"TACKLE_MCP_MARKER": e.root}},
	}}))

	s, ok := e.mcpServer("everything")
	if !ok || s.State != "needs-trust" || s.Scope != "project" || s.PID != 0 {
		t.Fatalf("untrusted .mcp.json server: %+v (found %v); want needs-trust, no process", s, ok)
	}
	if pids := processesWith(t, marker); len(pids) != 0 {
		t.Fatalf("an unapproved server was started: pids %v", pids)
	}
	res, r := e.callJSON("mcp__everything__echo", map[string]any{"message": "hi"}, "--permission-mode", "bypassPermissions")
	if r.code != 1 || res.Status != "invalid" || !strings.Contains(res.text(), `MCP server "everything" needs trust: it comes from`) || !strings.Contains(res.text(), "tackle trust") {
		t.Fatalf("calling an unapproved server's tool: code %d %+v", r.code, res)
	}

	// Approval alone is not enough while the workspace is untrusted, and
	// mcp approve says so.
	if r := e.tackle("", "mcp", "approve", "everything"); r.code != 0 || !strings.Contains(r.stdout, "is not trusted") || !strings.Contains(r.stdout, "tackle trust") {
		t.Fatalf("mcp approve: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(e.project, ".tackle", "settings.local.json")); err != nil || !strings.Contains(string(b), "enabledMcpjsonServers") {
		t.Fatalf("approval not recorded in .tackle/settings.local.json: %q %v", b, err)
	}
	if s, _ := e.mcpServer("everything"); s.State != "needs-trust" {
		t.Fatalf("approved but untrusted: %+v; want needs-trust", s)
	}
	if r := e.tackle("", "trust"); r.code != 0 {
		t.Fatalf("trust: %d %s", r.code, r.stderr)
	}
	s = e.waitMCP("everything", connected)
	if s.PID <= 0 {
		t.Fatalf("connected server without a pid: %+v", s)
	}

	// The pool holds its tools; a call goes through the one pipeline.
	var tools []struct {
		Name string `json:"name"`
	}
	e.json(&tools, "", "tools")
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "mcp__everything__echo") {
		t.Fatalf("tools lack mcp__everything__echo: %v", names)
	}
	res, r = e.callJSON("mcp__everything__echo", map[string]any{"message": "hi"}, "--permission-mode", "bypassPermissions")
	if r.code != 0 || res.Status != "completed" || !strings.Contains(res.text(), "hi") {
		t.Fatalf("echo: code %d %+v %s", r.code, res, r.stderr)
	}
	// A server's readOnlyHint does not allow a call by itself: nobody answers, it is denied.
	res, r = e.callJSON("mcp__everything__echo", map[string]any{"message": "hi"}, "--permission-timeout", "1")
	if r.code != 1 || res.Status != "denied" {
		t.Fatalf("echo in default mode with nobody to answer: code %d %+v", r.code, res)
	}
	// The request shows the server, the tool and the input as indented JSON.
	if want := "    server: everything\n    tool:   echo\n    input:\n    {\n      \"message\": \"hi\"\n    }\n"; !strings.Contains(r.stderr, want) {
		t.Errorf("the permission notice lacks the MCP preview %q:\n%s", want, r.stderr)
	}
	// A rule naming the server allows its tools.
	settings := filepath.Join(e.root, "config", "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(settings, []byte(`{"permissions":{"allow":["mcp__everything"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	res, r = e.callJSON("mcp__everything__echo", map[string]any{"message": "ruled"})
	if r.code != 0 || !strings.Contains(res.text(), "ruled") {
		t.Fatalf("echo allowed by the rule mcp__everything: code %d %+v", r.code, res)
	}
	// The server's schema is enforced before the server sees the call.
	res, r = e.callJSON("mcp__everything__echo", map[string]any{"msg": 1}, "--permission-mode", "bypassPermissions")
	if r.code != 1 || res.Status != "invalid" || !strings.Contains(res.text(), "message") {
		t.Fatalf("echo without message: code %d %+v", r.code, res)
	}
	// Stdio servers get the project directory.
	res, _ = e.callJSON("mcp__everything__get-env", map[string]any{}, "--permission-mode", "bypassPermissions")
	if !strings.Contains(res.text(), "CLAUDE_PROJECT_DIR") || !strings.Contains(res.text(), "TACKLE_PROJECT_DIR") {
		t.Errorf("server environment lacks the project dir variables: %.300s", res.text())
	}

	// Prompts are listed and rendered.
	r = e.tackle("", "mcp", "prompts", "everything")
	if r.code != 0 || !strings.Contains(r.stdout, "/mcp__everything__args-prompt") {
		t.Fatalf("mcp prompts: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = e.tackle("", "mcp", "prompt", "everything", "args-prompt", "city=Lyon")
	if r.code != 0 || !strings.Contains(r.stdout, "Lyon") {
		t.Fatalf("mcp prompt args-prompt: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = e.tackle("", "mcp", "prompt", "everything", "args-prompt")
	if r.code == 0 || !strings.Contains(r.stderr, "city") {
		t.Fatalf("a prompt without its required argument: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if r := e.tackle("", "mcp", "logs", "everything"); r.code != 0 {
		t.Fatalf("mcp logs: %d %s", r.code, r.stderr)
	}
	if pids := processesWith(t, marker); len(pids) != 1 {
		t.Fatalf("want one server process, have %v", pids)
	}
}

func TestMCPOneProcessForTenSessions(t *testing.T) {
	e := newEnv(t)
	bin := testpeers.Bin(t, "mcp-server-everything")
	marker := "TACKLE_MCP_MARKER=" + e.root
	r := e.tackle("", "mcp", "add", "--scope", "user", "-e", "TACKLE_MCP_MARKER="+e.root, "every", "--", bin, "stdio")
	if r.code != 0 || !strings.Contains(r.stdout, filepath.Join(e.root, "config", "tackle", "settings.json")) {
		t.Fatalf("mcp add --scope user: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var ids []string
	for i := 0; i < 10; i++ {
		var sess struct {
			ID string `json:"id"`
		}
		e.json(&sess, "", "sessions", "new")
		ids = append(ids, sess.ID)
	}
	for i, id := range ids {
		if i > 0 { // the first call does not wait: it waits for the server to connect
			e.waitMCP("every", connected, "--session", id)
		}
		res, r := e.callJSON("mcp__every__echo", map[string]any{"message": id}, "--session", id, "--permission-mode", "bypassPermissions")
		if r.code != 0 || !strings.Contains(res.text(), id) {
			t.Fatalf("echo in session %s: %d %+v", id, r.code, res)
		}
	}
	var all []mcpServerJSON
	e.json(&all, "", "mcp", "list", "--all")
	if len(all) != 1 || len(all[0].Sessions) < 10 {
		t.Fatalf("daemon-wide servers: %+v; want one shared by the ten sessions", all)
	}
	if pids := processesWith(t, marker); len(pids) != 1 {
		t.Fatalf("ten sessions: want exactly one server process, have %v", pids)
	}
	if r := e.tackle("", "mcp", "remove", "every"); r.code != 0 {
		t.Fatalf("mcp remove: %d %s", r.code, r.stderr)
	}
	if r := e.tackle("", "mcp", "get", "every"); r.code == 0 {
		t.Fatalf("a removed server is still listed: %s", r.stdout)
	}
}

func TestMCPServerKilledMidCall(t *testing.T) {
	e := newEnv(t)
	bin := testpeers.Bin(t, "mcp-server-everything")
	e.write("mcp.json", mustJSON(map[string]any{"mcpServers": map[string]any{
		"slow": map[string]any{"command": bin, "args": []string{"stdio"}},
	}}))
	var sess struct {
		ID string `json:"id"`
	}
	e.json(&sess, "", "sessions", "new", "--mcp-config", filepath.Join(e.project, "mcp.json"))
	s := e.waitMCP("slow", connected, "--session", sess.ID)
	if s.Scope != "session" {
		t.Errorf("--mcp-config server scope %q, want session", s.Scope)
	}

	done := e.callLater("mcp__slow__trigger-long-running-operation", map[string]any{"duration": 30, "steps": 30},
		"--session", sess.ID, "--permission-mode", "bypassPermissions")
	// Kill the server once the call is running on it (its progress reached the log).
	attachUntil(t, e, sess.ID, func(ev map[string]any) bool {
		return ev["type"] == "call_progress" || (ev["type"] == "call_state" && ev["state"] == "running")
	})
	if err := syscall.Kill(s.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var o calledJSON
	select {
	case o = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the call did not end after its server was killed")
	}
	if o.r.code != 1 || o.res.Status != "failed" || !strings.Contains(o.res.text(), "slow") || !strings.Contains(o.res.text(), "killed") {
		t.Fatalf("call on a killed server: code %d %+v", o.r.code, o.res)
	}
	// The server is restarted and serves the next call; the killed call is not retried.
	oldPID := s.PID
	s2 := e.waitMCP("slow", func(s mcpServerJSON) bool { return connected(s) && s.PID != oldPID }, "--session", sess.ID)
	if s2.Restarts < 1 {
		t.Errorf("restarted server reports %d restarts", s2.Restarts)
	}
	res, r := e.callJSON("mcp__slow__echo", map[string]any{"message": "again"}, "--session", sess.ID, "--permission-mode", "bypassPermissions")
	if r.code != 0 || !strings.Contains(res.text(), "again") {
		t.Fatalf("echo after the restart: %d %+v", r.code, res)
	}
}

func TestMCPConfigProblemsExpansionAndEvents(t *testing.T) {
	e := newEnv(t)
	bin := testpeers.Bin(t, "mcp-server-everything")
	// One good server, two broken entries: the broken ones are reported with
	// their file and name, the good one runs.
	e.write("mcp.json", `{"mcpServers":{
  "good": {"command": "`+bin+`", "args": ["stdio"], "timeout": 700,
           "env": {"FROM_SESSION": "${TACKLE_TEST_VALUE}", "DEFAULTED": "${TACKLE_TEST_UNSET:-fallback}", "LITERAL": "${TACKLE_TEST_UNSET}"}},
  "nourltype": {"url": "http://127.0.0.1:1/mcp"},
  "nocommand": {"type": "stdio"}
}}`)
	e.vars = append(e.vars, "TACKLE_TEST_VALUE=from-the-client")
	var sess struct {
		ID string `json:"id"`
	}
	e.json(&sess, "", "sessions", "new", "--mcp-config", filepath.Join(e.project, "mcp.json"))
	r := e.tackle("", "mcp", "list", "--session", sess.ID)
	if r.code != 0 || !strings.Contains(r.stderr, "nourltype") || !strings.Contains(r.stderr, "nocommand") || !strings.Contains(r.stderr, "mcp.json") {
		t.Fatalf("mcp list with broken entries: code %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	s := e.waitMCP("good", connected, "--session", sess.ID)

	// The pool change reached the session's event log (server-everything
	// also announces tools/list_changed right after it starts).
	attachUntil(t, e, sess.ID, func(ev map[string]any) bool {
		return ev["type"] == "tools_changed" && ev["text"] == "good"
	})

	// ${VAR} comes from the session's environment; an unset one without a
	// default stays literal and is reported.
	res, r := e.callJSON("mcp__good__get-env", map[string]any{}, "--session", sess.ID, "--permission-mode", "bypassPermissions")
	if r.code != 0 {
		t.Fatalf("get-env: %d %+v", r.code, res)
	}
	for _, want := range []string{`"FROM_SESSION": "from-the-client"`, `"DEFAULTED": "fallback"`, `"LITERAL": "${TACKLE_TEST_UNSET}"`} {
		if !strings.Contains(res.text(), want) {
			t.Errorf("server environment lacks %s:\n%.2000s", want, res.text())
		}
	}
	var got mcpServerJSON
	e.json(&got, "", "mcp", "get", "good", "--session", sess.ID)
	if got.PID != s.PID || !strings.Contains(strings.Join(got.ToolNames, " "), "mcp__good__echo") {
		t.Errorf("mcp get good: %+v", got)
	}
	r = e.tackle("", "mcp", "get", "good", "--session", sess.ID)
	if !strings.Contains(r.stdout, "TACKLE_TEST_UNSET") {
		t.Errorf("mcp get does not warn about the unset variable:\n%s", r.stdout)
	}

	// The per-server timeout (700 ms) ends a slow call with an error naming
	// the server; the server stays connected.
	res, r = e.callJSON("mcp__good__trigger-long-running-operation", map[string]any{"duration": 20, "steps": 4},
		"--session", sess.ID, "--permission-mode", "bypassPermissions")
	if r.code != 1 || res.Status != "failed" || !strings.Contains(res.text(), "timed out") || !strings.Contains(res.text(), "good") {
		t.Fatalf("slow call past the server timeout: code %d %+v", r.code, res)
	}
	res, r = e.callJSON("mcp__good__echo", map[string]any{"message": "still here"}, "--session", sess.ID, "--permission-mode", "bypassPermissions")
	if r.code != 0 || !strings.Contains(res.text(), "still here") {
		t.Fatalf("echo after a timed-out call: %d %+v", r.code, res)
	}
	if got, _ := e.mcpServer("good", "--session", sess.ID); got.PID != s.PID {
		t.Errorf("the server was restarted by a timeout: pid %d → %d", s.PID, got.PID)
	}
}

// startHTTPEverything runs server-everything's Streamable HTTP (mode
// "streamableHttp", path /mcp) or SSE (mode "sse", path /sse) server on
// port, in its own process group; stop kills the group and waits.
func startHTTPEverything(t testing.TB, mode string, port int) (stop func()) {
	t.Helper()
	cmd := exec.Command(testpeers.Bin(t, "mcp-server-everything"), mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	}
	t.Cleanup(stop)
	// Wait until it listens: it says so on its output.
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), strconv.Itoa(port)) {
				close(ready)
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatalf("server-everything %s did not start listening on %d", mode, port)
	}
	return stop
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestMCPHTTPServerRestartedOnTheSamePort(t *testing.T) {
	e := newEnv(t)
	port := freePort(t)
	stop := startHTTPEverything(t, "streamableHttp", port)
	ssePort := freePort(t)
	startHTTPEverything(t, "sse", ssePort)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	if r := e.tackle("", "mcp", "add", "--transport", "http", "-H", "X-Tackle-Test: yes", "web", url); r.code != 0 {
		t.Fatalf("mcp add http: %d %s", r.code, r.stderr)
	}
	if r := e.tackle("", "mcp", "add", "--transport", "sse", "legacy", "http://127.0.0.1:"+strconv.Itoa(ssePort)+"/sse"); r.code != 0 {
		t.Fatalf("mcp add sse: %d %s", r.code, r.stderr)
	}
	// Local scope lives in the untrusted project's .tackle/settings.local.json: trust it.
	if r := e.tackle("", "trust"); r.code != 0 {
		t.Fatalf("trust: %d %s", r.code, r.stderr)
	}
	e.waitMCP("web", connected)
	e.waitMCP("legacy", connected)
	for _, srv := range []string{"web", "legacy"} {
		res, r := e.callJSON("mcp__"+srv+"__echo", map[string]any{"message": "over " + srv}, "--permission-mode", "bypassPermissions")
		if r.code != 0 || !strings.Contains(res.text(), "over "+srv) {
			t.Fatalf("echo over %s: %d %+v", srv, r.code, res)
		}
	}

	// The HTTP server goes away: the call fails naming the server; the SSE server is not affected.
	stop()
	res, r := e.callJSON("mcp__web__echo", map[string]any{"message": "down"}, "--permission-mode", "bypassPermissions")
	if r.code != 1 || !strings.Contains(res.text(), "web") {
		t.Fatalf("echo while the server is down: %d %+v", r.code, res)
	}
	res, r = e.callJSON("mcp__legacy__echo", map[string]any{"message": "unaffected"}, "--permission-mode", "bypassPermissions")
	if r.code != 0 || !strings.Contains(res.text(), "unaffected") {
		t.Fatalf("the SSE server was affected: %d %+v", r.code, res)
	}
	// It comes back on the same port (a new process: its sessions are gone):
	// tackle reconnects and re-initialises; a call is never retried, so at
	// most one call may still fail.
	startHTTPEverything(t, "streamableHttp", port)
	var last resultJSON
	ok := false
	for i := 0; i < 3 && !ok; i++ {
		if i > 0 {
			e.waitMCP("web", connected)
		}
		last, r = e.callJSON("mcp__web__echo", map[string]any{"message": "back"}, "--permission-mode", "bypassPermissions")
		ok = r.code == 0 && strings.Contains(last.text(), "back")
		if !ok {
			t.Logf("call %d after the restart: %+v", i, last)
		}
	}
	if !ok {
		t.Fatalf("echo after the HTTP server came back: %+v", last)
	}
}

// The first command in a directory may be a tackle mcp one: the default
// session it opens records this client's environment, so ${VAR}s expand.
func TestMCPFirstCommandOpensSessionWithEnvironment(t *testing.T) {
	e := newEnv(t)
	e.vars = append(e.vars, "TACKLE_TEST_VALUE=from-the-first-client")
	r := e.tackle("", "mcp", "add", "--scope", "user", "-e", "FROM_CLIENT=${TACKLE_TEST_VALUE}", "every", "--", testpeers.Bin(t, "mcp-server-everything"), "stdio")
	if r.code != 0 {
		t.Fatalf("mcp add: %s", r.stderr)
	}
	s := e.waitMCP("every", connected)
	r = e.tackle("", "mcp", "get", "every")
	if strings.Contains(r.stdout, "TACKLE_TEST_VALUE") {
		t.Errorf("the variable was reported unset:\n%s", r.stdout)
	}
	res, _ := e.callJSON("mcp__every__get-env", map[string]any{}, "--permission-mode", "bypassPermissions")
	if !strings.Contains(res.text(), `"FROM_CLIENT": "from-the-first-client"`) {
		t.Errorf("server %d environment lacks the client's value:\n%.1500s", s.PID, res.text())
	}
}

// A server removed from the configuration leaves the session's tools at
// once, announced by tools_changed, while another session's use of the
// same connection goes on.
func TestMCPRemovedServerIsAnnounced(t *testing.T) {
	e := newEnv(t)
	bin := testpeers.Bin(t, "mcp-server-everything")
	if r := e.tackle("", "mcp", "add", "--scope", "user", "ev", "--", bin, "stdio"); r.code != 0 {
		t.Fatalf("mcp add: %+v", r)
	}
	sid := faultMCPSession(t, e)
	e.waitMCP("ev", connected, "--session", sid)
	events := attachSession(t, e, sid, tacklev1.Role_ROLE_OBSERVER)
	if r := e.tackle("", "mcp", "remove", "ev"); r.code != 0 {
		t.Fatalf("mcp remove: %+v", r)
	}
	deadline := time.AfterFunc(30*time.Second, func() { events.Close() })
	defer deadline.Stop()
	for {
		m, err := events.Recv()
		if err != nil {
			t.Fatalf("no tools_changed for the removed server within 30 s: %v", err)
		}
		if ev := m.GetEvent(); ev.GetType() == "tools_changed" && ev.GetText() == "ev" {
			break
		}
	}
	if s, found := e.mcpServer("ev", "--session", sid); found {
		t.Errorf("the removed server is still listed: %+v", s)
	}
	r := e.tackle("", "call", "mcp__ev__echo", `{"message":"gone"}`, "--session", sid, "--permission-mode", "bypassPermissions")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown tool "mcp__ev__echo"`) {
		t.Fatalf("the removed server's tool: %+v", r)
	}
}

// tackle mcp add prints the warnings of the entry it added (what tackle
// mcp list shows under it), not the ${VAR}s its sessions expand.
func TestMCPAddPrintsWarnings(t *testing.T) {
	e := newEnv(t)
	r := e.tackle("", "mcp", "add", "--scope", "user", "a__b", "--", "/bin/true")
	if r.code != 0 || !strings.Contains(r.stdout, `  warning: the name holds "__"`) {
		t.Errorf("mcp add a__b: %+v", r)
	}
	r = e.tackle("", "mcp", "add", "--scope", "user", "--transport", "http", "-H", "Authorization: Bearer ${TOKEN}", "web", "https://example.com/mcp")
	if r.code != 0 || strings.Contains(r.stdout, "warning") {
		t.Errorf("mcp add web with a ${TOKEN} header: %+v", r)
	}
}

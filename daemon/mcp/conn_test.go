package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// deadline bounds every wait for an event in these tests; nothing waits
// for time to pass.
const deadline = 90 * time.Second

type harness struct {
	t       *testing.T
	m       *Manager
	changes chan string
	logDir  string
}

func newHarness(t *testing.T, opts *Options) *harness {
	t.Helper()
	h := &harness{t: t, changes: make(chan string, 1), logDir: t.TempDir()}
	var o Options
	if opts != nil {
		o = *opts
	}
	o.LogDir = h.logDir
	o.OnChange = func(string) {
		select {
		case h.changes <- "":
		default:
		}
	}
	h.m = New(&o)
	t.Cleanup(h.m.Close)
	return h
}

// wait blocks until cond holds, re-checking at every OnChange.
func (h *harness) wait(what string, cond func() bool) {
	h.t.Helper()
	t := time.NewTimer(deadline)
	defer t.Stop()
	for !cond() {
		select {
		case <-h.changes:
		case <-t.C:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *harness) waitState(c *Conn, want ...State) Status {
	h.t.Helper()
	var st Status
	h.wait(fmt.Sprintf("%s to be %v", c.Name(), want), func() bool {
		st = c.Status()
		return slices.Contains(want, st.State)
	})
	return st
}

func everything(t testing.TB, name string, args ...string) config.MCPServer {
	if len(args) == 0 {
		args = []string{"stdio"}
	}
	return config.MCPServer{Name: name, Scope: "user", Source: "test", Type: "stdio",
		Command: testpeers.Bin(t, "mcp-server-everything"), Args: args}
}

// selfServer runs this test binary as the test server of kind.
func selfServer(t testing.TB, name, kind string, env map[string]string) config.MCPServer {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := map[string]string{testServerEnv: kind}
	for k, v := range env {
		e[k] = v
	}
	return config.MCPServer{Name: name, Scope: "user", Source: "test", Type: "stdio",
		Command: exe, Args: []string{"-test.run=^$"}, Env: e}
}

// callTool calls tool through c and returns its text.
func callTool(ctx context.Context, c *Conn, tool string, args map[string]any) (string, error) {
	var text string
	if args == nil {
		args = map[string]any{} // null arguments are rejected by zod servers
	}
	err := c.Do(ctx, func(ctx context.Context, cs *mcpsdk.ClientSession) error {
		res, err := cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return err
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcpsdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		text = b.String()
		if res.IsError {
			return fmt.Errorf("tool error: %s", text)
		}
		return nil
	})
	return text, err
}

func toolNames(c *Conn) []string {
	var names []string
	for _, t := range c.Tools() {
		names = append(names, t.Name)
	}
	return names
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

func TestStdioEverything(t *testing.T) {
	h := newHarness(t, nil)
	dir := t.TempDir()
	srv := everything(t, "everything")
	srv.Dir = dir
	srv.Env = map[string]string{"TACKLE_TEST_VAR": "from-config"}
	h.m.Use("s1", []config.MCPServer{srv}, []string{dir})
	c, ok := h.m.Conn("s1", "everything")
	if !ok {
		t.Fatal("Conn(s1, everything) not found")
	}
	st := h.waitState(c, Connected)
	if st.PID == 0 || st.Transport != "stdio" || !strings.Contains(st.ServerInfo, "everything") {
		t.Errorf("status = %+v", st)
	}
	if _, err := os.Stat(st.LogPath); err != nil {
		t.Errorf("log file: %v", err)
	}
	// server-everything registers its roots/elicitation tools after start
	// and sends tools/list_changed: the list must follow.
	h.wait("get-roots-list after tools/list_changed", func() bool {
		return slices.Contains(toolNames(c), "get-roots-list")
	})
	if len(c.Resources()) == 0 || len(c.Prompts()) == 0 {
		t.Errorf("resources %d, prompts %d: want some", len(c.Resources()), len(c.Prompts()))
	}
	ctx := testCtx(t)
	out, err := callTool(ctx, c, "echo", map[string]any{"message": "hi there"})
	if err != nil || !strings.Contains(out, "hi there") {
		t.Fatalf("echo = %q, %v", out, err)
	}
	out, err = callTool(ctx, c, "get-roots-list", nil)
	if err != nil || !strings.Contains(out, fileURI(dir)) {
		t.Errorf("get-roots-list = %q, %v; want %s", out, err, fileURI(dir))
	}
	// Elicitation is declined (and logged).
	out, err = callTool(ctx, c, "trigger-elicitation-request", nil)
	if err != nil || !strings.Contains(out, "declined") {
		t.Errorf("trigger-elicitation-request = %q, %v", out, err)
	}
	if b, _ := os.ReadFile(st.LogPath); !strings.Contains(string(b), "declined elicitation request") {
		t.Errorf("log lacks the declined elicitation: %q", b)
	}
	out, err = callTool(ctx, c, "get-env", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"CLAUDE_PROJECT_DIR": "` + dir, `"TACKLE_PROJECT_DIR": "` + dir, `"TACKLE_TEST_VAR": "from-config"`} {
		if !strings.Contains(out, want) {
			t.Errorf("server env lacks %s", want)
		}
	}
	// Progress notifications reach the watcher of their token.
	got := make(chan float64, 16)
	stop := c.WatchProgress("tok-1", func(p *mcpsdk.ProgressNotificationParams) {
		select {
		case got <- p.Progress:
		default:
		}
	})
	defer stop()
	err = c.Do(ctx, func(ctx context.Context, cs *mcpsdk.ClientSession) error {
		p := &mcpsdk.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 0.2, "steps": 2}}
		p.SetProgressToken("tok-1")
		_, err := cs.CallTool(ctx, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		select {
		case <-got:
		case <-ctx.Done():
			t.Fatalf("got %d progress notifications, want 2", i)
		}
	}
}

// childPIDs lists the live processes whose parent is this test process.
func childPIDs(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) > 2 && f[0] != "Z" && f[1] == strconv.Itoa(self) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestTenSessionsOneProcess(t *testing.T) {
	if n := len(childPIDs(t)); n != 0 {
		t.Fatalf("%d child processes before the test", n)
	}
	h := newHarness(t, nil)
	srv := everything(t, "shared")
	var dirs []string
	for i := range 10 {
		d := t.TempDir()
		dirs = append(dirs, d)
		h.m.Use(fmt.Sprintf("s%d", i), []config.MCPServer{srv}, []string{d})
	}
	c0, _ := h.m.Conn("s0", "shared")
	for i := 1; i < 10; i++ {
		if c, _ := h.m.Conn(fmt.Sprintf("s%d", i), "shared"); c != c0 {
			t.Fatalf("session s%d has a different Conn", i)
		}
	}
	st := h.waitState(c0, Connected)
	if got := childPIDs(t); len(got) != 1 || got[0] != st.PID {
		t.Fatalf("child processes = %v, want exactly [%d]", got, st.PID)
	}
	if len(st.Sessions) != 10 {
		t.Errorf("Sessions = %v", st.Sessions)
	}
	if all := h.m.Status(); len(all) != 1 {
		t.Errorf("Status() has %d entries, want 1", len(all))
	}
	// The roots are the union of the sessions' directories.
	h.wait("get-roots-list", func() bool { return slices.Contains(toolNames(c0), "get-roots-list") })
	out, err := callTool(testCtx(t), c0, "get-roots-list", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if !strings.Contains(out, fileURI(d)) {
			t.Errorf("roots lack %s", d)
		}
	}
	for i := range 9 {
		h.m.Release(fmt.Sprintf("s%d", i))
	}
	if c0.Status().State != Connected {
		t.Fatalf("released by 9 of 10 sessions: state %s", c0.Status().State)
	}
	h.m.Release("s9")
	h.m.Close() // waits for the server to stop
	if err := syscall.Kill(st.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server process %d still exists after the last Release (kill 0: %v)", st.PID, err)
	}
	if got := childPIDs(t); len(got) != 0 {
		t.Errorf("child processes after Close: %v", got)
	}
}

func TestFilesystemRootsReplaceDirectories(t *testing.T) {
	h := newHarness(t, nil)
	configured, a, b := t.TempDir(), t.TempDir(), t.TempDir()
	srv := config.MCPServer{Name: "fs", Type: "stdio", Command: testpeers.Bin(t, "mcp-server-filesystem"), Args: []string{configured}}
	h.m.Use("s1", []config.MCPServer{srv}, []string{a})
	c, _ := h.m.Conn("s1", "fs")
	h.waitState(c, Connected)
	ctx := testCtx(t)
	// The server asks for the roots after initialize and on every
	// roots/list_changed; ask it until the answer reflects them (each call
	// is a round trip; no sleeping).
	allowed := func(want ...string) {
		t.Helper()
		var out string
		for ctx.Err() == nil {
			var err error
			out, err = callTool(ctx, c, "list_allowed_directories", nil)
			if err != nil {
				t.Fatal(err)
			}
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(out, w)
			}
			if ok && !strings.Contains(out, configured) && strings.Count(out, "\n") >= len(want) {
				return
			}
		}
		t.Fatalf("allowed directories = %q, want %v", out, want)
	}
	allowed(a)
	h.m.Use("s2", []config.MCPServer{srv}, []string{b})
	allowed(a, b)
	h.m.Release("s1")
	for ctx.Err() == nil {
		out, err := callTool(ctx, c, "list_allowed_directories", nil)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, b) && !strings.Contains(out, a) {
			break
		}
	}
}

func TestSIGKILLMidCallRestarts(t *testing.T) {
	h := newHarness(t, &Options{Backoff: 20 * time.Millisecond})
	h.m.Use("s1", []config.MCPServer{everything(t, "victim")}, nil)
	c, _ := h.m.Conn("s1", "victim")
	st := h.waitState(c, Connected)
	ctx := testCtx(t)
	started := make(chan struct{}, 1)
	stop := c.WatchProgress("slow", func(*mcpsdk.ProgressNotificationParams) {
		select {
		case started <- struct{}{}:
		default:
		}
	})
	defer stop()
	errc := make(chan error, 1)
	go func() {
		errc <- c.Do(ctx, func(ctx context.Context, cs *mcpsdk.ClientSession) error {
			p := &mcpsdk.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 60, "steps": 600}}
			p.SetProgressToken("slow")
			_, err := cs.CallTool(ctx, p)
			return err
		})
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("no progress from the slow tool")
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	var se *ServerError
	if !errors.As(err, &se) {
		t.Fatalf("Do = %v (%T), want *ServerError", err, err)
	}
	if se.Server != "victim" || se.ExitStatus != "signal: killed" || !strings.Contains(err.Error(), `"victim"`) {
		t.Errorf("ServerError = %+v (%v)", se, err)
	}
	var st2 Status
	h.wait("a restarted server", func() bool {
		st2 = c.Status()
		return st2.State == Connected && st2.PID != 0 && st2.PID != st.PID
	})
	if st2.Restarts != 1 {
		t.Errorf("Restarts = %d, want 1", st2.Restarts)
	}
	if out, err := callTool(ctx, c, "echo", map[string]any{"message": "again"}); err != nil || !strings.Contains(out, "again") {
		t.Errorf("echo after restart = %q, %v", out, err)
	}
}

func TestRestartGivesUpThenReconnect(t *testing.T) {
	h := newHarness(t, &Options{Backoff: time.Millisecond})
	gate := filepath.Join(t.TempDir(), "gate")
	srv := selfServer(t, "once", "once", map[string]string{"TACKLE_MCP_TEST_GATE": gate})
	h.m.Use("s1", []config.MCPServer{srv}, nil)
	c, _ := h.m.Conn("s1", "once")
	st := h.waitState(c, Connected)
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.wait("giving up", func() bool {
		s := c.Status()
		return s.State == Failed && strings.Contains(s.Error, "gave up")
	})
	st = c.Status()
	if st.Restarts != maxRestarts || !strings.Contains(st.Error, "exit status 3") || !strings.Contains(st.Error, "tackle mcp reconnect once") {
		t.Errorf("status after giving up = %+v", st)
	}
	_, err := callTool(testCtx(t), c, "echo", map[string]any{"text": "x"})
	var se *StateError
	if !errors.As(err, &se) || se.State != Failed {
		t.Errorf("call to a failed server = %v", err)
	}
	ctx := testCtx(t)
	if err := h.m.Reconnect(ctx, "once"); err == nil {
		t.Error("Reconnect of a server that still exits 3 succeeded")
	}
	if err := os.WriteFile(gate, []byte("ok"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := h.m.Reconnect(ctx, "once"); err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
	if out, err := callTool(ctx, c, "echo", map[string]any{"text": "back"}); err != nil || out != "echo: back" {
		t.Errorf("echo = %q, %v", out, err)
	}
	if err := h.m.Reconnect(ctx, "nosuch"); err == nil {
		t.Error("Reconnect(nosuch) succeeded")
	}
}

func TestBadServersDoNotAffectOthers(t *testing.T) {
	h := newHarness(t, &Options{StartupTimeout: 3 * time.Second})
	servers := []config.MCPServer{
		selfServer(t, "silent", "silent", nil),
		selfServer(t, "junk", "junk", nil),
		selfServer(t, "good", "good", nil),
		{Name: "nocommand", Type: "stdio", Command: filepath.Join(t.TempDir(), "does-not-exist")},
	}
	h.m.Use("s1", servers, nil)
	get := func(name string) *Conn {
		c, ok := h.m.Conn("s1", name)
		if !ok {
			t.Fatalf("no conn %s", name)
		}
		return c
	}
	ctx := testCtx(t)
	for _, name := range []string{"junk", "good"} {
		c := get(name)
		st := h.waitState(c, Connected, Failed)
		if st.State != Connected {
			t.Fatalf("%s: %+v", name, st)
		}
		if !slices.Contains(toolNames(c), "broken") {
			t.Errorf("%s: tools %v lack the one with a broken schema", name, toolNames(c))
		}
		for i := range 3 {
			arg := fmt.Sprintf("%s-%d", name, i)
			if out, err := callTool(ctx, c, "echo", map[string]any{"text": arg}); err != nil || out != "echo: "+arg {
				t.Errorf("%s: echo = %q, %v", name, out, err)
			}
		}
	}
	st := h.waitState(get("silent"), Failed)
	if !strings.Contains(st.Error, "did not finish initialize within 3s") {
		t.Errorf("silent: error %q", st.Error)
	}
	if st := h.waitState(get("nocommand"), Failed); !strings.Contains(st.Error, "does-not-exist") {
		t.Errorf("nocommand: error %q", st.Error)
	}
	b, err := os.ReadFile(get("junk").Status().LogPath)
	if err != nil || !strings.Contains(string(b), "ignored non-JSON line on stdout: Welcome to the junk server!") ||
		!strings.Contains(string(b), "junk during a call") {
		t.Errorf("junk log = %q, %v", b, err)
	}
	if _, err := callTool(ctx, get("silent"), "echo", nil); err == nil || !strings.Contains(err.Error(), `"silent" has failed`) {
		t.Errorf("call to silent = %v", err)
	}
	// A good server is still fine.
	if out, err := callTool(ctx, get("good"), "echo", map[string]any{"text": "end"}); err != nil || out != "echo: end" {
		t.Errorf("good: echo = %q, %v", out, err)
	}
}

func TestNeverStartedStates(t *testing.T) {
	h := newHarness(t, nil)
	a := everything(t, "unapproved")
	a.State = config.MCPNeedsApproval
	d := everything(t, "off")
	d.State = config.MCPDisabled
	h.m.Use("s1", []config.MCPServer{a, d}, nil)
	conns := h.m.Conns("s1")
	if len(conns) != 2 || conns[0].Name() != "off" || conns[1].Name() != "unapproved" {
		t.Fatalf("Conns = %v", conns)
	}
	for _, c := range conns {
		st := c.Status()
		if st.PID != 0 || (st.State != NeedsApproval && st.State != Disabled) {
			t.Errorf("%s: %+v", c.Name(), st)
		}
	}
	_, err := callTool(testCtx(t), conns[1], "echo", nil)
	if err == nil || !strings.Contains(err.Error(), "tackle mcp approve unapproved") {
		t.Errorf("call = %v", err)
	}
	if got := childPIDs(t); len(got) != 0 {
		t.Errorf("processes started: %v", got)
	}
	if st := h.m.Status(); len(st) != 2 || st[1].Sessions[0] != "s1" {
		t.Errorf("Status = %+v", st)
	}
}

// Use names what changed for its session: a server gone, replaced by
// another entry or changed state, not a placeholder made again the same,
// nor a server that comes new (it is announced once connected).
func TestUseNamesWhatTheSessionLost(t *testing.T) {
	h := newHarness(t, nil)
	off := everything(t, "off")
	off.State = config.MCPDisabled
	ask := everything(t, "ask")
	ask.State = config.MCPNeedsApproval
	real := everything(t, "real")
	if got := h.m.Use("s1", []config.MCPServer{off, ask, real}, nil); len(got) != 0 {
		t.Errorf("first Use changed %v", got)
	}
	h.m.Use("s2", []config.MCPServer{real}, nil) // another session keeps "real"'s connection
	if got := h.m.Use("s1", []config.MCPServer{off, ask, real}, nil); len(got) != 0 {
		t.Errorf("the same servers again changed %v", got)
	}
	ask.State = config.MCPDisabled
	other := real
	other.Args = []string{"stdio", "--another"}
	if got := h.m.Use("s1", []config.MCPServer{ask, other}, nil); !slices.Equal(got, []string{"ask", "off", "real"}) {
		t.Errorf("a state change, a removal and a replaced entry changed %v", got)
	}
	if got := h.m.Use("s1", nil, nil); !slices.Equal(got, []string{"ask", "real"}) {
		t.Errorf("removing every server changed %v", got)
	}
	// Joining s2's connection again is a change at once (nothing starts
	// to announce it later); a server new to the daemon is not.
	fresh := everything(t, "fresh")
	if got := h.m.Use("s1", []config.MCPServer{real, fresh}, nil); !slices.Equal(got, []string{"real"}) {
		t.Errorf("adding a server in use and a new one changed %v", got)
	}
	h.m.Use("s1", nil, nil)
	if st := h.m.Status(); len(st) != 1 || st[0].Name != "real" || !slices.Equal(st[0].Sessions, []string{"s2"}) {
		t.Errorf("after s1 left: %+v", st)
	}
}

// httpPeer runs server-everything in an HTTP mode on port until stop.
type httpPeer struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startHTTPPeer(t *testing.T, mode string, port int) *httpPeer {
	t.Helper()
	cmd := exec.Command(testpeers.Bin(t, "mcp-server-everything"), mode)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	p := &httpPeer{cmd: cmd, done: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		defer close(p.done)
		defer r.Close()
		sc := bufio.NewScanner(r)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "port "+strconv.Itoa(port)) {
				said = true
				ready <- !strings.Contains(sc.Text(), "in use")
			}
		}
		if !said {
			ready <- false
		}
	}()
	t.Cleanup(p.stop)
	select {
	case ok := <-ready:
		if !ok {
			t.Fatalf("server-everything %s did not start on port %d", mode, port)
		}
	case <-time.After(deadline):
		t.Fatal("server-everything did not say it listens")
	}
	return p
}

func (p *httpPeer) stop() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Wait()
	<-p.done
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestHTTPServerRestartedOnSamePort(t *testing.T) {
	port := freePort(t)
	peer := startHTTPPeer(t, "streamableHttp", port)
	h := newHarness(t, nil)
	srv := config.MCPServer{Name: "web", Type: "http", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port),
		Headers: map[string]string{"X-Tackle-Test": "yes"}}
	h.m.Use("s1", []config.MCPServer{srv}, nil)
	c, _ := h.m.Conn("s1", "web")
	st := h.waitState(c, Connected, Failed)
	if st.State != Connected {
		t.Fatalf("status %+v", st)
	}
	ctx := testCtx(t)
	if out, err := callTool(ctx, c, "echo", map[string]any{"message": "one"}); err != nil || !strings.Contains(out, "one") {
		t.Fatalf("echo = %q, %v", out, err)
	}
	peer.stop()
	_, err := callTool(ctx, c, "echo", map[string]any{"message": "down"})
	var se *ServerError
	var ste *StateError
	if !errors.As(err, &se) && !errors.As(err, &ste) {
		t.Fatalf("call to a stopped server = %v, want a ServerError or StateError", err)
	}
	t.Logf("call while down: %v", err)
	peer2 := startHTTPPeer(t, "streamableHttp", port)
	// The restarted server has forgotten the session (400); the next call
	// reconnects and re-initialises first.
	out, err := callTool(ctx, c, "echo", map[string]any{"message": "two"})
	if err != nil {
		// The first call may itself discover the lost session (and is not
		// retried); the one after it must work.
		var se *ServerError
		if !errors.As(err, &se) {
			t.Fatalf("first call after restart = %v", err)
		}
		t.Logf("first call after restart: %v", err)
		out, err = callTool(ctx, c, "echo", map[string]any{"message": "two"})
	}
	if err != nil || !strings.Contains(out, "two") {
		t.Fatalf("echo after restart = %q, %v", out, err)
	}
	if st := c.Status(); st.Restarts == 0 {
		t.Errorf("Restarts = 0 after a reconnect: %+v", st)
	}
	// Stopped and restarted between two calls: the server answers 400 for
	// the session it forgot; at most that one call fails.
	peer2.stop()
	startHTTPPeer(t, "streamableHttp", port)
	out, err = callTool(ctx, c, "echo", map[string]any{"message": "three"})
	if err != nil {
		var se *ServerError
		if !errors.As(err, &se) {
			t.Fatalf("first call after the second restart = %v", err)
		}
		t.Logf("first call after the second restart: %v", err)
		out, err = callTool(ctx, c, "echo", map[string]any{"message": "three"})
	}
	if err != nil || !strings.Contains(out, "three") {
		t.Fatalf("echo after the second restart = %q, %v", out, err)
	}
}

func TestLegacySSE(t *testing.T) {
	port := freePort(t)
	startHTTPPeer(t, "sse", port)
	h := newHarness(t, nil)
	srv := config.MCPServer{Name: "old", Type: "sse", URL: fmt.Sprintf("http://127.0.0.1:%d/sse", port)}
	h.m.Use("s1", []config.MCPServer{srv}, nil)
	c, _ := h.m.Conn("s1", "old")
	if st := h.waitState(c, Connected, Failed); st.State != Connected {
		t.Fatalf("status %+v", st)
	}
	if out, err := callTool(testCtx(t), c, "echo", map[string]any{"message": "sse works"}); err != nil || !strings.Contains(out, "sse works") {
		t.Fatalf("echo = %q, %v", out, err)
	}
}

func TestHTTPUnauthorizedNeedsAuth(t *testing.T) {
	var sawHeader atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer wrong" {
			sawHeader.Store(true)
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="test"`)
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer ts.Close()
	h := newHarness(t, nil)
	srv := config.MCPServer{Name: "locked", Type: "http", URL: ts.URL + "/mcp", Headers: map[string]string{"Authorization": "Bearer wrong"}}
	h.m.Use("s1", []config.MCPServer{srv}, nil)
	c, _ := h.m.Conn("s1", "locked")
	st := h.waitState(c, NeedsAuth, Failed, Connected)
	if st.State != NeedsAuth || !strings.Contains(st.Error, "401 Unauthorized") || !strings.Contains(st.Error, "needs authentication") {
		t.Errorf("status = %+v", st)
	}
	if !sawHeader.Load() {
		t.Error("the configured Authorization header was not sent")
	}
	_, err := callTool(testCtx(t), c, "echo", nil)
	var se *StateError
	if !errors.As(err, &se) || se.State != NeedsAuth {
		t.Errorf("call = %v", err)
	}
	h.m.Release("s1")
}

// An http server that is down when tackle connects is tried again with a
// growing delay, without any call asking, and comes back by itself.
func TestHTTPServerDownAtStartIsRetried(t *testing.T) {
	port := freePort(t)
	h := newHarness(t, &Options{Backoff: 40 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	srv := config.MCPServer{Name: "late", Type: "http", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
	h.m.Use("s1", []config.MCPServer{srv}, nil)
	c, _ := h.m.Conn("s1", "late")
	var st Status
	h.wait("three failed attempts", func() bool {
		st = c.Status()
		return st.State == Failed && st.Attempts >= 3
	})
	if !strings.Contains(st.Error, "tried again by itself") || !strings.Contains(st.Error, "(attempt ") || st.RetryAt.IsZero() {
		t.Fatalf("status while down: %+v", st)
	}
	if d := time.Until(st.RetryAt); d > 400*time.Millisecond {
		t.Errorf("next retry in %s, beyond MaxBackoff with jitter", d)
	}
	startHTTPPeer(t, "streamableHttp", port)
	st = h.waitState(c, Connected)
	if st.Attempts != 0 || !st.RetryAt.IsZero() || st.Tools == 0 {
		t.Errorf("status once back: %+v", st)
	}
	if out, err := callTool(testCtx(t), c, "echo", map[string]any{"message": "back"}); err != nil || !strings.Contains(out, "back") {
		t.Fatalf("echo = %q, %v", out, err)
	}
}

// A call in flight to an http server that dies fails soon after the
// connection error (LostCallGrace), not after the SDK's resume attempts.
func TestHTTPCallFailsWhenServerDies(t *testing.T) {
	port := freePort(t)
	peer := startHTTPPeer(t, "streamableHttp", port)
	h := newHarness(t, &Options{Backoff: 50 * time.Millisecond, LostCallGrace: 200 * time.Millisecond})
	srv := config.MCPServer{Name: "web", Type: "http", URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)}
	h.m.Use("s1", []config.MCPServer{srv}, nil)
	c, _ := h.m.Conn("s1", "web")
	h.waitState(c, Connected)
	ctx := testCtx(t)
	started := make(chan struct{}, 1)
	stop := c.WatchProgress("slow", func(*mcpsdk.ProgressNotificationParams) {
		select {
		case started <- struct{}{}:
		default:
		}
	})
	defer stop()
	errc := make(chan error, 1)
	go func() {
		errc <- c.Do(ctx, func(ctx context.Context, cs *mcpsdk.ClientSession) error {
			p := &mcpsdk.CallToolParams{Name: "trigger-long-running-operation", Arguments: map[string]any{"duration": 120, "steps": 1200}}
			p.SetProgressToken("slow")
			_, err := cs.CallTool(ctx, p)
			return err
		})
	}()
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("no progress from the slow tool")
	}
	peer.stop()
	select {
	case err := <-errc:
		var se *ServerError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "lost") {
			t.Fatalf("Do = %v (%T), want a ServerError saying the connection was lost", err, err)
		}
		t.Logf("the call failed: %v", err)
	case <-time.After(15 * time.Second):
		// The SDK's own resume attempts take about 17 s; LostCallGrace
		// is 200 ms here.
		t.Fatal("the call did not fail within 15 s of the server's death")
	}
}

// A chatty server's stderr log is rotated at the cap: two files at most,
// the server unaffected.
func TestServerLogRotates(t *testing.T) {
	h := newHarness(t, &Options{LogCap: 64 << 10})
	bin := testpeers.Bin(t, "mcp-server-everything")
	// 300 KB on stderr before the server starts, in 1 KB lines.
	srv := config.MCPServer{Name: "chatty", Scope: "user", Source: "test", Type: "stdio", Command: "bash",
		Args: []string{"-c", `for i in $(seq 300); do printf '%01023d\n' 0 >&2; done; exec "$0" stdio`, bin}}
	h.m.Use("s1", []config.MCPServer{srv}, nil)
	c, _ := h.m.Conn("s1", "chatty")
	st := h.waitState(c, Connected)
	if out, err := callTool(testCtx(t), c, "echo", map[string]any{"message": "still here"}); err != nil || !strings.Contains(out, "still here") {
		t.Fatalf("echo = %q, %v", out, err)
	}
	cur, err := os.Stat(st.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.Stat(st.LogPath + ".1")
	if err != nil {
		t.Fatalf("no rotated log: %v", err)
	}
	if cur.Size() > 64<<10 || old.Size() > 64<<10 || old.Size() < 32<<10 {
		t.Errorf("sizes: %d and %d (.1), cap %d", cur.Size(), old.Size(), 64<<10)
	}
	if _, err := os.Stat(st.LogPath + ".2"); err == nil {
		t.Error("a third log file")
	}
	if old.Mode().Perm() != 0o600 || cur.Mode().Perm() != 0o600 {
		t.Errorf("modes %v %v", old.Mode(), cur.Mode())
	}
}

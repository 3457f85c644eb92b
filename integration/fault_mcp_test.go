package integration

import (
	"context"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/daemon/mcp"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// Issue 18, faults 1 and 6 on the real binaries with their defaults: a
// remote MCP server that is down when the daemon connects is tried again by
// itself and comes back announced; a call in flight to a remote server that
// dies fails within seconds; a chatty stdio server's log is rotated at its
// cap. (Fault 7, the daemon's own crash trace, is TestPreviousDaemonExit.)

// faultMCPSession makes a session in e's project and returns its id.
func faultMCPSession(t *testing.T, e *env) string {
	t.Helper()
	var sess struct {
		ID string `json:"id"`
	}
	if r := e.json(&sess, "", "sessions", "new"); r.code != 0 || sess.ID == "" {
		t.Fatalf("sessions new: %+v", r)
	}
	return sess.ID
}

// attachSession attaches a client in role to the daemon e's CLI started,
// subscribed to the session's live events.
func attachSession(t *testing.T, e *env, sid string, role tacklev1.Role) *client.Stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := client.Dial(ctx, &client.Options{Socket: e.socket, NoAutostart: true, ClientName: "integration"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s, err := c.Attach(ctx, role)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Subscribe(sid, 0, true); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFaultMCPHTTPDownAtStart: an http server that does not listen yet
// when the session starts is `failed`, retrying, with its attempts and
// last error in `tackle mcp list`; once it listens it is connected again
// without any call asking, a tools_changed event says so, and its tools
// answer.
func TestFaultMCPHTTPDownAtStart(t *testing.T) {
	e := newEnv(t)
	port := freePort(t)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	if r := e.tackle("", "mcp", "add", "--scope", "user", "--transport", "http", "late", url); r.code != 0 {
		t.Fatalf("mcp add: %+v", r)
	}
	sid := faultMCPSession(t, e)
	events := attachSession(t, e, sid, tacklev1.Role_ROLE_OBSERVER)
	evs := make(chan *tacklev1.Event, 100)
	go func() {
		defer close(evs)
		for {
			m, err := events.Recv()
			if err != nil {
				return
			}
			if ev := m.GetEvent(); ev != nil {
				evs <- ev
			}
		}
	}()
	down := e.waitMCP("late", func(s mcpServerJSON) bool {
		return s.State == "failed" && s.Attempts >= 3 && s.RetryAt != ""
	}, "--session", sid)
	// Each attempt goes failed → connecting → failed: one failure to the
	// session, announced once, not at every attempt.
	announced := 0
	for len(evs) > 0 {
		if ev := <-evs; ev.GetType() == "tools_changed" && ev.GetText() == "late" {
			announced++
		}
	}
	if announced > 1 {
		t.Errorf("%d tools_changed events for a server that stayed down through %d attempts", announced, down.Attempts)
	}
	if down.Tools != 0 || !strings.Contains(down.Error, "connection refused") {
		t.Errorf("a server that is down: %+v", down)
	}
	// The first retries come after 1 s, then 2 s (jittered by ±20 %).
	if at, err := time.Parse(time.RFC3339Nano, down.RetryAt); err != nil || time.Until(at) > 5*time.Second {
		t.Errorf("retry_at %q (%v): more than 5 s away after %d attempts", down.RetryAt, err, down.Attempts)
	}
	r := e.tackle("", "mcp", "list", "--session", sid)
	line := regexp.MustCompile(`(?m)^  late: .*\(attempt \d+.*; retrying (now|in \d+ s)$`)
	if r.code != 0 || !line.MatchString(r.stdout) || !strings.Contains(r.stdout, "connection refused") {
		t.Fatalf("tackle mcp list while the server is down does not say when it is tried again:\n%s%s", r.stdout, r.stderr)
	}

	startHTTPEverything(t, "streamableHttp", port)
	deadline := time.AfterFunc(30*time.Second, func() { events.Close() })
	defer deadline.Stop()
	for {
		ev, ok := <-evs
		if !ok {
			t.Fatal("no tools_changed with the server connected within 30 s of it listening")
		}
		if ev.GetType() != "tools_changed" || ev.GetText() != "late" {
			continue
		}
		if s, _ := e.mcpServer("late", "--session", sid); connected(s) {
			if s.Attempts != 0 || s.RetryAt != "" || s.Error != "" {
				t.Errorf("a server that came back still shows its failure: %+v", s)
			}
			break
		}
	}
	res, r := e.callJSON("mcp__late__echo", map[string]any{"message": "back"}, "--session", sid, "--permission-mode", "bypassPermissions")
	if r.code != 0 || !strings.Contains(res.text(), "back") {
		t.Fatalf("echo once the server listens: %d %+v", r.code, res)
	}
}

// TestFaultMCPHTTPDiesMidCall: a call running on an http server that is
// SIGKILLed fails within 5 s of the kill (the go-sdk's own reconnection
// attempts took ~17 s), saying the connection was lost; the server is
// tried again and serves the next call once it is back.
func TestFaultMCPHTTPDiesMidCall(t *testing.T) {
	e := newEnv(t)
	port := freePort(t)
	stop := startHTTPEverything(t, "streamableHttp", port)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	if r := e.tackle("", "mcp", "add", "--scope", "user", "--transport", "http", "web", url); r.code != 0 {
		t.Fatalf("mcp add: %+v", r)
	}
	sid := faultMCPSession(t, e)
	e.waitMCP("web", connected, "--session", sid)
	events := attachSession(t, e, sid, tacklev1.Role_ROLE_OBSERVER)

	done := e.callLater("mcp__web__trigger-long-running-operation", map[string]any{"duration": 60, "steps": 60},
		"--session", sid, "--permission-mode", "bypassPermissions")
	// Kill the server once the call has reached it (its first progress).
	for {
		m, err := events.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev := m.GetEvent(); ev.GetType() == "call_progress" && ev.GetTool() == "mcp__web__trigger-long-running-operation" {
			break
		}
	}
	stop()
	killed := time.Now()
	var o calledJSON
	select {
	case o = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end within 30 s of its server's death")
	}
	took := time.Since(killed)
	t.Logf("the call ended %s after the kill: %s", took.Round(time.Millisecond), o.res.text())
	if took > 5*time.Second {
		t.Errorf("the call ended %s after its server died, want ≤ 5 s", took.Round(time.Millisecond))
	}
	if o.r.code != 1 || o.res.Status != "failed" || !strings.Contains(o.res.text(), "web") || !strings.Contains(o.res.text(), "lost") {
		t.Fatalf("a call on a server that died: code %d %+v", o.r.code, o.res)
	}

	startHTTPEverything(t, "streamableHttp", port)
	e.waitMCP("web", connected, "--session", sid)
	res, r := e.callJSON("mcp__web__echo", map[string]any{"message": "again"}, "--session", sid, "--permission-mode", "bypassPermissions")
	if r.code != 0 || !strings.Contains(res.text(), "again") {
		t.Fatalf("echo after the server came back: %d %+v", r.code, res)
	}
}

// TestFaultMCPServerLogRotates: a stdio server that writes 25 MB to its
// stderr leaves two log files of at most the 10 MB cap, the newest lines
// kept, and serves as before.
func TestFaultMCPServerLogRotates(t *testing.T) {
	e := newEnv(t)
	bin := testpeers.Bin(t, "mcp-server-everything")
	// 25 MB of 1 KB lines, then the last line, then the server itself.
	script := `yes "$(printf '%01023d' 0)" | head -c 26214400 >&2; echo the-last-line >&2; exec "$0" stdio`
	if r := e.tackle("", "mcp", "add", "--scope", "user", "chatty", "--", "bash", "-c", script, bin); r.code != 0 {
		t.Fatalf("mcp add: %+v", r)
	}
	sid := faultMCPSession(t, e)
	s := e.waitMCP("chatty", connected, "--session", sid)
	res, r := e.callJSON("mcp__chatty__echo", map[string]any{"message": "still here"}, "--session", sid, "--permission-mode", "bypassPermissions")
	if r.code != 0 || !strings.Contains(res.text(), "still here") {
		t.Fatalf("echo: %d %+v", r.code, res)
	}
	if s.LogPath == "" {
		t.Fatalf("no log path: %+v", s)
	}
	cur, err := os.ReadFile(s.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	old, err := os.Stat(s.LogPath + ".1")
	if err != nil {
		t.Fatalf("no rotated log: %v", err)
	}
	if len(cur) > mcp.DefaultLogCap || old.Size() > mcp.DefaultLogCap || old.Size() < mcp.DefaultLogCap/2 {
		t.Errorf("log sizes %d and %d (.1), cap %d", len(cur), old.Size(), mcp.DefaultLogCap)
	}
	if !strings.Contains(string(cur), "the-last-line") {
		t.Error("the newest lines are not in the current log")
	}
	if _, err := os.Stat(s.LogPath + ".2"); err == nil {
		t.Error("a third log file")
	}
}

package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	"github.com/tackle-agent/tackle/daemon/sandbox"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// needSandbox skips where bubblewrap cannot run (it is installed by the
// project's scripts; a machine without user namespaces cannot run it).
func needSandbox(t *testing.T) {
	t.Helper()
	if a := sandbox.Probe(""); !a.OK {
		t.Fatalf("the sandbox cannot run here (scripts/deps.sh installs bubblewrap): %s", a.Why)
	}
}

// sandboxedSession is a session whose user settings enable the sandbox
// (settings is the "sandbox" block's JSON) and deny reading secret.txt.
func sandboxedSession(t *testing.T, settings string) (*daemontest.Daemon, *stream, string) {
	t.Helper()
	needSandbox(t)
	d := daemontest.Start(t)
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"),
		`{"sandbox": `+settings+`, "permissions": {"deny": ["Read(./secret.txt)"]}}`)
	dir := t.TempDir()
	id := newSession(t, d, dir, "")
	return d, attach(t, d, id), dir
}

func bash(cmd string) string {
	b, _ := json.Marshal(map[string]string{"command": cmd})
	return string(b)
}

// In a sandboxed session with auto-allow, commands run without a prompt
// (compound ones and those the analysis cannot judge too), and the kernel
// holds the boundary: nothing outside the working directory changes, the
// protected paths stay unwritable, the denied file cannot be read.
func TestSandboxHoldsTheBoundary(t *testing.T) {
	d, s, dir := sandboxedSession(t, `{"enabled": true}`)
	if err := exec.Command("git", "init", "-q", dir).Run(); err != nil {
		t.Fatalf("git init: %v", err)
	}
	writeFile(t, filepath.Join(dir, "secret.txt"), "the launch codes\n")
	outside := t.TempDir()
	victim := filepath.Join(outside, "keep.txt")
	writeFile(t, victim, "keep\n")
	home := d.Home() // the session's HOME
	writeFile(t, filepath.Join(home, ".bashrc"), "# mine\n")

	for _, c := range []struct{ name, cmd string }{
		{"rm outside", "rm -f " + victim},
		{"eval rm", `x='rm -f ` + victim + `'; eval "$x"`},
		{"arithmetic", `a=(); printf -v 'a[$(rm -f ` + victim + `)]' x`},
		{"write /tmp", "echo x > /tmp/tackle-sandbox-outside-$$"},
		{"bashrc", "echo 'echo pwned' >> " + filepath.Join(home, ".bashrc")},
		{"git hook", "mkdir -p .git/hooks; echo 'echo pwned' > .git/hooks/pre-commit"},
		{"claude settings", "mkdir -p .claude && echo '{}' > .claude/settings.json"},
	} {
		tr := s.call("Bash", bash(c.cmd), "")
		if tr.asked() {
			t.Errorf("%s: asked (a sandboxed command needs no prompt)", c.name)
		}
		if tr.result.GetStatus() == "denied" {
			t.Errorf("%s: denied: %s", c.name, resultText(tr.result))
		}
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep\n" {
		t.Errorf("the file outside the working directory: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(home, ".bashrc")); string(b) != "# mine\n" {
		t.Errorf("~/.bashrc: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git", "hooks", "pre-commit")); err == nil {
		t.Error("a sandboxed command planted a git hook")
	}
	if _, err := os.Stat(filepath.Join(dir, ".claude", "settings.json")); err == nil {
		t.Error("a sandboxed command wrote .claude/settings.json")
	}

	// Writes inside the working directory work; the denied file's content
	// never appears, whatever reads it.
	tr := s.call("Bash", bash("echo made > made.txt && cat made.txt"), "")
	if got := resultText(tr.result); strings.TrimSpace(got) != "made" {
		t.Errorf("a write inside: %s", resultText(tr.result))
	}
	for _, cmd := range []string{"cat secret.txt", "python3 -c 'print(open(\"secret.txt\").read())'", "cp secret.txt copy.txt; cat copy.txt", "grep -r launch ."} {
		tr := s.call("Bash", bash(cmd), "")
		if strings.Contains(resultText(tr.result), "launch codes") {
			t.Errorf("%q leaked the denied file: %s", cmd, resultText(tr.result))
		}
	}
	// tackle's own state and socket are not there at all: a command can
	// neither read other sessions' transcripts nor drive tackled.
	tr = s.call("Bash", bash("test -e "+filepath.Join(d.Options().StateDir, "state.db")+" && echo DB-VISIBLE; test -S "+d.Socket()+" && echo SOCKET-VISIBLE; echo checked"), "")
	if got := resultText(tr.result); !strings.Contains(got, "checked") || strings.Contains(got, "VISIBLE") {
		t.Errorf("tackle's state or socket is visible in the sandbox: %s", got)
	}
	tr = s.call("Bash", bash("echo x > "+filepath.Join(outside, "new.txt")), "")
	if !strings.Contains(resultText(tr.result), "Read-only file system") {
		t.Errorf("a write outside tells the model why it failed: %s", resultText(tr.result))
	}
	if n := tr.notices(); len(n) == 0 || !strings.Contains(strings.Join(n, "\n"), "sandbox: a write outside the writable directories was refused") {
		t.Errorf("the clients were not told of the refused write: %q", n)
	}
}

// Without the sandbox enabled, nothing changes: a destructive command
// outside asks.
func TestSandboxOffAsksAsBefore(t *testing.T) {
	_, s, dir := sandboxedSession(t, `{"enabled": false}`)
	outside := filepath.Join(t.TempDir(), "x")
	if tr := s.call("Bash", bash("rm -f "+outside), ""); !tr.asked() {
		t.Errorf("an unsandboxed rm outside did not ask: %s", resultText(tr.result))
	}
	_ = dir
}

// A process the command daemonizes (setsid and a double fork) is confined
// too and ends with the call.
func TestSandboxDaemonDiesWithTheCall(t *testing.T) {
	_, s, dir := sandboxedSession(t, `{"enabled": true}`)
	beat := filepath.Join(dir, "beat")
	tr := s.call("Bash", bash(`(setsid sh -c 'while :; do echo x >> `+beat+`; echo y > /tmp/escaped-$$ 2>/dev/null; sleep 0.05; done' >/dev/null 2>&1 &) ; sleep 0.3; echo started`), "")
	if !strings.Contains(resultText(tr.result), "started") {
		t.Fatalf("the command: %s", resultText(tr.result))
	}
	fi1, err := os.Stat(beat)
	if err != nil {
		t.Fatalf("the daemon never ran: %v", err)
	}
	time.Sleep(400 * time.Millisecond)
	fi2, _ := os.Stat(beat)
	if fi2.Size() != fi1.Size() {
		t.Errorf("the daemonized process outlived the call (%d → %d bytes)", fi1.Size(), fi2.Size())
	}
	if m, _ := filepath.Glob("/tmp/escaped-*"); len(m) > 0 {
		t.Errorf("the daemonized process wrote outside: %v", m)
	}
}

// Where the sandbox cannot run, failIfUnavailable refuses the command;
// without it, a notice says so and the normal permission flow applies.
func TestSandboxUnavailable(t *testing.T) {
	for _, fail := range []bool{true, false} {
		d := daemontest.Start(t, daemontest.WithOptions(func(o *daemon.Options) { o.Bwrap = "/nonexistent/bwrap" }))
		writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), fmt.Sprintf(`{"sandbox": {"enabled": true, "failIfUnavailable": %v}}`, fail))
		dir := t.TempDir()
		s := attach(t, d, newSession(t, d, dir, ""))
		tr := s.call("Bash", bash("echo hi > made.txt"), "")
		switch {
		case fail && (!strings.Contains(resultText(tr.result), "The sandbox is required here (sandbox.failIfUnavailable)") || tr.asked()):
			t.Errorf("failIfUnavailable: %s (asked %v)", resultText(tr.result), tr.asked())
		case !fail && !tr.asked():
			t.Errorf("unavailable, not required: the write inside ran without the normal flow's prompt: %s", resultText(tr.result))
		}
		if _, err := os.Stat(filepath.Join(dir, "made.txt")); err == nil {
			t.Errorf("fail=%v: the command ran", fail)
		}
	}
}

// Deny rules still deny a sandboxed command; excludedCommands and
// dangerouslyDisableSandbox go through the normal flow (the latter
// always asks, and is refused when allowUnsandboxedCommands is false).
func TestSandboxRulesAndExceptions(t *testing.T) {
	_, s, dir := sandboxedSession(t, `{"enabled": true, "excludedCommands": ["touch"]}`)
	tr := s.call("Bash", bash("cat secret.txt"), "")
	if tr.result.GetStatus() != "denied" {
		t.Errorf("a Read deny rule with a sandboxed cat: %s %s", tr.result.GetStatus(), resultText(tr.result))
	}
	tr = s.call("Bash", bash("touch excluded.txt"), "")
	if !tr.asked() {
		t.Errorf("an excluded command ran without the normal flow: %s", resultText(tr.result))
	}
	tr = s.call("Bash", `{"command": "ls", "dangerouslyDisableSandbox": true}`, "")
	if !tr.asked() {
		t.Errorf("dangerouslyDisableSandbox of a read-only command did not ask: %s", resultText(tr.result))
	}
	_ = dir

	_, s2, _ := sandboxedSession(t, `{"enabled": true, "allowUnsandboxedCommands": false}`)
	tr = s2.call("Bash", `{"command": "ls", "dangerouslyDisableSandbox": true}`, "")
	if !strings.Contains(resultText(tr.result), "sandbox.allowUnsandboxedCommands is false") {
		t.Errorf("dangerouslyDisableSandbox where not allowed: %s", resultText(tr.result))
	}
}

// An untrusted project can turn the sandbox on, but not widen it: its
// allowWrite is ignored (and listed as ignored).
func TestSandboxUntrustedProjectOnlyNarrows(t *testing.T) {
	needSandbox(t)
	d := daemontest.Start(t)
	dir := t.TempDir()
	extra := t.TempDir()
	writeFile(t, filepath.Join(dir, ".claude", "settings.json"), `{"sandbox": {"enabled": true, "filesystem": {"allowWrite": ["`+extra+`"]}}}`)
	s := attach(t, d, newSession(t, d, dir, ""))
	tr := s.call("Bash", bash("echo x > "+filepath.Join(extra, "f")+"; echo y > inside.txt"), "")
	if tr.asked() {
		t.Errorf("the project's sandbox is not in force (asked): %s", resultText(tr.result))
	}
	if _, err := os.Stat(filepath.Join(extra, "f")); err == nil {
		t.Error("the untrusted project's allowWrite applied")
	}
	if _, err := os.Stat(filepath.Join(dir, "inside.txt")); err != nil {
		t.Errorf("a write inside: %v", err)
	}
	if ig := snapshotOf(t, d, s.session).GetTrust().GetIgnored(); !strings.Contains(strings.Join(ig, "\n"), "sandbox.filesystem.allowWrite") {
		t.Errorf("the ignored settings do not name sandbox.filesystem.allowWrite: %v", ig)
	}
}

// tackle explain says a sandboxed command is allowed because it is
// sandboxed, and what the sandbox allows.
func TestSandboxExplain(t *testing.T) {
	d, s, _ := sandboxedSession(t, `{"enabled": true, "network": {"allowedDomains": ["example.com"]}}`)
	ex, err := d.Client().Explain(context.Background(), &tacklev1.ExplainRequest{SessionId: s.session, Tool: "Bash", InputJson: bash("rm -rf build && make")})
	if err != nil {
		t.Fatal(err)
	}
	if ex.GetDecision() != "allow" || !strings.HasPrefix(ex.GetReason(), "allowed: sandboxed (writes only in the working directories") || !strings.Contains(ex.GetReason(), "example.com") {
		t.Errorf("explain: %s %q", ex.GetDecision(), ex.GetReason())
	}
}

// The network of a sandboxed command is tackle's proxy: an allowed domain
// works (here mapped to a loopback server), a denied one fails with the
// sandbox's message, a new one asks and "always" saves it, and nothing
// reaches the network around the proxy.
func TestSandboxNetwork(t *testing.T) {
	needSandbox(t)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello from %s", r.Host) }))
	defer srv.Close()
	target := srv.Listener.Addr().String()
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(10*time.Second), daemontest.WithOptions(func(o *daemon.Options) {
		o.SandboxDial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, _, _ := net.SplitHostPort(addr)
			if !strings.HasSuffix(host, ".test") {
				return nil, fmt.Errorf("no such test host %s", host)
			}
			var dl net.Dialer
			return dl.DialContext(ctx, network, target)
		}
	}))
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"),
		`{"sandbox": {"enabled": true, "network": {"allowedDomains": ["allowed.test"], "deniedDomains": ["denied.test"]}}}`)
	dir := t.TempDir()
	s := attach(t, d, newSession(t, d, dir, ""))

	tr := s.call("Bash", bash("curl -sS http://allowed.test/"), "")
	if got := resultText(tr.result); !strings.Contains(got, "hello from allowed.test") || tr.asked() {
		t.Errorf("an allowed domain: %s (asked %v)", got, tr.asked())
	}
	tr = s.call("Bash", bash("curl -sS http://denied.test/; curl -sS https://denied.test/"), "")
	if got := resultText(tr.result); strings.Count(got, "blocked by the sandbox: domain denied.test") < 1 || strings.Contains(got, "hello") {
		t.Errorf("a denied domain: %s", got)
	}
	tr = s.call("Bash", bash("curl -sS --noproxy '*' --max-time 3 http://"+target+"/ || echo NO-NETWORK"), "")
	if got := resultText(tr.result); !strings.Contains(got, "NO-NETWORK") || strings.Contains(got, "hello") {
		t.Errorf("around the proxy: %s", got)
	}

	// A new domain asks; "always" saves it for the session.
	asks := 0
	run := func(cmd string) string {
		in, _ := json.Marshal(map[string]string{"command": cmd})
		s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
			SessionId: s.session, Ref: "r", Calls: []*tacklev1.ToolCall{{Id: "c", Name: "Bash", InputJson: string(in)}}}}})
		for {
			e := s.recv().GetEvent()
			switch {
			case e == nil:
			case e.GetType() == "permission_requested":
				asks++
				if !strings.Contains(e.GetPermission().GetReason(), "new.test") {
					t.Errorf("the prompt does not name the domain: %q", e.GetPermission().GetReason())
				}
				s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
					SessionId: s.session, RequestId: e.GetPermission().GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ALWAYS, Scope: tacklev1.Scope_SCOPE_SESSION}}})
			case e.GetType() == "call_result" && e.GetCallId() == "c":
				return resultText(e.GetResult())
			}
		}
	}
	if got := run("curl -sS http://new.test/"); !strings.Contains(got, "hello from new.test") || asks != 1 {
		t.Errorf("a new domain, allowed always: %s (%d prompts)", got, asks)
	}
	if got := run("curl -sS http://new.test/again"); !strings.Contains(got, "hello from new.test") || asks != 1 {
		t.Errorf("the domain saved: %s (%d prompts)", got, asks)
	}
}

// A sandboxed command cannot create unix sockets (the seccomp filter), so
// it cannot reach a local daemon's socket; allowAllUnixSockets lifts it.
func TestSandboxUnixSockets(t *testing.T) {
	for _, all := range []bool{false, true} {
		_, s, dir := sandboxedSession(t, fmt.Sprintf(`{"enabled": true, "network": {"allowAllUnixSockets": %v}}`, all))
		sock := filepath.Join(dir, "svc.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("hello from the socket\n"))
				c.Close()
			}
		}()
		tr := s.call("Bash", bash(`python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect("`+sock+`"); print(s.recv(100).decode())' 2>&1; python3 -c 'import socket; a,b=socket.socketpair(); a.send(b"pair"); print(b.recv(4).decode())'`), "")
		got := resultText(tr.result)
		ln.Close()
		if all != strings.Contains(got, "hello from the socket") {
			t.Errorf("allowAllUnixSockets %v: %s", all, got)
		}
		if !strings.Contains(got, "pair") {
			t.Errorf("socketpair is refused (allowAll %v): %s", all, got)
		}
	}
}

// execServers are the pids of the running tackle-sandbox-exec processes
// of these tests' daemons (their binary is this test process's own build).
func execServers(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	// A server's child between its fork and its exec (a command, or a
	// warm shell, starting) has the server's command line too.
	parent := map[string]string{}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), daemontest.SandboxExec+"\x00") {
			st, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			if f := strings.Fields(string(st[bytes.LastIndexByte(st, ')')+1:])); len(f) > 1 {
				parent[e.Name()] = f[1]
			}
		}
	}
	var pids []string
	for pid, ppid := range parent {
		if _, forked := parent[ppid]; !forked {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// waitNoSandboxes waits until no tackle-sandbox-exec of these tests runs,
// failing after 10 s with when as the moment it was expected.
func waitNoSandboxes(t *testing.T, when string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(execServers(t)) != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sandboxes %v still run %s", execServers(t), when)
		}
	}
}

// A session's sandboxed commands start in one sandbox, made once for its
// policy; a new policy (a new deny rule) gets a new sandbox and the old
// one ends; the commands' shell state (the directory) carries over as
// unsandboxed. tackle sandbox status says how commands start.
func TestSandboxCommandsShareOneSandboxPerPolicy(t *testing.T) {
	d, s, dir := sandboxedSession(t, `{"enabled": true}`)
	waitNoSandboxes(t, "before the first command (earlier tests' daemons end theirs)")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	var first []string
	for i, cmd := range []string{"cd sub && echo one > f", "pwd; cat f", "echo $$"} {
		tr := s.call("Bash", bash(cmd), "")
		if tr.asked() || tr.result.GetStatus() != "completed" {
			t.Fatalf("command %d: %s %s", i, tr.result.GetStatus(), resultText(tr.result))
		}
		if i == 1 && !strings.Contains(resultText(tr.result), filepath.Join(dir, "sub")+"\none") {
			t.Fatalf("the directory did not carry over: %s", resultText(tr.result))
		}
		if i == 2 && strings.TrimSpace(resultText(tr.result)) != "1" {
			t.Errorf("the shell is not its PID namespace's init: $$ is %s", resultText(tr.result))
		}
		pids := execServers(t)
		if len(pids) != 1 {
			t.Fatalf("after command %d: %d sandboxes for one session and policy, want 1", i, len(pids))
		}
		if first == nil {
			first = pids
		} else if pids[0] != first[0] {
			t.Fatalf("command %d got a new sandbox (exec server %s, then %s)", i, first[0], pids[0])
		}
	}
	st, err := tacklev1.NewSandboxServiceClient(d.Conn()).SandboxStatus(context.Background(), &tacklev1.SandboxStatusRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	if notes := strings.Join(st.GetNotes(), "\n"); !strings.Contains(notes, "once per policy") {
		t.Errorf("status does not say how commands start: %q", notes)
	}

	// A new deny rule: the file it denies is hidden from the next command
	// on, which gets a new sandbox; the old one ends.
	writeFile(t, filepath.Join(dir, "sub", "token"), "s3cret\n")
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"),
		`{"sandbox": {"enabled": true}, "permissions": {"deny": ["Read(./secret.txt)", "Read(/`+filepath.Join(dir, "sub", "token")+`)"]}}`)
	tr := s.call("Bash", bash(`python3 -c 'print(open("token").read())'; echo done`), "")
	if got := resultText(tr.result); strings.Contains(got, "s3cret") || !strings.Contains(got, "done") {
		t.Fatalf("a file denied after the sandbox was made: %s", got)
	}
	waitOnlyNewSandbox(t, first[0])
}

// waitOnlyNewSandbox waits until one sandbox runs and it is not old (the
// sandbox of the policy before), failing after 10 s.
func waitOnlyNewSandbox(t *testing.T, old string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for pids := execServers(t); len(pids) != 1 || pids[0] == old; pids = execServers(t) {
		if time.Now().After(deadline) {
			t.Fatalf("sandboxes %v after the policy changed, want one new one (the old %s ends)", pids, old)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Without the helper (or when it cannot start), each command gets a
// sandbox of its own, which holds the same boundary.
func TestSandboxWithoutExecServer(t *testing.T) {
	needSandbox(t)
	d := daemontest.Start(t, daemontest.WithOptions(func(o *daemon.Options) { o.SandboxExec = "/nonexistent/tackle-sandbox-exec" }))
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), `{"sandbox": {"enabled": true}}`)
	dir := t.TempDir()
	s := attach(t, d, newSession(t, d, dir, ""))
	outside := filepath.Join(t.TempDir(), "new.txt")
	tr := s.call("Bash", bash("echo in > in.txt; echo x > "+outside), "")
	if tr.asked() || !strings.Contains(resultText(tr.result), "Read-only file system") {
		t.Fatalf("the command: asked %v, %s", tr.asked(), resultText(tr.result))
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("a write outside went through")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "in.txt")); string(b) != "in\n" {
		t.Fatalf("a write inside: %q", b)
	}
}

// A sandbox no command used for SandboxIdle ends; the next command makes
// it again.
func TestSandboxIdleSandboxEnds(t *testing.T) {
	needSandbox(t)
	waitNoSandboxes(t, "before the first command")
	d := daemontest.Start(t, daemontest.WithOptions(func(o *daemon.Options) { o.SandboxIdle = 300 * time.Millisecond }))
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), `{"sandbox": {"enabled": true}}`)
	dir := t.TempDir()
	s := attach(t, d, newSession(t, d, dir, ""))
	run := func() {
		t.Helper()
		tr := s.call("Bash", bash("echo ran"), "")
		if tr.asked() || strings.TrimSpace(resultText(tr.result)) != "ran" {
			t.Fatalf("the command: asked %v, %s", tr.asked(), resultText(tr.result))
		}
	}
	run()
	first := execServers(t)
	if len(first) != 1 {
		t.Fatalf("sandboxes %v after a command, want one", first)
	}
	waitNoSandboxes(t, "after the idle time")
	run()
	if again := execServers(t); len(again) != 1 || again[0] == first[0] {
		t.Fatalf("sandboxes %v after the idle one ended (was %v), want a new one", again, first)
	}
}

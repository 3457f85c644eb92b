package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/cli/permissions"
	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// shellSession creates a session of dir whose commands find mkdir (the
// tests' tackle runs without PATH, and a session keeps its creator's environment).
func shellSession(t *testing.T, d *daemontest.Daemon, dir string) string {
	t.Helper()
	r := tackleEnv(t, env(d, "PATH=/usr/bin:/bin"), "", "sessions", "new", "--cwd", dir, "--json").mustCode(t, 0)
	var s struct{ ID string }
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.ID == "" {
		t.Fatalf("sessions new: %v\n%s", err, r.stdout)
	}
	return s.ID
}

// ruleProject makes a project whose .tackle/settings.json allows mkdir,
// denies rm and holds a rule that does not parse.
func ruleProject(t *testing.T) string {
	t.Helper()
	dir, _ := project(t)
	settings := "{\n  \"permissions\": {\n    \"allow\": [\"Bash(mkdir *)\"],\n    \"deny\": [\"Bash(rm *)\", \"Bash(\"]\n  }\n}\n"
	if err := os.MkdirAll(filepath.Join(dir, ".tackle"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".tackle", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestPermissionsCommands(t *testing.T) {
	d := daemontest.Start(t)
	dir := ruleProject(t)
	sid := shellSession(t, d, dir)
	repl := map[string]string{dir: "$DIR"}

	// The project is not trusted: its allow rule is ignored and mkdir asks.
	out, errb := newLineBuffer(), newLineBuffer()
	done := startCall(context.Background(), d, out, errb, "Bash", `{"command":"mkdir made"}`, "--session", sid, "--json")
	errb.waitFor(t, "waits for approval")
	id := requestID(t, errb.String())

	r := tackle(t, d, "", "permissions", "pending", "--json").mustCode(t, 0)
	var pending []struct{ ID, SessionID string }
	if err := json.Unmarshal([]byte(r.stdout), &pending); err != nil || len(pending) != 1 || pending[0].ID != id {
		t.Fatalf("pending = %v, %v\n%s", pending, err, r.stdout)
	}
	golden(t, "permissions_pending", normalize(t, r.stdout, repl))
	if r := tackle(t, d, "", "permissions", "pending").mustCode(t, 0); !strings.Contains(r.stdout, id) || !strings.Contains(r.stdout, "Bash(mkdir made:*)") || !strings.Contains(r.stdout, "    $ mkdir made\n") {
		t.Errorf("pending for people:\n%s", r.stdout)
	}

	// Bad answers are usage errors and lose nothing.
	tackle(t, d, "", "permissions", "answer", id, "maybe").mustCode(t, 2)
	tackle(t, d, "", "permissions", "answer", id, "allow", "--scope", "user").mustCode(t, 2)
	tackle(t, d, "", "permissions", "answer", id, "allow-always", "--scope", "galaxy").mustCode(t, 2)

	tackle(t, d, "", "permissions", "answer", id, "allow-always", "--scope", "session").mustCode(t, 0)
	if code := <-done; code != 0 {
		t.Fatalf("call exit code %d\n%s\n%s", code, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err != nil {
		t.Errorf("the allowed command did not run: %v", err)
	}
	// The request is gone: a second answer fails.
	if r := tackle(t, d, "", "permissions", "answer", id, "deny").mustCode(t, 1); !strings.Contains(r.stderr, "no pending permission request") {
		t.Errorf("second answer: %s", r.stderr)
	}

	r = tackle(t, d, "", "permissions", "audit", "--session", sid, "--json").mustCode(t, 0)
	golden(t, "permissions_audit", normalize(t, r.stdout, repl))
	var audit []permissions.AuditJSON
	if err := json.Unmarshal([]byte(r.stdout), &audit); err != nil || len(audit) != 1 {
		t.Fatalf("audit %v, %v", audit, err)
	}
	if a := audit[0]; a.ClientName != "tackle-cli" || a.ClientPID != int32(os.Getpid()) || a.ClientUID != uint32(os.Getuid()) {
		t.Errorf("audit entry %+v does not name this process", a)
	}
	if r := tackle(t, d, "", "permissions", "audit").mustCode(t, 0); !strings.Contains(r.stdout, "tackle-cli (pid") {
		t.Errorf("audit for people:\n%s", r.stdout)
	}

	r = tackle(t, d, "", "permissions", "rules", "--session", sid, "--json").mustCode(t, 0)
	golden(t, "permissions_rules", normalize(t, r.stdout, repl))
	if r := tackle(t, d, "", "permissions", "rules", "--session", sid).mustCode(t, 0); !strings.Contains(r.stdout, "tackle trust "+dir) || !strings.Contains(r.stdout, "Bash(rm *)") {
		t.Errorf("rules for people:\n%s", r.stdout)
	}
}

func TestExplainJSON(t *testing.T) {
	d := daemontest.Start(t)
	dir := ruleProject(t)
	sid := shellSession(t, d, dir)
	repl := map[string]string{dir: "$DIR"}
	for _, tc := range []struct{ name, command string }{
		{"explain_deny", "rm -rf build"},
		{"explain_ask", "mkdir out && npm test"},
	} {
		r := tackle(t, d, "", "explain", "Bash", fmt.Sprintf(`{"command":%q}`, tc.command), "--session", sid, "--json").mustCode(t, 0)
		var e permissions.ExplainJSON
		if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.name, normalize(t, r.stdout, repl))
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Error("explain ran the command")
	}
	r := tackle(t, d, "", "explain", "Bash", `{"command":"rm x"}`, "--session", sid).mustCode(t, 0)
	if !strings.HasPrefix(r.stdout, "deny: ") || !strings.Contains(r.stdout, ".tackle/settings.json:4") {
		t.Errorf("explain for people:\n%s", r.stdout)
	}
	tackle(t, d, "", "explain", "Bash", `{"command":`, "--session", sid).mustCode(t, 2)
	tackle(t, d, "", "explain", "Nope", `{}`, "--session", sid).mustCode(t, 2)
}

func TestTrustCommands(t *testing.T) {
	d := daemontest.Start(t)
	dir := ruleProject(t)
	sid := shellSession(t, d, dir)
	decision := func() string {
		t.Helper()
		r := tackle(t, d, "", "explain", "Bash", `{"command":"mkdir x"}`, "--session", sid, "--json").mustCode(t, 0)
		var e permissions.ExplainJSON
		if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
			t.Fatal(err)
		}
		return e.Decision
	}
	if got := decision(); got != "ask" {
		t.Errorf("untrusted: %s, want ask", got)
	}
	// attach says what the untrusted project loses, and how to trust it.
	ctx, cancel := context.WithCancel(context.Background())
	aout, aerr := newLineBuffer(), newLineBuffer()
	attached := make(chan int, 1)
	go func() {
		attached <- Main(ctx, []string{"attach", "--session", sid, "--observer"}, strings.NewReader(""), aout, aerr, env(d))
	}()
	aout.waitFor(t, "ignored until it is: 1 allow rule in "+filepath.Join(dir, ".tackle", "settings.json"))
	aout.waitFor(t, "to trust it: tackle trust "+dir)
	cancel()
	if code := <-attached; code != 0 {
		t.Errorf("attach exit code %d: %s", code, aerr.String())
	}
	if r := tackle(t, d, "", "trust", dir).mustCode(t, 0); r.stdout != "trusted "+dir+"\n" {
		t.Errorf("trust: %q", r.stdout)
	}
	if r := tackle(t, d, "", "trust", filepath.Join(dir, ".tackle")).mustCode(t, 0); !strings.Contains(r.stdout, "already trusted") {
		t.Errorf("trust of a child: %q", r.stdout)
	}
	if got := decision(); got != "allow" {
		t.Errorf("trusted: %s, want allow", got)
	}
	r := tackle(t, d, "", "trust", "--list", "--json").mustCode(t, 0)
	var dirs []string
	if err := json.Unmarshal([]byte(r.stdout), &dirs); err != nil || len(dirs) != 1 || dirs[0] != dir {
		t.Errorf("trust --list = %v, %v", dirs, err)
	}
	if r := tackle(t, d, "", "untrust", dir).mustCode(t, 0); !strings.Contains(r.stdout, "no longer trusted") {
		t.Errorf("untrust: %q", r.stdout)
	}
	if got := decision(); got != "ask" {
		t.Errorf("untrusted again: %s, want ask", got)
	}
	if r := tackle(t, d, "", "trust", "--list").mustCode(t, 0); r.stdout != "" {
		t.Errorf("trust --list after untrust: %q", r.stdout)
	}
	if b, err := os.ReadFile(filepath.Join(d.Options().ConfigHome, "tackle", "trust.json")); err != nil || !strings.Contains(string(b), `"trusted"`) {
		t.Errorf("trust file: %s, %v", b, err)
	}
}

// TestAttachJSONAnswers: attach --json is a controller that takes answers
// as JSON lines on stdin; a bad line is reported and the stream goes on.
func TestAttachJSONAnswers(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	sid := shellSession(t, d, dir)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdin, feed := io.Pipe()
	defer feed.Close()
	aout, aerr := newLineBuffer(), newLineBuffer()
	attached := make(chan int, 1)
	go func() {
		attached <- Main(ctx, []string{"attach", "--session", sid, "--json"}, stdin, aout, aerr, env(d))
	}()
	aout.waitFor(t, `"type":"snapshot"`)

	out, errb := newLineBuffer(), newLineBuffer()
	done := startCall(context.Background(), d, out, errb, "Bash", `{"command":"mkdir nope"}`, "--session", sid, "--json")
	aout.waitFor(t, `"type":"permission_requested"`)
	errb.waitFor(t, "waits for approval")
	id := requestID(t, errb.String())

	fmt.Fprintln(feed, `{"answer": "`+id+`", "option": "sometimes"}`)
	aout.waitFor(t, `"type":"answer_error"`)
	fmt.Fprintln(feed, `{"answer": "`+id+`", "option": "deny", "feedback": "use a temp dir"}`)
	if code := <-done; code != 1 {
		t.Fatalf("call exit code %d, want 1 (denied)\n%s", code, out.String())
	}
	if res := decodeResult(t, out.String()); res.Status != "denied" || !strings.Contains(out.String(), "use a temp dir") {
		t.Errorf("denied result = %s", out.String())
	}
	aout.waitFor(t, `"type":"permission_resolved"`)
	var resolved *render.EventJSON
	for _, line := range strings.Split(aout.String(), "\n") {
		var e render.EventJSON
		if json.Unmarshal([]byte(line), &e) == nil && e.Type == "permission_resolved" {
			resolved = &e
		}
	}
	if resolved == nil || resolved.Resolution.ClientName != "tackle-cli" || resolved.Resolution.Decision != "deny" || resolved.Resolution.Feedback != "use a temp dir" {
		t.Errorf("resolution = %+v", resolved)
	}
	if _, err := os.Stat(filepath.Join(dir, "nope")); err == nil {
		t.Error("the denied command ran")
	}
	cancel()
	if code := <-attached; code != 0 {
		t.Errorf("attach exit code %d: %s", code, aerr.String())
	}
}

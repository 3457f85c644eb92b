package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// TestMain builds the sandbox's exec server for the daemons of these tests
// (their sandboxed commands start through it, as in an installed tackled).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tackle-test-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if daemontest.SandboxExec, err = daemontest.BuildSandboxExec(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// stream is one controller Attach stream subscribed to a session.
type stream struct {
	t       testing.TB
	session string
	st      tacklev1.TackleService_AttachClient
}

func attach(t testing.TB, d *daemontest.Daemon, session string) *stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := d.Client().Attach(ctx)
	if err != nil {
		t.Fatalf("attaching: %v", err)
	}
	s := &stream{t: t, session: session, st: st}
	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "settings-test"}}})
	if s.recv().GetWelcome() == nil {
		t.Fatal("first message is not Welcome")
	}
	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: session, LiveOnly: true}}})
	if s.recv().GetSnapshot() == nil {
		t.Fatal("answer to Subscribe is not a Snapshot")
	}
	return s
}

func (s *stream) send(m *tacklev1.ClientMessage) {
	s.t.Helper()
	if err := s.st.Send(m); err != nil {
		s.t.Fatalf("sending: %v", err)
	}
}

func (s *stream) recv() *tacklev1.ServerMessage {
	s.t.Helper()
	m, err := s.st.Recv()
	if err != nil {
		s.t.Fatalf("receiving: %v", err)
	}
	if se := m.GetError(); se != nil {
		s.t.Fatalf("stream error: %v", se)
	}
	return m
}

// turn is what a test saw of one batch: every event received from sending
// the batch to its turn_ended (notices appended just before included).
type turn struct {
	events []*tacklev1.Event
	result *tacklev1.ToolResult
}

func (t turn) notices() []string {
	var out []string
	for _, e := range t.events {
		if e.GetType() == "notice" {
			out = append(out, e.GetText())
		}
	}
	return out
}

func (t turn) asked() bool {
	for _, e := range t.events {
		if e.GetType() == "permission_requested" {
			return true
		}
	}
	return false
}

// write runs one Write call of a new file in a batch with the permission
// mode override mode ("" for none). A permission request is denied at once
// (the turn records that it asked).
func (s *stream) write(path, mode string) turn {
	s.t.Helper()
	in, _ := json.Marshal(map[string]string{"file_path": path, "content": "x\n"})
	return s.call("Write", string(in), mode)
}

// call runs one call in a batch (mode is the batch's permission mode, ""
// for none) and returns what the turn saw. A permission request is denied
// at once (the turn records that it asked).
func (s *stream) call(name, input, mode string) turn {
	s.t.Helper()
	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
		SessionId: s.session, Ref: "r", PermissionMode: mode,
		Calls: []*tacklev1.ToolCall{{Id: "c", Name: name, InputJson: input}},
	}}})
	var tr turn
	turnID := ""
	for {
		m := s.recv()
		if ba := m.GetBatchAccepted(); ba != nil {
			turnID = ba.GetTurnId()
			continue
		}
		e := m.GetEvent()
		if e == nil {
			continue
		}
		tr.events = append(tr.events, e)
		switch {
		case e.GetType() == "permission_requested":
			s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
				SessionId: s.session, RequestId: e.GetPermission().GetRequestId(), Decision: tacklev1.Decision_DECISION_DENY,
			}}})
		case e.GetType() == "call_result":
			tr.result = e.GetResult()
		case e.GetType() == "turn_ended" && turnID != "" && e.GetTurnId() == turnID:
			if tr.result == nil {
				s.t.Fatal("turn ended without a call_result")
			}
			return tr
		}
	}
}

// nextNotice waits for the next notice event (no batch running).
func (s *stream) nextNotice() string {
	s.t.Helper()
	for {
		if e := s.recv().GetEvent(); e != nil && e.GetType() == "notice" {
			return e.GetText()
		}
	}
}

func resultText(r *tacklev1.ToolResult) string {
	var b strings.Builder
	for _, c := range r.GetContent() {
		b.WriteString(c.GetText())
	}
	return b.String()
}

// writeFile replaces path atomically (as editors save), creating its directory.
func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func modeSettings(mode string) string {
	return `{"permissions":{"defaultMode":"` + mode + `"}}`
}

func effectiveMode(t testing.TB, d *daemontest.Daemon, id string) string {
	t.Helper()
	gs, err := d.Client().GetSession(context.Background(), &tacklev1.GetSessionRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	return gs.GetSession().GetPermissionMode()
}

func newSession(t testing.TB, d *daemontest.Daemon, cwd, mode string) string {
	t.Helper()
	resp, err := d.Client().CreateSession(context.Background(), &tacklev1.CreateSessionRequest{Cwd: cwd, PermissionMode: mode})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return resp.GetSession().GetId()
}

// lockedBuffer collects log lines from the daemon's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestSettingsDefaultModeFollowsFileEdits edits a project's settings while
// the daemon runs: each turn runs in the mode the settings say at that
// moment; a broken file is reported with its position and the last good
// version stays in force.
// trustedProject is a new project directory the daemon trusts.
func trustedProject(t testing.TB, d *daemontest.Daemon) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := d.Client().Trust(context.Background(), &tacklev1.TrustRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestSettingsDefaultModeFollowsFileEdits(t *testing.T) {
	logs := &lockedBuffer{}
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(30*time.Second),
		daemontest.WithLogger(hclog.New(&hclog.LoggerOptions{Name: "tackled", Level: hclog.Debug, Output: logs})))
	project := trustedProject(t, d) // an untrusted project may not widen the mode
	settings := filepath.Join(project, ".tackle", "settings.json")
	writeFile(t, settings, modeSettings("acceptEdits"))
	id := newSession(t, d, project, "")
	if got := effectiveMode(t, d, id); got != "acceptEdits" {
		t.Fatalf("GetSession permission_mode = %q, want acceptEdits (from the settings)", got)
	}
	s := attach(t, d, id)

	tr := s.write(filepath.Join(project, "a.txt"), "")
	if tr.result.GetStatus() != "completed" || tr.asked() {
		t.Fatalf("Write with defaultMode acceptEdits: %v (asked %v); want completed without asking", tr.result, tr.asked())
	}

	writeFile(t, settings, modeSettings("plan"))
	tr = s.write(filepath.Join(project, "b.txt"), "")
	if tr.result.GetStatus() != "denied" || tr.asked() || !strings.Contains(resultText(tr.result), "plan mode") {
		t.Fatalf("Write after the settings changed to plan: %v (asked %v); want denied by plan mode", tr.result, tr.asked())
	}
	if _, err := os.Stat(filepath.Join(project, "b.txt")); err == nil {
		t.Fatal("the Write denied in plan mode created its file")
	}
	if n := tr.notices(); len(n) != 0 {
		t.Errorf("notices with good settings: %q", n)
	}

	// Broken: the next turn (or the watcher, just before it) reports it once;
	// the last good version (plan) stays in force.
	writeFile(t, settings, `{"permissions": {`)
	tr = s.write(filepath.Join(project, "c.txt"), "")
	if n := tr.notices(); len(n) != 1 || !strings.Contains(n[0], settings+":1:18:") || !strings.Contains(n[0], "last good version") {
		t.Fatalf("notices after breaking the settings: %q; want one naming %s:1:18", n, settings)
	}
	if tr.result.GetStatus() != "denied" || !strings.Contains(resultText(tr.result), "plan mode") {
		t.Fatalf("Write with a broken settings file: %v; want denied by plan mode (the last good version)", tr.result)
	}
	if got := effectiveMode(t, d, id); got != "plan" {
		t.Errorf("GetSession permission_mode with a broken file = %q, want plan", got)
	}
	// The same problem is not reported again.
	tr = s.write(filepath.Join(project, "c.txt"), "")
	if n := tr.notices(); len(n) != 0 {
		t.Errorf("the unchanged problem was reported again: %q", n)
	}

	// Fixed: the new version applies, and the session is told.
	writeFile(t, settings, modeSettings("acceptEdits"))
	tr = s.write(filepath.Join(project, "d.txt"), "")
	if tr.result.GetStatus() != "completed" || tr.asked() {
		t.Fatalf("Write after fixing the settings: %v (asked %v); want completed", tr.result, tr.asked())
	}
	if n := tr.notices(); len(n) != 1 || !strings.Contains(n[0], "fixed") {
		t.Errorf("notices after fixing the settings: %q; want one saying it is fixed", n)
	}

	// The watcher alone (no turn) reports a file that breaks to the loaded session.
	writeFile(t, settings, "{\n  \"permissions\": [\n")
	if n := s.nextNotice(); !strings.Contains(n, settings+":3:1:") {
		t.Fatalf("notice from the watcher = %q; want one naming %s:3:1", n, settings)
	}
	tr = s.write(filepath.Join(project, "e.txt"), "")
	if n := tr.notices(); len(n) != 0 || tr.result.GetStatus() != "completed" {
		t.Fatalf("turn after the watcher's notice: notices %q, result %v; want none and completed (acceptEdits stays)", n, tr.result)
	}
	if !strings.Contains(logs.String(), "settings changed") || !strings.Contains(logs.String(), settings) {
		t.Errorf("the daemon did not log the settings change:\n%s", logs.String())
	}
}

// TestSettingsClaudeFileHasLowerPrecedence checks that .claude/settings.json
// is honoured and that .tackle/settings.json wins over it.
func TestSettingsClaudeFileHasLowerPrecedence(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(30*time.Second))
	project := trustedProject(t, d) // an untrusted project may not widen the mode
	writeFile(t, filepath.Join(project, ".claude", "settings.json"), modeSettings("acceptEdits"))
	id := newSession(t, d, project, "")
	s := attach(t, d, id)
	tr := s.write(filepath.Join(project, "a.txt"), "")
	if tr.result.GetStatus() != "completed" || tr.asked() {
		t.Fatalf("Write with .claude defaultMode acceptEdits: %v (asked %v)", tr.result, tr.asked())
	}
	writeFile(t, filepath.Join(project, ".tackle", "settings.json"), modeSettings("plan"))
	tr = s.write(filepath.Join(project, "b.txt"), "")
	if tr.result.GetStatus() != "denied" || !strings.Contains(resultText(tr.result), "plan mode") {
		t.Fatalf("Write with .tackle plan over .claude acceptEdits: %v; want denied by plan mode", tr.result)
	}
	if got := effectiveMode(t, d, id); got != "plan" {
		t.Errorf("GetSession permission_mode = %q, want plan", got)
	}
}

// TestSettingsModePrecedence: a batch override wins over a session's own
// mode, which wins over the settings.
func TestSettingsModePrecedence(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(30*time.Second))
	project := trustedProject(t, d) // an untrusted project may not widen the mode
	writeFile(t, filepath.Join(project, ".tackle", "settings.json"), modeSettings("acceptEdits"))

	explicit := newSession(t, d, project, "plan")
	following := newSession(t, d, project, "")
	if got := effectiveMode(t, d, explicit); got != "plan" {
		t.Errorf("session created in plan: permission_mode %q", got)
	}
	if got := effectiveMode(t, d, following); got != "acceptEdits" {
		t.Errorf("session created without a mode: permission_mode %q, want acceptEdits", got)
	}
	ls, err := d.Client().ListSessions(context.Background(), &tacklev1.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range ls.GetSessions() {
		want := map[string]string{explicit: "plan", following: "acceptEdits"}[ss.GetId()]
		if ss.GetPermissionMode() != want {
			t.Errorf("ListSessions: %s has mode %q, want %q", ss.GetId(), ss.GetPermissionMode(), want)
		}
	}

	s := attach(t, d, explicit)
	tr := s.write(filepath.Join(project, "a.txt"), "")
	if tr.result.GetStatus() != "denied" || !strings.Contains(resultText(tr.result), "plan mode") {
		t.Fatalf("Write in a plan session with acceptEdits settings: %v; want denied by plan mode", tr.result)
	}
	tr = s.write(filepath.Join(project, "a.txt"), "acceptEdits")
	if tr.result.GetStatus() != "completed" || tr.asked() {
		t.Fatalf("Write with a batch override acceptEdits: %v (asked %v); want completed", tr.result, tr.asked())
	}

	f := attach(t, d, following)
	tr = f.write(filepath.Join(project, "b.txt"), "plan")
	if tr.result.GetStatus() != "denied" || !strings.Contains(resultText(tr.result), "plan mode") {
		t.Fatalf("Write with a batch override plan: %v; want denied by plan mode", tr.result)
	}
	tr = f.write(filepath.Join(project, "b.txt"), "")
	if tr.result.GetStatus() != "completed" {
		t.Fatalf("Write following the settings: %v; want completed", tr.result)
	}
}

// TestSettingsBadValuesAndDisabledBypass: an unknown defaultMode is reported
// and ignored; disableBypassPermissionsMode turns bypassPermissions into
// default, with a notice.
func TestSettingsBadValuesAndDisabledBypass(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(30*time.Second))
	project := trustedProject(t, d) // an untrusted project may not widen the mode
	settings := filepath.Join(project, ".tackle", "settings.json")
	writeFile(t, settings, modeSettings("yolo"))
	writeFile(t, d.Options().ManagedSettings, `{"permissions":{"disableBypassPermissionsMode":"disable"}}`)
	id := newSession(t, d, project, "")
	if got := effectiveMode(t, d, id); got != "default" {
		t.Errorf("permission_mode with defaultMode yolo = %q, want default", got)
	}
	s := attach(t, d, id)
	tr := s.write(filepath.Join(project, "a.txt"), "")
	if n := tr.notices(); len(n) != 1 || !strings.Contains(n[0], `"yolo"`) || !strings.Contains(n[0], settings) {
		t.Errorf("notices with defaultMode yolo: %q", n)
	}
	if !tr.asked() || tr.result.GetStatus() != "denied" {
		t.Errorf("Write in default mode: %v (asked %v); want asked, then denied by the test", tr.result, tr.asked())
	}

	tr = s.write(filepath.Join(project, "b.txt"), "bypassPermissions")
	if n := tr.notices(); len(n) != 1 || !strings.Contains(n[0], "disableBypassPermissionsMode") {
		t.Errorf("notices with bypassPermissions disabled: %q", n)
	}
	if !tr.asked() || tr.result.GetStatus() != "denied" {
		t.Errorf("Write with a disabled bypassPermissions override: %v (asked %v); want default mode (asked)", tr.result, tr.asked())
	}
	if _, err := os.Stat(filepath.Join(project, "b.txt")); err == nil {
		t.Error("the Write under a disabled bypassPermissions created its file")
	}
}

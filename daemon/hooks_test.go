package daemon_test

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

// TestSessionHooksWired: in a trusted project, creating a session runs its
// SessionStart hooks (their context lands in the log as a notice) and a
// cd runs its CwdChanged hooks; every run is a hook_ran event.
func TestSessionHooksWired(t *testing.T) {
	d := daemontest.Start(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := `printf '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"hello from the hook"}}'`
	settings, _ := json.Marshal(map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": start}}}},
		"CwdChanged":   []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": "cat > cwd-changed.json"}}}},
	}})
	if err := os.MkdirAll(filepath.Join(dir, ".tackle"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".tackle", "settings.json"), settings, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := d.Client().Trust(ctx, &tacklev1.TrustRequest{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	cs, err := d.Client().CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	id := cs.GetSession().GetId()

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := d.Client().Attach(sctx)
	if err != nil {
		t.Fatal(err)
	}
	s := &stream{t: t, session: id, st: st}
	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "hooks-test"}}})
	s.recv() // welcome
	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id}}})
	if tr := s.recv().GetSnapshot().GetTrust(); !tr.GetTrusted() {
		t.Errorf("snapshot trust = %v, want trusted", tr)
	}
	waitFor := func(pred func(e *tacklev1.Event) bool) *tacklev1.Event {
		t.Helper()
		for {
			if e := s.recv().GetEvent(); e != nil && pred(e) {
				return e
			}
		}
	}
	ran := waitFor(func(e *tacklev1.Event) bool {
		return e.GetType() == "hook_ran" && e.GetHookRun().GetHookEvent() == "SessionStart"
	})
	if h := ran.GetHookRun(); h.GetOutcome() == "error" || h.GetOutcome() == "timeout" || !strings.Contains(h.GetHook(), "printf") {
		t.Errorf("SessionStart run = %v", h)
	}
	waitFor(func(e *tacklev1.Event) bool {
		return e.GetType() == "notice" && strings.Contains(e.GetText(), "hello from the hook")
	})

	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
		SessionId: id, Ref: "cd", PermissionMode: "bypassPermissions",
		Calls: []*tacklev1.ToolCall{{Id: "c", Name: "Bash", InputJson: `{"command":"cd sub"}`}},
	}}})
	waitFor(func(e *tacklev1.Event) bool {
		return e.GetType() == "hook_ran" && e.GetHookRun().GetHookEvent() == "CwdChanged"
	})
	b, err := os.ReadFile(filepath.Join(dir, "sub", "cwd-changed.json"))
	if err != nil {
		b, err = os.ReadFile(filepath.Join(dir, "cwd-changed.json"))
	}
	if err != nil || !strings.Contains(string(b), filepath.Join(dir, "sub")) {
		t.Errorf("CwdChanged hook input: %s, %v", b, err)
	}
}

// Hooks tackle does not run are told to the session as a notice, like
// rule problems.
func TestIgnoredHooksNotice(t *testing.T) {
	d := daemontest.Start(t)
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"),
		`{"hooks": {"TeammateIdle": [{"hooks": [{"type": "command", "command": "echo idle"}]}]}}`)
	id := newSession(t, d, t.TempDir(), "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := d.Client().Attach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "t"}}})
	st.Recv()
	st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, FromSeq: 1}}})
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e := m.GetEvent(); e.GetType() == "notice" && strings.Contains(e.GetText(), "hooks tackle does not run") {
			if !strings.Contains(e.GetText(), "TeammateIdle") {
				t.Errorf("the notice: %s", e.GetText())
			}
			return
		}
	}
}

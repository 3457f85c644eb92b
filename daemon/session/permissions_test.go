package session

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
)

func TestRecoverEndsOpenTurns(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, _, err := f.m.Create(ctx, CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	app := func(e *event.Event) {
		t.Helper()
		if _, err := s.Append(e); err != nil {
			t.Fatal(err)
		}
	}
	calls := []event.CallInfo{{ID: "c1", Name: "Read"}, {ID: "c2", Name: "Bash"}, {ID: "c3", Name: "Edit"}}
	// A finished turn: not touched.
	app(&event.Event{Type: event.TurnStarted, TurnID: "done", Turn: &event.Turn{Calls: calls[:1]}})
	app(&event.Event{Type: event.CallResult, TurnID: "done", CallID: "c1", Result: &event.Result{CallID: "c1", Status: event.StatusCompleted}})
	app(&event.Event{Type: event.TurnEnded, TurnID: "done"})
	// A turn killed mid-way: c1 done, c2 waiting for a permission, c3 queued.
	app(&event.Event{Type: event.TurnStarted, TurnID: "t1", Turn: &event.Turn{Calls: calls}})
	app(&event.Event{Type: event.CallResult, TurnID: "t1", CallID: "c1", Result: &event.Result{CallID: "c1", Status: event.StatusCompleted}})
	app(&event.Event{Type: event.CallState, TurnID: "t1", CallID: "c2", State: event.StateAwaitingPermission})
	app(&event.Event{Type: event.PermissionRequested, TurnID: "t1", CallID: "c2", Tool: "Bash",
		Permission: &event.PermissionRequest{RequestID: "perm_1", CallID: "c2", Tool: "Bash", Input: json.RawMessage(`{}`)}})
	app(&event.Event{Type: event.CallState, TurnID: "t1", CallID: "c3", State: event.StateQueued})
	// No turn_ended: the daemon "died" (the manager is closed without ending it).
	f.reopen(t)

	open, err := f.st.OpenTurns(ctx)
	if err != nil || len(open) != 1 || open[0].TurnID != "t1" || open[0].SessionID != id {
		t.Fatalf("open turns %+v, %v; want t1 only", open, err)
	}
	n, err := f.m.Recover(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	s, err = f.m.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	evs, err := s.Events(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var tail []string
	for _, e := range evs[len(evs)-5:] {
		line := string(e.Type) + " " + e.CallID
		switch {
		case e.Resolution != nil:
			line += " " + e.Resolution.RequestID + " " + e.Resolution.Decision
		case e.Result != nil:
			line += " " + e.Result.Status + ": " + e.Result.Content[0].Text
		case e.Type == event.Notice:
			line += e.Text
		}
		tail = append(tail, line)
	}
	want := []string{
		"permission_resolved c2 perm_1 cancelled",
		"call_result c2 cancelled: tackled restarted while the call was waiting for permission: it was cancelled. Run it again if it is still needed.",
		"call_result c3 cancelled: tackled restarted while the call was waiting to run: it was cancelled. Run it again if it is still needed.",
		"turn_ended ",
		"notice tackled restarted: turn t1 had not ended; it ended now with 2 cancelled calls (c2, c3)",
	}
	if strings.Join(tail, "\n") != strings.Join(want, "\n") {
		t.Errorf("events after recovery:\n%s\nwant:\n%s", strings.Join(tail, "\n"), strings.Join(want, "\n"))
	}
	if open, _ := f.st.OpenTurns(ctx); len(open) != 0 {
		t.Errorf("still open after recovery: %+v", open)
	}
	// A second start finds nothing to do.
	f.reopen(t)
	if n, err := f.m.Recover(ctx); n != 0 || err != nil {
		t.Errorf("second Recover = %d, %v", n, err)
	}
}

func TestAuditAndSessionRules(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, _, err := f.m.Create(ctx, CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	f.m.RecordAudit(store.AuditRow{SessionID: s.ID(), CallID: "c1", Tool: "Bash", Outcome: "allow", DecidedBy: "user", ClientName: "tackle-cli", ClientPID: 42, ClientUID: 1000, Scope: "project", Rule: "Bash(npm test *)"})
	f.m.RecordAudit(store.AuditRow{SessionID: "other", CallID: "c2", Tool: "Read", Outcome: "allow", DecidedBy: "tool"})
	rows, err := f.m.Audit(ctx, s.ID(), 0)
	if err != nil || len(rows) != 1 {
		t.Fatalf("Audit = %+v, %v", rows, err)
	}
	r := rows[0]
	if r.CallID != "c1" || r.ClientName != "tackle-cli" || r.ClientPID != 42 || r.ClientUID != 1000 || r.Scope != "project" || r.Rule != "Bash(npm test *)" || r.Time.IsZero() {
		t.Errorf("audit row %+v", r)
	}
	if all, _ := f.m.Audit(ctx, "", 0); len(all) != 2 || all[0].CallID != "c2" {
		t.Errorf("all audit rows (newest first) %+v", all)
	}
	for _, rule := range []string{"Bash(ls *)", "Read(//etc/**)", "Bash(ls *)"} {
		if err := f.m.AddSessionRule(ctx, s.ID(), rule); err != nil {
			t.Fatal(err)
		}
	}
	f.reopen(t)
	rules, err := f.m.SessionRules(ctx, s.ID())
	if err != nil || strings.Join(rules, ",") != "Bash(ls *),Read(//etc/**)" {
		t.Errorf("session rules %v, %v", rules, err)
	}
	if err := f.m.Delete(ctx, s.ID()); err != nil {
		t.Fatal(err)
	}
	if rules, _ := f.m.SessionRules(ctx, s.ID()); len(rules) != 0 {
		t.Errorf("rules survive their session: %v", rules)
	}
	if rows, _ := f.m.Audit(ctx, s.ID(), 0); len(rows) != 1 {
		t.Errorf("the audit log lost a deleted session's rows: %v", rows)
	}
}

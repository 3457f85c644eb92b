package server_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// A running Bash call's output reaches every attached client as progress
// events before its result: here an observer sees the first line while the
// command still waits for the test to let it finish.
func TestBashProgressReachesAnObserver(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	gate := filepath.Join(dir, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	ctl.subscribe(id, 0)
	obs := attach(t, d.Client(), "obs", tacklev1.Role_ROLE_OBSERVER)
	obs.subscribe(id, 0)

	cmd := "echo first-line; read x < " + gate + "; echo second-line"
	ctl.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
		SessionId: id, Ref: "r", PermissionMode: "bypassPermissions",
		Calls: []*tacklev1.ToolCall{{Id: "b1", Name: "Bash", InputJson: `{"command":` + strconv.Quote(cmd) + `}`}},
	}}})

	var seen []string
	obs.eventsUntil(func(e *tacklev1.Event) bool {
		seen = append(seen, e.GetType())
		if e.GetType() == "call_result" {
			t.Fatalf("the result came before any progress: %v", seen)
		}
		return e.GetType() == "call_progress" && e.GetCallId() == "b1" && strings.Contains(e.GetText(), "first-line")
	})
	// Let the command finish.
	f, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("go\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	evs := obs.eventsUntil(func(e *tacklev1.Event) bool { return e.GetType() == "call_result" && e.GetCallId() == "b1" })
	r := evs[len(evs)-1].GetResult()
	if r.GetStatus() != "completed" || !strings.Contains(text(r), "first-line") || !strings.Contains(text(r), "second-line") {
		t.Fatalf("Bash result: %v", r)
	}
}

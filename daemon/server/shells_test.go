package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// bgShell starts cmd as a background Bash call through ctl (bypassing
// permissions) and returns the turn's events. The command should write its
// pid with `echo $$ > "$READY"`-style handshakes through the fifo that
// readyFifo makes, so the test waits on the shell, not on a clock.
func (c *client) bgShell(session, ref, cmd string) []*tacklev1.Event {
	c.t.Helper()
	in := `{"command":` + strconv.Quote(cmd) + `,"run_in_background":true}`
	c.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
		SessionId: session, Ref: ref, PermissionMode: "bypassPermissions",
		Calls: []*tacklev1.ToolCall{{Id: ref, Name: "Bash", InputJson: in}},
	}}})
	var turn string
	for turn == "" {
		m := c.recv()
		if ba := m.GetBatchAccepted(); ba != nil && ba.GetRef() == ref {
			turn = ba.GetTurnId()
		} else if m.GetError() != nil {
			c.t.Fatalf("RunBatch refused: %v", m.GetError())
		}
	}
	evs := c.eventsUntil(turnEnded(turn))
	if r := resultOf(c.t, evs, ref); r.GetIsError() {
		c.t.Fatalf("background Bash failed: %v: %s", r, text(r))
	}
	return evs
}

// readyFifo makes a fifo in a temp dir and returns its path and a function
// that waits for the shell to write one line into it (the open blocks until
// the shell opens its end) and returns the line.
func readyFifo(t *testing.T) (string, func() string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, func() string {
		t.Helper()
		type res struct {
			b   []byte
			err error
		}
		ch := make(chan res, 1)
		go func() {
			b, err := os.ReadFile(path)
			ch <- res{b, err}
		}()
		guard := time.NewTimer(30 * time.Second) // only against a hung test
		defer guard.Stop()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("reading the fifo: %v", r.err)
			}
			return strings.TrimSpace(string(r.b))
		case <-guard.C:
			t.Fatal("the background shell never wrote to the fifo")
			return ""
		}
	}
}

// alive reports whether process pid exists (a zombie counts as gone once
// it is reaped; the daemon runs in this process, so its shells are our
// children and are reaped by it).
func alive(t *testing.T, pid int) bool {
	t.Helper()
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("kill -0 %d: %v", pid, err)
	}
	return err == nil
}

func shellEvent(id, status string) func(*tacklev1.Event) bool {
	return func(e *tacklev1.Event) bool {
		return e.GetType() == "shell_updated" && e.GetShell().GetId() == id && e.GetShell().GetStatus() == status
	}
}

func TestBackgroundShells(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	id, _ := newSession(t, d)
	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	obs := attach(t, d.Client(), "obs", tacklev1.Role_ROLE_OBSERVER)
	ctl.subscribe(id, 0)
	obs.subscribe(id, 0)

	fifo, ready := readyFifo(t)
	evs := ctl.bgShell(id, "b1", `echo hi; echo $$ > `+fifo+`; exec sleep 30`)
	pid, err := strconv.Atoi(ready())
	if err != nil {
		t.Fatalf("pid from the shell: %v", err)
	}

	list, err := d.Client().ListShells(ctx, &tacklev1.ListShellsRequest{SessionId: id})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.GetShells()) != 1 {
		t.Fatalf("ListShells = %v, want one shell", list.GetShells())
	}
	sh := list.GetShells()[0]
	if sh.GetStatus() != "running" || !strings.Contains(sh.GetCommand(), "echo hi") || sh.GetStarted() == nil || sh.GetOutputPath() == "" {
		t.Errorf("shell = %v", sh)
	}
	if r := resultOf(t, evs, "b1"); !strings.Contains(text(r), sh.GetId()) {
		t.Errorf("the Bash result does not name shell %s: %s", sh.GetId(), text(r))
	}

	// Both attached clients heard it start.
	var started bool
	for _, e := range evs {
		started = started || shellEvent(sh.GetId(), "running")(e)
	}
	if !started {
		t.Errorf("the controller got no shell_updated running event: %v", seqTypes(evs))
	}
	obs.eventsUntil(shellEvent(sh.GetId(), "running"))

	// A client that attaches later sees it in the snapshot.
	late := attach(t, d.Client(), "late", tacklev1.Role_ROLE_OBSERVER)
	snap := late.subscribe(id, 0)
	if len(snap.GetShells()) != 1 || snap.GetShells()[0].GetId() != sh.GetId() || snap.GetShells()[0].GetStatus() != "running" {
		t.Errorf("snapshot shells = %v", snap.GetShells())
	}

	// Its output, from any offset.
	out, err := d.Client().ReadShellOutput(ctx, &tacklev1.ReadShellOutputRequest{SessionId: id, ShellId: sh.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if string(out.GetData()) != "hi\n" || out.GetNextOffset() != 3 || out.GetShell().GetStatus() != "running" {
		t.Errorf("ReadShellOutput = %q next %d shell %v", out.GetData(), out.GetNextOffset(), out.GetShell())
	}
	out, err = d.Client().ReadShellOutput(ctx, &tacklev1.ReadShellOutputRequest{SessionId: id, ShellId: sh.GetId(), Offset: 1, MaxBytes: 1})
	if err != nil || string(out.GetData()) != "i" || out.GetNextOffset() != 2 {
		t.Errorf("ReadShellOutput(1, 1) = %q next %d, %v", out.GetData(), out.GetNextOffset(), err)
	}

	// Kill it from the unary API: the process is gone, every client hears it.
	killed, err := d.Client().KillShell(ctx, &tacklev1.KillShellRequest{SessionId: id, ShellId: sh.GetId()})
	if err != nil {
		t.Fatal(err)
	}
	if killed.GetShell().GetStatus() != "killed" || killed.GetShell().GetEnded() == nil {
		t.Errorf("KillShell = %v", killed.GetShell())
	}
	if alive(t, pid) {
		t.Errorf("shell process %d still runs after KillShell", pid)
	}
	obs.eventsUntil(shellEvent(sh.GetId(), "killed"))
	late.eventsUntil(shellEvent(sh.GetId(), "killed"))

	// Unknown shells and sessions are NotFound; a missing id is InvalidArgument.
	for _, c := range []struct {
		name string
		err  error
		code codes.Code
	}{
		{"read unknown shell", rpcErr(d.Client().ReadShellOutput(ctx, &tacklev1.ReadShellOutputRequest{SessionId: id, ShellId: "nope"})), codes.NotFound},
		{"kill unknown shell", rpcErr(d.Client().KillShell(ctx, &tacklev1.KillShellRequest{SessionId: id, ShellId: "nope"})), codes.NotFound},
		{"list unknown session", rpcErr(d.Client().ListShells(ctx, &tacklev1.ListShellsRequest{SessionId: "s_nope"})), codes.NotFound},
		{"kill in another session", rpcErr(d.Client().KillShell(ctx, &tacklev1.KillShellRequest{SessionId: otherSession(t, d), ShellId: sh.GetId()})), codes.NotFound},
		{"read without shell id", rpcErr(d.Client().ReadShellOutput(ctx, &tacklev1.ReadShellOutputRequest{SessionId: id})), codes.InvalidArgument},
		{"read at a negative offset", rpcErr(d.Client().ReadShellOutput(ctx, &tacklev1.ReadShellOutputRequest{SessionId: id, ShellId: sh.GetId(), Offset: -1})), codes.InvalidArgument},
	} {
		if got := status.Code(c.err); got != c.code {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.code)
		}
	}
}

func rpcErr[T any](_ T, err error) error { return err }

func otherSession(t *testing.T, d *daemontest.Daemon) string {
	id, _ := newSession(t, d)
	return id
}

func TestDeletingASessionKillsItsShells(t *testing.T) {
	d := daemontest.Start(t)
	id, _ := newSession(t, d)
	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	ctl.subscribe(id, 0)
	fifo, ready := readyFifo(t)
	// A grandchild too: the whole process group goes.
	ctl.bgShell(id, "b1", `sleep 30 & echo $! > `+fifo+`; wait`)
	pid, err := strconv.Atoi(ready())
	if err != nil {
		t.Fatal(err)
	}
	if !alive(t, pid) {
		t.Fatalf("sleep %d is not running", pid)
	}
	if _, err := d.Client().DeleteSession(context.Background(), &tacklev1.DeleteSessionRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	// The grandchild is not our child: it is gone, or a zombie of init's.
	if alive(t, pid) && !zombie(pid) {
		t.Errorf("sleep %d of the deleted session still runs", pid)
	}
}

// zombie reports whether pid is a zombie (dead, not yet reaped by its parent).
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] == 'Z'
}

func TestStopKillsShells(t *testing.T) {
	d := daemontest.Start(t)
	id, _ := newSession(t, d)
	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	ctl.subscribe(id, 0)
	fifo, ready := readyFifo(t)
	ctl.bgShell(id, "b1", `echo $$ > `+fifo+`; exec sleep 30`)
	pid, err := strconv.Atoi(ready())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}
	if alive(t, pid) {
		t.Errorf("shell %d still runs after the daemon stopped", pid)
	}
}

package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	_ "modernc.org/sqlite"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// binary is the tackled built for these tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tackled-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "tackled")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building tackled: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// env is the directories of one test's daemons: never the real home.
type env struct {
	root, socket, state string
}

func newEnv(t *testing.T) env {
	t.Helper()
	root, err := os.MkdirTemp("", "tk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return env{root: root, socket: filepath.Join(root, "run", "tackled.sock"), state: filepath.Join(root, "state")}
}

func (e env) command(args ...string) *exec.Cmd {
	cmd := exec.Command(binary, append([]string{"--socket", e.socket, "--state-dir", e.state, "--log-level", "debug"}, args...)...)
	cmd.Env = append(os.Environ(),
		"HOME="+filepath.Join(e.root, "home"),
		"XDG_CONFIG_HOME="+filepath.Join(e.root, "home", ".config"),
		"XDG_STATE_HOME="+filepath.Join(e.root, "home", ".local", "state"),
		"TACKLE_SOCKET=",
	)
	return cmd
}

// daemonProc is a running tackled.
type daemonProc struct {
	cmd    *exec.Cmd
	lines  chan string
	exited chan error
}

// start runs tackled and waits until it logs that it serves.
func (e env) start(t *testing.T) *daemonProc {
	t.Helper()
	cmd := e.command()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &daemonProc{cmd: cmd, lines: make(chan string, 1000), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case p.lines <- sc.Text():
			default: // nobody reads the rest
			}
		}
		close(p.lines)
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
		for range p.lines {
		}
	})
	for line := range p.lines {
		t.Log(line)
		if strings.Contains(line, "serving") {
			return p
		}
	}
	t.Fatalf("tackled exited before serving: %v", <-p.exited)
	return nil
}

// stop sends sig and waits for the exit status.
func (p *daemonProc) stop(t *testing.T, sig os.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	for line := range p.lines {
		t.Log(line)
	}
	<-p.exited
	return p.cmd.ProcessState.ExitCode()
}

func TestSecondDaemonExits(t *testing.T) {
	e := newEnv(t)
	first := e.start(t)

	second := e.command()
	out, err := second.CombinedOutput()
	if second.ProcessState.ExitCode() != 1 {
		t.Fatalf("second tackled: %v, exit %d, output:\n%s", err, second.ProcessState.ExitCode(), out)
	}
	want := fmt.Sprintf("tackled is already running on %s (pid %d)", e.socket, first.cmd.Process.Pid)
	if !strings.Contains(string(out), want) {
		t.Errorf("second tackled said:\n%s\nwant %q", out, want)
	}
	// The first one still answers.
	conn, err := daemontest.Dial(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := tacklev1.NewTackleServiceClient(conn).Status(context.Background(), &tacklev1.StatusRequest{})
	if err != nil || st.GetPid() != int64(first.cmd.Process.Pid) {
		t.Fatalf("Status of the first daemon = %v, %v", st, err)
	}
	if st.GetVersion() != Version || len(st.GetBuildId()) != 12 {
		t.Errorf("version %q build id %q", st.GetVersion(), st.GetBuildId())
	}
	if code := first.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("exit status after SIGINT = %d, want 0", code)
	}
	if _, err := os.Lstat(e.socket); !os.IsNotExist(err) {
		t.Errorf("socket left behind: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(e.state, "tackled.log")); err != nil || fi.Size() == 0 {
		t.Errorf("log file: %v", err)
	}
}

// A second daemon on another socket (another XDG_RUNTIME_DIR, as under ssh
// or cron) but the same state directory is refused, naming the first; the
// first goes on serving, its run records untouched.
func TestSecondDaemonOnTheStateDirExits(t *testing.T) {
	e := newEnv(t)
	first := e.start(t)
	other := filepath.Join(e.root, "run2", "tackled.sock")
	second := exec.Command(binary, "--socket", other, "--state-dir", e.state)
	second.Env = e.command().Env
	out, err := second.CombinedOutput()
	if second.ProcessState.ExitCode() != 1 {
		t.Fatalf("second tackled: %v, exit %d, output:\n%s", err, second.ProcessState.ExitCode(), out)
	}
	want := fmt.Sprintf("is in use by tackled pid %d on %s", first.cmd.Process.Pid, e.socket)
	if !strings.Contains(string(out), want) {
		t.Errorf("second tackled said:\n%s\nwant %q", out, want)
	}
	if _, err := os.Lstat(other); !os.IsNotExist(err) {
		t.Errorf("the refused daemon left its socket: %v", err)
	}
	for _, f := range []string{"tackled.run", "running-groups.json"} {
		if _, err := os.Stat(filepath.Join(e.state, f)); err != nil {
			t.Errorf("the first daemon's %s: %v", f, err)
		}
	}
	conn, err := daemontest.Dial(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if st, err := tacklev1.NewTackleServiceClient(conn).Status(context.Background(), &tacklev1.StatusRequest{}); err != nil || st.GetPid() != int64(first.cmd.Process.Pid) {
		t.Fatalf("Status of the first daemon = %v, %v", st, err)
	}
	if code := first.stop(t, syscall.SIGINT); code != 0 {
		t.Errorf("exit status after SIGINT = %d, want 0", code)
	}
	// Once it is gone the state directory is free again.
	third := exec.Command(binary, "--socket", other, "--state-dir", e.state)
	third.Env = e.command().Env
	stderr, err := third.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := third.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	served := false
	for !served && sc.Scan() {
		served = strings.Contains(sc.Text(), "serving")
	}
	_ = third.Process.Signal(syscall.SIGINT)
	go io.Copy(io.Discard, stderr)
	_ = third.Wait()
	if !served {
		t.Error("a daemon on the state directory after the first stopped did not serve")
	}
}

// A daemon whose state directory is deleted under it (rm -rf) stops,
// saying why, instead of writing on into a deleted database; the next one
// makes the directory anew.
func TestStateDirDeletedStopsTheDaemon(t *testing.T) {
	e := newEnv(t)
	p := e.start(t)
	if err := os.RemoveAll(e.state); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(20 * time.Second)
	said := false
read:
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				break read
			}
			t.Log(line)
			said = said || strings.Contains(line, "the state directory was deleted while tackled ran: stopping")
		case <-deadline:
			t.Fatal("tackled still runs 20 s after its state directory was deleted")
		}
	}
	<-p.exited
	if code := p.cmd.ProcessState.ExitCode(); code != 0 || !said {
		t.Errorf("exit %d, said why: %v", code, said)
	}
	next := e.start(t)
	if _, err := os.Stat(filepath.Join(e.state, "state.db")); err != nil {
		t.Errorf("the next daemon's state: %v", err)
	}
	next.stop(t, syscall.SIGINT)
}

func TestBadFlags(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{{"--permission-timeout", "0"}, {"--log-level", "loud"}, {"extra"}} {
		cmd := e.command(args...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || len(out) == 0 {
			t.Errorf("tackled %v: exit %d, output %q; want 2 and a message", args, cmd.ProcessState.ExitCode(), out)
		}
	}
}

func TestSIGTERMCancelsInFlightCall(t *testing.T) {
	e := newEnv(t)
	p := e.start(t)
	project := t.TempDir()
	target := filepath.Join(project, "never.txt")

	conn, err := daemontest.Dial(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := tacklev1.NewTackleServiceClient(conn)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs, err := cl.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: project})
	if err != nil {
		t.Fatal(err)
	}
	id := cs.GetSession().GetId()
	st, err := cl.Attach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	send := func(m *tacklev1.ClientMessage) {
		t.Helper()
		if err := st.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "test"}}})
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id}}})
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
		SessionId: id, Ref: "b",
		Calls: []*tacklev1.ToolCall{{Id: "w1", Name: "Write", InputJson: `{"file_path":"` + target + `","content":"x"}`}},
	}}})
	// The Write waits for a permission answer that never comes: a long call.
	var turn string
	for {
		m, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ba := m.GetBatchAccepted(); ba != nil {
			turn = ba.GetTurnId()
		}
		if m.GetEvent().GetType() == "permission_requested" {
			break
		}
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit status after SIGTERM = %d, want 0", code)
	}
	for {
		if _, err := st.Recv(); err != nil {
			break // the stream ends with the daemon
		}
	}
	conn.Close()

	// Restart on the same state: the call's result is in the log, cancelled.
	st2 := e.restartAndAttach(ctx, t)
	st = st2
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "test"}}})
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id}}})
	for {
		m, err := st2.Recv()
		if err == io.EOF || err != nil {
			t.Fatalf("no turn_ended for %s after restart: %v", turn, err)
		}
		e := m.GetEvent()
		if e.GetType() == "call_result" && e.GetCallId() == "w1" {
			if e.GetResult().GetStatus() != "cancelled" {
				t.Errorf("result after SIGTERM = %v, want cancelled", e.GetResult())
			}
		}
		if e.GetType() == "turn_ended" && e.GetTurnId() == turn {
			break
		}
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the cancelled Write wrote its file: %v", err)
	}
}

// TestSIGKILLRecovery: a daemon killed while a call waits for a permission
// answer leaves an unfinished turn; the next daemon ends it at start:
// permission_resolved cancelled, a cancelled call_result that says why,
// turn_ended. The call never runs.
func TestSIGKILLRecovery(t *testing.T) {
	e := newEnv(t)
	p := e.start(t)
	project := t.TempDir()
	target := filepath.Join(project, "never.txt")

	conn, err := daemontest.Dial(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cl := tacklev1.NewTackleServiceClient(conn)
	cs, err := cl.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: project})
	if err != nil {
		t.Fatal(err)
	}
	id := cs.GetSession().GetId()
	st, err := cl.Attach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*tacklev1.ClientMessage{
		{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "test"}}},
		{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id}}},
		{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{SessionId: id, Ref: "b", Calls: []*tacklev1.ToolCall{
			{Id: "r1", Name: "Read", InputJson: `{"file_path":"` + filepath.Join(project, "missing.txt") + `"}`},
			{Id: "w1", Name: "Write", InputJson: `{"file_path":"` + target + `","content":"x"}`},
			{Id: "w2", Name: "Write", InputJson: `{"file_path":"` + target + `2","content":"x"}`},
		}}}},
	} {
		if err := st.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	var turn, request string
	var requestSeq uint64
	for request == "" {
		m, err := st.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ba := m.GetBatchAccepted(); ba != nil {
			turn = ba.GetTurnId()
		}
		if ev := m.GetEvent(); ev.GetType() == "permission_requested" {
			request, requestSeq = ev.GetPermission().GetRequestId(), ev.GetSeq()
		}
	}
	// A permission request is published first and stored right after (so
	// that a locked database cannot hold it back): SIGKILL once it is
	// stored, while it waits for an answer.
	waitStored(t, filepath.Join(e.state, "state.db"), id, requestSeq)
	if code := p.stop(t, syscall.SIGKILL); code != -1 {
		t.Fatalf("exit status after SIGKILL = %d, want -1 (killed)", code)
	}
	conn.Close()

	st2 := e.restartAndAttach(ctx, t)
	for _, m := range []*tacklev1.ClientMessage{
		{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "test"}}},
		{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id}}},
	} {
		if err := st2.Send(m); err != nil {
			t.Fatal(err)
		}
	}
	if w, err := st2.Recv(); err != nil || w.GetWelcome() == nil {
		t.Fatalf("no welcome: %v, %v", w, err)
	}
	snap, err := st2.Recv()
	if err != nil || snap.GetSnapshot() == nil {
		t.Fatalf("no snapshot: %v, %v", snap, err)
	}
	if n := len(snap.GetSnapshot().GetPendingPermissions()); n != 0 {
		t.Errorf("%d requests still pending after the restart", n)
	}
	var got []string
	for {
		m, err := st2.Recv()
		if err != nil {
			t.Fatalf("no turn_ended for %s after restart: %v (got %v)", turn, err, got)
		}
		ev := m.GetEvent()
		if ev.GetTurnId() != turn {
			continue
		}
		switch ev.GetType() {
		case "permission_resolved":
			r := ev.GetResolution()
			got = append(got, "resolved "+r.GetRequestId()+" "+r.GetDecision())
		case "call_result":
			r := ev.GetResult()
			text := ""
			for _, c := range r.GetContent() {
				text += c.GetText()
			}
			got = append(got, "result "+ev.GetCallId()+" "+r.GetStatus())
			if r.GetStatus() == "cancelled" && !strings.Contains(text, "tackled restarted while the call was") {
				t.Errorf("cancelled result of %s does not say why: %q", ev.GetCallId(), text)
			}
		case "turn_ended":
			got = append(got, "turn_ended")
		}
		if ev.GetType() == "turn_ended" {
			break
		}
	}
	want := []string{"result r1 invalid", "resolved " + request + " cancelled", "result w1 cancelled", "result w2 cancelled", "turn_ended"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the turn after the restart:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the killed Write wrote its file: %v", err)
	}
}

// waitStored waits until the session log in db holds the event seq of
// session id, reading the database as another process may (read-only).
func waitStored(t *testing.T, db, id string, seq uint64) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		var last sql.NullInt64
		err := conn.QueryRow(`SELECT max(last_seq) FROM event_chunks WHERE session_id = ?`, id).Scan(&last)
		if err == nil && last.Valid && uint64(last.Int64) >= seq {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("event %d of %s is not stored after 20 s (last stored %v, %v)", seq, id, last, err)
		}
	}
}

// restartAndAttach starts the daemon again on the same state and opens an
// Attach stream to it; the connection closes with the test.
func (e env) restartAndAttach(ctx context.Context, t *testing.T) tacklev1.TackleService_AttachClient {
	t.Helper()
	e.start(t)
	conn, err := daemontest.Dial(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	st, err := tacklev1.NewTackleServiceClient(conn).Attach(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// A state directory shared with other users (like /tmp) is not made
// private behind their backs: tackled refuses to start and says why.
func TestSharedStateDirRefused(t *testing.T) {
	e := newEnv(t)
	if err := os.Mkdir(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(e.state, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	cmd := e.command()
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "choose a directory of your own") {
		t.Errorf("tackled with a 1777 state dir: exit %d, output %q; want 1 and the reason", cmd.ProcessState.ExitCode(), out)
	}
	if fi, err := os.Stat(e.state); err != nil || fi.Mode().Perm() != 0o777 {
		t.Errorf("the shared directory was changed: %v, %v", fi.Mode(), err)
	}
}

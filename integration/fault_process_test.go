package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// Issue 18, faults 2 and 5: tool processes die with a SIGKILLed daemon (and
// the next daemon kills what survived), and no child is left a zombie.

const bashAllowed = `{"permissions":{"defaultMode":"bypassPermissions","allow":["Bash"]}}`

// procStat is what /proc/<pid>/stat says of a process.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
	comm            string
	start           uint64
}

func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return procStat{}, false
	}
	f := strings.Fields(string(b[j+1:]))
	if len(f) < 20 {
		return procStat{}, false
	}
	p := procStat{pid: pid, comm: string(b[i+1 : j]), state: f[0][0]}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	p.start, _ = strconv.ParseUint(f[19], 10, 64)
	return p, true
}

func allProcs() []procStat {
	ents, _ := os.ReadDir("/proc")
	var out []procStat
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProcStat(pid); ok {
				out = append(out, p)
			}
		}
	}
	return out
}

// tagged lists the live processes whose environment carries the daemon
// run's tag (every process the daemon started, and their descendants).
func tagged(tag string) []procStat {
	needle := []byte("TACKLE_DAEMON_RUN=" + tag + "\x00")
	var out []procStat
	for _, p := range allProcs() {
		if p.state == 'Z' {
			continue
		}
		env, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/environ")
		if err == nil && bytes.Contains(append(env, 0), needle) {
			out = append(out, p)
		}
	}
	return out
}

// processRecord reads the daemon's record of its running process groups.
func processRecord(t *testing.T, root string) (rec struct {
	PID    int    `json:"pid"`
	Tag    string `json:"tag"`
	Groups []struct {
		PGID int    `json:"pgid"`
		What string `json:"what"`
	} `json:"groups"`
}) {
	t.Helper()
	// The daemon rewrites the record in place while its processes start;
	// a read that overlaps a write may see the new record's head and the
	// old one's tail (Linux does not make a buffered read atomic with a
	// write), so a record that does not parse is read again. The readers
	// that matter (the keeper, the next daemon) read it once the daemon is
	// gone and nothing writes it.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(root, "state", "running-groups.json"))
		if err != nil {
			t.Fatalf("reading the daemon's process record: %v", err)
		}
		err = json.Unmarshal(b, &rec)
		if err == nil {
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("the process record %s: %v", b, err)
		}
	}
}

func waitFile(t *testing.T, path string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s did not appear within %s", path, d)
		}
	}
}

func newSession(t *testing.T, ctx context.Context, c *client.Client, dir string) string {
	t.Helper()
	resp, err := c.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: dir})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetSession().GetId()
}

// callBash runs one Bash call on s (subscribed to sess) and returns its result.
func callBash(t *testing.T, s *client.Stream, sess, id, command string) *tacklev1.Event {
	t.Helper()
	in := mustJSON(map[string]any{"command": command})
	if err := s.RunBatch(&tacklev1.RunBatch{SessionId: sess, Ref: id, Calls: []*tacklev1.ToolCall{{Id: id, Name: "Bash", InputJson: in}}}); err != nil {
		t.Fatal(err)
	}
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if e := m.GetEvent(); e.GetType() == "call_result" && e.GetCallId() == id {
			return e
		}
	}
}

// TestFaultProcessDiesWithDaemon: SIGKILL the daemon while every kind of
// process it starts runs — foreground Bash (a plain command, a setsid'd
// child, a double fork that leaves both group and session), background
// Bash, a hook and a stdio MCP server with a child of its own — with and
// without the bubblewrap sandbox. Every one of them is gone within 2 s,
// none has its side effect, and the next daemon's log says the calls were
// cancelled.
func TestFaultProcessDiesWithDaemon(t *testing.T) {
	for _, sandboxed := range []bool{false, true} {
		name := "plain"
		if sandboxed {
			name = "sandboxed"
		}
		t.Run(name, func(t *testing.T) {
			if sandboxed {
				if _, err := exec.LookPath("bwrap"); err != nil {
					t.Skip("bubblewrap is not installed")
				}
			}
			testProcessDiesWithDaemon(t, sandboxed)
		})
	}
}

func testProcessDiesWithDaemon(t *testing.T, sandboxed bool) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	at := func(name string) string { return filepath.Join(root, name) }
	ev := testpeers.Bin(t, "mcp-server-everything")
	settings := mustJSON(map[string]any{
		"permissions": map[string]any{"defaultMode": "bypassPermissions", "allow": []string{"Bash", "Glob"}},
		"sandbox":     map[string]any{"enabled": sandboxed},
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Glob", "hooks": []any{map[string]any{
			"type": "command", "command": "touch " + at("startedHook") + "; sleep 3; touch " + at("markerHook"),
		}}}}},
		"mcpServers": map[string]any{"ev": map[string]any{"command": "/bin/sh", "args": []string{"-c",
			"(sleep 3; touch " + at("markerMCP") + ") >/dev/null 2>&1 & touch " + at("startedMCP") + "; exec " + ev + " stdio"}}},
	})
	d := startLoadDaemon(t, root, settings)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := d.dial(t, ctx)
	s, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type call struct{ name, input string }
	calls := map[string]call{
		// bash is the group's leader (Pdeathsig), sleep its child in the group
		"A": {"Bash", mustJSON(map[string]any{"command": "touch startedA; sleep 3; touch markerA"})},
		// a child that leaves the group and the session: the keeper's
		"B": {"Bash", mustJSON(map[string]any{"command": "setsid sh -c 'sleep 3; touch markerB' & touch startedB; sleep 30"})},
		// a double fork: the setsid'd grandchild is an orphan at once
		"C": {"Bash", mustJSON(map[string]any{"command": "(setsid sh -c 'sleep 3; touch markerC' >/dev/null 2>&1 &); touch startedC; sleep 30"})},
		// a background shell
		"D": {"Bash", mustJSON(map[string]any{"command": "touch startedD; sleep 3; touch markerD", "run_in_background": true})},
		// the hook of a Glob call
		"H": {"Glob", mustJSON(map[string]any{"pattern": "*.none"})},
	}
	sessions := map[string]string{}
	for id, cl := range calls {
		sess := newSession(t, ctx, c, proj)
		sessions[id] = sess
		if _, err := s.Subscribe(sess, 0, true); err != nil {
			t.Fatal(err)
		}
		if err := s.RunBatch(&tacklev1.RunBatch{SessionId: sess, Ref: id, Calls: []*tacklev1.ToolCall{{Id: id, Name: cl.name, InputJson: cl.input}}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"proj/startedA", "proj/startedB", "proj/startedC", "proj/startedD", "startedHook", "startedMCP"} {
		waitFile(t, at(f), 20*time.Second)
	}

	// Each group is recorded once its start returned, which may be just
	// after the command ran its first line.
	var rec = processRecord(t, root)
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := map[string]int{}
		for _, g := range rec.Groups {
			n[g.What]++
		}
		// Sandboxed commands are started by their session's sandbox
		// server, which the daemon started (one per session).
		leaders := "bash"
		if sandboxed {
			leaders = "sandbox exec server"
		}
		if n[leaders] == 4 && n["hook"] == 1 && n["mcp"] == 1 && rec.Tag != "" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the record lists %v groups (want 4 %s, 1 hook, 1 mcp), tag %q: %+v", n, leaders, rec.Tag, rec)
		}
		rec = processRecord(t, root)
	}
	// Every sleep runs (the double fork's may take a moment to start).
	var before []procStat
	var comms map[string]int
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		before = tagged(rec.Tag)
		comms = map[string]int{}
		for _, p := range before {
			comms[p.comm]++
		}
		if comms["sleep"] >= 6 && comms["sh"] >= 3 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("not every process is running and tagged: %v", comms)
		}
	}
	if sandboxed && comms["bwrap"] < 4 {
		t.Fatalf("the Bash commands do not run in the sandbox: %v", comms)
	}
	if !sandboxed && comms["bwrap"] != 0 {
		t.Fatalf("the Bash commands run in the sandbox: %v", comms)
	}
	t.Logf("running: %v", comms)

	killedAt := time.Now()
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = d.cmd.Wait()

	// Every process of the daemon is gone at once: the leaders by
	// Pdeathsig, the rest by the keeper.
	var left []procStat
	for end := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if left = tagged(rec.Tag); len(left) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("processes of the killed daemon still run 2 s after: %+v", left)
		}
	}
	t.Logf("%d processes gone %s after the SIGKILL", len(before), time.Since(killedAt).Round(time.Millisecond))
	for _, p := range allProcs() {
		if p.comm == "tackled" && p.state != 'Z' {
			if b, _ := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/cmdline"); bytes.Contains(b, []byte(root)) {
				t.Errorf("a tackled of the killed daemon still runs: %d %q", p.pid, b)
			}
		}
	}
	// The side effects they would have had never happen: wait past them.
	time.Sleep(time.Until(killedAt.Add(5 * time.Second)))
	for _, m := range []string{"proj/markerA", "proj/markerB", "proj/markerC", "proj/markerD", "markerHook", "markerMCP"} {
		if _, err := os.Stat(at(m)); err == nil {
			t.Errorf("%s was created after the daemon was killed", m)
		}
	}

	// The next daemon: the log of each session says its call was
	// cancelled (the background shell's call had already completed),
	// and that is now true.
	d2 := startLoadDaemon(t, root, settings)
	c2 := d2.dial(t, ctx)
	s2, err := c2.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	for id, sess := range sessions {
		if _, err := s2.Subscribe(sess, 0, false); err != nil {
			t.Fatal(err)
		}
		want := "cancelled"
		if id == "D" {
			want = "completed"
		}
		for {
			m, err := s2.Recv()
			if err != nil {
				t.Fatalf("replaying session %s: %v", id, err)
			}
			if e := m.GetEvent(); e.GetType() == "call_result" && e.GetCallId() == id {
				if got := e.GetResult().GetStatus(); got != want {
					t.Errorf("call %s: the log says %s, want %s", id, got, want)
				}
				break
			}
		}
	}
}

// TestFaultProcessNextDaemonKillsRecordedGroup: what Pdeathsig and the
// keeper cannot cover (a setuid leader drops Pdeathsig; a killed keeper)
// is killed by the next daemon, from the record. The test plays the dead
// daemon: it starts a group of its own and records it in the daemon's
// format, with a second, live group recorded with a wrong start time (a
// reused pid), which must be left alone.
func TestFaultProcessNextDaemonKillsRecordedGroup(t *testing.T) {
	root := t.TempDir()
	state := filepath.Join(root, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(root, "marker")
	survivor := exec.Command("/bin/sh", "-c", "sleep 3; touch "+marker)
	survivor.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	other := exec.Command("/bin/sleep", "30")
	other.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	for _, c := range []*exec.Cmd{survivor, other} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer other.Process.Kill() //nolint:errcheck // cleanup
	sst, _ := readProcStat(survivor.Process.Pid)
	ost, _ := readProcStat(other.Process.Pid)
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	rec := map[string]any{
		"version": 1, "pid": 0, "start": 0, "boot_id": strings.TrimSpace(string(boot)), "tag": "",
		"groups": []map[string]any{
			{"pgid": survivor.Process.Pid, "start": sst.start, "what": "bash"},
			{"pgid": other.Process.Pid, "start": ost.start + 1, "what": "bash"},
		},
	}
	if err := os.WriteFile(filepath.Join(state, "running-groups.json"), []byte(mustJSON(rec)), 0o600); err != nil {
		t.Fatal(err)
	}

	d := startLoadDaemon(t, root, bashAllowed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d.dial(t, ctx) // it answers: start-up is over

	done := make(chan error, 1)
	go func() { done <- survivor.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		survivor.Process.Kill() //nolint:errcheck // cleanup
		t.Fatal("the recorded group was not killed by the next daemon")
	}
	if ws, ok := survivor.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the recorded group ended with %v, want SIGKILL", survivor.ProcessState)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("a group recorded with another start time (a reused pid) was killed: %v", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the recorded group's side effect happened")
	}
	logb, _ := os.ReadFile(filepath.Join(state, "tackled.log"))
	if !bytes.Contains(logb, []byte("killed a process the previous daemon left running")) {
		t.Errorf("the daemon log does not say what it killed:\n%s", logb)
	}
}

func TestFaultProcessNoZombies(t *testing.T) {
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	// A hook that backgrounds children (one in its group, one setsid'd)
	// on every Bash call, and Bash calls that leave setsid children.
	d := startLoadDaemon(t, root, mustJSON(map[string]any{
		"permissions": map[string]any{"defaultMode": "bypassPermissions", "allow": []string{"Bash"}},
		"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": "Bash", "hooks": []any{map[string]any{
			"type": "command", "command": "sleep 0.3 >/dev/null 2>&1 & setsid sleep 0.3 >/dev/null 2>&1 & echo ok",
		}}}}},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := d.dial(t, ctx)
	s, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sess := newSession(t, ctx, c, proj)
	if _, err := s.Subscribe(sess, 0, true); err != nil {
		t.Fatal(err)
	}
	const runs = 20
	for i := range runs {
		e := callBash(t, s, sess, fmt.Sprintf("z%d", i), "setsid sleep 0.3 >/dev/null 2>&1 & echo hi")
		if r := e.GetResult(); r.GetStatus() != "completed" || r.GetIsError() {
			t.Fatalf("call %d: %v", i, r)
		}
	}
	daemon := d.cmd.Process.Pid
	// Every sleep ends 0.3 s after it started; then nothing of them may
	// be left, zombie or not.
	var zombies, sleeping int
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		zombies, sleeping = 0, 0
		for _, p := range allProcs() {
			if p.ppid != daemon {
				continue
			}
			if p.state == 'Z' {
				zombies++
			} else if p.comm == "sleep" {
				sleeping++
			}
		}
		if zombies == 0 && sleeping == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("after %d hook runs and %d Bash calls: %d zombie children of the daemon, %d sleeps still running", runs, runs, zombies, sleeping)
		}
	}
}

// TestFaultProcessExitCodesUnderLoad: the reaper, which reaps every
// orphan the daemon adopts, never takes a Bash call's exit status: many
// concurrent calls that each leave a setsid'd child report their own
// exit codes, and no zombie is left after.
// exitCodeRe finds the exit code in a Bash result.
var exitCodeRe = regexp.MustCompile(`Exit code (-?[0-9]+)`)

func TestFaultProcessExitCodesUnderLoad(t *testing.T) {
	const sessions, perSession = 10, 8
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	d := startLoadDaemon(t, root, bashAllowed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := d.dial(t, ctx)
	// A stream per session (a stream follows one session), each running
	// one batch of calls; the sessions' calls run concurrently.
	errs := make(chan error, sessions*perSession)
	var wg sync.WaitGroup
	for i := range sessions {
		s, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		sess := newSession(t, ctx, c, proj)
		if _, err := s.Subscribe(sess, 0, true); err != nil {
			t.Fatal(err)
		}
		want := map[string]int{}
		var calls []*tacklev1.ToolCall
		for j := range perSession {
			id := fmt.Sprintf("s%dc%d", i, j)
			code := 2 + i*perSession + j
			want[id] = code
			cmd := fmt.Sprintf("setsid sleep 0.05 >/dev/null 2>&1 & sleep 0.0%d; exit %d", j%5, code)
			calls = append(calls, &tacklev1.ToolCall{Id: id, Name: "Bash", InputJson: mustJSON(map[string]any{"command": cmd})})
		}
		if err := s.RunBatch(&tacklev1.RunBatch{SessionId: sess, Ref: fmt.Sprintf("b%d", i), Calls: calls}); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(want) > 0 {
				m, err := s.Recv()
				if err != nil {
					errs <- err
					return
				}
				if m.GetError() != nil {
					errs <- fmt.Errorf("session %d: %v", i, m.GetError())
					return
				}
				e := m.GetEvent()
				code, ok := want[e.GetCallId()]
				if e.GetType() != "call_result" || !ok {
					continue
				}
				delete(want, e.GetCallId())
				text := ""
				for _, b := range e.GetResult().GetContent() {
					text += b.GetText()
				}
				if m := exitCodeRe.FindStringSubmatch(text); m == nil || m[1] != strconv.Itoa(code) {
					errs <- fmt.Errorf("call %s (exit %d): %s %q", e.GetCallId(), code, e.GetResult().GetStatus(), text)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// Then no child of the daemon is left a zombie.
	daemon := d.cmd.Process.Pid
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		zombies := 0
		for _, p := range allProcs() {
			if p.ppid == daemon && p.state == 'Z' {
				zombies++
			}
		}
		if zombies == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d zombie children of the daemon after %d Bash calls", zombies, sessions*perSession)
		}
	}
}

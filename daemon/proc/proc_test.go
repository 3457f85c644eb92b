package proc

// No goleak here: Init starts goroutines for the life of the process, on
// purpose.

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

const helperEnv = "TACKLE_PROC_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		helper()
		return
	}
	os.Exit(m.Run())
}

// helper is a stand-in daemon: it starts `sleep 60` through Start, prints
// its pid and waits to be killed.
func helper() {
	if err := Init(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	cmd := exec.Command("/bin/sleep", "60")
	if _, err := Start(cmd, "test", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(cmd.Process.Pid)
	select {}
}

// waitRecord reads the record file at path until ok accepts it (the
// recorder writes it a moment after a Start), and returns it and its bytes.
// A read that overlaps the recorder's write in place may see the new
// record's head and the old one's tail (a buffered read is not atomic with
// a write), so a record that does not parse is read again too.
func waitRecord(t *testing.T, path string, ok func(Record) bool) (Record, []byte) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b, err := os.ReadFile(path)
		var rec Record
		if err == nil {
			if err = json.Unmarshal(b, &rec); err == nil && ok(rec) {
				return rec, b
			}
		}
		if time.Now().After(end) {
			t.Fatalf("the record is %s (%v)", b, err)
		}
	}
}

// startOwned starts cmd as it is (no Pdeathsig, no group, no record, no
// tag) but owned, as Start's are: a test's os/exec child in a session of
// its own must be, or the reaper (once Init ran) takes its exit status.
func startOwned(cmd *exec.Cmd) error {
	global.forkMu.RLock()
	defer global.forkMu.RUnlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	global.own(&Handle{pid: cmd.Process.Pid, pgid: cmd.Process.Pid, what: "test"})
	return nil
}

// releaseOwned undoes startOwned once cmd has been waited for.
func releaseOwned(cmd *exec.Cmd) {
	global.mu.Lock()
	delete(global.owned, cmd.Process.Pid)
	global.mu.Unlock()
}

// gone reports whether pid has exited (gone, or a zombie nobody reaped yet).
func gone(pid int) bool {
	p, err := readStat(pid)
	return err != nil || p.state == 'Z' || p.state == 'X'
}

func waitGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); !gone(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("process %d still runs after %s", pid, d)
		}
	}
}

// TestChildDiesWithDaemon: SIGKILL the process that started a child; the
// child is killed by the kernel (Pdeathsig).
func TestChildDiesWithDaemon(t *testing.T) {
	h := exec.Command(os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), helperEnv+"=1")
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscan(out, &pid); err != nil {
		h.Process.Kill() //nolint:errcheck // cleanup
		t.Fatalf("reading the helper's child: %v", err)
	}
	if gone(pid) {
		t.Fatal("the child is not running")
	}
	h.Process.Kill() //nolint:errcheck // the test
	h.Wait()         //nolint:errcheck // killed
	waitGone(t, pid, 5*time.Second)
}

// TestChildSurvivesThreadExits: threads ending (goroutines exiting locked
// to them) do not kill children started by Start, as they kill children
// forked from those threads with Pdeathsig — the reason for the forkers.
func TestChildSurvivesThreadExits(t *testing.T) {
	if err := Init(); err != nil {
		t.Logf("no subreaper: %v", err)
	}
	// The hazard, shown: a child forked with Pdeathsig on a thread that
	// then ends is killed with it.
	var wg sync.WaitGroup
	var naive *exec.Cmd
	var tid int
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		tid = unix.Gettid()
		naive = exec.Command("/bin/sleep", "60")
		naive.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := startOwned(naive); err != nil {
			t.Error(err)
		}
	}()
	wg.Wait()
	if naive.Process == nil {
		t.FailNow()
	}
	if tid == os.Getpid() {
		// The goroutine ran on the main thread, which the runtime
		// never ends (it wedges it): nothing to show this time.
		naive.Process.Kill() //nolint:errcheck // cleanup
		naive.Wait()         //nolint:errcheck // killed
	} else {
		err := naive.Wait()
		if ws, ok := naive.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("a child forked on a thread that ended: %v (%v), want killed by SIGKILL", naive.ProcessState, err)
		}
	}
	releaseOwned(naive)

	cmd := exec.Command("/bin/sleep", "60")
	h, err := Start(cmd, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Release()
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // the thread ends
		}()
	}
	wg.Wait()
	if gone(cmd.Process.Pid) {
		t.Fatal("a child started by Start died when threads ended")
	}
	cmd.Process.Kill() //nolint:errcheck // the test
	cmd.Wait()         //nolint:errcheck // killed
}

// children of this process in state Z.
func zombies() []int {
	var z []int
	for _, pid := range children(os.Getpid()) {
		if p, err := readStat(pid); err == nil && p.state == 'Z' {
			z = append(z, pid)
		}
	}
	return z
}

// TestReaper: orphans that leave the group (setsid) or stay in it are
// reaped, while the owners of started processes and of plain os/exec
// children still get their exit status.
func TestReaper(t *testing.T) {
	if err := Init(); err != nil {
		t.Skipf("no subreaper: %v", err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 50 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf("setsid sleep 0.1 & sleep 0.1 & exit %d", 1+i))
			err := Run(cmd, "test")
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1+i {
				errs <- fmt.Errorf("run %d through Start: %v, want exit status %d", i, err, 1+i)
			}
		}()
		go func() {
			defer wg.Done()
			// Not through Start: the reaper must leave it to os/exec.
			err := exec.Command("/bin/sh", "-c", fmt.Sprintf("exit %d", 100+i)).Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 100+i {
				errs <- fmt.Errorf("plain run %d: %v, want exit status %d", i, err, 100+i)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The orphans end after 0.1 s; then none may be left as a zombie.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		z := zombies()
		sleeping := 0
		for _, pid := range children(os.Getpid()) {
			if p, err := readStat(pid); err == nil && p.state != 'Z' {
				sleeping++
			}
		}
		if len(z) == 0 && sleeping == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("zombie children left: %v (%d children running)", z, sleeping)
		}
	}
}

// TestReaperLeavesUnknownChildWithinGrace: a child not started through
// Start, in the process's own session, that nobody has waited for yet is
// not reaped at once (its owner may be about to wait).
func TestReaperLeavesUnknownChildWithinGrace(t *testing.T) {
	if err := Init(); err != nil {
		t.Skipf("no subreaper: %v", err)
	}
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); !gone(cmd.Process.Pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("true did not end")
		}
	}
	time.Sleep(200 * time.Millisecond) // the reaper has seen it
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the owner's Wait after 200 ms: %v (reaped under its feet?)", err)
	}
}

func writeRecord(t *testing.T, path string, rec Record) {
	t.Helper()
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startGroup starts `sleep 60` leading its own group, with TagVar=tag in
// its environment unless tag is "", and returns it and its start time.
func startGroup(t *testing.T, tag string) (*exec.Cmd, uint64) {
	t.Helper()
	cmd := exec.Command("/bin/sleep", "60")
	if tag != "" {
		cmd.Env = append(os.Environ(), TagVar+"="+tag)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startOwned(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() //nolint:errcheck // cleanup
		cmd.Wait()         //nolint:errcheck // cleanup
		releaseOwned(cmd)
	})
	st, err := starttime(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	return cmd, st
}

func killedBySIGKILL(t *testing.T, cmd *exec.Cmd) bool {
	t.Helper()
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }() //nolint:errcheck // the state is what matters
	select {
	case <-done:
	case <-time.After(200 * time.Millisecond):
		return false
	}
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signal() == syscall.SIGKILL
}

func TestRecover(t *testing.T) {
	defer StopRecording()
	dir := t.TempDir()
	path := filepath.Join(dir, RecordFile)

	victim, vst := startGroup(t, "")
	reused, rst := startGroup(t, "")
	rebooted, bst := startGroup(t, "")
	self, _ := starttime(os.Getpid())
	writeRecord(t, path, Record{Version: 1, PID: 1 << 22, Start: self, BootID: bootID(), Groups: []Group{
		{PGID: victim.Process.Pid, Start: vst, What: "bash"},
		{PGID: reused.Process.Pid, Start: rst + 1, What: "bash"}, // another process now
	}})
	killed, err := Recover(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 1 || killed[0].PGID != victim.Process.Pid || killed[0].What != "bash" {
		t.Errorf("killed %v, want the victim's group %d", killed, victim.Process.Pid)
	}
	if !killedBySIGKILL(t, victim) {
		t.Error("the recorded group was not killed")
	}
	if gone(reused.Process.Pid) {
		t.Error("a group recorded with another start time was killed")
	}

	// Another boot's record, or a daemon that still runs: nothing is killed.
	for name, rec := range map[string]Record{
		"rebooted": {Version: 1, BootID: "another-boot", Groups: []Group{{PGID: rebooted.Process.Pid, Start: bst}}},
		"running":  {Version: 1, PID: reused.Process.Pid, Start: rst, BootID: bootID(), Groups: []Group{{PGID: rebooted.Process.Pid, Start: bst}}},
	} {
		writeRecord(t, path, rec)
		if killed, _ := Recover(path); len(killed) != 0 || gone(rebooted.Process.Pid) {
			t.Errorf("%s: killed %v", name, killed)
		}
	}

	// This process's record: a started group is listed with its start
	// time and tagged environment until released; the file is 0600.
	cmd := exec.Command("/bin/sh", "-c", `printf %s "$`+TagVar+`"; exec sleep 60`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h, err := Start(cmd, "bash", nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	rec, b := waitRecord(t, path, func(rec Record) bool { return len(rec.Groups) == 1 })
	if string(buf[:n]) != rec.Tag || rec.Tag == "" {
		t.Errorf("the child's %s is %q, the record's tag %q", TagVar, buf[:n], rec.Tag)
	}
	if rec.Groups[0].PGID != cmd.Process.Pid || rec.Groups[0].Start == 0 || rec.PID != os.Getpid() {
		t.Errorf("record %s, want the group %d", b, cmd.Process.Pid)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("record file mode: %v %v", fi.Mode(), err)
	}
	// A second group makes the record longer; both released, the next
	// Start's record, shorter, replaces it whole (released groups are
	// dropped at the next write).
	cmd2 := exec.Command("/bin/sleep", "60")
	h2, err := Start(cmd2, "hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, long := waitRecord(t, path, func(rec Record) bool { return len(rec.Groups) == 2 })
	for _, c := range []*exec.Cmd{cmd, cmd2} {
		c.Process.Kill() //nolint:errcheck // the test
		c.Wait()         //nolint:errcheck // killed
	}
	h.Release()
	h2.Release()
	last := exec.Command("/bin/sleep", "60")
	h3, err := Start(last, "mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The write pads the record to the old length, then truncates it: a
	// read between the two sees the padded record, so wait for the end.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		rec, b = waitRecord(t, path, func(rec Record) bool { return len(rec.Groups) == 1 && rec.Groups[0].PGID == last.Process.Pid })
		if len(b) < len(long) || time.Now().After(end) {
			break
		}
	}
	if rec.Groups[0].What != "mcp" || len(b) >= len(long) {
		t.Errorf("after two releases and a start, the record is %s (was %s)", b, long)
	}
	last.Process.Kill() //nolint:errcheck // the test
	last.Wait()         //nolint:errcheck // killed
	h3.Release()

	// A leftover found by the previous run's tag alone (it left its group).
	tag := "test-tag-" + strconv.Itoa(os.Getpid())
	orphan := exec.Command("/bin/sleep", "60")
	orphan.Env = append(os.Environ(), TagVar+"="+tag)
	orphan.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := startOwned(orphan); err != nil {
		t.Fatal(err)
	}
	defer releaseOwned(orphan)
	writeRecord(t, path, Record{Version: 1, PID: 1 << 22, Start: self, BootID: bootID(), Tag: tag})
	killed, _ = Recover(path)
	if len(killed) != 1 || !killed[0].ByTag || killed[0].PID != orphan.Process.Pid {
		t.Errorf("killed %v, want the tagged process %d", killed, orphan.Process.Pid)
	}
	if !killedBySIGKILL(t, orphan) {
		t.Error("the tagged process was not killed")
	}
	StopRecording()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("StopRecording left the record: %v", err)
	}
}

// startAt starts cmd (Setpgid) with pid, by setting the pid namespace's
// last pid (root only); other processes forking meanwhile can take it, so
// it tries a few times. It reports whether cmd got pid (else cmd is not
// running).
func startAt(t *testing.T, pid int, mk func() *exec.Cmd) (*exec.Cmd, bool) {
	t.Helper()
	for range 50 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Skipf("cannot choose the next pid: %v", err)
		}
		cmd := mk()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cmd.Process.Pid == pid {
			return cmd, true
		}
		cmd.Process.Kill() //nolint:errcheck // not the pid wanted
		cmd.Wait()         //nolint:errcheck // killed
	}
	return nil, false
}

// TestRecoverReusedPid: the pid of a recorded group's leader, reused by an
// unrelated process — the leader of its own group, or a leader gone whose
// group lives on — is not killed; a group whose leader is gone but whose
// member carries the run's tag is.
func TestRecoverReusedPid(t *testing.T) {
	defer StopRecording()
	path := filepath.Join(t.TempDir(), RecordFile)
	self, _ := starttime(os.Getpid())
	const tag = "reused-test"

	old, ost := startGroup(t, "")
	pid := old.Process.Pid
	old.Process.Kill() //nolint:errcheck // the recorded process ends
	old.Wait()         //nolint:errcheck // killed

	// The pid now leads an unrelated group.
	reuser, ok := startAt(t, pid, func() *exec.Cmd {
		c := exec.Command("/bin/sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return c
	})
	if !ok {
		t.Skip("could not get the pid reused")
	}
	writeRecord(t, path, Record{Version: 1, PID: 1 << 22, Start: self, BootID: bootID(), Tag: tag,
		Groups: []Group{{PGID: pid, Start: ost, What: "bash"}}})
	killed, err := Recover(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 0 || gone(reuser.Process.Pid) {
		t.Errorf("killed %v: the process that reused pid %d", killed, pid)
	}
	reuser.Process.Kill() //nolint:errcheck // next case
	reuser.Wait()         //nolint:errcheck // killed

	// The pid reused by a leader that exited, its group living on (no
	// tag): the recorded leader is gone, the group is not the recorded one.
	var member int
	leader, ok := startAt(t, pid, func() *exec.Cmd {
		c := exec.Command("/bin/sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		return c
	})
	if !ok {
		t.Skip("could not get the pid reused")
	}
	leader.Wait() //nolint:errcheck // it exits at once, leaving its member
	for _, p := range listProcs() {
		if p.pgrp == pid && p.pid != pid && p.state != 'Z' {
			member = p.pid
		}
	}
	if member == 0 {
		t.Fatal("the reused group's member is not running")
	}
	defer syscall.Kill(member, syscall.SIGKILL) //nolint:errcheck // cleanup
	writeRecord(t, path, Record{Version: 1, PID: 1 << 22, Start: self, BootID: bootID(), Tag: tag,
		Groups: []Group{{PGID: pid, Start: ost, What: "bash"}}})
	if killed, _ := Recover(path); len(killed) != 0 || gone(member) {
		t.Errorf("killed %v: a member of the group that reused pid %d", killed, pid)
	}

	// The recorded leader gone, its member carrying the tag: the group
	// is the recorded one, and is killed whole.
	lead := exec.Command("/bin/sh", "-c", "sleep 60 >/dev/null 2>&1 & sleep 60 >/dev/null 2>&1 & exit 0")
	lead.Env = append(os.Environ(), TagVar+"="+tag)
	lead.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := lead.Start(); err != nil {
		t.Fatal(err)
	}
	lst, _ := starttime(lead.Process.Pid)
	lead.Wait() //nolint:errcheck // it exits at once
	writeRecord(t, path, Record{Version: 1, PID: 1 << 22, Start: self, BootID: bootID(), Tag: tag,
		Groups: []Group{{PGID: lead.Process.Pid, Start: lst, What: "bash"}}})
	killed, _ = Recover(path)
	if len(killed) != 1 || killed[0].PGID != lead.Process.Pid {
		t.Errorf("killed %v, want the group %d whose members carry the tag", killed, lead.Process.Pid)
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		running := 0
		for _, p := range listProcs() {
			if p.pgrp == lead.Process.Pid && p.state != 'Z' && p.state != 'X' {
				running++
			}
		}
		if running == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("%d members of the killed group still run", running)
		}
	}
}

// TestRecoverOtherUser: a recorded group, and a process carrying the tag,
// that belong to another user are not killed, even by root.
func TestRecoverOtherUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to start another user's process")
	}
	defer StopRecording()
	path := filepath.Join(t.TempDir(), RecordFile)
	self, _ := starttime(os.Getpid())
	const tag = "other-user-test"
	var cmds []*exec.Cmd
	for _, setsid := range []bool{false, true} {
		c := exec.Command("/bin/sleep", "60")
		c.Env = append(os.Environ(), TagVar+"="+tag)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: !setsid, Setsid: setsid, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		if err := startOwned(c); err != nil {
			t.Fatal(err)
		}
		defer func() {
			c.Process.Kill() //nolint:errcheck // cleanup
			c.Wait()         //nolint:errcheck // cleanup
			releaseOwned(c)
		}()
		cmds = append(cmds, c)
	}
	st, _ := starttime(cmds[0].Process.Pid)
	writeRecord(t, path, Record{Version: 1, PID: 1 << 22, Start: self, BootID: bootID(), Tag: tag,
		Groups: []Group{{PGID: cmds[0].Process.Pid, Start: st, What: "bash"}}})
	killed, err := Recover(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(killed) != 0 || gone(cmds[0].Process.Pid) || gone(cmds[1].Process.Pid) {
		t.Errorf("killed %v: processes of user 65534", killed)
	}
}

// TestKeeperActsOnDyingDaemonsRecord: the keeper kills what the record
// lists as soon as the daemon's pipe closes, though the daemon's pid may
// not look dead yet — but only for the record of the daemon it watched
// (another daemon may have written the file since).
func TestKeeperActsOnDyingDaemonsRecord(t *testing.T) {
	victim, vst := startGroup(t, "watched")
	self, _ := starttime(os.Getpid())
	rec := Record{Version: 1, PID: os.Getpid(), Start: self, BootID: bootID(), Tag: "watched",
		Groups: []Group{{PGID: victim.Process.Pid, Start: vst, What: "bash"}}}
	if killed := killLeftovers(&rec, "another"); len(killed) != 0 {
		t.Errorf("another daemon's record: killed %v", killed)
	}
	if gone(victim.Process.Pid) {
		t.Fatal("killed from another daemon's record")
	}
	if killed := killLeftovers(&rec, "watched"); len(killed) != 1 {
		t.Errorf("the watched daemon's record: killed %v, want the group %d", killed, victim.Process.Pid)
	}
	if !killedBySIGKILL(t, victim) {
		t.Error("the recorded group was not killed")
	}
}

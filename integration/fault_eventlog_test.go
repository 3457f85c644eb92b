package integration

// Issue 18, faults 3 and 4, on the real tackled: the session log under a
// database locked by another process and a full disk, and one huge
// command.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"google.golang.org/protobuf/proto"

	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// faultDaemon is a tackled process whose stderr (its log) is kept.
type faultDaemon struct {
	socket, state string
	cmd           *exec.Cmd
	stderr        *logBuffer
}

type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *logBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *logBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startFaultDaemon starts tackled on root/tackled.sock with its state in
// state; wrap, if given, is the command line it runs under (nsenter).
func startFaultDaemon(t *testing.T, root, state string, wrap ...string) *faultDaemon {
	t.Helper()
	d := &faultDaemon{socket: filepath.Join(root, "tackled.sock"), state: state, stderr: &logBuffer{}}
	args := append(wrap, filepath.Join(binDir, "tackled"), "--socket", d.socket, "--state-dir", state, "--log-level", "info")
	d.cmd = exec.Command(args[0], args[1:]...)
	d.cmd.Env = []string{"HOME=" + root, "XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "PATH=" + os.Getenv("PATH")}
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.stop)
	return d
}

// stop ends the daemon gracefully (it flushes its log) and waits for it.
func (d *faultDaemon) stop() {
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	_ = d.cmd.Wait()
}

func (d *faultDaemon) dial(t *testing.T, ctx context.Context) *client.Client {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		c, err := client.Dial(ctx, &client.Options{Socket: d.socket, NoAutostart: true, ClientName: "fault"})
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c
		}
		if time.Now().After(end) {
			t.Fatalf("the daemon does not answer: %v", err)
		}
	}
}

// cpu is the daemon's CPU time so far (user and system).
func (d *faultDaemon) cpu(t *testing.T) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", d.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// faultSession makes a session in a new project directory and a
// controller subscribed to its live events.
func faultSession(t *testing.T, ctx context.Context, c *client.Client, root string) (string, string, *client.Stream) {
	t.Helper()
	proj := filepath.Join(root, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	resp, err := c.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: proj})
	if err != nil {
		t.Fatal(err)
	}
	sid := resp.GetSession().GetId()
	s, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Subscribe(sid, 0, true); err != nil {
		t.Fatal(err)
	}
	return sid, proj, s
}

// callOutcome is what one call showed its client live.
type callOutcome struct {
	id      string
	result  *tacklev1.ToolResult
	asked   time.Duration // from RunBatch to permission_requested; 0 if not asked
	notices []string
	// seqs are the events of the call (those with its id) shown live,
	// its result's last.
	seqs []uint64
}

// runFaultCall runs one call and reads the stream until its result,
// answering a permission request with answer.
func runFaultCall(t *testing.T, s *client.Stream, sid, id, name, input string, answer tacklev1.Decision) callOutcome {
	t.Helper()
	start := time.Now()
	if err := s.RunBatch(&tacklev1.RunBatch{SessionId: sid, Ref: id, Calls: []*tacklev1.ToolCall{{Id: id, Name: name, InputJson: input}}}); err != nil {
		t.Fatal(err)
	}
	o := callOutcome{id: id}
	for {
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("call %s: %v", id, err)
		}
		e := m.GetEvent()
		if e.GetCallId() == id {
			o.seqs = append(o.seqs, e.GetSeq())
		}
		switch {
		case e == nil:
		case e.GetType() == "notice":
			o.notices = append(o.notices, e.GetText())
		case e.GetType() == "permission_requested" && e.GetCallId() == id:
			o.asked = time.Since(start)
			if err := s.Answer(&tacklev1.PermissionAnswer{SessionId: sid, RequestId: e.GetPermission().GetRequestId(), Decision: answer}); err != nil {
				t.Fatal(err)
			}
		case e.GetType() == "call_result" && e.GetCallId() == id:
			o.result = e.GetResult()
			return o
		}
	}
}

// replay reads a session's log from seq 1 to its last on a fresh observer
// stream and returns the events; it fails on any stream error.
func replay(t *testing.T, ctx context.Context, c *client.Client, sid string) []*tacklev1.Event {
	t.Helper()
	sess, err := c.GetSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	last := sess.GetLastSeq()
	s, err := c.Attach(ctx, tacklev1.Role_ROLE_OBSERVER)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Subscribe(sid, 1, false); err != nil {
		t.Fatal(err)
	}
	var out []*tacklev1.Event
	for len(out) == 0 || out[len(out)-1].GetSeq() < last {
		m, err := s.Recv()
		if err != nil {
			t.Fatalf("replay of session %s after seq %d of %d: %v", sid, len(out), last, err)
		}
		if se := m.GetError(); se != nil {
			t.Fatalf("replay of session %s: %s", sid, se.GetMessage())
		}
		if e := m.GetEvent(); e != nil {
			out = append(out, e)
		}
	}
	return out
}

func faultRoot(t *testing.T) string {
	t.Helper()
	root, err := os.MkdirTemp("", "tkf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	return root
}

// TestFaultEventLogLocked: another process (the sqlite3 CLI) holds
// state.db locked with BEGIN EXCLUSIVE for 8 s, longer than the 5 s busy
// timeout, while calls run and one raises a permission prompt. The prompt
// reaches the client at once, every call completes, and after the lock
// every event is stored, without a gap or a notice of loss.
func TestFaultEventLogLocked(t *testing.T) {
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("needs the sqlite3 CLI (apt-get install sqlite3)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := faultRoot(t)
	state := filepath.Join(root, "state")
	d := startFaultDaemon(t, root, state)
	c := d.dial(t, ctx)
	sid, proj, s := faultSession(t, ctx, c, root)
	if o := runFaultCall(t, s, sid, "warm", "Bash", `{"command":"echo warm"}`, tacklev1.Decision_DECISION_DENY); o.result.GetIsError() {
		t.Fatalf("warm-up call: %v", o.result.GetContent())
	}

	lock := exec.Command("sqlite3", filepath.Join(state, "state.db"))
	stdin, err := lock.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := lock.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	lock.Stderr = os.Stderr
	if err := lock.Start(); err != nil {
		t.Fatal(err)
	}
	// .bail stops at a failed BEGIN, which .timeout makes wait for the
	// daemon's commit of the warm-up call (else it may fail at once, and
	// the test ran with no lock).
	if _, err := io.WriteString(stdin, ".bail on\n.timeout 5000\nBEGIN EXCLUSIVE;\nSELECT 'locked';\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("sqlite3 did not take the lock: %q %v", line, err)
	}
	lockedAt := time.Now()
	const hold = 8 * time.Second
	unlock := time.AfterFunc(hold, func() {
		io.WriteString(stdin, "COMMIT;\n")
		stdin.Close()
	})
	defer unlock.Stop()

	for i := range 5 {
		id := fmt.Sprintf("locked%d", i)
		o := runFaultCall(t, s, sid, id, "Bash", mustJSON(map[string]string{"command": "echo " + id}), tacklev1.Decision_DECISION_DENY)
		if o.result.GetStatus() != "completed" || o.result.GetIsError() {
			t.Errorf("call %s during the lock: %s %v", id, o.result.GetStatus(), o.result.GetContent())
		}
	}
	o := runFaultCall(t, s, sid, "prompt", "Bash", mustJSON(map[string]string{"command": "touch " + filepath.Join(proj, "made")}), tacklev1.Decision_DECISION_ALLOW_ONCE)
	if o.asked == 0 || o.asked > 2*time.Second {
		t.Errorf("the permission prompt reached the client after %s (0: never), want at once", o.asked)
	}
	if o.result.GetStatus() != "completed" {
		t.Errorf("the prompted call: %s %v", o.result.GetStatus(), o.result.GetContent())
	}
	ran := time.Since(lockedAt)
	if ran >= hold {
		t.Fatalf("the calls took %s: they did not run during the lock", ran)
	}
	if err := lock.Wait(); err != nil {
		t.Fatalf("sqlite3: %v", err)
	}
	t.Logf("6 calls and a prompt (asked after %s) ran in the first %s of an %s lock", o.asked, ran, hold)

	// Everything is stored: after a restart the log replays from the
	// database alone, gapless.
	sess, err := c.GetSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	last := sess.GetLastSeq()
	c.Close()
	d.stop()
	if strings.Contains(d.stderr.String(), "writes lost") {
		t.Errorf("the daemon lost writes:\n%s", d.stderr.String())
	}
	d = startFaultDaemon(t, root, state)
	c = d.dial(t, ctx)
	evs := replay(t, ctx, c, sid)
	results := 0
	for i, e := range evs {
		if e.GetSeq() != uint64(i+1) {
			t.Fatalf("stored log: seq %d where %d was due", e.GetSeq(), i+1)
		}
		if e.GetType() == "notice" && strings.Contains(e.GetText(), "could not be written") {
			t.Errorf("notice of a loss: %s", e.GetText())
		}
		if e.GetType() == "call_result" {
			results++
		}
	}
	if uint64(len(evs)) < last || results != 7 {
		t.Errorf("stored %d events (last seq before the restart %d), %d results; want all, 7 results", len(evs), last, results)
	}
}

// smallFS mounts a 4 MB tmpfs on dir in a mount namespace of its own, as
// any user may where user namespaces are allowed: `unshare -Urm` makes a
// user namespace in which the caller is root, and a mount namespace owned
// by it, kept alive by a sleeping process. It returns the command line
// that runs a program in that namespace (nsenter) and the path by which
// the test reaches the tmpfs from outside (/proc/PID/root/dir). It skips
// the test where that is not possible.
func smallFS(t *testing.T, dir string) (wrap []string, view string) {
	t.Helper()
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s (util-linux)", tool)
		}
	}
	holder := exec.Command("unshare", "-Urm", "sh", "-c", `mount -t tmpfs -o size=4m,mode=0700 tmpfs "$1" && echo mounted && exec sleep 3600`, "sh", dir)
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	holder.Stderr = &stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = holder.Process.Kill()
		_ = holder.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "mounted\n" {
		_ = holder.Wait()
		t.Skipf("cannot mount a small tmpfs in a user namespace here (%v): %s", err, stderr.String())
	}
	pid := strconv.Itoa(holder.Process.Pid)
	return []string{"nsenter", "-t", pid, "-U", "-m", "--preserve-credentials", "--"}, filepath.Join("/proc", pid, "root", dir)
}

// fill writes a file in dir until the file system is full and returns
// its path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 16<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v, want ENOSPC", dir, err)
			}
			return path
		}
	}
}

// TestFaultEventLogDiskFull: the state directory is a 4 MB tmpfs, filled
// up while calls run. The writer retries, then tells every client with a
// notice; a call running when the write finally fails ends with an error
// result saying the session log could not be written; the daemon logs an
// error; once there is room again the log goes on and a stored notice
// lists every event lost, so the replay has no gap without a notice.
// Exactly the calls that lost events are told (checkCallLosses): by their
// result, or by the notice of the loss when their result was shown first;
// the first call once there is room (a quick Read, done before its events'
// commit) was told of a loss that was not its own.
func TestFaultEventLogDiskFull(t *testing.T) {
	root := faultRoot(t)
	state := filepath.Join(root, "state")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	wrap, view := smallFS(t, state)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	d := startFaultDaemon(t, root, state, wrap...)
	c := d.dial(t, ctx)
	sid, proj, s := faultSession(t, ctx, c, root)
	var calls []callOutcome
	run := func(id, name, input string) callOutcome {
		o := runFaultCall(t, s, sid, id, name, input, tacklev1.Decision_DECISION_DENY)
		calls = append(calls, o)
		return o
	}
	if o := run("warm", "Bash", `{"command":"echo warm"}`); o.result.GetIsError() {
		t.Fatalf("warm-up call: %v", o.result.GetContent())
	}
	readMe := filepath.Join(proj, "read.txt")
	if err := os.WriteFile(readMe, []byte("read me\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	filler := fill(t, view)
	// Quick calls until a commit fails (SQLite may still have room in its
	// write-ahead log for a while), then one that runs past the end of
	// the writer's retries.
	var notices []string
	full := 0
	for !strings.Contains(d.stderr.String(), "storing the session log failed: retrying") {
		if full == 500 {
			t.Fatalf("no commit failed after %d calls on a full disk", full)
		}
		id := fmt.Sprintf("full%d", full)
		o := run(id, "Bash", mustJSON(map[string]string{"command": "echo " + id}))
		notices = append(notices, o.notices...)
		full++
	}
	o := run("long", "Bash", `{"command":"sleep 5; echo long"}`)
	notices = append(notices, o.notices...)
	text := ""
	for _, b := range o.result.GetContent() {
		text += b.GetText()
	}
	if !o.result.GetIsError() || !strings.Contains(text, "session log could not be written") {
		t.Errorf("the call running when the write failed: is_error %v, %q", o.result.GetIsError(), text)
	}
	var loss string
	for _, n := range notices {
		if strings.Contains(n, "could not be written") {
			loss = n
			break
		}
	}
	if loss == "" {
		t.Fatalf("no notice of the loss reached the client; notices %q", notices)
	}
	t.Logf("%d calls before a commit failed; notice: %s", full, loss)
	// A replay before the log is written again meets each gap with a
	// notice in it.
	if g := checkGaps(t, "a replay on the full disk", replay(t, ctx, c, sid), "could not be written to the session log"); g == 0 {
		t.Errorf("a replay on the full disk has no gap")
	}
	if log := d.stderr.String(); !strings.Contains(log, "[ERROR]") || !strings.Contains(log, "storing the session log failed: writes lost") {
		t.Errorf("the daemon log has no error for the lost writes:\n%s", log)
	}

	// Room again: the log goes on, and a stored notice lists what was
	// lost (each loss notice is followed by one saying the log is
	// written again).
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	// A quick call, done before the first commit of its events.
	o = run("first", "Read", mustJSON(map[string]string{"file_path": readMe}))
	notices = append(notices, o.notices...)
	owed := func() bool {
		lost, again := -1, -1
		for i, n := range notices {
			switch {
			case strings.Contains(n, "written again"):
				again = i
			case strings.Contains(n, "could not be written"):
				lost = i
			}
		}
		return again < lost
	}
	// A commit can succeed while the disk is still full (the write-ahead
	// log reuses its own space), so a "written again" notice may come
	// before the filler goes, and a batch failing then may still be
	// dropped after it went: calls go on until a notice says the log is
	// written again after the last loss and a call ran with no loss.
	for i, failed := 0, true; owed() || failed; i++ {
		if i == 100 {
			t.Fatalf("no notice that the log is written again, or every call lost events; notices %q", notices)
		}
		o := run(fmt.Sprintf("room%d", i), "Bash", `{"command":"echo room"}`)
		notices = append(notices, o.notices...)
		failed = o.result.GetIsError()
	}
	o = run("ok", "Bash", `{"command":"echo ok"}`)
	notices = append(notices, o.notices...)
	if o.result.GetIsError() {
		t.Errorf("a call once the disk has room: %v", o.result.GetContent())
	}

	c.Close()
	d.stop()
	if os.Getenv("FAULT_DEBUG") != "" {
		t.Log(d.stderr.String())
	}
	d = startFaultDaemon(t, root, state, wrap...)
	c = d.dial(t, ctx)
	evs := replay(t, ctx, c, sid)
	gaps := checkGaps(t, "the stored log", evs, "written again")
	if gaps == 0 {
		t.Errorf("no event was lost on a full disk: the test did not fill it")
	}
	t.Logf("stored log: %d events, %d lost and listed in a notice", len(evs), gaps)
	checkCallLosses(t, calls, evs, notices)
}

// checkCallLosses checks that exactly the calls that lost events were told
// so, evs being the stored log and notices those shown live: a result
// saying the session log could not be written only for a call with an
// event missing from the log (one before its result: the result is
// decided before its own commit), and any other call with an event
// missing (its result's included) named by a notice of the loss
// ("… calls full3 (Bash), long (Bash) …").
func checkCallLosses(t *testing.T, calls []callOutcome, evs []*tacklev1.Event, notices []string) {
	t.Helper()
	stored := map[uint64]bool{}
	for _, e := range evs {
		stored[e.GetSeq()] = true
	}
	told := 0
	for _, o := range calls {
		var missing []uint64
		for _, q := range o.seqs {
			if !stored[q] {
				missing = append(missing, q)
			}
		}
		resultLost := len(missing) > 0 && missing[len(missing)-1] == o.seqs[len(o.seqs)-1]
		before := len(missing)
		if resultLost {
			before--
		}
		text := ""
		for _, b := range o.result.GetContent() {
			text += b.GetText()
		}
		says := o.result.GetIsError() && strings.Contains(text, "session log could not be written")
		named := false
		for _, n := range notices {
			if strings.Contains(n, "could not be written") && strings.Contains(n, " "+o.id+" (") {
				named = true
			}
		}
		switch {
		case says && before == 0:
			t.Errorf("call %s: its result says the session log could not be written, but its events %v are all stored (%d%s)", o.id, o.seqs, before, map[bool]string{true: ", only its result lost"}[resultLost])
		case !says && len(missing) > 0 && !named:
			t.Errorf("call %s lost events %v (of %v) and was not told: its result does not say so and no notice names it", o.id, missing, o.seqs)
		case named && len(missing) == 0:
			t.Errorf("call %s is named by a notice of lost events, but its events %v are all stored", o.id, o.seqs)
		}
		if says || named {
			told++
		}
	}
	t.Logf("%d of %d calls were told that events of theirs are lost", told, len(calls))
}

// checkGaps fails the test for each seq missing from evs (a replay from
// seq 1) that no notice whose text holds mark lists ("with seq 3 to 5, 9
// were ..."), and returns how many are missing.
func checkGaps(t *testing.T, what string, evs []*tacklev1.Event, mark string) int {
	t.Helper()
	covered := map[uint64]bool{}
	span := regexp.MustCompile(`(\d+)(?: to (\d+))?`)
	for _, e := range evs {
		if e.GetType() != "notice" || !strings.Contains(e.GetText(), mark) {
			continue
		}
		_, list, _ := strings.Cut(e.GetText(), "with seq ")
		list, _, _ = strings.Cut(list, " were ")
		for _, m := range span.FindAllStringSubmatch(list, -1) {
			a, _ := strconv.ParseUint(m[1], 10, 64)
			b := a
			if m[2] != "" {
				b, _ = strconv.ParseUint(m[2], 10, 64)
			}
			for q := a; q <= b; q++ {
				covered[q] = true
			}
		}
	}
	gaps := 0
	next := uint64(1)
	for _, e := range evs {
		for ; next < e.GetSeq(); next++ {
			gaps++
			if !covered[next] {
				t.Errorf("%s: seq %d is missing and no notice lists it", what, next)
			}
		}
		next = e.GetSeq() + 1
	}
	return gaps
}

// TestFaultHugeCommand: a 9.9 k-character Bash command of nested $(…)
// costs little daemon CPU and is asked, a 3 MB call input is stored as a
// preview and a file (a 6 MB one too, over gRPC's default message size),
// and the session replays from seq 1 with every event well under the 4 MB
// message limit.
func TestFaultHugeCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := faultRoot(t)
	d := startFaultDaemon(t, root, filepath.Join(root, "state"))
	c := d.dial(t, ctx)
	sid, proj, s := faultSession(t, ctx, c, root)
	if o := runFaultCall(t, s, sid, "warm", "Bash", `{"command":"echo warm"}`, tacklev1.Decision_DECISION_DENY); o.result.GetIsError() {
		t.Fatalf("warm-up call: %v", o.result.GetContent())
	}

	const n = 1240
	huge := strings.Repeat("echo $(", n) + "x" + strings.Repeat(")", n)
	before := d.cpu(t)
	start := time.Now()
	o := runFaultCall(t, s, sid, "huge", "Bash", mustJSON(map[string]string{"command": huge}), tacklev1.Decision_DECISION_DENY)
	cpu := d.cpu(t) - before
	t.Logf("a %d-character nested command: %s of daemon CPU, %s to its result", len(huge), cpu, time.Since(start))
	if o.asked == 0 {
		t.Errorf("the huge command was not asked: %s", o.result.GetStatus())
	}
	if cpu > 2*time.Second {
		t.Errorf("the huge command cost %s of daemon CPU, want well under 2 s", cpu)
	}

	big := strings.Repeat("y", 3<<20)
	o = runFaultCall(t, s, sid, "big", "Write", mustJSON(map[string]string{"file_path": filepath.Join(proj, "big.txt"), "content": big}), tacklev1.Decision_DECISION_DENY)
	if o.result.GetStatus() != "denied" {
		t.Errorf("the big Write: %s", o.result.GetStatus())
	}

	// Over gRPC's default 4 MB message: the daemon takes it all the same.
	bigger := strings.Repeat("z", 6<<20)
	o = runFaultCall(t, s, sid, "bigger", "Write", mustJSON(map[string]string{"file_path": filepath.Join(proj, "bigger.txt"), "content": bigger}), tacklev1.Decision_DECISION_DENY)
	if o.result.GetStatus() != "denied" {
		t.Errorf("the 6 MB Write: %s", o.result.GetStatus())
	}

	evs := replay(t, ctx, c, sid)
	largest := 0
	stored := false
	for _, e := range evs {
		largest = max(largest, proto.Size(e))
		for _, call := range e.GetCalls() {
			if strings.Contains(call.GetInputJson(), `"tackle_stored"`) {
				stored = true
			}
		}
	}
	t.Logf("replayed %d events, the largest %d bytes", len(evs), largest)
	if largest > 1<<20+64<<10 {
		t.Errorf("the largest event is %d bytes, want at most about 1 MB", largest)
	}
	if !stored {
		t.Errorf("the 3 MB input was not stored as a preview and a file")
	}
}

// TestFaultReplayOldHugeEvents: a log written by an older daemon, with
// no event bounds, holds a 16.5 MB call result and an assistant message
// whose Write input is 6 MB. `tackle attach --from 0` replays the whole
// session (paging through the stored log), each event bounded on the
// way: the large fields as a preview and the path of a file that holds
// them whole, the message still JSON of the same shape.
func TestFaultReplayOldHugeEvents(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	root := faultRoot(t)
	state := filepath.Join(root, "state")
	d := startFaultDaemon(t, root, state)
	c := d.dial(t, ctx)
	sid, _, s := faultSession(t, ctx, c, root)
	for i := range 3 {
		id := fmt.Sprintf("before%d", i)
		if o := runFaultCall(t, s, sid, id, "Bash", mustJSON(map[string]string{"command": "echo " + id}), tacklev1.Decision_DECISION_DENY); o.result.GetIsError() {
			t.Fatalf("call %s: %v", id, o.result.GetContent())
		}
	}
	c.Close()
	d.stop()

	// What an older daemon stored.
	st, err := store.Open(filepath.Join(state, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	last, err := st.LastSeq(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("nested $(echo ", 2<<20)[:33<<19] // 16.5 MB
	write := strings.Repeat("w", 6<<20)
	msg := mustJSON(map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": "toolu_w", "name": "Write", "input": map[string]any{"file_path": "/tmp/w.txt", "content": write}},
	}})
	now := time.Now().UTC()
	old := []*event.Event{
		{SessionID: sid, Seq: last + 1, Time: now, Type: event.CallResult, CallID: "old", Tool: "Bash",
			Result: &event.Result{CallID: "old", Status: event.StatusCompleted, Content: []tool.Content{tool.Text(huge)}}},
		{SessionID: sid, Seq: last + 2, Time: now, Type: event.AssistantMessage, Message: json.RawMessage(msg)},
	}
	for _, e := range old {
		if err := st.AppendEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	d = startFaultDaemon(t, root, state)
	c = d.dial(t, ctx)
	if _, _, s = faultSessionAttach(t, ctx, c, sid); s == nil {
		t.Fatal("no stream")
	}
	if o := runFaultCall(t, s, sid, "after", "Bash", `{"command":"echo after"}`, tacklev1.Decision_DECISION_DENY); o.result.GetIsError() {
		t.Fatalf("a call after the restart: %v", o.result.GetContent())
	}
	sess, err := c.GetSession(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	end := sess.GetLastSeq()

	cmd := exec.Command(filepath.Join(binDir, "tackle"), "--socket", d.socket, "--no-autostart", "attach", "--session", sid, "--from", "0", "--json", "--observer")
	cmd.Env = d.cmd.Env
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGINT)
		_ = cmd.Wait()
	}()
	timer := time.AfterFunc(time.Minute, func() { _ = cmd.Process.Kill() })
	defer timer.Stop()
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	var seqs []uint64
	largest := 0
	var result, message string
	for sc.Scan() {
		largest = max(largest, len(sc.Bytes()))
		var ev struct {
			Seq  uint64 `json:"seq"`
			Type string `json:"type"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("attach printed a line that is not JSON: %.200q", sc.Text())
		}
		if ev.Type == "snapshot" {
			continue
		}
		seqs = append(seqs, ev.Seq)
		switch ev.Seq {
		case last + 1:
			result = sc.Text()
		case last + 2:
			message = sc.Text()
		}
		if ev.Seq >= end {
			break
		}
	}
	if len(seqs) == 0 || seqs[len(seqs)-1] != end {
		t.Fatalf("attach --from 0 printed seqs %v, want 1 to %d (%v); stderr: %s", seqs, end, sc.Err(), stderr.String())
	}
	for i, q := range seqs {
		if q != uint64(i+1) {
			t.Fatalf("attach --from 0: seq %d where %d was due", q, i+1)
		}
	}
	t.Logf("attach --from 0 replayed %d events, the longest line %d bytes", len(seqs), largest)
	if largest > 1<<20 {
		t.Errorf("the longest line is %d bytes, want the events bounded to about 1 MB", largest)
	}
	for what, line := range map[string]string{"the 16.5 MB result": result, "the 6 MB message": message} {
		_, path, ok := strings.Cut(line, "Full text saved to: ")
		if !ok {
			t.Errorf("%s was not replaced by a preview and a path: %.300q", what, line)
			continue
		}
		path, _, _ = strings.Cut(path, `\n`)
		fi, err := os.Stat(path)
		if err != nil || fi.Size() < 6<<20 {
			t.Errorf("%s: the file %s: %v", what, path, err)
		}
	}
	var m struct {
		Message struct {
			Role    string `json:"role"`
			Content []struct {
				Name  string `json:"name"`
				Input struct {
					FilePath string `json:"file_path"`
				} `json:"input"`
			} `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(message), &m); err != nil || m.Message.Role != "assistant" || len(m.Message.Content) != 1 || m.Message.Content[0].Input.FilePath != "/tmp/w.txt" {
		t.Errorf("the bounded message lost its shape (%v): %.300q", err, message)
	}
}

// faultSessionAttach attaches a controller stream to session sid's live
// events.
func faultSessionAttach(t *testing.T, ctx context.Context, c *client.Client, sid string) (string, string, *client.Stream) {
	t.Helper()
	s, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Subscribe(sid, 0, true); err != nil {
		t.Fatal(err)
	}
	return sid, "", s
}

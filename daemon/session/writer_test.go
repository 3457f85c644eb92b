package session

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// lockedFixture is a session manager on a database with a short busy
// timeout, and a second connection that can hold the database locked.
type lockedFixture struct {
	*fixture
	lockDB *sql.DB
	lock   *sql.Conn
}

func newLockedFixture(t *testing.T) *lockedFixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dbPath: dir + "/state.db", stateDir: dir}
	st, err := store.OpenWith(f.dbPath, &store.Options{BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	f.st = st
	f.m = NewManager(st, &Options{StateDir: dir})
	t.Cleanup(f.close)
	db, err := sql.Open("sqlite", "file:"+f.dbPath+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return &lockedFixture{fixture: f, lockDB: db}
}

// subscribed is a new session of f and a subscription to all its events,
// closed when the test ends.
func (f *lockedFixture) subscribed(t *testing.T) (*Session, *event.Subscription) {
	t.Helper()
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, sub, err := s.Subscribe(1, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return s, sub
}

// hold takes the database's write lock (as another process's BEGIN
// EXCLUSIVE does).
func (l *lockedFixture) hold(t *testing.T) {
	t.Helper()
	c, err := l.lockDB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	l.lock = c
}

func (l *lockedFixture) release(t *testing.T) {
	t.Helper()
	if _, err := l.lock.ExecContext(context.Background(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	l.lock.Close()
}

// TestWriterRetriesWhileLocked: events appended while another connection
// holds the database locked past the busy timeout are all stored once it
// lets go (no gap), a permission request reaches a subscriber at once, and
// a subscriber joining meanwhile replays the queued events without waiting.
func TestWriterRetriesWhileLocked(t *testing.T) {
	f := newLockedFixture(t)
	s, sub := f.subscribed(t)
	f.hold(t)
	for i := 0; i < 20; i++ {
		if _, err := s.Append(&event.Event{Type: event.CallState, CallID: "c", State: event.StateRunning}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	if _, err := s.Append(&event.Event{Type: event.PermissionRequested, CallID: "c", Permission: &event.PermissionRequest{RequestID: "r"}}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 40*time.Millisecond {
		t.Errorf("a permission request waited %s for the locked database", d)
	}
	for want := uint64(1); want <= 21; want++ {
		if e := <-sub.C(); e.Seq != want {
			t.Fatalf("live event seq %d, want %d", e.Seq, want)
		}
	}
	replay, sub2, err := s.Subscribe(1, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub2.Close()
	if len(replay) != 21 || replay[20].Type != event.PermissionRequested {
		t.Fatalf("replay during the lock: %d events, want 21 ending with the request", len(replay))
	}
	// Longer than the busy timeout and several retries.
	time.AfterFunc(400*time.Millisecond, func() { f.release(t) })
	if err := f.m.w.flush(); err != nil {
		t.Fatalf("flush after the lock: %v", err)
	}
	stored, err := f.st.Events(context.Background(), s.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 21 {
		t.Fatalf("stored %d events, want 21", len(stored))
	}
	for i, e := range stored {
		if e.Seq != uint64(i+1) {
			t.Fatalf("stored seq %d at %d: a gap", e.Seq, i)
		}
	}
	if err := s.CallLogFailure("", "c"); err != nil {
		t.Errorf("CallLogFailure after a lock that ended = %v, want nil", err)
	}
}

// TestWriterLossIsNoticed: a write that fails after every retry is
// dropped, and its published events become a notice to every client;
// CallLogFailure says so for their call; a durable event fails with the
// error; once the database takes writes again the log goes on.
func TestWriterLossIsNoticed(t *testing.T) {
	f := newLockedFixture(t)
	f.m.w.retryLocked = 200 * time.Millisecond
	s, sub := f.subscribed(t)
	f.hold(t)
	for i := 0; i < 3; i++ {
		if _, err := s.Append(&event.Event{Type: event.CallState, CallID: "c", State: event.StateRunning}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Append(&event.Event{Type: event.SessionUpdated, Session: &event.SessionChange{Note: "x"}})
	if !errors.Is(err, ErrLogUnwritable) {
		t.Fatalf("durable append while locked: %v, want ErrLogUnwritable", err)
	}
	var notice *event.Event
	for e := range sub.C() {
		if e.Type == event.Notice {
			notice = e
			break
		}
	}
	if notice == nil || notice.Seq != 4 || !strings.Contains(notice.Text, "seq 1 to 3") || !strings.Contains(notice.Text, "could not be written") {
		t.Fatalf("notice = %+v, want seq 4 telling of seq 1 to 3", notice)
	}
	if err := s.CallLogFailure("", "c"); !errors.Is(err, ErrLogUnwritable) {
		t.Errorf("CallLogFailure = %v, want ErrLogUnwritable", err)
	}
	// A replay meanwhile meets the gap with a notice in it.
	replay, sub2, err := s.Subscribe(1, false, 0)
	if err != nil {
		t.Fatal(err)
	}
	sub2.Close()
	if len(replay) == 0 || replay[0].Seq != 3 || replay[0].Type != event.Notice || !strings.Contains(replay[0].Text, "seq 1 to 3") {
		t.Fatalf("replay during the loss starts with %+v, want a notice at seq 3 telling of seq 1 to 3", replay[0])
	}
	f.release(t)
	if _, err := s.Append(&event.Event{Type: event.SessionUpdated, Session: &event.SessionChange{Note: "y"}}); err != nil {
		t.Fatalf("durable append after the lock: %v", err)
	}
	if err := s.CallLogFailure("", "c"); !errors.Is(err, ErrLogUnwritable) {
		t.Errorf("CallLogFailure after a successful commit = %v, want the call's loss still", err)
	}
	// Once the database takes writes again, a stored notice lists what
	// was lost, so that a replay meets no gap without one.
	var summary *event.Event
	for e := range sub.C() {
		if e.Type == event.Notice && strings.Contains(e.Text, "written again") {
			summary = e
			break
		}
	}
	if !strings.Contains(summary.Text, "seq 1 to 3") {
		t.Errorf("summary notice %q does not list seq 1 to 3", summary.Text)
	}
	if err := f.m.w.flush(); err != nil {
		t.Fatal(err)
	}
	stored, err := f.st.Events(context.Background(), s.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) == 0 || stored[len(stored)-1].Seq != summary.Seq {
		t.Fatalf("stored %d events, want the summary notice (seq %d) last", len(stored), summary.Seq)
	}
	for i := 1; i < len(stored); i++ {
		if stored[i].Seq <= stored[i-1].Seq {
			t.Fatalf("stored seq %d after %d", stored[i].Seq, stored[i-1].Seq)
		}
	}
}

// TestCallLogFailureIsTheCallsOwn: CallLogFailure tells a call of the loss
// of its own events only. A call whose result is decided while its events
// are still retried is told nothing then, and the notice of their loss
// names it; a call whose events are lost first is told, and not named
// again; a call whose events were stored is told nothing while the log is
// broken, nor is the first call once the database takes writes again,
// although the log was broken when it began (a red-team run found it
// told of the loss before it).
func TestCallLogFailureIsTheCallsOwn(t *testing.T) {
	f := newLockedFixture(t)
	f.m.w.retryLocked = 200 * time.Millisecond
	s, sub := f.subscribed(t)
	appendCall := func(typ event.Type, id string) *event.Event {
		t.Helper()
		e := &event.Event{Type: typ, TurnID: "t", CallID: id, Tool: "Bash", State: event.StateRunning}
		if typ == event.CallResult {
			e.Result = &event.Result{CallID: id, Name: "Bash", Status: event.StatusCompleted}
		}
		c, err := s.Append(e)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// lossNotices reads the notices of lost events until one tells of
	// seq, and returns them.
	lossNotices := func(seq uint64) []string {
		t.Helper()
		var out []string
		for e := range sub.C() {
			if e.Type != event.Notice || !strings.Contains(e.Text, "could not be written") {
				continue
			}
			out = append(out, e.Text)
			var first, last uint64
			if _, rest, ok := strings.Cut(e.Text, "(seq "); ok {
				fmt.Sscanf(rest, "%d to %d", &first, &last)
			}
			if first <= seq && seq <= last {
				return out
			}
		}
		t.Fatalf("the subscription ended before a notice told of seq %d", seq)
		return nil
	}

	appendCall(event.CallState, "stored")
	if err := f.m.w.flush(); err != nil {
		t.Fatal(err)
	}
	f.hold(t)
	appendCall(event.CallState, "shown")
	if err := s.CallLogFailure("t", "shown"); err != nil {
		t.Errorf("CallLogFailure of a call whose events are still retried = %v, want nil", err)
	}
	r := appendCall(event.CallResult, "shown")
	if ns := lossNotices(r.Seq); !strings.Contains(ns[len(ns)-1], "calls shown (Bash), whose results were shown before") {
		t.Errorf("the notice of the loss of a call whose result was shown first does not name it: %q", ns)
	}

	// The log is broken now: a call waits for its events' commit.
	appendCall(event.CallState, "lost")
	if err := s.CallLogFailure("t", "lost"); !errors.Is(err, ErrLogUnwritable) {
		t.Errorf("CallLogFailure of a call whose events were lost = %v, want ErrLogUnwritable", err)
	}
	if err := s.CallLogFailure("t", "stored"); err != nil {
		t.Errorf("CallLogFailure of a call whose events were stored, the log broken = %v, want nil", err)
	}
	r = appendCall(event.CallResult, "lost")
	for _, n := range lossNotices(r.Seq) {
		if strings.Contains(n, "lost (Bash)") {
			t.Errorf("a notice names a call whose result told of the loss: %q", n)
		}
	}

	f.release(t)
	appendCall(event.CallState, "first")
	if err := s.CallLogFailure("t", "first"); err != nil {
		t.Errorf("CallLogFailure of the first call once the database takes writes = %v, want nil", err)
	}
	appendCall(event.CallResult, "first")
	if err := f.m.w.flush(); err != nil {
		t.Fatal(err)
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if len(s.calls) != 1 || s.calls[callKey{"t", "stored"}] == nil {
		t.Errorf("calls kept: %v, want only the one without a result", s.calls)
	}
}

// TestWriterQueueBound: past maxQueued writes waiting, an event published
// first is still published, with its sequence number, but not stored, and
// a notice tells of it; a durable append fails at once with
// ErrLogUnwritable and uses no sequence number; CallLogFailure says so
// for the call whose events were dropped. Once
// the database takes writes again, a stored notice lists the events lost.
func TestWriterQueueBound(t *testing.T) {
	f := newLockedFixture(t)
	f.m.w.maxQueued = 10
	s, sub := f.subscribed(t)
	f.hold(t)
	const n = 30
	for i := 0; i < n; i++ {
		if _, err := s.Append(&event.Event{Type: event.CallState, CallID: "c", State: event.StateRunning}); err != nil {
			t.Fatalf("append %d: %v", i+1, err)
		}
	}
	_, err := s.Append(&event.Event{Type: event.SessionUpdated, Session: &event.SessionChange{Note: "x"}})
	if !errors.Is(err, ErrLogUnwritable) || !strings.Contains(err.Error(), "already wait for the state database") {
		t.Fatalf("durable append with the queue full: %v, want ErrLogUnwritable saying why", err)
	}
	if err := s.CallLogFailure("", "c"); !errors.Is(err, ErrLogUnwritable) || !strings.Contains(err.Error(), "already wait for the state database") {
		t.Errorf("CallLogFailure with the queue full = %v, want ErrLogUnwritable", err)
	}
	var notice *event.Event
	for e := range sub.C() {
		if e.Type == event.Notice {
			notice = e
			break
		}
		if e.Seq > n {
			t.Fatalf("event %d (%s) before any notice", e.Seq, e.Type)
		}
	}
	if !strings.Contains(notice.Text, "could not be written") || !strings.Contains(notice.Text, "already wait for the state database") {
		t.Fatalf("notice %q does not tell of the loss and why", notice.Text)
	}
	first := notice.Text[strings.Index(notice.Text, "from seq ")+len("from seq "):]
	first = first[:strings.IndexByte(first, ' ')]
	if got, _ := strconv.Atoi(first); got > int(notice.Seq) || got < 2 {
		t.Fatalf("notice %d tells of events from seq %s on", notice.Seq, first)
	}
	f.release(t)
	var summary *event.Event
	for e := range sub.C() {
		if e.Type == event.Notice && strings.Contains(e.Text, "written again") {
			summary = e
			break
		}
	}
	if want := fmt.Sprintf("seq %s to %d", first, n+1); !strings.Contains(summary.Text, want) { // the notice joined the run
		t.Errorf("summary notice %q does not list %s", summary.Text, want)
	}
	if err := f.m.w.flush(); err != nil {
		t.Fatal(err)
	}
	stored, err := f.st.Events(context.Background(), s.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	lastKept, _ := strconv.Atoi(first)
	if got := len(stored); got != lastKept {
		t.Errorf("stored %d events, want the %d queued and the summary", got, lastKept)
	}
	if _, err := s.Append(&event.Event{Type: event.CallState, CallID: "d", State: event.StateRunning}); err != nil {
		t.Fatal(err)
	}
	if err := s.CallLogFailure("", "d"); err != nil {
		t.Errorf("CallLogFailure of a call after the queue drained = %v", err)
	}
}

// TestWriterQueueHoldsBack: a full queue while the database takes writes
// (only slower than they come) holds the appender back: nothing is lost,
// no notice is told.
func TestWriterQueueHoldsBack(t *testing.T) {
	f := newFixture(t)
	f.m.w.maxQueued = 10
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2000
	for i := 0; i < n; i++ {
		if _, err := s.Append(&event.Event{Type: event.CallState, CallID: "c", State: event.StateRunning}); err != nil {
			t.Fatalf("append %d: %v", i+1, err)
		}
	}
	if err := f.m.w.flush(); err != nil {
		t.Fatal(err)
	}
	stored, err := f.st.Events(context.Background(), s.ID(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != n || stored[n-1].Seq != n {
		t.Fatalf("stored %d events, want all %d", len(stored), n)
	}
	for _, e := range stored {
		if e.Type != event.CallState {
			t.Fatalf("stored a %s event: %s", e.Type, e.Text)
		}
	}
	if err := s.CallLogFailure("", "c"); err != nil {
		t.Errorf("CallLogFailure = %v, want nil", err)
	}
}

// TestBoundEvent: an event over the bound keeps a preview of each large
// field and the whole of it in a file; the caller's event is untouched.
func TestBoundEvent(t *testing.T) {
	f := newFixture(t)
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 2<<20)
	input, _ := json.Marshal(map[string]string{"command": big})
	orig := &event.Event{Type: event.TurnStarted, TurnID: "t", Turn: &event.Turn{Calls: []event.CallInfo{{ID: "c", Name: "Bash", Input: input}}}}
	e, err := s.Append(orig)
	if err != nil {
		t.Fatal(err)
	}
	if len(orig.Turn.Calls[0].Input) != len(input) {
		t.Fatal("the caller's event was changed")
	}
	var got map[string]StoredField
	if err := json.Unmarshal(e.Turn.Calls[0].Input, &got); err != nil {
		t.Fatalf("bounded input is not JSON: %v", err)
	}
	sf := got["tackle_stored"]
	if sf.Bytes != len(input) || len(sf.Preview) > fieldPreviewLen || sf.Path == "" {
		t.Fatalf("stored field = bytes %d, preview %d, path %q", sf.Bytes, len(sf.Preview), sf.Path)
	}
	if b, err := os.ReadFile(sf.Path); err != nil || string(b) != string(input) {
		t.Fatalf("the file holds %d bytes (%v), want the whole input", len(b), err)
	}
	res := &event.Event{Type: event.CallResult, CallID: "c", Result: &event.Result{CallID: "c", Status: event.StatusCompleted}}
	res.Result.Content = append(res.Result.Content, textBlock(big))
	e, err = s.Append(res)
	if err != nil {
		t.Fatal(err)
	}
	if EventSize(e) > maxEventBytes || !strings.Contains(e.Result.Content[0].Text, "Full text saved to: ") {
		t.Fatalf("bounded result: %d bytes, %.200q", EventSize(e), e.Result.Content[0].Text)
	}
	stored, err := s.Events(context.Background(), 1)
	if err != nil || len(stored) != 2 || EventSize(stored[1]) > maxEventBytes {
		t.Fatalf("stored: %d events (%v)", len(stored), err)
	}
}

func textBlock(s string) tool.Content { return tool.Text(s) }

// TestBoundedMessage: an event stored with a 5 MB transcript message (a
// Write the model made) is stored whole, and Bounded gives it, for
// sending, with the large string replaced by a preview and a path, its
// message still the same JSON shape.
func TestBoundedMessage(t *testing.T) {
	f := newFixture(t)
	s, _, err := f.m.Create(context.Background(), CreateOptions{Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("z", 5<<20)
	msg, _ := json.Marshal(map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "text", "text": "writing it"},
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Write", "input": map[string]any{"file_path": "/tmp/x", "content": big}},
	}})
	e, err := s.Append(&event.Event{Type: event.AssistantMessage, Message: msg})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Message) != len(msg) {
		t.Fatalf("the stored message holds %d bytes, want all %d", len(e.Message), len(msg))
	}
	b := s.Bounded(e)
	if EventSize(b) > maxEventBytes {
		t.Fatalf("bounded event: %d bytes", EventSize(b))
	}
	var m struct {
		Role    string `json:"role"`
		Content []struct {
			Type  string `json:"type"`
			Text  string `json:"text"`
			Input struct {
				FilePath string `json:"file_path"`
				Content  string `json:"content"`
			} `json:"input"`
		} `json:"content"`
	}
	if err := json.Unmarshal(b.Message, &m); err != nil {
		t.Fatalf("bounded message is not JSON: %v", err)
	}
	if m.Role != "assistant" || len(m.Content) != 2 || m.Content[0].Text != "writing it" || m.Content[1].Input.FilePath != "/tmp/x" {
		t.Fatalf("bounded message lost its shape: %+v", m)
	}
	c := m.Content[1].Input.Content
	_, path, ok := strings.Cut(c, "Full text saved to: ")
	path, _, _ = strings.Cut(path, "\n")
	if !ok || len(c) > fieldPreviewLen+1000 {
		t.Fatalf("bounded content: %d bytes, %.200q", len(c), c)
	}
	if got, err := os.ReadFile(path); err != nil || string(got) != big {
		t.Fatalf("the file holds %d bytes (%v), want the whole content", len(got), err)
	}
	if again := s.Bounded(e); string(again.Message) != string(b.Message) {
		t.Error("bounding the event again gave another message")
	}
}

// BenchmarkAppend: the sustained cost of appending a small event that is
// published at once (a call's state), its commit included: appends come
// faster than commits here, and a full queue holds the appender back.
func BenchmarkAppend(b *testing.B) {
	dir := b.TempDir()
	st, err := store.Open(dir + "/state.db")
	if err != nil {
		b.Fatal(err)
	}
	m := NewManager(st, &Options{StateDir: dir})
	defer func() {
		m.Close()
		st.Close()
	}()
	s, _, err := m.Create(context.Background(), CreateOptions{Cwd: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	e := &event.Event{Type: event.CallState, CallID: "toolu_1", Tool: "Read", State: event.StateRunning}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Append(e); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := m.w.flush(); err != nil {
		b.Fatal(err)
	}
}

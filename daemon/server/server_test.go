package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is one Attach stream of a test.
type client struct {
	t       testing.TB
	stream  tacklev1.TackleService_AttachClient
	cancel  context.CancelFunc
	welcome *tacklev1.Welcome
}

// attach opens an Attach stream on c and says hello.
func attach(t testing.TB, c tacklev1.TackleServiceClient, name string, role tacklev1.Role) *client {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.Attach(ctx)
	if err != nil {
		cancel()
		t.Fatalf("attaching: %v", err)
	}
	cl := &client{t: t, stream: st, cancel: cancel}
	t.Cleanup(cancel)
	cl.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{
		ProtocolVersion: 1, ClientName: name, Role: role,
	}}})
	m := cl.recv()
	cl.welcome = m.GetWelcome()
	if cl.welcome == nil {
		t.Fatalf("first message is not Welcome: %v", m)
	}
	return cl
}

func (c *client) send(m *tacklev1.ClientMessage) {
	c.t.Helper()
	if err := c.stream.Send(m); err != nil {
		c.t.Fatalf("sending %v: %v", m, err)
	}
}

func (c *client) recv() *tacklev1.ServerMessage {
	c.t.Helper()
	m, err := c.stream.Recv()
	if err != nil {
		c.t.Fatalf("receiving: %v", err)
	}
	return m
}

// subscribe subscribes to a session and returns its snapshot.
func (c *client) subscribe(id string, from uint64) *tacklev1.Snapshot {
	c.t.Helper()
	c.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, FromSeq: from}}})
	m := c.recv()
	if m.GetSnapshot() == nil {
		c.t.Fatalf("answer to Subscribe is not a Snapshot: %v", m)
	}
	return m.GetSnapshot()
}

// runBatch sends a RunBatch and returns the turn id.
func (c *client) runBatch(session, ref string, calls ...*tacklev1.ToolCall) string {
	c.t.Helper()
	c.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
		SessionId: session, Ref: ref, Calls: calls,
	}}})
	for {
		m := c.recv()
		if ba := m.GetBatchAccepted(); ba != nil {
			if ba.GetRef() != ref {
				c.t.Fatalf("BatchAccepted ref = %q, want %q", ba.GetRef(), ref)
			}
			return ba.GetTurnId()
		}
		if m.GetError() != nil {
			c.t.Fatalf("RunBatch refused: %v", m.GetError())
		}
	}
}

// eventsUntil collects events until one satisfies stop (included).
func (c *client) eventsUntil(stop func(*tacklev1.Event) bool) []*tacklev1.Event {
	c.t.Helper()
	var out []*tacklev1.Event
	for {
		m := c.recv()
		if e := m.GetEvent(); e != nil {
			out = append(out, e)
			if stop(e) {
				return out
			}
			continue
		}
		if m.GetError() != nil {
			c.t.Fatalf("stream error while waiting for events: %v", m.GetError())
		}
	}
}

func turnEnded(turn string) func(*tacklev1.Event) bool {
	return func(e *tacklev1.Event) bool { return e.GetType() == "turn_ended" && e.GetTurnId() == turn }
}

func ofType(typ string) func(*tacklev1.Event) bool {
	return func(e *tacklev1.Event) bool { return e.GetType() == typ }
}

func resultOf(t testing.TB, evs []*tacklev1.Event, callID string) *tacklev1.ToolResult {
	t.Helper()
	for _, e := range evs {
		if e.GetType() == "call_result" && e.GetCallId() == callID {
			return e.GetResult()
		}
	}
	t.Fatalf("no call_result for %s in %d events", callID, len(evs))
	return nil
}

func text(r *tacklev1.ToolResult) string {
	var b strings.Builder
	for _, c := range r.GetContent() {
		b.WriteString(c.GetText())
	}
	return b.String()
}

// newSession creates a session in a fresh project directory holding hello.txt.
func newSession(t testing.TB, d *daemontest.Daemon) (id, dir string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := d.Client().CreateSession(context.Background(), &tacklev1.CreateSessionRequest{Cwd: dir, Env: []string{"FOO=bar"}})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return resp.GetSession().GetId(), dir
}

func readCall(id, path string) *tacklev1.ToolCall {
	return &tacklev1.ToolCall{Id: id, Name: "Read", InputJson: `{"file_path":"` + path + `"}`}
}

func writeCall(id, path, content string) *tacklev1.ToolCall {
	return &tacklev1.ToolCall{Id: id, Name: "Write", InputJson: `{"file_path":"` + path + `","content":"` + content + `"}`}
}

func TestHelloWelcome(t *testing.T) {
	d := daemontest.Start(t)
	c := attach(t, d.Client(), "test", tacklev1.Role_ROLE_OBSERVER)
	w := c.welcome
	if w.GetProtocolVersion() != 1 || w.GetDaemonVersion() != "test" || w.GetBuildId() != "test-build" {
		t.Errorf("welcome = %v", w)
	}
	if !strings.HasPrefix(w.GetClientId(), "test-") {
		t.Errorf("client id %q does not start with the client name", w.GetClientId())
	}
	if w.GetRole() != tacklev1.Role_ROLE_OBSERVER {
		t.Errorf("role = %v, want observer", w.GetRole())
	}
	c2 := attach(t, d.Client(), "test", tacklev1.Role_ROLE_UNSPECIFIED)
	if c2.welcome.GetClientId() == w.GetClientId() {
		t.Errorf("two clients got the same id %q", w.GetClientId())
	}
	if c2.welcome.GetRole() != tacklev1.Role_ROLE_CONTROLLER {
		t.Errorf("unspecified role became %v, want controller", c2.welcome.GetRole())
	}
}

func TestFirstMessageMustBeHello(t *testing.T) {
	d := daemontest.Start(t)
	st, err := d.Client().Attach(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: "x"}}}); err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Recv after a non-Hello first message: %v, want InvalidArgument", err)
	}
}

func TestProtocolVersionMismatch(t *testing.T) {
	d := daemontest.Start(t)
	st, err := d.Client().Attach(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 99}}}); err != nil {
		t.Fatal(err)
	}
	_, err = st.Recv()
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "99") {
		t.Fatalf("Recv after Hello{99}: %v, want FailedPrecondition naming the version", err)
	}
}

func TestBadMessagesGetStreamErrors(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	c := attach(t, d.Client(), "test", tacklev1.Role_ROLE_CONTROLLER)
	obs := attach(t, d.Client(), "obs", tacklev1.Role_ROLE_OBSERVER)
	path := filepath.Join(dir, "hello.txt")

	tests := []struct {
		name string
		c    *client
		msg  *tacklev1.ClientMessage
		code string
		ref  string
	}{
		{"second hello", c, &tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{}}}, "InvalidArgument", ""},
		{"empty message", c, &tacklev1.ClientMessage{}, "InvalidArgument", ""},
		{"unknown session", c, &tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: "nope"}}}, "NotFound", ""},
		{"batch before subscribe", c, &tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
			SessionId: id, Ref: "r1", Calls: []*tacklev1.ToolCall{readCall("a", path)},
		}}}, "FailedPrecondition", "r1"},
		{"observer batch", obs, &tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
			SessionId: id, Ref: "r2", Calls: []*tacklev1.ToolCall{readCall("a", path)},
		}}}, "PermissionDenied", "r2"},
		{"cancel unknown turn", c, &tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Cancel{Cancel: &tacklev1.Cancel{SessionId: id, TurnId: "t"}}}, "NotFound", ""},
		{"answer without decision", c, &tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{SessionId: id, RequestId: "r"}}}, "InvalidArgument", ""},
		{"answer unknown request", c, &tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
			SessionId: id, RequestId: "r", Decision: tacklev1.Decision_DECISION_ALLOW_ONCE,
		}}}, "NotFound", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.c.t = t
			tt.c.send(tt.msg)
			m := tt.c.recv()
			se := m.GetError()
			if se == nil {
				t.Fatalf("got %v, want a StreamError", m)
			}
			if se.GetCode() != tt.code || se.GetRef() != tt.ref || se.GetMessage() == "" {
				t.Errorf("StreamError = %v, want code %s ref %q", se, tt.code, tt.ref)
			}
		})
	}
	// The stream goes on after all that.
	c.t = t
	c.subscribe(id, 0)
	obs.t = t
	obs.subscribe(id, 0)
	turn := c.runBatch(id, "ok", readCall("r", path), &tacklev1.ToolCall{Id: "bad", Name: "Read", InputJson: `{"file_path": `})
	evs := c.eventsUntil(turnEnded(turn))
	if r := resultOf(t, evs, "r"); r.GetStatus() != "completed" {
		t.Errorf("Read after bad messages: %v", r)
	}
	if r := resultOf(t, evs, "bad"); r.GetStatus() != "invalid" || !r.GetIsError() {
		t.Errorf("Read with malformed JSON input: %v, want invalid", r)
	}
}

func TestRunBatchSubscribeReplayAndObserver(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	path := filepath.Join(dir, "hello.txt")

	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	snap := ctl.subscribe(id, 0)
	if snap.GetSession().GetId() != id || snap.GetSession().GetCwd() == "" {
		t.Errorf("snapshot session = %v", snap.GetSession())
	}
	// A second client, on its own connection, watches live.
	conn2, err := daemontest.Dial(d.Socket())
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	obs := attach(t, tacklev1.NewTackleServiceClient(conn2), "obs", tacklev1.Role_ROLE_OBSERVER)
	obs.subscribe(id, 0)

	turn := ctl.runBatch(id, "ref-1", readCall("call-1", path))
	evs := ctl.eventsUntil(turnEnded(turn))
	r := resultOf(t, evs, "call-1")
	if r.GetStatus() != "completed" || r.GetIsError() {
		t.Fatalf("Read result = %v", r)
	}
	if got := text(r); !strings.Contains(got, "     1\thello") || !strings.Contains(got, "     2\tworld") {
		t.Errorf("Read text = %q, want numbered lines", got)
	}
	if evs[0].GetType() != "turn_started" || len(evs[0].GetCalls()) != 1 || evs[0].GetCalls()[0].GetName() != "Read" {
		t.Errorf("first event = %v, want turn_started with the call", evs[0])
	}
	for i, e := range evs {
		if e.GetSessionId() != id || (i > 0 && e.GetSeq() != evs[i-1].GetSeq()+1) {
			t.Fatalf("event %d = %v: wrong session or a gap in seq", i, e)
		}
	}

	// The observer saw the same events, in the same order.
	obsEvs := obs.eventsUntil(turnEnded(turn))
	if !slices.Equal(seqTypes(evs), seqTypes(obsEvs)) {
		t.Errorf("observer events %v, controller events %v", seqTypes(obsEvs), seqTypes(evs))
	}

	// A late subscriber replays them from 0, then sees live events.
	late := attach(t, d.Client(), "late", tacklev1.Role_ROLE_CONTROLLER)
	snap = late.subscribe(id, 0)
	if snap.GetSession().GetLastSeq() != evs[len(evs)-1].GetSeq() {
		t.Errorf("snapshot last_seq = %d, want %d", snap.GetSession().GetLastSeq(), evs[len(evs)-1].GetSeq())
	}
	replay := late.eventsUntil(turnEnded(turn))
	if !slices.Equal(seqTypes(evs), seqTypes(replay)) {
		t.Errorf("replay %v, want %v", seqTypes(replay), seqTypes(evs))
	}
	turn2 := ctl.runBatch(id, "ref-2", readCall("call-2", path))
	live := late.eventsUntil(turnEnded(turn2))
	if live[0].GetSeq() != evs[len(evs)-1].GetSeq()+1 || resultOf(t, live, "call-2").GetStatus() != "completed" {
		t.Errorf("live events after replay: %v", seqTypes(live))
	}

	// Subscribing from the middle replays from there.
	mid := attach(t, d.Client(), "mid", tacklev1.Role_ROLE_OBSERVER)
	mid.subscribe(id, evs[2].GetSeq())
	got := mid.eventsUntil(turnEnded(turn))
	if got[0].GetSeq() != evs[2].GetSeq() {
		t.Errorf("replay from %d starts at %d", evs[2].GetSeq(), got[0].GetSeq())
	}

	// The session's read-state counts the file.
	gs, err := d.Client().GetSession(context.Background(), &tacklev1.GetSessionRequest{Id: id})
	if err != nil {
		t.Fatal(err)
	}
	if gs.GetSession().GetFilesRead() != 1 {
		t.Errorf("files_read = %d, want 1", gs.GetSession().GetFilesRead())
	}
}

// TestSubscribeEventTypes: a subscription with event_types gets only those
// types, live and in the replay; a type tackled does not know is refused
// and the stream goes on.
func TestSubscribeEventTypes(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	path := filepath.Join(dir, "hello.txt")
	types := []string{"call_result", "turn_ended"}

	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	ctl.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{
		SessionId: id, EventTypes: []string{"call_result", "call_rezult"}}}})
	if se := ctl.recv().GetError(); se.GetCode() != "InvalidArgument" || !strings.Contains(se.GetMessage(), `"call_rezult"`) ||
		!strings.Contains(se.GetMessage(), "permission_requested") {
		t.Fatalf("Subscribe with an unknown type: %v, want InvalidArgument naming it and the types", se)
	}
	ctl.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, EventTypes: types}}})
	if ctl.recv().GetSnapshot() == nil {
		t.Fatal("no snapshot")
	}
	all := attach(t, d.Client(), "all", tacklev1.Role_ROLE_OBSERVER)
	all.subscribe(id, 0)

	var turns []string
	for i := range 3 {
		turn := ctl.runBatch(id, fmt.Sprint("r", i), readCall(fmt.Sprint("c", i), path))
		turns = append(turns, turn)
		evs := ctl.eventsUntil(turnEnded(turn))
		if got := seqTypes(evs); len(got) != 2 || !strings.HasSuffix(got[0], ":call_result/") || !strings.HasSuffix(got[1], ":turn_ended/") {
			t.Fatalf("filtered live events of turn %d: %v, want call_result then turn_ended", i, got)
		}
		if r := resultOf(t, evs, fmt.Sprint("c", i)); r.GetStatus() != "completed" {
			t.Fatalf("result %v", r)
		}
	}
	full := all.eventsUntil(turnEnded(turns[2]))

	// A late filtered subscriber replays the same filtered events.
	late := attach(t, d.Client(), "late", tacklev1.Role_ROLE_OBSERVER)
	late.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, EventTypes: types}}})
	if late.recv().GetSnapshot() == nil {
		t.Fatal("no snapshot")
	}
	replay := late.eventsUntil(turnEnded(turns[2]))
	var want []string
	for _, e := range full {
		if slices.Contains(types, e.GetType()) {
			want = append(want, seqTypes([]*tacklev1.Event{e})[0])
		}
	}
	if got := seqTypes(replay); !slices.Equal(got, want) || len(got) != 6 {
		t.Errorf("filtered replay %v, want %v", got, want)
	}
}

func seqTypes(evs []*tacklev1.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		out = append(out, fmt.Sprintf("%d:%s/%s", e.GetSeq(), e.GetType(), e.GetState()))
	}
	return out
}

func TestPermissionAnsweredBySecondClient(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	target := filepath.Join(dir, "new.txt")

	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	ctl.subscribe(id, 0)
	turn := ctl.runBatch(id, "w", writeCall("w1", target, "fresh"))
	req := ctl.eventsUntil(ofType("permission_requested"))
	pr := req[len(req)-1].GetPermission()
	if pr.GetRequestId() == "" || pr.GetTool() != "Write" || pr.GetCallId() != "w1" || pr.GetTurnId() != turn {
		t.Fatalf("permission request = %v", pr)
	}

	// A second client joins late: the snapshot shows the pending request.
	other := attach(t, d.Client(), "other", tacklev1.Role_ROLE_CONTROLLER)
	snap := other.subscribe(id, 0)
	if len(snap.GetPendingPermissions()) != 1 || snap.GetPendingPermissions()[0].GetRequestId() != pr.GetRequestId() {
		t.Fatalf("snapshot pending = %v, want the request", snap.GetPendingPermissions())
	}
	if len(snap.GetRunningCalls()) != 1 || snap.GetRunningCalls()[0].GetState() != "awaiting_permission" {
		t.Errorf("snapshot running = %v", snap.GetRunningCalls())
	}
	other.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
		SessionId: id, RequestId: pr.GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE,
	}}})
	evs := ctl.eventsUntil(turnEnded(turn))
	var resolved *tacklev1.PermissionResolved
	for _, e := range evs {
		if e.GetType() == "permission_resolved" {
			resolved = e.GetResolution()
		}
	}
	if resolved == nil || resolved.GetDecision() != "allow_once" || resolved.GetClientId() != other.welcome.GetClientId() {
		t.Errorf("resolution = %v, want allow_once by %s", resolved, other.welcome.GetClientId())
	}
	if r := resultOf(t, evs, "w1"); r.GetStatus() != "completed" {
		t.Errorf("Write result = %v", r)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "fresh" {
		t.Errorf("written file = %q, %v", b, err)
	}

	// A late answer loses.
	resp, err := d.Client().AnswerPermission(context.Background(), &tacklev1.AnswerPermissionRequest{Answer: &tacklev1.PermissionAnswer{
		SessionId: id, RequestId: pr.GetRequestId(), Decision: tacklev1.Decision_DECISION_DENY,
	}})
	if err != nil || resp.GetAccepted() {
		t.Errorf("late AnswerPermission = %v, %v; want not accepted", resp, err)
	}
}

func TestUnaryAnswerPermission(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	ctl.subscribe(id, 0)
	turn := ctl.runBatch(id, "w", writeCall("w1", filepath.Join(dir, "no.txt"), "x"))
	req := ctl.eventsUntil(ofType("permission_requested"))
	pr := req[len(req)-1].GetPermission()
	resp, err := d.Client().AnswerPermission(context.Background(), &tacklev1.AnswerPermissionRequest{ClientName: "script", Answer: &tacklev1.PermissionAnswer{
		SessionId: id, RequestId: pr.GetRequestId(), Decision: tacklev1.Decision_DECISION_DENY, Feedback: "not now",
	}})
	if err != nil || !resp.GetAccepted() {
		t.Fatalf("AnswerPermission = %v, %v", resp, err)
	}
	evs := ctl.eventsUntil(turnEnded(turn))
	r := resultOf(t, evs, "w1")
	if r.GetStatus() != "denied" || !r.GetIsError() || !strings.Contains(text(r), "not now") {
		t.Errorf("denied Write = %v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "no.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("denied Write wrote the file: %v", err)
	}
}

func TestClientDisconnectsMidBatch(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	target := filepath.Join(dir, "late.txt")

	// The first client starts a turn that waits for a permission answer,
	// then goes away (its connection closes).
	conn, err := daemontest.Dial(d.Socket())
	if err != nil {
		t.Fatal(err)
	}
	gone := attach(t, tacklev1.NewTackleServiceClient(conn), "gone", tacklev1.Role_ROLE_CONTROLLER)
	gone.subscribe(id, 0)
	turn := gone.runBatch(id, "b", writeCall("w1", target, "kept"), readCall("r1", filepath.Join(dir, "hello.txt")))
	gone.eventsUntil(ofType("permission_requested"))
	gone.cancel()
	conn.Close()

	// Another client finds the request in the log and answers it; the
	// turn ends and every result stays in the log.
	c := attach(t, d.Client(), "back", tacklev1.Role_ROLE_CONTROLLER)
	c.subscribe(id, 0)
	req := c.eventsUntil(ofType("permission_requested"))
	c.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
		SessionId: id, RequestId: req[len(req)-1].GetPermission().GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE,
	}}})
	c.eventsUntil(turnEnded(turn))

	again := attach(t, d.Client(), "again", tacklev1.Role_ROLE_OBSERVER)
	again.subscribe(id, 0)
	evs := again.eventsUntil(turnEnded(turn))
	if r := resultOf(t, evs, "w1"); r.GetStatus() != "completed" {
		t.Errorf("Write of the gone client = %v", r)
	}
	if r := resultOf(t, evs, "r1"); r.GetStatus() != "completed" {
		t.Errorf("Read of the gone client = %v", r)
	}
	if b, _ := os.ReadFile(target); string(b) != "kept" {
		t.Errorf("file = %q, want kept", b)
	}
}

func TestShutdownCancelsInFlightCalls(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	ctl.subscribe(id, 0)
	turn := ctl.runBatch(id, "b", writeCall("w1", filepath.Join(dir, "x.txt"), "x"))
	ctl.eventsUntil(ofType("permission_requested"))

	if _, err := d.Client().Shutdown(context.Background(), &tacklev1.ShutdownRequest{}); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// The attached client gets the cancelled result before its stream ends.
	evs := ctl.eventsUntil(turnEnded(turn))
	if r := resultOf(t, evs, "w1"); r.GetStatus() != "cancelled" {
		t.Errorf("in-flight call after Shutdown = %v, want cancelled", r)
	}
	_, err := ctl.stream.Recv()
	if status.Code(err) != codes.Unavailable {
		t.Errorf("stream after Shutdown: %v, want Unavailable", err)
	}
	<-d.Done()
	if err := d.Stop(); err != nil {
		t.Fatal(err)
	}

	// After a restart on the same state, the result is in the log.
	d2 := daemontest.Start(t, daemontest.WithStateDir(d.StateDir()))
	c := attach(t, d2.Client(), "ctl", tacklev1.Role_ROLE_OBSERVER)
	c.subscribe(id, 0)
	evs = c.eventsUntil(turnEnded(turn))
	if r := resultOf(t, evs, "w1"); r.GetStatus() != "cancelled" {
		t.Errorf("after restart: %v, want cancelled", r)
	}
}

func TestCancelTurn(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	ctl := attach(t, d.Client(), "ctl", tacklev1.Role_ROLE_CONTROLLER)
	ctl.subscribe(id, 0)
	turn := ctl.runBatch(id, "b", writeCall("w1", filepath.Join(dir, "x.txt"), "x"), readCall("r1", filepath.Join(dir, "hello.txt")))
	ctl.eventsUntil(ofType("permission_requested"))
	ctl.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Cancel{Cancel: &tacklev1.Cancel{SessionId: id, TurnId: turn}}})
	evs := ctl.eventsUntil(turnEnded(turn))
	for _, call := range []string{"w1", "r1"} {
		if r := resultOf(t, evs, call); r.GetStatus() != "cancelled" {
			t.Errorf("%s after Cancel = %v, want cancelled", call, r)
		}
	}
}

func TestSessionsRPCs(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	dir := t.TempDir()
	cl := d.Client()

	a, err := cl.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: dir, DefaultForCwd: true, PermissionMode: "acceptEdits"})
	if err != nil || !a.GetCreated() {
		t.Fatalf("CreateSession default: %v, %v", a, err)
	}
	b, err := cl.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: dir, DefaultForCwd: true})
	if err != nil || b.GetCreated() || b.GetSession().GetId() != a.GetSession().GetId() {
		t.Fatalf("second CreateSession default: %v, %v; want the same session, not created", b, err)
	}
	if a.GetSession().GetPermissionMode() != "acceptEdits" || a.GetSession().GetTodosJson() != "[]" {
		t.Errorf("session = %v", a.GetSession())
	}
	ls, err := cl.ListSessions(ctx, &tacklev1.ListSessionsRequest{})
	if err != nil || len(ls.GetSessions()) != 1 {
		t.Fatalf("ListSessions = %v, %v", ls, err)
	}
	if _, err := cl.DeleteSession(ctx, &tacklev1.DeleteSessionRequest{Id: a.GetSession().GetId()}); err != nil {
		t.Fatal(err)
	}
	_, err = cl.GetSession(ctx, &tacklev1.GetSessionRequest{Id: a.GetSession().GetId()})
	if status.Code(err) != codes.NotFound {
		t.Errorf("GetSession of a deleted session: %v, want NotFound", err)
	}

	bad := []struct {
		name string
		req  *tacklev1.CreateSessionRequest
	}{
		{"no cwd", &tacklev1.CreateSessionRequest{}},
		{"relative cwd", &tacklev1.CreateSessionRequest{Cwd: "rel/dir"}},
		{"missing cwd", &tacklev1.CreateSessionRequest{Cwd: filepath.Join(dir, "missing")}},
		{"bad mode", &tacklev1.CreateSessionRequest{Cwd: dir, PermissionMode: "yolo"}},
		{"bad env", &tacklev1.CreateSessionRequest{Cwd: dir, Env: []string{"NOEQUALS"}}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cl.CreateSession(ctx, tt.req)
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("CreateSession(%v): %v, want InvalidArgument", tt.req, err)
			}
		})
	}
}

func TestStatusAndListTools(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	attach(t, d.Client(), "one", tacklev1.Role_ROLE_OBSERVER)
	newSession(t, d)
	st, err := d.Client().Status(ctx, &tacklev1.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if st.GetPid() != int64(os.Getpid()) || st.GetSocket() != d.Socket() || st.GetVersion() != "test" ||
		st.GetBuildId() != "test-build" || st.GetProtocolVersion() != 1 || st.GetSessions() != 1 ||
		st.GetClients() != 1 || st.GetRssBytes() <= 0 {
		t.Errorf("Status = %v", st)
	}

	lt, err := d.Client().ListTools(ctx, &tacklev1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*tacklev1.ToolInfo{}
	for _, ti := range lt.GetTools() {
		byName[ti.GetName()] = ti
	}
	for _, name := range []string{"Read", "Write", "Edit", "MultiEdit", "ReplaceLines", "Glob", "Grep"} {
		ti := byName[name]
		if ti == nil {
			t.Errorf("ListTools lacks %s", name)
			continue
		}
		if !ti.GetLoaded() || ti.GetDescription() == "" || !strings.HasPrefix(ti.GetInputSchemaJson(), "{") || ti.GetAttributes().GetOrigin() != "builtin" {
			t.Errorf("%s = %v", name, ti)
		}
	}
	if r := byName["Read"]; r != nil && (!r.GetAttributes().GetReadOnly() || !r.GetAttributes().GetConcurrencySafe()) {
		t.Errorf("Read attributes = %v", r.GetAttributes())
	}
	if w := byName["Write"]; w != nil && w.GetAttributes().GetReadOnly() {
		t.Errorf("Write is read-only: %v", w.GetAttributes())
	}
	_, err = d.Client().ListTools(ctx, &tacklev1.ListToolsRequest{SessionId: "nope"})
	if status.Code(err) != codes.NotFound {
		t.Errorf("ListTools of an unknown session: %v, want NotFound", err)
	}
}

func TestPeerOfAnotherUIDIsRefused(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithAllowedUID(os.Getuid()+4242))
	ctx := context.Background()
	_, err := d.Client().Status(ctx, &tacklev1.StatusRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("Status from a refused uid: %v, want PermissionDenied", err)
	}
	st, err := d.Client().Attach(ctx)
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("Attach from a refused uid: %v, want PermissionDenied", err)
	}
	_, err = healthpb.NewHealthClient(d.Conn()).Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("health Check from a refused uid: %v, want PermissionDenied", err)
	}
}

func TestHealthAndReflection(t *testing.T) {
	d := daemontest.Start(t)
	ctx := context.Background()
	for _, svc := range []string{"", "tackle.v1.TackleService"} {
		resp, err := healthpb.NewHealthClient(d.Conn()).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health Check(%q) = %v, %v", svc, resp, err)
		}
	}

	st, err := reflectionpb.NewServerReflectionClient(d.Conn()).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := st.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{"tackle.v1.TackleService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection"} {
		if !slices.Contains(names, want) {
			t.Errorf("reflection lists %v, without %s", names, want)
		}
	}
	if err := st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "tackle.v1.TackleService"}}); err != nil {
		t.Fatal(err)
	}
	resp, err = st.Recv()
	if err != nil || len(resp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Errorf("file containing tackle.v1.TackleService: %v, %v", resp, err)
	}
	st.CloseSend()
	if _, err := st.Recv(); err != io.EOF {
		t.Errorf("reflection stream end: %v", err)
	}
}

package server_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"google.golang.org/protobuf/proto"
)

// batchClient is an Attach stream that said Hello.event_batches (and
// accepted_in_batches, as tackle's clients do, unless attachBatchedWith
// says not); it counts what came in EventBatch messages.
type batchClient struct {
	*client
	queued   []*tacklev1.Event
	batches  int // EventBatch messages received
	inBatch  int // events that came in them
	maxBytes int // the largest EventBatch message, marshalled
}

func attachBatched(t testing.TB, c tacklev1.TackleServiceClient, name string) *batchClient {
	t.Helper()
	return attachBatchedWith(t, c, name, true)
}

// attachBatchedWith is attachBatched; acceptedInBatches false is a client
// of an earlier build, which does not know EventBatch.accepted.
func attachBatchedWith(t testing.TB, c tacklev1.TackleServiceClient, name string, acceptedInBatches bool) *batchClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := c.Attach(ctx)
	if err != nil {
		t.Fatalf("attaching: %v", err)
	}
	bc := &batchClient{client: &client{t: t, stream: st, cancel: cancel}}
	bc.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{
		ProtocolVersion: 1, ClientName: name, Role: tacklev1.Role_ROLE_CONTROLLER, EventBatches: true,
		AcceptedInBatches: acceptedInBatches,
	}}})
	if bc.client.recv().GetWelcome() == nil {
		t.Fatal("no welcome")
	}
	return bc
}

// subscribeTypes subscribes from the start, to the types given (none:
// all), and waits for the snapshot.
func (bc *batchClient) subscribeTypes(id string, types ...string) {
	bc.t.Helper()
	bc.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, EventTypes: types}}})
	if bc.client.recv().GetSnapshot() == nil {
		bc.t.Fatal("no snapshot")
	}
}

// events receives until stop holds for an event (included), unpacking
// batches; any other message but an error is skipped.
func (bc *batchClient) events(stop func(*tacklev1.Event) bool) []*tacklev1.Event {
	bc.t.Helper()
	var out []*tacklev1.Event
	for {
		for len(bc.queued) > 0 {
			e := bc.queued[0]
			bc.queued = bc.queued[1:]
			out = append(out, e)
			if stop(e) {
				return out
			}
		}
		bc.take(bc.client.recv())
	}
}

// take queues the events m carries (an EventBatch or one event), counting
// batches; a stream error fails the test, any other message is skipped.
func (bc *batchClient) take(m *tacklev1.ServerMessage) {
	bc.t.Helper()
	switch {
	case m.GetEvents() != nil:
		evs := m.GetEvents().GetEvents()
		bc.batches++
		bc.inBatch += len(evs)
		bc.maxBytes = max(bc.maxBytes, proto.Size(m))
		if len(evs) < 2 && m.GetEvents().GetAccepted() == nil {
			bc.t.Fatalf("a batch of %d events: one goes as an event message, unless a BatchAccepted rides with it", len(evs))
		}
		bc.queued = append(bc.queued, evs...)
	case m.GetEvent() != nil:
		bc.queued = append(bc.queued, m.GetEvent())
	case m.GetError() != nil:
		bc.t.Fatalf("stream error: %v", m.GetError())
	}
}

// accepted receives the next message, which must carry a BatchAccepted:
// its own message (inBatch false) or the EventBatch of the turn's first
// events (inBatch true; the events are queued).
func (bc *batchClient) accepted() (acc *tacklev1.BatchAccepted, inBatch bool) {
	bc.t.Helper()
	m := bc.client.recv()
	if a := m.GetEvents().GetAccepted(); a != nil {
		bc.take(m)
		return a, true
	}
	if m.GetBatchAccepted() == nil {
		bc.t.Fatalf("the first message after RunBatch is %v, want its BatchAccepted", m)
	}
	return m.GetBatchAccepted(), false
}

// TestEventBatches: a client that takes batches gets exactly the events a
// client that does not gets — every one once, in seq order, live, in a
// replay and in a filtered replay — and a replay comes in batches of
// about a megabyte at most.
func TestEventBatches(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	path := filepath.Join(dir, "hello.txt")

	plain := attach(t, d.Client(), "plain", tacklev1.Role_ROLE_OBSERVER)
	plain.subscribe(id, 0)
	live := attachBatched(t, d.Client(), "live")
	live.subscribeTypes(id)

	// Turns of several calls each, and large ones: a Write's 300 KB
	// content is in its turn_started event.
	big := strings.Repeat("x", 300<<10)
	var turns []string
	for i := range 8 {
		calls := []*tacklev1.ToolCall{writeCall(fmt.Sprint("w", i), filepath.Join(dir, fmt.Sprint("big", i, ".txt")), big)}
		for j := range 4 {
			calls = append(calls, readCall(fmt.Sprint("r", i, "-", j), path))
		}
		turns = append(turns, live.runBatchBatched(id, fmt.Sprint("ref", i), calls...))
	}
	// Turns run at once: the last event is the last turn_ended of them.
	lastOf := func() func(*tacklev1.Event) bool {
		ended := map[string]bool{}
		return func(e *tacklev1.Event) bool {
			if e.GetType() == "turn_ended" && slices.Contains(turns, e.GetTurnId()) {
				ended[e.GetTurnId()] = true
			}
			return len(ended) == len(turns)
		}
	}
	wantEvs := plain.eventsUntil(lastOf())
	last := func(e *tacklev1.Event) bool { return e.GetSeq() == wantEvs[len(wantEvs)-1].GetSeq() }
	want := seqTypes(wantEvs)
	got := live.events(last)
	if !slices.Equal(seqTypes(got), want) {
		t.Fatalf("live events with batches:\n%v\nwithout:\n%v", seqTypes(got), want)
	}
	for i := range 8 {
		if r := resultOf(t, got, fmt.Sprint("w", i)); r.GetStatus() != "completed" || r.GetIsError() {
			t.Fatalf("Write %d: %v", i, r)
		}
	}
	t.Logf("live: %d events, %d of them in %d batches", len(got), live.inBatch, live.batches)

	// The replay from the start: in batches, each within the bound.
	replay := attachBatched(t, d.Client(), "replay")
	replay.subscribeTypes(id)
	if got := seqTypes(replay.events(last)); !slices.Equal(got, want) {
		t.Fatalf("replay with batches:\n%v\nwant:\n%v", got, want)
	}
	if replay.batches < 2 || replay.inBatch < len(want)/2 {
		t.Errorf("the replay of %d events came in %d batches holding %d: want most of them batched, in several batches", len(want), replay.batches, replay.inBatch)
	}
	if replay.maxBytes > 1<<20+64<<10 {
		t.Errorf("a replayed batch of %d bytes: over the 1 MB bound", replay.maxBytes)
	}

	// A filtered replay: only those types, still batched.
	types := []string{"call_result", "turn_ended"}
	filtered := attachBatched(t, d.Client(), "filtered")
	filtered.subscribeTypes(id, types...)
	var wantFiltered []string
	for _, s := range want {
		if strings.Contains(s, ":call_result/") || strings.Contains(s, ":turn_ended/") {
			wantFiltered = append(wantFiltered, s)
		}
	}
	if got := seqTypes(filtered.events(last)); !slices.Equal(got, wantFiltered) {
		t.Fatalf("filtered replay with batches:\n%v\nwant:\n%v", got, wantFiltered)
	}
	if filtered.batches == 0 {
		t.Errorf("a filtered replay of %d events came in no batch", len(wantFiltered))
	}
}

// runBatchBatched is client.runBatch for a batching client: the events
// that come before BatchAccepted are kept for events.
func (bc *batchClient) runBatchBatched(session, ref string, calls ...*tacklev1.ToolCall) string {
	bc.t.Helper()
	bc.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
		SessionId: session, Ref: ref, Calls: calls, PermissionMode: "acceptEdits",
	}}})
	for {
		m := bc.client.recv()
		if a := m.GetBatchAccepted(); a != nil {
			return a.GetTurnId()
		}
		a := m.GetEvents().GetAccepted() // its events follow it
		bc.take(m)
		if a != nil {
			return a.GetTurnId()
		}
	}
}

// TestBatchAcceptedFirst: BatchAccepted, which now waits for the turn's
// first events to share their write, still comes before every event of
// its turn; and a client that takes none of the early events (only
// call_result) still gets it long before a slow (1 s) call's result, within
// acceptedDelay rather than at the end of the turn.
func TestBatchAcceptedFirst(t *testing.T) {
	d := daemontest.Start(t)
	id, dir := newSession(t, d)
	path := filepath.Join(dir, "hello.txt")

	all := attachBatched(t, d.Client(), "all")
	all.subscribeTypes(id)
	withEvents := 0
	for i := range 5 {
		ref := fmt.Sprint("ref", i)
		all.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
			SessionId: id, Ref: ref, Calls: []*tacklev1.ToolCall{readCall(fmt.Sprint("r", i), path)},
		}}})
		acc, inBatch := all.accepted()
		if acc.GetRef() != ref {
			t.Fatalf("batch %d: the first message after RunBatch carries the BatchAccepted of %q", i, acc.GetRef())
		}
		if inBatch {
			withEvents++
		}
		turn := acc.GetTurnId()
		got := all.events(func(e *tacklev1.Event) bool { return e.GetType() == "turn_ended" && e.GetTurnId() == turn })
		if got[0].GetType() != "turn_started" || got[0].GetTurnId() != turn {
			t.Fatalf("batch %d: the first event after BatchAccepted is %s of %s", i, got[0].GetType(), got[0].GetTurnId())
		}
	}
	// It rides in the batch of the turn's first events (one message, not
	// two), unless the turn took longer than acceptedDelay to start.
	if withEvents == 0 {
		t.Fatal("no BatchAccepted came in the EventBatch of its turn's first events")
	}

	results := attachBatched(t, d.Client(), "results")
	results.subscribeTypes(id, "call_result")
	results.events(func(e *tacklev1.Event) bool { return e.GetCallId() == "r4" }) // the replay
	start := time.Now()
	results.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
		SessionId: id, Ref: "slow", PermissionMode: "bypassPermissions", Calls: []*tacklev1.ToolCall{bashCall("b", "sleep 1")},
	}}})
	m := results.client.recv()
	waited := time.Since(start)
	if m.GetBatchAccepted().GetRef() != "slow" {
		t.Fatalf("the first message after RunBatch is %v, want its BatchAccepted", m)
	}
	if waited > 600*time.Millisecond {
		t.Fatalf("BatchAccepted came after %v, with the 1 s call's result: it waits for no event the client does not take", waited)
	}
	if e := results.events(func(e *tacklev1.Event) bool { return e.GetType() == "call_result" }); e[len(e)-1].GetCallId() != "b" {
		t.Fatalf("then %v", e)
	}

	// A client that does not know EventBatch.accepted gets BatchAccepted as
	// a message of its own, still before the turn's events.
	earlier := attachBatchedWith(t, d.Client(), "earlier", false)
	earlier.subscribeTypes(id)
	slow := m.GetBatchAccepted().GetTurnId()
	earlier.events(func(e *tacklev1.Event) bool { return e.GetType() == "turn_ended" && e.GetTurnId() == slow }) // the replay
	for i := range 3 {
		ref := fmt.Sprint("old", i)
		earlier.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
			SessionId: id, Ref: ref, Calls: []*tacklev1.ToolCall{readCall(fmt.Sprint("o", i), path)},
		}}})
		acc, inBatch := earlier.accepted()
		if acc.GetRef() != ref || inBatch {
			t.Fatalf("batch %s: BatchAccepted of %q, in an EventBatch: %v; want its own message", ref, acc.GetRef(), inBatch)
		}
		got := earlier.events(func(e *tacklev1.Event) bool { return e.GetType() == "turn_ended" && e.GetTurnId() == acc.GetTurnId() })
		if got[0].GetType() != "turn_started" || got[0].GetTurnId() != acc.GetTurnId() {
			t.Fatalf("batch %s: the first event after BatchAccepted is %s of %s", ref, got[0].GetType(), got[0].GetTurnId())
		}
	}
}

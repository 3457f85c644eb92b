package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// BenchmarkBatchWrite stores what the session log's writer commits at
// once when one client makes a small call a turn: 1, 4 or 10 turns of a
// Read of a small file (turn started, three call states, the result, turn
// ended, the audit row and the read-state of each). The difference between
// the sizes is what a turn costs; the rest is the commit's.
func BenchmarkBatchWrite(b *testing.B) {
	for _, n := range []int{1, 4, 10} {
		b.Run(fmt.Sprintf("turns=%d", n), func(b *testing.B) { benchBatchWrite(b, n) })
	}
}

func benchBatchWrite(b *testing.B, turns int) {
	s, err := Open(b.TempDir() + "/state.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	now := time.Now()
	const id = "0123456789abcdef0123456789abcdef"
	if err := s.InsertSession(ctx, SessionRow{ID: id, Cwd: "/tmp", CreatedAt: now, UpdatedAt: now}); err != nil {
		b.Fatal(err)
	}
	w, err := s.NewBatchWriter(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	text := strings.Repeat("     1\tpackage main // a line of a small file\n", 20)
	input := json.RawMessage(`{"file_path":"/tmp/tkb123/small.txt"}`)
	var seq uint64
	ev := func(e event.Event) Write {
		seq++
		e.Seq, e.SessionID, e.Time = seq, id, now
		return Write{Event: &e}
	}
	ws := make([]Write, 0, 32)
	for b.Loop() {
		ws = ws[:0]
		for t := 0; t < turns; t++ {
			turn := "t-" + string(rune('a'+t))
			ws = append(ws,
				ev(event.Event{Type: event.TurnStarted, TurnID: turn, Turn: &event.Turn{Calls: []event.CallInfo{{ID: "c1", Name: "Read", Input: input}}}}),
				ev(event.Event{Type: event.CallState, TurnID: turn, CallID: "c1", Tool: "Read", State: event.StateValidating}),
				ev(event.Event{Type: event.CallState, TurnID: turn, CallID: "c1", Tool: "Read", State: event.StateRunning}),
				Write{Audit: &AuditRow{SessionID: id, CallID: "c1", Tool: "Read", InputSHA256: strings.Repeat("ab", 32), Outcome: "allow", DecidedBy: "tool", Reason: "inside the working directories", Scope: "session", Time: now}},
				ev(event.Event{Type: event.CallResult, TurnID: turn, CallID: "c1", Tool: "Read", Result: &event.Result{CallID: "c1", Name: "Read", Status: event.StatusCompleted, Content: []tool.Content{{Type: "text", Text: text}}}}),
				Write{SessionID: id, File: tool.FileState{Path: "/tmp/tkb123/small.txt", ModTime: now, Size: 880, Hash: strings.Repeat("cd", 32)}},
				ev(event.Event{Type: event.TurnEnded, TurnID: turn}),
			)
		}
		if err := w.Write(ctx, ws); err != nil {
			b.Fatal(err)
		}
	}
}

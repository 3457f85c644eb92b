package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
)

// Chunks with gaps between them (the session package leaves a gap where it
// could not queue an event): every starting seq gets exactly the events
// from it, a page is never empty while more follow, and the last seq is
// the last chunk's.
func TestEventsFromEverySeqAcrossGaps(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	now := time.Now()
	const id = "s_gaps"
	if err := s.InsertSession(ctx, SessionRow{ID: id, Cwd: "/tmp", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if last, err := s.LastSeq(ctx, id); err != nil || last != 0 {
		t.Fatalf("LastSeq of a session with no events = %d, %v", last, err)
	}
	w, err := s.NewBatchWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// Chunks 1-3, 4-4 (a commit of its own), then 7-9 and 12-12 (gaps).
	stored := []uint64{}
	for _, batch := range [][]uint64{{1, 2, 3}, {4}, {7, 8, 9, 12}} {
		var ws []Write
		for _, seq := range batch {
			ws = append(ws, Write{Event: &event.Event{SessionID: id, Seq: seq, Type: event.Notice, Text: strings.Repeat("x", 100), Time: now}})
			stored = append(stored, seq)
		}
		if err := w.Write(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	for from := uint64(0); from <= 14; from++ {
		var want []uint64
		for _, seq := range stored {
			if seq >= from {
				want = append(want, seq)
			}
		}
		evs, err := s.Events(ctx, id, from)
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(evs); got != fmt.Sprint(want) {
			t.Errorf("Events from %d = %s, want %v", from, got, want)
		}
		// Pages of one row each.
		var paged []*event.Event
		for next := from; ; {
			page, more, err := s.EventsPage(ctx, id, next, 1)
			if err != nil {
				t.Fatal(err)
			}
			if more && len(page) == 0 {
				t.Fatalf("an empty page from %d with more to come", next)
			}
			paged = append(paged, page...)
			if !more {
				break
			}
			next = page[len(page)-1].Seq + 1
		}
		if got := seqs(paged); got != fmt.Sprint(want) {
			t.Errorf("pages from %d = %s, want %v", from, got, want)
		}
	}
	if last, err := s.LastSeq(ctx, id); err != nil || last != 12 {
		t.Errorf("LastSeq = %d, %v; want 12", last, err)
	}
	row, err := s.GetSession(ctx, id)
	if err != nil || row.LastSeq != 12 {
		t.Errorf("the session row's LastSeq = %d, %v; want 12", row.LastSeq, err)
	}
}

func seqs(evs []*event.Event) string {
	out := make([]uint64, len(evs))
	for i, e := range evs {
		out[i] = e.Seq
	}
	return fmt.Sprint(out)
}

// The log's queries seek the key (session_id, first_seq): no scan of a
// session's chunks, no sort.
func TestEventQueriesUseTheKey(t *testing.T) {
	s := openTemp(t)
	for _, q := range []string{eventsFromQuery, lastSeqQuery, "SELECT " + sessionColumns + " FROM sessions WHERE id = ?1 OR ?2"} {
		rows, err := s.db.Query("EXPLAIN QUERY PLAN "+q, "s_1", 5)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		all := strings.Join(plan, "\n")
		if strings.Contains(all, "TEMP B-TREE") || !strings.Contains(all, "USING INDEX event_chunks_key") {
			t.Errorf("plan of %s:\n%s", q, all)
		}
		for _, step := range plan {
			if strings.HasPrefix(step, "SCAN event_chunks") && !strings.Contains(step, "USING") {
				t.Errorf("plan of %s scans a table:\n%s", q, all)
			}
		}
	}
}

// Audit rows written by the batch writer, up to maxAuditRows with one
// statement: every row once, in the order written, every field
// kept; across batches too.
func TestBatchedAuditRows(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	now := time.Now()
	const id = "s_audit"
	if err := s.InsertSession(ctx, SessionRow{ID: id, Cwd: "/tmp", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	w, err := s.NewBatchWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	n := 0
	var want []AuditRow
	for _, size := range []int{1, 2, maxAuditRows, 2*maxAuditRows + 5, maxAuditRows - 1, 7} {
		var ws []Write
		for range size {
			n++
			a := AuditRow{SessionID: id, CallID: fmt.Sprint("c", n), Tool: "Read", InputSHA256: fmt.Sprintf("%064x", n),
				Outcome: "allow", DecidedBy: "rule", Rule: fmt.Sprintf("Read(/p/%d)", n), Reason: "r" + fmt.Sprint(n),
				ClientName: "cli", ClientPID: int32(n), ClientUID: 1000, Scope: "session", Time: now.Add(time.Duration(n) * time.Millisecond)}
			want = append(want, a)
			ws = append(ws, Write{Audit: &a}, Write{Event: &event.Event{SessionID: id, Seq: uint64(n), Type: event.Notice, Time: now}})
		}
		if err := w.Write(ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Audit(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d audit rows, want %d", len(got), len(want))
	}
	for i, g := range got { // newest first
		w := want[len(want)-1-i]
		if g.CallID != w.CallID || g.InputSHA256 != w.InputSHA256 || g.Rule != w.Rule || g.Reason != w.Reason ||
			g.ClientPID != w.ClientPID || g.ClientUID != w.ClientUID || g.Scope != w.Scope || !g.Time.Equal(w.Time) {
			t.Fatalf("audit row %d = %+v, want %+v", i, g, w)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].ID >= got[i-1].ID {
			t.Fatalf("ids not in the order written: %d then %d", got[i-1].ID, got[i].ID)
		}
	}
}

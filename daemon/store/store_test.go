package store

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestOpenCreatesSchemaAndReopens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	if err := s.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	var fk int
	if err := s.db.QueryRow(`PRAGMA foreign_keys`).Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatalf("reopening: %v", err)
	}
	defer s.Close()
	var v int
	if err := s.db.QueryRow(`SELECT version FROM schema_version`).Scan(&v); err != nil || v != SchemaVersion() {
		t.Errorf("schema version = %d, %v; want %d", v, err, SchemaVersion())
	}
}

func TestNewerSchemaIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE schema_version SET version = 999`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open of a newer schema: %v; want an error naming the path and 'newer'", err)
	}
}

func TestCorruptDatabase(t *testing.T) {
	tests := []struct {
		name string
		data func(t *testing.T, path string) []byte
	}{
		{"garbage", func(*testing.T, string) []byte {
			return bytes.Repeat([]byte("this is not a database\n"), 400)
		}},
		{"damaged header", func(t *testing.T, path string) []byte {
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			s.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			copy(b, "SQLite format 4\x00garbagegarbage")
			return b
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			data := tt.data(t, path)
			os.Remove(path + "-wal")
			os.Remove(path + "-shm")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path)
			if err == nil {
				s.Close()
				t.Fatal("Open of a corrupt file succeeded")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Errorf("error does not wrap ErrCorrupt: %v", err)
			}
			if testing.Verbose() {
				t.Log(err)
			}
			for _, want := range []string{path, "corrupt", "move it aside"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
			got, rerr := os.ReadFile(path)
			if rerr != nil || !bytes.Equal(got, data) {
				t.Errorf("the corrupt file was changed (read error %v)", rerr)
			}
		})
	}
}

func TestLockedDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSession(context.Background(), SessionRow{ID: "s_keep", Cwd: "/", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Another "process": a plain connection holding an exclusive lock.
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), `BEGIN EXCLUSIVE`); err != nil {
		t.Fatal(err)
	}

	_, err = OpenWith(path, &Options{BusyTimeout: 100 * time.Millisecond})
	if err == nil {
		t.Fatal("Open of a locked database succeeded")
	}
	if !errors.Is(err, ErrLocked) {
		t.Errorf("error does not wrap ErrLocked: %v", err)
	}
	if testing.Verbose() {
		t.Log(err)
	}
	for _, want := range []string{path, "locked"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}

	// Once the lock is released, nothing is lost.
	if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatalf("Open after the lock was released: %v", err)
	}
	defer s.Close()
	if _, err := s.GetSession(context.Background(), "s_keep"); err != nil {
		t.Errorf("session lost: %v", err)
	}
}

func TestSessionsEventsReadState(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now().UTC().Truncate(time.Microsecond)
	row := SessionRow{ID: "s_1", Cwd: "/tmp", AdditionalDirs: []string{"/a"}, PermissionMode: "plan",
		Env: []string{"A=1"}, CreatedAt: now, UpdatedAt: now, DefaultForCwd: true}
	if err := s.InsertSession(ctx, row); err != nil {
		t.Fatal(err)
	}
	dup := row
	dup.ID = "s_2"
	if err := s.InsertSession(ctx, dup); !errors.Is(err, ErrDefaultExists) {
		t.Fatalf("second default session for /tmp: %v, want ErrDefaultExists", err)
	}
	dup.DefaultForCwd = false
	if err := s.InsertSession(ctx, dup); err != nil {
		t.Fatalf("second non-default session for /tmp: %v", err)
	}
	got, err := s.DefaultSession(ctx, "/tmp")
	if err != nil || got.ID != "s_1" || got.PermissionMode != "plan" || got.Env[0] != "A=1" || got.AdditionalDirs[0] != "/a" || !got.CreatedAt.Equal(now) {
		t.Fatalf("DefaultSession = %+v, %v", got, err)
	}
	for i := uint64(1); i <= 3; i++ {
		if err := s.AppendEvent(ctx, &event.Event{SessionID: "s_1", Seq: i, Type: event.Notice, Text: "n", Time: now}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendEvent(ctx, &event.Event{SessionID: "s_1", Seq: 2, Type: event.Notice}); err == nil {
		t.Error("a duplicate seq was accepted")
	}
	if err := s.AppendEvent(ctx, &event.Event{SessionID: "s_nope", Seq: 1, Type: event.Notice}); err == nil {
		t.Error("an event of an unknown session was accepted")
	}
	evs, err := s.Events(ctx, "s_1", 2)
	if err != nil || len(evs) != 2 || evs[0].Seq != 2 || evs[1].Seq != 3 {
		t.Fatalf("Events from 2 = %v, %v", evs, err)
	}
	if err := s.PutFileState(ctx, "s_1", tool.FileState{Path: "/tmp/x", Size: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutFileState(ctx, "s_1", tool.FileState{Path: "/tmp/x", Size: 2}); err != nil {
		t.Fatal(err)
	}
	fs, err := s.FileStates(ctx, "s_1")
	if err != nil || len(fs) != 1 || fs["/tmp/x"].Size != 2 {
		t.Fatalf("FileStates = %v, %v", fs, err)
	}
	got, _ = s.GetSession(ctx, "s_1")
	if got.LastSeq != 3 || got.FilesRead != 1 {
		t.Errorf("LastSeq, FilesRead = %d, %d; want 3, 1", got.LastSeq, got.FilesRead)
	}
	list, err := s.ListSessions(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListSessions = %v, %v", list, err)
	}
	if err := s.DeleteSession(ctx, "s_1"); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteSession(ctx, "s_1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting twice: %v", err)
	}
	if evs, _ := s.Events(ctx, "s_1", 0); len(evs) != 0 {
		t.Errorf("events survived their session: %v", evs)
	}
	if n, _ := s.LastSeq(ctx, "s_1"); n != 0 {
		t.Errorf("LastSeq of a deleted session = %d", n)
	}
	if n, err := s.CountSessions(ctx); n != 1 || err != nil {
		t.Errorf("CountSessions = %d, %v", n, err)
	}
}

func TestMigrationToEventChunksKeepsEvents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	// A database as the first schema left it, with a session and two events.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
		`INSERT INTO schema_version (version) VALUES (1)`,
		migrations[0],
		`INSERT INTO sessions (id, cwd, created_at, updated_at) VALUES ('s_1', '/', 1, 1)`,
		`INSERT INTO events (session_id, seq, type, time, json) VALUES ('s_1', 1, 'notice', 1, '{"seq":1,"session_id":"s_1","type":"notice","text":"one"}')`,
		`INSERT INTO events (session_id, seq, type, time, json) VALUES ('s_1', 2, 'notice', 2, '{"seq":2,"session_id":"s_1","type":"notice","text":"two"}')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	evs, err := s.Events(ctx, "s_1", 2)
	if err != nil || len(evs) != 1 || evs[0].Text != "two" {
		t.Fatalf("events from 2 after the migration: %v, %v", evs, err)
	}
	if last, err := s.LastSeq(ctx, "s_1"); err != nil || last != 2 {
		t.Fatalf("LastSeq = %d, %v", last, err)
	}
	// New events go on after them, in one chunk per commit.
	w, err := s.NewBatchWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	now := time.Now()
	if err := w.Write(ctx, []Write{
		{Event: &event.Event{SessionID: "s_1", Seq: 3, Type: event.Notice, Text: "three", Time: now}},
		{SessionID: "s_1", File: tool.FileState{Path: "/a", Size: 1}},
		{Event: &event.Event{SessionID: "s_1", Seq: 4, Type: event.Notice, Text: "four", Time: now}},
		{SessionID: "s_1", File: tool.FileState{Path: "/a", Size: 2}},
	}); err != nil {
		t.Fatal(err)
	}
	evs, err = s.Events(ctx, "s_1", 0)
	if err != nil || len(evs) != 4 || evs[3].Text != "four" {
		t.Fatalf("all events: %v, %v", evs, err)
	}
	var chunks int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM event_chunks WHERE session_id = 's_1'`).Scan(&chunks); err != nil || chunks != 3 {
		t.Errorf("chunks = %d, %v; want 3 (two migrated, one per batch)", chunks, err)
	}
	files, err := s.FileStates(ctx, "s_1")
	if err != nil || files["/a"].Size != 2 {
		t.Errorf("read-state after a batch with two writes of one file: %v, %v", files, err)
	}
	// Events out of order are refused and nothing of the batch is stored.
	err = w.Write(ctx, []Write{
		{Event: &event.Event{SessionID: "s_1", Seq: 6, Type: event.Notice, Time: now}},
		{Event: &event.Event{SessionID: "s_1", Seq: 5, Type: event.Notice, Time: now}},
	})
	if err == nil {
		t.Fatal("a batch out of order was stored")
	}
	if last, _ := s.LastSeq(ctx, "s_1"); last != 4 {
		t.Errorf("LastSeq after a refused batch = %d, want 4", last)
	}
	// A gap inside a batch (an event that could not be queued) splits it
	// into one chunk per gapless run.
	if err := w.Write(ctx, []Write{
		{Event: &event.Event{SessionID: "s_1", Seq: 5, Type: event.Notice, Time: now}},
		{Event: &event.Event{SessionID: "s_1", Seq: 7, Type: event.Notice, Time: now}},
		{Event: &event.Event{SessionID: "s_1", Seq: 8, Type: event.Notice, Time: now}},
	}); err != nil {
		t.Fatalf("a batch with a gap: %v", err)
	}
	evs, err = s.Events(ctx, "s_1", 5)
	if err != nil || len(evs) != 3 || evs[0].Seq != 5 || evs[1].Seq != 7 || evs[2].Seq != 8 {
		t.Fatalf("events from 5 after a batch with a gap: %v, %v", evs, err)
	}
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM event_chunks WHERE session_id = 's_1'`).Scan(&chunks); err != nil || chunks != 5 {
		t.Errorf("chunks = %d, %v; want 5 (the batch with a gap made two)", chunks, err)
	}
	// The chunks' key stays unique, and the chunks go with their session.
	if _, err := s.db.Exec(insertChunk, "s_1", 7, 7, "[]"); !isConstraint(err) {
		t.Errorf("a second chunk starting at seq 7: %v, want a constraint error", err)
	}
	if err := s.DeleteSession(ctx, "s_1"); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM event_chunks`).Scan(&chunks); err != nil || chunks != 0 {
		t.Errorf("chunks after deleting the session = %d, %v; want 0", chunks, err)
	}
}

// TestEventsPage: a page holds the rows up to the byte bound (at least
// one), says whether more are left, and the pages together are the log.
func TestEventsPage(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	now := time.Now().UTC()
	if err := s.InsertSession(ctx, SessionRow{ID: "s_1", Cwd: "/tmp", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("x", 1000)
	for i := uint64(1); i <= 10; i++ {
		if err := s.AppendEvent(ctx, &event.Event{SessionID: "s_1", Seq: i, Type: event.Notice, Text: text, Time: now}); err != nil {
			t.Fatal(err)
		}
	}
	var seqs []uint64
	pages := 0
	for from := uint64(2); ; pages++ {
		page, more, err := s.EventsPage(ctx, "s_1", from, 2500)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 || len(page) > 3 {
			t.Fatalf("page from %d holds %d events, want 1 to 3 of 1 KB under a 2.5 KB bound", from, len(page))
		}
		for _, e := range page {
			seqs = append(seqs, e.Seq)
		}
		from = page[len(page)-1].Seq + 1
		if !more {
			break
		}
	}
	if len(seqs) != 9 || seqs[0] != 2 || seqs[8] != 10 || pages < 2 {
		t.Fatalf("paged seqs %v in %d pages, want 2 to 10 in several", seqs, pages+1)
	}
	if page, more, err := s.EventsPage(ctx, "s_1", 11, 2500); err != nil || len(page) != 0 || more {
		t.Fatalf("page past the end: %d events, more %v, %v", len(page), more, err)
	}
}

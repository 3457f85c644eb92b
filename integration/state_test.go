package integration

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

func TestCorruptStateDatabase(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.root, "state", "tackle", "state.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	garbage := bytes.Repeat([]byte("not a database, just bytes\n"), 1000)
	if err := os.WriteFile(db, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	r := e.tackle("", "status")
	if r.code != 2 || !strings.Contains(r.stderr, "corrupt") || !strings.Contains(r.stderr, "move it aside") {
		t.Fatalf("status with a corrupt state.db: code %d, stderr %q; want 2 and the daemon's reason", r.code, r.stderr)
	}
	if got, _ := os.ReadFile(db); !bytes.Equal(got, garbage) {
		t.Fatal("the corrupt database was changed")
	}
	// Moved aside as the message says, the next start works and keeps the old file.
	if err := os.Rename(db, db+".bad"); err != nil {
		t.Fatal(err)
	}
	var st statusJSON
	e.json(&st, "", "status")
	if got, _ := os.ReadFile(db + ".bad"); !bytes.Equal(got, garbage) {
		t.Fatal("the moved-aside database was changed")
	}
}

func TestLockedStateDatabase(t *testing.T) {
	e := newEnv(t)
	var st statusJSON
	e.json(&st, "", "status") // creates state.db
	if r := e.tackle("", "daemon", "stop"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	db := filepath.Join(e.root, "state", "tackle", "state.db")
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetMaxOpenConns(1)
	if _, err := conn.Exec("BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	r := e.tackle("", "status")
	if r.code != 2 || !strings.Contains(r.stderr, "locked by another process") {
		t.Fatalf("status with a locked state.db: code %d, stderr %q", r.code, r.stderr)
	}
	if _, err := conn.Exec("ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	e.json(&st, "", "status")
	if st.Sessions == nil {
		t.Fatal("no status after the lock was released")
	}
}

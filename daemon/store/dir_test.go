package store

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
)

func perm(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// The database, its -wal and its -shm are 0600 while the store is open,
// whatever mode SQLite would give a file it creates itself.
func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	path := filepath.Join(dir, "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.InsertSession(context.Background(), SessionRow{ID: "s1", Cwd: "/", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if got := perm(t, dir); got != DirMode {
		t.Errorf("%s is %04o, want %04o", dir, got, DirMode)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if got := perm(t, p); got != FileMode {
			t.Errorf("%s is %04o, want %04o", p, got, FileMode)
		}
	}
}

// An existing database left open to others (an older tackled made it 0644)
// is tightened, with a warning, and its contents kept.
func TestOpenTightensExistingDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.InsertSession(context.Background(), SessionRow{ID: "s_keep", Cwd: "/", CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600) // Close removed -wal and -shm
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var logged bytes.Buffer
	s, err = OpenWith(path, &Options{Logger: hclog.New(&hclog.LoggerOptions{Output: &logged})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if got := perm(t, p); got != FileMode {
			t.Errorf("%s is %04o, want %04o", p, got, FileMode)
		}
		if !strings.Contains(logged.String(), "path="+p+" from=0644 to=0600") {
			t.Errorf("no warning for %s in the log:\n%s", p, logged.String())
		}
	}
	if _, err := s.GetSession(context.Background(), "s_keep"); err != nil {
		t.Errorf("session lost: %v", err)
	}
}

// A state directory that exists 0755 is made 0700, and what tackle keeps in
// it 0600 (directories 0700), all the way down; other entries are left
// alone and each change is reported.
func TestPrepareDirTightensOpenDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tackle")
	files := map[string]fs.FileMode{
		"state.db":          0o644,
		"state.db-wal":      0o644,
		"tackled.log":       0o640,
		"outputs/s1/a.txt":  0o644,
		"outputs/s1/b.txt":  0o600,
		"mcp-logs/srv.log":  0o666,
		"unrelated.txt":     0o644, // not tackle's: left alone
		"unrelated/inner.x": 0o644,
	}
	for rel, mode := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // whatever the umask
			t.Fatal(err)
		}
	}
	target := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.WriteFile(target, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, "outputs", "link")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "outputs"), filepath.Join(dir, "outputs", "s1")} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	changes, err := PrepareDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		if c.Err != nil {
			t.Errorf("%s", c)
		}
		rel, _ := filepath.Rel(dir, c.Path)
		got = append(got, rel+" "+c.From.String()+" → "+c.To.String())
	}
	want := []string{
		". -rwxr-xr-x → -rwx------",
		"state.db -rw-r--r-- → -rw-------",
		"state.db-wal -rw-r--r-- → -rw-------",
		"tackled.log -rw-r----- → -rw-------",
		"outputs -rwxr-xr-x → -rwx------",
		"outputs/s1 -rwxr-xr-x → -rwx------",
		"outputs/s1/a.txt -rw-r--r-- → -rw-------",
		"mcp-logs -rwxr-xr-x → -rwx------",
		"mcp-logs/srv.log -rw-rw-rw- → -rw-------",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	for rel, mode := range map[string]fs.FileMode{".": DirMode, "outputs/s1/b.txt": FileMode, "unrelated.txt": 0o644, "unrelated": 0o755, "unrelated/inner.x": 0o644} {
		if got := perm(t, filepath.Join(dir, rel)); got != mode {
			t.Errorf("%s is %04o, want %04o", rel, got, mode)
		}
	}
	if got := perm(t, target); got != 0o644 {
		t.Errorf("the symlink's target was changed to %04o", got)
	}
	if !strings.Contains(changes[0].String(), "was mode 0755, open to other users: changed to 0700") {
		t.Errorf("change reads %q", changes[0])
	}

	// Once private, nothing more is changed.
	if changes, err := PrepareDir(dir); err != nil || len(changes) > 0 {
		t.Errorf("second PrepareDir: %v, %v", changes, err)
	}
}

func TestPrepareDirCreatesAndRefuses(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "a", "b", "tackle")
	if changes, err := PrepareDir(dir); err != nil || len(changes) > 0 {
		t.Fatalf("PrepareDir of a new directory: %v, %v", changes, err)
	}
	if got := perm(t, dir); got != DirMode {
		t.Errorf("new state directory is %04o, want %04o", got, DirMode)
	}

	// A shared directory like /tmp is not closed for its other users.
	shared := filepath.Join(tmp, "shared")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareDir(shared); err == nil || !strings.Contains(err.Error(), "choose a directory of your own") {
		t.Errorf("PrepareDir of a sticky 0777 directory: %v", err)
	}
	if fi, _ := os.Stat(shared); fi.Mode().Perm() != 0o777 {
		t.Errorf("the shared directory was changed to %v", fi.Mode())
	}

	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := PrepareDir(file); err == nil {
		t.Error("PrepareDir of a file succeeded")
	}
}

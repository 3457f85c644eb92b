package safefile_test

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/internal/safefile"
)

func write(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func symlink(t *testing.T, target, path string) string {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func mkfifo(t *testing.T, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkErr asserts err is a *safefile.Error for path matching target and
// whose reason contains reason.
func checkErr(t *testing.T, err error, path string, target error, reason string) {
	t.Helper()
	var se *safefile.Error
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *safefile.Error", err, err)
	}
	if se.Path != path || !strings.Contains(se.Reason, reason) || !errors.Is(err, target) {
		t.Fatalf("error %#v; want path %q, reason containing %q, matching %v", se, path, reason, target)
	}
	if want := path + ": " + se.Reason; err.Error() != want {
		t.Errorf("Error() = %q, want %q", err.Error(), want)
	}
}

func TestReadRegular(t *testing.T) {
	dir := t.TempDir()
	content := []byte(`{"permissions": {"deny": ["Read(./secrets/**)"]}}`)
	p := write(t, filepath.Join(dir, "settings.json"), content)
	for name, path := range map[string]string{
		"file":             p,
		"symlink":          symlink(t, p, filepath.Join(dir, "link.json")),
		"symlink to link":  symlink(t, filepath.Join(dir, "link.json"), filepath.Join(dir, "link2.json")),
		"relative symlink": symlink(t, "settings.json", filepath.Join(dir, "rel.json")),
	} {
		got, err := safefile.Read(path, safefile.LimitSettings)
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("%s: Read = %q, %v; want the content", name, got, err)
		}
	}
	empty := write(t, filepath.Join(dir, "empty.json"), nil)
	if got, err := safefile.Read(empty, safefile.LimitSettings); err != nil || len(got) != 0 {
		t.Errorf("empty file: %q, %v", got, err)
	}
	if got, err := safefile.Read(empty, 0); err != nil || len(got) != 0 {
		t.Errorf("empty file, limit 0: %q, %v", got, err)
	}
}

func TestReadLimit(t *testing.T) {
	dir := t.TempDir()
	exact := write(t, filepath.Join(dir, "exact"), bytes.Repeat([]byte("x"), 1000))
	if got, err := safefile.Read(exact, 1000); err != nil || len(got) != 1000 {
		t.Errorf("file at the limit: %d bytes, %v", len(got), err)
	}
	_, err := safefile.Read(exact, 999)
	checkErr(t, err, exact, safefile.ErrTooLarge, "is 1000 bytes, over the limit of 999 bytes")

	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 2 GiB claimed, nothing allocated. Read must refuse without reading it.
	if err := f.Truncate(2 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = safefile.Read(big, safefile.LimitSettings)
	checkErr(t, err, big, safefile.ErrTooLarge, "is 2048 MiB, over the limit of 1 MiB")
}

// Files in /proc say they are empty: the limit still holds, by what is read.
func TestReadProcFile(t *testing.T) {
	const p = "/proc/self/status"
	fi, err := os.Stat(p)
	if err != nil {
		t.Skipf("no %s: %v", p, err)
	}
	if fi.Size() != 0 {
		t.Fatalf("%s reports %d bytes; the test wants a file that reports 0", p, fi.Size())
	}
	got, err := safefile.Read(p, safefile.LimitSettings)
	if err != nil || !bytes.Contains(got, []byte("VmRSS:")) {
		t.Fatalf("Read(%s) = %.100q, %v", p, got, err)
	}
	_, err = safefile.Read(p, 64)
	checkErr(t, err, p, safefile.ErrTooLarge, "is over the limit of 64 bytes")
}

func TestReadNotRegular(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fifo := mkfifo(t, filepath.Join(dir, "fifo"))
	for _, tc := range []struct {
		name, path, reason string
	}{
		{"symlink to /dev/zero", symlink(t, "/dev/zero", filepath.Join(dir, "settings.json")), "is a character device, not a regular file (it is a symlink to /dev/zero)"},
		{"/dev/null", "/dev/null", "is a character device, not a regular file"},
		{"FIFO", fifo, "is a FIFO, not a regular file"},
		{"symlink to a FIFO", symlink(t, fifo, filepath.Join(dir, ".mcp.json")), "is a FIFO, not a regular file (it is a symlink to " + fifo + ")"},
		{"directory", dir, "is a directory, not a regular file"},
		{"socket", sock, "is a socket, not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A FIFO with no writer would block a plain open forever: Read
			// must return at once. The deadline only bounds a failure.
			done := make(chan error, 1)
			go func() {
				_, err := safefile.Read(tc.path, safefile.LimitSettings)
				done <- err
			}()
			select {
			case err := <-done:
				checkErr(t, err, tc.path, safefile.ErrNotRegular, tc.reason)
			case <-time.After(10 * time.Second):
				t.Fatalf("Read(%s) blocked", tc.path)
			}
		})
	}
}

func TestReadMissing(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "nope.json")
	_, err := safefile.Read(missing, safefile.LimitSettings)
	checkErr(t, err, missing, fs.ErrNotExist, "no such file or directory")
	if !errors.Is(err, os.ErrNotExist) {
		t.Error("os.ErrNotExist does not match")
	}
	dangling := symlink(t, missing, filepath.Join(dir, "dangling.json"))
	_, err = safefile.Read(dangling, safefile.LimitSettings)
	checkErr(t, err, dangling, fs.ErrNotExist, "no such file or directory")

	notDir := write(t, filepath.Join(dir, "file"), []byte("x"))
	_, err = safefile.Read(filepath.Join(notDir, "settings.json"), safefile.LimitSettings)
	checkErr(t, err, filepath.Join(notDir, "settings.json"), syscall.ENOTDIR, "not a directory")
}

func TestReadPermission(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any file")
	}
	p := write(t, filepath.Join(t.TempDir(), "secret"), []byte("x"))
	if err := os.Chmod(p, 0); err != nil {
		t.Fatal(err)
	}
	_, err := safefile.Read(p, safefile.LimitSettings)
	checkErr(t, err, p, fs.ErrPermission, "permission denied")
}

func TestReadNegativeLimitPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	safefile.Read(os.DevNull, -1)
}

// BenchmarkRead compares Read with os.ReadFile on a small settings file;
// run with -bench Read and compare the two ns/op.
func BenchmarkRead(b *testing.B) {
	p := filepath.Join(b.TempDir(), "settings.json")
	if err := os.WriteFile(p, bytes.Repeat([]byte(`{"k": "v"},`), 200), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("safefile", func(b *testing.B) {
		for b.Loop() {
			if _, err := safefile.Read(p, safefile.LimitSettings); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}

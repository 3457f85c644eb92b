package safefile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The path may be swapped for a FIFO or a device between Read's stat and
// its open: what the descriptor is decides, checked with fstat.
func TestReadOpenedDecidesByFstat(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", dir} {
		f, err := os.OpenFile(p, openFlags, 0) // does not block, though no one writes
		if err != nil {
			t.Fatal(err)
		}
		_, err = readOpened("settings.json", f, LimitSettings)
		f.Close()
		var se *Error
		if !errors.As(err, &se) || !errors.Is(err, ErrNotRegular) || se.Path != "settings.json" {
			t.Errorf("%s: readOpened = %v, want ErrNotRegular for settings.json", p, err)
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0 bytes", 999: "999 bytes", 1024: "1 KiB", 1536: "1536 bytes", 3 << 10: "3 KiB", 1 << 20: "1 MiB", 16 << 20: "16 MiB", 1<<20 + 1024: "1025 KiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
}

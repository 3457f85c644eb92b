package mcp

import (
	"fmt"
	"io"
	"os"
	"sync"
)

// DefaultLogCap is the size at which a server's log file is rotated
// (Options.LogCap): the full file becomes path.1 (replacing the one
// before) and a new file starts, so a server's logs take at most about
// twice the cap.
const DefaultLogCap = 10 << 20

// rotatingLog is a server's stderr log and tackle's notes about it.
type rotatingLog struct {
	path string
	cap  int64

	mu   sync.Mutex
	f    *os.File
	size int64
}

// openRotatingLog opens (appending) or creates path, 0600.
func openRotatingLog(path string, limit int64) (*rotatingLog, error) {
	l := &rotatingLog{path: path, cap: limit}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *rotatingLog) open() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	l.f, l.size = f, fi.Size()
	return nil
}

// Write appends p, rotating first when p would take the file past the cap.
func (l *rotatingLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	if l.size > 0 && l.size+int64(len(p)) > l.cap {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

func (l *rotatingLog) rotate() error {
	l.f.Close()
	l.f = nil
	if err := os.Rename(l.path, l.path+".1"); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("rotating %s: %w", l.path, err)
	}
	return l.open()
}

func (l *rotatingLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// copyLog copies a process's stderr into the log until the pipe closes
// (every process holding it has exited).
func copyLog(dst io.Writer, src *os.File) {
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			_, _ = dst.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

package pollfd

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func nonblocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatalf("F_GETFL of fd %d: %v", fd, err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// blockingPipe is a pipe in blocking mode, as a parent hands it to a child:
// os.NewFile of a blocking descriptor is not pollable.
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

func TestPipeBecomesPollable(t *testing.T) {
	r, w := blockingPipe(t)
	if err := r.SetReadDeadline(time.Now()); !errors.Is(err, os.ErrNoDeadline) {
		t.Fatalf("a blocking pipe should not take deadlines: %v", err)
	}
	p, restore := Open(r)
	if p == r {
		t.Fatal("Open returned the blocking pipe itself")
	}
	if !nonblocking(t, int(r.Fd())) {
		t.Error("the pipe's description is still blocking")
	}
	// Pollable: a deadline works, and a read waits in the poller.
	if err := p.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatalf("SetReadDeadline: %v", err)
	}
	buf := make([]byte, 16)
	if _, err := p.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read of an empty pipe: %v, want a deadline error", err)
	}
	if err := p.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(10 * time.Millisecond)
		w.Write([]byte("hello\n"))
	}()
	n, err := p.Read(buf)
	if err != nil || string(buf[:n]) != "hello\n" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}

	restore()
	if nonblocking(t, int(r.Fd())) {
		t.Error("restore left the pipe non-blocking")
	}
	// The original descriptor is still open and reads.
	w.Write([]byte("again"))
	n, err = r.Read(buf)
	if err != nil || string(buf[:n]) != "again" {
		t.Fatalf("the original pipe after restore: %q, %v", buf[:n], err)
	}
}

// A socket that is both stdin and stdout (one description): after Open of
// each, a write larger than the socket's buffer waits instead of failing
// with EAGAIN.
func TestSharedSocketWritesWait(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, peer := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "peer")
	defer ours.Close()
	defer peer.Close()
	in, restoreIn := Open(ours)
	out, restoreOut := Open(ours)
	defer restoreIn()
	defer restoreOut()
	if in == ours {
		t.Fatal("a blocking socket was not converted")
	}
	if out == ours || out == in {
		t.Fatal("the second descriptor of the socket was not converted")
	}
	big := make([]byte, 4<<20)
	done := make(chan error, 1)
	go func() { _, err := out.Write(big); done <- err }()
	got, err := io.ReadAll(io.LimitReader(peer, int64(len(big))))
	if err != nil || len(got) != len(big) {
		t.Fatalf("peer read %d bytes, %v", len(got), err)
	}
	if err := <-done; err != nil {
		t.Fatalf("write through the shared socket: %v", err)
	}
}

func TestOthersLeftAlone(t *testing.T) {
	reg, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	polled, w, err := os.Pipe() // non-blocking and pollable already
	if err != nil {
		t.Fatal(err)
	}
	defer polled.Close()
	defer w.Close()
	for _, f := range []*os.File{reg, devnull, polled} {
		p, restore := Open(f)
		if p != f {
			t.Errorf("%s: converted", f.Name())
		}
		restore()
	}
	if !nonblocking(t, int(polledFd(t, polled))) {
		t.Error("the pollable pipe was put in blocking mode")
	}
}

// polledFd is f's descriptor without Fd's switch to blocking mode.
func polledFd(t *testing.T, f *os.File) uintptr {
	t.Helper()
	rc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	rc.Control(func(u uintptr) { fd = u })
	return fd
}

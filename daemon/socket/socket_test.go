package socket

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// shortDir returns a temp dir short enough for unix socket paths.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func TestListenPermissions(t *testing.T) {
	path := filepath.Join(shortDir(t), "run", "tackled.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	if got := di.Mode().Perm(); got != 0o700 {
		t.Errorf("directory mode = %v, want 0700", got)
	}
	si, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if si.Mode()&os.ModeSocket == 0 {
		t.Errorf("%s is not a socket: %v", path, si.Mode())
	}
	if got := si.Mode().Perm(); got != 0o600 {
		t.Errorf("socket mode = %v, want 0600", got)
	}
	ln.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind after Close: %v", err)
	}
}

func TestListenRemovesStaleSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "tackled.sock")
	// A socket file nobody listens on: bind without listening, then close
	// without unlinking.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket not there: %v", err)
	}
	ln2, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer ln2.Close()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatalf("Dial after replacing the stale socket: %v", err)
	}
	c.Close()
}

func TestListenInUse(t *testing.T) {
	path := filepath.Join(shortDir(t), "tackled.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	_, err = Listen(path)
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen: err = %v, want ErrInUse", err)
	}
	// The live socket must still be there and answer.
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatalf("Dial the first listener: %v", err)
	}
	c.Close()
	ln.Close()
	<-done
}

func TestListenRefusesNonSocket(t *testing.T) {
	path := filepath.Join(shortDir(t), "tackled.sock")
	if err := os.WriteFile(path, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Listen(path)
	if err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen over a regular file: err = %v, want 'not a socket'", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "precious" {
		t.Errorf("the file was changed: %q", b)
	}
}

func TestDialRefusesForeignSocket(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown the socket to another uid")
	}
	path := filepath.Join(shortDir(t), "tackled.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = Dial(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "owned by uid 65534") {
		t.Fatalf("Dial a socket of uid 65534: err = %v, want a refusal naming the owner", err)
	}
}

func TestDialRefusesForeignDirectory(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown the directory to another uid")
	}
	dir := filepath.Join(shortDir(t), "d")
	path := filepath.Join(dir, "tackled.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	_, err = Dial(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("Dial in a directory of uid 65534: err = %v, want a refusal of the directory", err)
	}
}

func TestDialMissingSocket(t *testing.T) {
	_, err := Dial(context.Background(), filepath.Join(shortDir(t), "none.sock"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Dial a missing socket: err = %v, want os.ErrNotExist", err)
	}
}

func TestPeerUID(t *testing.T) {
	path := filepath.Join(shortDir(t), "tackled.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type res struct {
		uid uint32
		pid int32
		err error
	}
	got := make(chan res, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- res{err: err}
			return
		}
		defer c.Close()
		uid, err := PeerUID(c)
		pid, _ := PeerPID(c)
		got <- res{uid, pid, err}
	}()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	if int(r.uid) != os.Getuid() {
		t.Errorf("PeerUID = %d, want %d", r.uid, os.Getuid())
	}
	if int(r.pid) != os.Getpid() {
		t.Errorf("PeerPID = %d, want %d", r.pid, os.Getpid())
	}
	if _, err := PeerUID(&net.TCPConn{}); err == nil {
		t.Error("PeerUID of a TCP conn: no error")
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000")
	if got, want := DefaultPath(), "/run/user/1000/tackle/tackled.sock"; got != want {
		t.Errorf("DefaultPath = %q, want %q", got, want)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	if got := DefaultPath(); !strings.HasPrefix(got, os.TempDir()) || !strings.HasSuffix(got, "/tackled.sock") {
		t.Errorf("DefaultPath without XDG_RUNTIME_DIR = %q", got)
	}
}

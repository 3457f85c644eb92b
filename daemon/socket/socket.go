// Package socket owns the unix socket tackled listens on: its default path,
// the permissions of the socket and its directory, stale-socket removal, the
// ownership check a client makes before dialling, and the peer's uid.
//
// It is a leaf package shared by the daemon and its clients. It imports only
// the standard library and golang.org/x/sys/unix, and knows nothing of gRPC.
package socket

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrInUse is returned by Listen when a daemon already answers on the socket.
var ErrInUse = errors.New("socket is in use by a running daemon")

// probeTimeout bounds the dial Listen makes to tell a live socket from a stale one.
const probeTimeout = time.Second

// DefaultPath returns the socket path used when none is configured:
// $XDG_RUNTIME_DIR/tackle/tackled.sock, else <tmp>/tackle-<uid>/tackled.sock.
func DefaultPath() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "tackle", "tackled.sock")
	}
	return filepath.Join(os.TempDir(), "tackle-"+strconv.Itoa(os.Getuid()), "tackled.sock")
}

// Listen listens on the unix socket at path. It creates the socket's
// directory with mode 0700 when it is missing, refuses a directory that
// belongs to another user or that anyone may write to, removes a stale socket nobody answers on, returns an error
// wrapping ErrInUse when a daemon answers, and leaves the socket with mode 0600.
func Listen(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("listening: empty socket path")
	}
	dir := filepath.Dir(path)
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating socket directory %q: %w", dir, err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// Only a directory made here is tightened: an existing one (a home
		// directory given with --socket) keeps its mode; the socket is 0600.
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, fmt.Errorf("restricting socket directory %q: %w", dir, err)
		}
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("listening on %q: the path exists and is not a socket; remove it or choose another --socket", path)
		}
		ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
		c, derr := (&net.Dialer{}).DialContext(ctx, "unix", path)
		cancel()
		if derr == nil {
			c.Close()
			return nil, fmt.Errorf("listening on %q: %w", path, ErrInUse)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("removing stale socket %q: %w", path, err)
		}
	}
	// The umask makes the socket 0600 from its creation, so there is no window
	// in which another user could connect; the chmod below makes it explicit.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listening on %q: %w", path, err)
	}
	if ul, ok := ln.(*net.UnixListener); ok {
		// Close removes the socket file, unless another daemon replaced it.
		ul.SetUnlinkOnClose(true)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("restricting socket %q: %w", path, err)
	}
	return ln, nil
}

// Dial connects to the daemon's socket at path. Before dialling it checks
// that the socket and its directory belong to the caller's uid, so a client
// never talks to a daemon another user planted.
func Dial(ctx context.Context, path string) (net.Conn, error) {
	if err := CheckOwner(path); err != nil {
		return nil, err
	}
	c, err := (&net.Dialer{}).DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dialling %q: %w", path, err)
	}
	return c, nil
}

// CheckOwner reports an error unless path is a socket owned by the caller's
// uid in a directory owned by the caller (or root) that others cannot write.
// A missing socket gives an error matching os.ErrNotExist.
func CheckOwner(path string) error {
	if err := checkDir(filepath.Dir(path)); err != nil {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return fmt.Errorf("checking socket %q: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("checking socket %q: not a socket", path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("checking socket %q: no owner information", path)
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("refusing socket %q: it is owned by uid %d, not by you (uid %d); another user may be impersonating tackled — remove it or choose another --socket", path, st.Uid, uid)
	}
	return nil
}

// checkDir refuses a socket directory that belongs to another user (root
// excepted) or that others may write to without the sticky bit.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("checking socket directory %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("checking socket directory %q: not a directory", dir)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	uid := os.Getuid()
	if int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Errorf("refusing socket directory %q: it is owned by uid %d, not by you (uid %d); choose another --socket", dir, st.Uid, uid)
	}
	if fi.Mode().Perm()&0o002 != 0 && fi.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("refusing socket directory %q: anyone may write to it (mode %v); choose another --socket", dir, fi.Mode().Perm())
	}
	return nil
}

// PeerUID returns the uid of the process at the other end of a unix socket
// connection (SO_PEERCRED).
func PeerUID(c net.Conn) (uint32, error) {
	cred, err := peerCred(c)
	if err != nil {
		return 0, err
	}
	return cred.Uid, nil
}

// PeerPID returns the pid of the process at the other end of a unix socket
// connection (SO_PEERCRED), for logs.
func PeerPID(c net.Conn) (int32, error) {
	cred, err := peerCred(c)
	if err != nil {
		return 0, err
	}
	return cred.Pid, nil
}

func peerCred(c net.Conn) (*unix.Ucred, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("reading peer credentials: %T is not a unix connection", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("reading peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, fmt.Errorf("reading peer credentials: %w", err)
	}
	if serr != nil {
		return nil, fmt.Errorf("reading peer credentials: %w", serr)
	}
	return cred, nil
}

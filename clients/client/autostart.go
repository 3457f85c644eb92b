package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tackle-agent/tackle/daemon/socket"
)

// probeTimeout bounds one connection attempt to the socket.
const probeTimeout = time.Second

// probe reports whether a daemon answers on path: nil when one does, an
// error wrapping ErrNoDaemon when nothing listens (no socket, or a stale
// one), ErrPermissionDenied when the socket belongs to another user, and a
// plain error for a path that cannot be a socket.
func probe(ctx context.Context, path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w on %s", ErrNoDaemon, path)
	}
	if err != nil {
		return fmt.Errorf("checking socket %q: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("checking socket %q: the path exists and is not a socket; remove it or choose another --socket", path)
	}
	if err := socket.CheckOwner(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w on %s", ErrNoDaemon, path)
		}
		return fmt.Errorf("%w: %v", ErrPermissionDenied, err)
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	conn, err := socket.Dial(ctx, path)
	if err == nil {
		defer conn.Close()
		return hearsServer(ctx, conn, path)
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w on %s (stale socket)", ErrNoDaemon, path)
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return fmt.Errorf("%w: %v", ErrPermissionDenied, err)
	}
	return err
}

// hearsServer reports whether a gRPC server speaks on conn: it sends its
// HTTP/2 settings as soon as it accepts. A connection that is reset or
// closed without a byte is a daemon that is dying (a killed process keeps its
// listening socket until its last thread is gone): ErrNoDaemon, so a new one
// is started. Silence until the probe's deadline is a daemon that does not
// answer.
func hearsServer(ctx context.Context, conn net.Conn, path string) error {
	deadline, _ := ctx.Deadline()
	if err := conn.SetReadDeadline(deadline); err != nil {
		return fmt.Errorf("probing the daemon on %s: %w", path, err)
	}
	var b [1]byte
	_, err := conn.Read(b[:])
	switch {
	case err == nil:
		return nil
	case errors.Is(err, io.EOF), errors.Is(err, syscall.ECONNRESET):
		return fmt.Errorf("%w on %s (the daemon is exiting)", ErrNoDaemon, path)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("%w: the daemon on %s accepted a connection but did not answer within %v", ErrUnavailable, path, probeTimeout)
	}
	return fmt.Errorf("probing the daemon on %s: %w", path, err)
}

// autostart starts a daemon on o.Socket unless another client did so first.
// It reports whether this call started it.
func autostart(ctx context.Context, o *Options) (bool, error) {
	dir := filepath.Dir(o.Socket)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("%w: creating socket directory %q: %v", ErrStartFailed, dir, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(dir, "tackled.lock"), 2*o.StartTimeout)
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrStartFailed, err)
	}
	defer unlock()

	// Another client may have started one while we waited for the lock.
	if err := probe(ctx, o.Socket); err == nil {
		return false, nil
	} else if !errors.Is(err, ErrNoDaemon) {
		return false, err
	}
	if fi, err := os.Lstat(o.Socket); err == nil && fi.Mode()&os.ModeSocket != 0 {
		if err := os.Remove(o.Socket); err != nil && !errors.Is(err, os.ErrNotExist) {
			return false, fmt.Errorf("%w: removing stale socket %q: %v", ErrStartFailed, o.Socket, err)
		}
	}

	exe, err := o.daemonPath()
	if err != nil {
		return false, fmt.Errorf("%w: %v", ErrStartFailed, err)
	}
	// Its stderr is its log file, so that a crash trace is kept.
	cmd := exec.Command(exe, "--socket", o.Socket, "--stderr-to-log")
	cmd.Env = o.Env
	cmd.Dir = "/"
	// Stdin, Stdout and Stderr stay nil: the null device (the daemon puts
	// its log file on fd 2); a new session detaches it from our terminal
	// and signals.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("%w: running %s: %v", ErrStartFailed, exe, err)
	}
	pid := cmd.Process.Pid
	defer cmd.Process.Release()

	deadline := time.Now().Add(o.StartTimeout)
	delay := 5 * time.Millisecond
	for {
		err := probe(ctx, o.Socket)
		if err == nil {
			return true, nil
		}
		// Not listening yet, or listening but still opening its state
		// (which waits for a lock held elsewhere): keep waiting for it.
		if !errors.Is(err, ErrNoDaemon) && !errors.Is(err, ErrUnavailable) {
			return false, err
		}
		var ws syscall.WaitStatus
		if wpid, _ := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); wpid == pid {
			why := ""
			if msg := lastLoggedError(o.logPath()); msg != "" {
				why = ": " + msg
			}
			return false, fmt.Errorf("%w: %s exited with status %d before answering on %s%s (its log: %s)",
				ErrStartFailed, exe, ws.ExitStatus(), o.Socket, why, o.logPath())
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("%w: %s (pid %d) did not answer on %s within %v; see its log %s",
				ErrStartFailed, exe, pid, o.Socket, o.StartTimeout, o.logPath())
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("waiting for tackled to start: %w", ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// lastLoggedError returns the error of the last error line in the daemon's
// JSON log (its tail only), or "" when there is none: what made a daemon
// that was just started exit.
func lastLoggedError(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const tail = 64 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > tail {
		if _, err := f.Seek(-tail, io.SeekEnd); err != nil {
			return ""
		}
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		var rec map[string]any
		if json.Unmarshal([]byte(lines[i]), &rec) != nil || rec["@level"] != "error" {
			continue
		}
		if e, ok := rec["error"].(string); ok && e != "" {
			return e
		}
		if m, ok := rec["@message"].(string); ok {
			return m
		}
	}
	return ""
}

// lockFile takes an exclusive flock on path, waiting up to wait. The
// returned function releases it.
func lockFile(ctx context.Context, path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock file %q: %w", path, err)
	}
	deadline := time.Now().Add(wait)
	delay := 5 * time.Millisecond
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("locking %q: %w", path, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("locking %q: another client holds it for more than %v", path, wait)
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("locking %q: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
}

// daemonPath finds the tackled executable: Options.DaemonPath, then
// $TACKLE_DAEMON, then "tackled" next to the running executable, then $PATH.
func (o *Options) daemonPath() (string, error) {
	if o.DaemonPath != "" {
		return o.DaemonPath, nil
	}
	if p := o.getenv("TACKLE_DAEMON"); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "tackled")
		if isExecutable(p) {
			return p, nil
		}
	}
	for _, dir := range filepath.SplitList(o.getenv("PATH")) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, "tackled")
		if isExecutable(p) {
			return p, nil
		}
	}
	return "", errors.New("finding tackled: not next to this executable nor in $PATH; install it or set TACKLE_DAEMON")
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// logPath is where the daemon writes its log, for error messages.
func (o *Options) logPath() string {
	state := o.getenv("XDG_STATE_HOME")
	if state == "" || !filepath.IsAbs(state) {
		state = filepath.Join(o.getenv("HOME"), ".local", "state")
	}
	return filepath.Join(state, "tackle", "tackled.log")
}

// needsRestart reports whether the connected daemon is of another build than
// the one autostart would run, and idle (no other client), so that
// replacing it disturbs nobody.
func (c *Client) needsRestart(ctx context.Context, o *Options) (bool, error) {
	want := o.BuildID
	if want == "" {
		exe, err := o.daemonPath()
		if err != nil {
			return false, err
		}
		want, err = BuildIDOf(exe, filepath.Join(filepath.Dir(o.Socket), "tackled.buildid"))
		if err != nil {
			return false, err
		}
	}
	st, err := c.Status(ctx)
	if err != nil {
		return false, err
	}
	if st.GetBuildId() == "" || st.GetBuildId() == want {
		return false, nil
	}
	// clients counts Attach streams; this unary Status is not one of them.
	return st.GetClients() == 0, nil
}

// BuildIDOf returns the build id of the executable at path: the first 12
// hex digits of its sha256, as tackled computes its own. When cache is not
// empty, the id is remembered there keyed by path, size and mtime, so a
// warm `tackle status` does not hash a large binary.
func BuildIDOf(path, cache string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("computing build id: %w", err)
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", path, fi.Size(), fi.ModTime().UnixNano())
	if cache != "" {
		if b, err := os.ReadFile(cache); err == nil {
			if k, id, ok := strings.Cut(string(b), "\n"); ok && k == key && len(id) == 12 {
				return id, nil
			}
		}
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("computing build id: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("computing build id of %q: %w", path, err)
	}
	id := hex.EncodeToString(h.Sum(nil))[:12]
	if cache != "" {
		tmp := cache + "." + strconv.Itoa(os.Getpid())
		if os.WriteFile(tmp, []byte(key+"\n"+id), 0o600) == nil {
			if os.Rename(tmp, cache) != nil {
				os.Remove(tmp)
			}
		}
	}
	return id, nil
}

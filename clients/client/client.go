// Package client connects to tackled over its unix socket: it dials (and, in
// the manner of gopls' dialer, auto-starts a daemon when none answers),
// converts gRPC status errors into the package's typed errors once, and
// exposes a session's Attach stream as an iter.Seq2 of server messages.
//
// It imports only gen/ and daemon/socket; it knows nothing of the daemon's
// internals and prints nothing.
package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tackle-agent/tackle/daemon/socket"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// ProtocolVersion is the Attach protocol version this client speaks.
const ProtocolVersion = 1

// Options configures Dial. A nil *Options means defaults.
type Options struct {
	// Socket is the daemon's socket path ("" = the default for Getenv).
	Socket string
	// NoAutostart makes Dial fail with ErrNoDaemon instead of starting tackled.
	NoAutostart bool
	// NoVersionCheck skips comparing the daemon's build id with the binary
	// autostart would run (and so never restarts a daemon).
	NoVersionCheck bool
	// DaemonPath is the tackled executable to start ("" = $TACKLE_DAEMON, then
	// "tackled" next to the running executable, then $PATH).
	DaemonPath string
	// BuildID is the build id the daemon is expected to have ("" = the first
	// 12 hex digits of the sha256 of the tackled executable autostart would run).
	BuildID string
	// Env is the environment of a started daemon and the source of Getenv
	// lookups (nil = os.Environ()).
	Env []string
	// StartTimeout bounds waiting for a started daemon to answer (0 = 10 s:
	// more than the daemon waits for a locked state database).
	StartTimeout time.Duration
	// ClientName names this client in Hello ("" = "tackle-client").
	ClientName string
}

// Client is a connection to a daemon. It is safe for concurrent use.
type Client struct {
	conn   *grpc.ClientConn
	svc    tacklev1.TackleServiceClient
	socket string
	name   string
	// started: this Dial started the daemon; restarted: it replaced an idle
	// daemon of another build. Both are set once by Dial.
	started, restarted bool
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Env == nil {
		c.Env = os.Environ()
	}
	if c.Socket == "" {
		c.Socket = DefaultSocket(c.getenv)
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 10 * time.Second
	}
	if c.ClientName == "" {
		c.ClientName = "tackle-client"
	}
	return c
}

// getenv looks key up in o.Env (the last assignment wins, as in exec).
func (o *Options) getenv(key string) string {
	v := ""
	for _, kv := range o.Env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			v = kv[len(key)+1:]
		}
	}
	return v
}

// DefaultSocket is socket.DefaultPath computed from getenv instead of the
// process environment: $TACKLE_SOCKET, else $XDG_RUNTIME_DIR/tackle/tackled.sock,
// else a per-user directory under the system temp dir.
func DefaultSocket(getenv func(string) string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv("TACKLE_SOCKET"); p != "" {
		return p
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "tackle", "tackled.sock")
	}
	tmp := getenv("TMPDIR")
	if tmp == "" || !filepath.IsAbs(tmp) {
		tmp = os.TempDir()
	}
	return filepath.Join(tmp, "tackle-"+strconv.Itoa(os.Getuid()), "tackled.sock")
}

// Dial connects to the daemon on opts.Socket. When nothing answers it starts
// one (unless opts.NoAutostart) under a file lock in the socket's directory:
// it re-checks, removes a stale socket, spawns tackled detached and retries
// with backoff. A connected daemon whose build id differs from the binary it
// would start is restarted if it is idle. Errors wrap ErrNoDaemon,
// ErrPermissionDenied or ErrStartFailed.
func Dial(ctx context.Context, opts *Options) (*Client, error) {
	o := opts.withDefaults()
	err := probe(ctx, o.Socket)
	started := false
	if errors.Is(err, ErrNoDaemon) && !o.NoAutostart {
		started, err = autostart(ctx, &o)
	}
	if err != nil {
		return nil, err
	}
	c, err := connect(o.Socket, o.ClientName)
	if err != nil {
		return nil, err
	}
	c.started = started
	if started || o.NoVersionCheck || o.NoAutostart {
		return c, nil
	}
	restart, err := c.needsRestart(ctx, &o)
	if err != nil || !restart {
		// A failed check leaves the running daemon in place.
		return c, nil
	}
	c.Close()
	if err := stopAndWait(ctx, o.Socket); err != nil {
		return nil, fmt.Errorf("restarting a daemon of another build: %w", err)
	}
	if _, err := autostart(ctx, &o); err != nil {
		return nil, err
	}
	c, err = connect(o.Socket, o.ClientName)
	if err != nil {
		return nil, err
	}
	c.started, c.restarted = true, true
	return c, nil
}

// flowWindow is the HTTP/2 flow-control window of the client's streams and
// connection: tackled's.
const flowWindow = 1 << 20

// connect makes a gRPC client whose connections go through socket.Dial (the
// ownership check) to path.
func connect(path, name string) (*Client, error) {
	conn, err := grpc.NewClient("passthrough:///tackled",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Fixed windows, as tackled's: no bandwidth-delay pings after
		// every event received (a unix socket has no delay to estimate).
		grpc.WithInitialWindowSize(flowWindow), grpc.WithInitialConnWindowSize(flowWindow),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return socket.Dial(ctx, path)
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("connecting to %q: %w", path, err)
	}
	return &Client{conn: conn, svc: tacklev1.NewTackleServiceClient(conn), socket: path, name: name}, nil
}

// Close closes the connection. It is idempotent.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil && status.Code(err) != codes.Canceled {
		return fmt.Errorf("closing the connection: %w", err)
	}
	return nil
}

// Socket returns the socket path of the daemon.
func (c *Client) Socket() string { return c.socket }

// Started reports whether Dial started the daemon (fresh or as a restart).
func (c *Client) Started() bool { return c.started }

// Restarted reports whether Dial replaced an idle daemon of another build.
func (c *Client) Restarted() bool { return c.restarted }

// Service returns the raw generated client for RPCs this package does not
// wrap. Its errors are gRPC status errors.
func (c *Client) Service() tacklev1.TackleServiceClient { return c.svc }

// Status describes the daemon.
func (c *Client) Status(ctx context.Context) (*tacklev1.StatusResponse, error) {
	r, err := c.svc.Status(ctx, &tacklev1.StatusRequest{})
	return r, convertError(err)
}

// CreateSession creates a session (or returns the cwd's default one).
func (c *Client) CreateSession(ctx context.Context, req *tacklev1.CreateSessionRequest) (*tacklev1.CreateSessionResponse, error) {
	r, err := c.svc.CreateSession(ctx, req)
	return r, convertError(err)
}

// ListSessions lists sessions, newest first.
func (c *Client) ListSessions(ctx context.Context) ([]*tacklev1.Session, error) {
	r, err := c.svc.ListSessions(ctx, &tacklev1.ListSessionsRequest{})
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetSessions(), nil
}

// GetSession returns one session; ErrNotFound when it does not exist.
func (c *Client) GetSession(ctx context.Context, id string) (*tacklev1.Session, error) {
	r, err := c.svc.GetSession(ctx, &tacklev1.GetSessionRequest{Id: id})
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetSession(), nil
}

// DeleteSession deletes a session; ErrNotFound when it does not exist.
func (c *Client) DeleteSession(ctx context.Context, id string) error {
	_, err := c.svc.DeleteSession(ctx, &tacklev1.DeleteSessionRequest{Id: id})
	return convertError(err)
}

// ListTools lists a session's tools (or the default session's of cwd).
func (c *Client) ListTools(ctx context.Context, req *tacklev1.ListToolsRequest) ([]*tacklev1.ToolInfo, error) {
	r, err := c.svc.ListTools(ctx, req)
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetTools(), nil
}

// AnswerPermission answers a pending permission request without attaching.
func (c *Client) AnswerPermission(ctx context.Context, a *tacklev1.PermissionAnswer) (*tacklev1.AnswerPermissionResponse, error) {
	r, err := c.svc.AnswerPermission(ctx, &tacklev1.AnswerPermissionRequest{Answer: a, ClientName: c.name})
	return r, convertError(err)
}

// ListShells lists a session's background shells, oldest first;
// ErrNotFound when the session does not exist.
func (c *Client) ListShells(ctx context.Context, sessionID string) ([]*tacklev1.BackgroundShell, error) {
	r, err := c.svc.ListShells(ctx, &tacklev1.ListShellsRequest{SessionId: sessionID})
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetShells(), nil
}

// ReadShellOutput reads up to maxBytes (0: the daemon's default) of a
// background shell's output from offset; ErrNotFound when the session or
// the shell does not exist.
func (c *Client) ReadShellOutput(ctx context.Context, sessionID, shellID string, offset int64, maxBytes uint32) (*tacklev1.ReadShellOutputResponse, error) {
	r, err := c.svc.ReadShellOutput(ctx, &tacklev1.ReadShellOutputRequest{
		SessionId: sessionID, ShellId: shellID, Offset: offset, MaxBytes: maxBytes,
	})
	return r, convertError(err)
}

// KillShell kills a background shell and returns its state; ErrNotFound
// when the session or the shell does not exist.
func (c *Client) KillShell(ctx context.Context, sessionID, shellID string) (*tacklev1.BackgroundShell, error) {
	r, err := c.svc.KillShell(ctx, &tacklev1.KillShellRequest{SessionId: sessionID, ShellId: shellID})
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetShell(), nil
}

// Shutdown asks the daemon to stop gracefully and waits until its socket no
// longer answers (or ctx ends). The Client is closed.
func (c *Client) Shutdown(ctx context.Context) error {
	var pid int
	if st, err := c.svc.Status(ctx, &tacklev1.StatusRequest{}); err == nil {
		pid = int(st.GetPid())
	}
	_, err := c.svc.Shutdown(ctx, &tacklev1.ShutdownRequest{})
	c.Close()
	if err = convertError(err); err != nil && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("asking the daemon to stop: %w", err)
	}
	if err := waitGone(ctx, c.socket); err != nil {
		return err
	}
	return waitExited(ctx, pid)
}

// waitExited polls with backoff until process pid has exited (a zombie
// counts as exited: the daemon is usually not our child). pid 0, and a daemon
// served in this very process (tests, embedders), return at once.
func waitExited(ctx context.Context, pid int) error {
	if pid == os.Getpid() {
		return nil
	}
	delay := time.Millisecond
	for pid > 0 && processRuns(pid) {
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for daemon process %d to exit: %w", pid, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, 100*time.Millisecond)
	}
	return nil
}

// processRuns reports whether pid is a running process. A zombie counts as
// gone once its last thread has exited (until then it still holds its files,
// the daemon's socket among them).
func processRuns(pid int) bool {
	dir := "/proc/" + strconv.Itoa(pid)
	b, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) || b[i+2] != 'Z' {
		return true
	}
	tasks, err := os.ReadDir(dir + "/task")
	return err == nil && len(tasks) > 1
}

// Stop stops the daemon on path gracefully, if one runs, and waits until it
// is gone. It never starts a daemon; it returns nil when none ran.
func Stop(ctx context.Context, path string) error {
	if err := probe(ctx, path); err != nil {
		if errors.Is(err, ErrNoDaemon) {
			return nil
		}
		return err
	}
	return stopAndWait(ctx, path)
}

func stopAndWait(ctx context.Context, path string) error {
	c, err := connect(path, "tackle-client")
	if err != nil {
		return err
	}
	return c.Shutdown(ctx)
}

// waitGone polls the socket with backoff until no daemon answers.
func waitGone(ctx context.Context, path string) error {
	delay := 5 * time.Millisecond
	for {
		if err := probe(ctx, path); errors.Is(err, ErrNoDaemon) {
			return nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for the daemon on %q to stop: %w", path, ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

// Invoke calls a unary method of any of tackled's services by its full
// name ("/tackle.v1.TackleService/ListSessions"), for clients that
// translate the API generically (tackle bridge). The error is gRPC's,
// with its status.
func (c *Client) Invoke(ctx context.Context, method string, req, resp any) error {
	return c.conn.Invoke(ctx, method, req, resp)
}

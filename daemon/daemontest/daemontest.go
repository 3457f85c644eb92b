// Package daemontest runs an in-process tackled on a real unix socket in a
// temporary directory, for tests of the daemon and its clients.
//
// The daemon's home, config and state directories are temporary too: a
// test never touches the real user's files. The daemon is stopped by
// t.Cleanup (or Stop), gracefully, as SIGTERM would stop tackled.
package daemontest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/tackle-agent/tackle/daemon"
	"github.com/tackle-agent/tackle/daemon/socket"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Option changes the daemon's options before it is built.
type Option func(*daemon.Options)

// WithAllowedUID serves only peers of this uid.
func WithAllowedUID(uid int) Option { return func(o *daemon.Options) { o.AllowedUID = uid } }

// WithPermissionTimeout sets how long a permission request waits.
func WithPermissionTimeout(d time.Duration) Option {
	return func(o *daemon.Options) { o.PermissionTimeout = d }
}

// WithStateDir reuses a state directory, e.g. one of a stopped daemon, to
// test what survives a restart.
func WithStateDir(dir string) Option { return func(o *daemon.Options) { o.StateDir = dir } }

// WithLogger sends the daemon's logs to l (default: the test log at debug level).
func WithLogger(l hclog.Logger) Option { return func(o *daemon.Options) { o.Logger = l } }

// WithOptions applies f to the daemon's options.
func WithOptions(f func(*daemon.Options)) Option { return Option(f) }

// Daemon is a running in-process daemon.
type Daemon struct {
	t        testing.TB
	log      *testLog
	socket   string
	stateDir string
	home     string
	opts     daemon.Options
	conn     *grpc.ClientConn
	client   tacklev1.TackleServiceClient

	cancel   context.CancelFunc
	done     chan struct{}
	runErr   error
	stopOnce sync.Once
}

// SandboxExec is the default Options.SandboxExec of Start: a test package
// whose daemons run sandboxed commands builds the helper (BuildSandboxExec)
// in its TestMain and sets it.
var SandboxExec string

// BuildSandboxExec builds tackle-sandbox-exec into dir and returns its path.
func BuildSandboxExec(dir string) (string, error) {
	path := filepath.Join(dir, daemon.SandboxExecName)
	out, err := exec.Command("go", "build", "-o", path, "github.com/tackle-agent/tackle/daemon/cmd/tackle-sandbox-exec").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", daemon.SandboxExecName, err, out)
	}
	return path, nil
}

// Start builds and runs a daemon. Its socket lives in a fresh short
// directory under the system temp dir (unix socket paths are limited to
// 108 bytes); HOME, XDG_CONFIG_HOME and the state directory are temporary
// directories too. It fails the test if the daemon cannot start.
func Start(t testing.TB, opts ...Option) *Daemon {
	t.Helper()
	root, err := os.MkdirTemp("", "tk")
	if err != nil {
		t.Fatalf("creating daemon directory: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	home := filepath.Join(root, "home")
	tlog := &testLog{t: t}
	o := daemon.Options{
		Socket:     filepath.Join(root, "run", "tackled.sock"),
		StateDir:   filepath.Join(root, "state"),
		Home:       home,
		ConfigHome: filepath.Join(home, ".config"),
		// The managed settings file of a test is one that does not exist.
		ManagedSettings: filepath.Join(root, "managed-settings.json"),
		Version:         "test",
		BuildID:         "test-build",
		SandboxExec:     SandboxExec,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name:   "tackled",
			Level:  hclog.Debug,
			Output: tlog,
		}),
	}
	for _, f := range opts {
		f(&o)
	}
	if err := os.MkdirAll(o.ConfigHome, 0o700); err != nil {
		t.Fatalf("creating config home: %v", err)
	}
	d := &Daemon{log: tlog, t: t, socket: o.Socket, stateDir: o.StateDir, home: home, opts: o, done: make(chan struct{})}

	ln, err := socket.Listen(o.Socket)
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	dm, err := daemon.New(&o)
	if err != nil {
		ln.Close()
		t.Fatalf("building daemon: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() {
		defer close(d.done)
		d.runErr = dm.Run(ctx, ln)
	}()
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stopping daemon: %v", err)
		}
	})

	d.conn, err = Dial(o.Socket)
	if err != nil {
		t.Fatalf("dialling daemon: %v", err)
	}
	d.client = tacklev1.NewTackleServiceClient(d.conn)
	return d
}

// Dial opens a new gRPC client connection to the socket at path, checking
// the socket's owner as clients do. The caller closes it.
func Dial(path string) (*grpc.ClientConn, error) {
	return grpc.NewClient("passthrough:///tackled",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<20), grpc.WithInitialConnWindowSize(1<<20), // as tackle's clients
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return socket.Dial(ctx, path)
		}),
	)
}

// Socket is the daemon's socket path.
func (d *Daemon) Socket() string { return d.socket }

// StateDir is the daemon's state directory (state.db, outputs/).
func (d *Daemon) StateDir() string { return d.stateDir }

// Home is the daemon's (temporary) home directory.
func (d *Daemon) Home() string { return d.home }

// Options are the options the daemon was built with.
func (d *Daemon) Options() daemon.Options { return d.opts }

// Conn is a client connection to the daemon, closed by Stop.
func (d *Daemon) Conn() *grpc.ClientConn { return d.conn }

// Client is a TackleService client on Conn.
func (d *Daemon) Client() tacklev1.TackleServiceClient { return d.client }

// Done is closed when the daemon has stopped (by Stop or a Shutdown RPC).
func (d *Daemon) Done() <-chan struct{} { return d.done }

// Stop stops the daemon gracefully, waits for it, and returns Run's error.
// It is idempotent.
func (d *Daemon) Stop() error {
	d.stopOnce.Do(func() {
		d.cancel()
		<-d.done
		if d.conn != nil {
			d.conn.Close()
		}
		d.log.close()
	})
	if errors.Is(d.runErr, context.Canceled) {
		return nil
	}
	return d.runErr
}

// testLog sends log lines to the test log until it is closed: a test's
// log must not be written after the test ended.
type testLog struct {
	mu     sync.Mutex // guards closed
	t      testing.TB
	closed bool
}

func (w *testLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

func (w *testLog) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

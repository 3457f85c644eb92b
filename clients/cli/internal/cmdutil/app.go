// Package cmdutil is what every command of the tackle CLI shares: the App
// (one run's stdio, environment and global flags), connecting to the daemon
// (starting one unless --no-autostart), choosing the session a command is
// about, the exit codes and their error types, JSON on stdout, whether to use
// colour, and the "did you mean" of names. It renders nothing else and
// defines no command.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/internal/pollfd"
)

// Exit codes of the CLI contract.
const (
	ExitOK    = 0 // success; for call and batch: no result is an error
	ExitError = 1 // a tool result is_error, or the daemon failed a request
	ExitUsage = 2 // usage or connection errors (message on stderr)
)

// PermissionModes are the accepted values of --permission-mode.
var PermissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"}

// App is one run of the command: its stdio, environment and global flags.
type App struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Environ        []string

	Socket      string
	NoAutostart bool

	Version string // the CLI's version (Version), for the clients it serves
}

// ExitCodeError carries an exit code. A nil err means the reason was already
// printed (e.g. a tool result that is_error).
type ExitCodeError struct {
	Code int
	Err  error
}

// Error is the message of the error, or the exit status when the reason was
// already printed.
func (e *ExitCodeError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns the error behind the exit code.
func (e *ExitCodeError) Unwrap() error { return e.Err }

// UsageError is a usage error (exit 2).
func UsageError(format string, args ...any) error {
	return &ExitCodeError{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

// RunError marks an error returned by a command's own code, as opposed to
// cobra's flag and argument errors, which are usage errors.
type RunError struct{ Err error }

// Error is the message of the command's error.
func (e *RunError) Error() string { return e.Err.Error() }

// Unwrap returns the command's error.
func (e *RunError) Unwrap() error { return e.Err }

// Run wraps a command's function so its errors are told apart from cobra's.
func Run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		if err == nil {
			return nil
		}
		var ee *ExitCodeError
		if errors.As(err, &ee) {
			return err
		}
		return &RunError{Err: err}
	}
}

// Getenv looks key up in the app's environment (the last assignment wins).
func (a *App) Getenv(key string) string {
	v := ""
	for _, kv := range a.Environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// SocketPath is --socket, else $TACKLE_SOCKET, else the default.
func (a *App) SocketPath() string {
	if a.Socket != "" {
		return a.Socket
	}
	return client.DefaultSocket(a.Getenv)
}

// dial connects to the daemon, starting one unless --no-autostart.
func (a *App) dial(ctx context.Context) (*client.Client, error) {
	return client.Dial(ctx, &client.Options{
		Socket:      a.SocketPath(),
		NoAutostart: a.NoAutostart,
		Env:         a.Environ,
		ClientName:  "tackle-cli",
	})
}

// WithClient dials the daemon (starting one unless --no-autostart), runs f
// with the command's context and the client, and closes the client.
func (a *App) WithClient(cmd *cobra.Command, f func(ctx context.Context, c *client.Client) error) error {
	ctx := cmd.Context()
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return f(ctx, c)
}

// WithSession is WithClient for a command about one session: f gets the
// session that sf chooses (see ResolveSession).
func (a *App) WithSession(cmd *cobra.Command, sf *SessionFlags, f func(ctx context.Context, c *client.Client, sid string) error) error {
	return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
		sid, err := a.ResolveSession(ctx, c, sf)
		if err != nil {
			return err
		}
		return f(ctx, c, sid)
	})
}

// AbsDir makes a --cwd value absolute ("" = the current directory).
func AbsDir(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("finding the current directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolving --cwd %q: %w", dir, err)
	}
	return abs, nil
}

// CheckMode validates --permission-mode.
func CheckMode(mode string) error {
	if mode == "" {
		return nil
	}
	for _, m := range PermissionModes {
		if m == mode {
			return nil
		}
	}
	return UsageError("invalid --permission-mode %q: use one of %s", mode, strings.Join(PermissionModes, ", "))
}

// SessionFlags are the flags that choose a session.
type SessionFlags struct {
	Session string
	Cwd     string
}

// Register adds --session and --cwd to cmd.
func (f *SessionFlags) Register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.Session, "session", "", "session id (default $TACKLE_SESSION, else the directory's default session)")
	cmd.Flags().StringVar(&f.Cwd, "cwd", "", "working directory whose default session to use (default: the current directory)")
}

// ResolveSession returns the session id: --session, $TACKLE_SESSION, else the
// default session of --cwd (or the current directory), created on first use
// with this client's environment.
func (a *App) ResolveSession(ctx context.Context, c *client.Client, f *SessionFlags) (string, error) {
	if f.Session != "" {
		return f.Session, a.checkSession(ctx, c, f.Session)
	}
	if id := a.Getenv("TACKLE_SESSION"); id != "" {
		return id, a.checkSession(ctx, c, id)
	}
	dir, err := AbsDir(f.Cwd)
	if err != nil {
		return "", err
	}
	resp, err := c.CreateSession(ctx, NewSessionRequest(dir, a.Environ, true))
	if err != nil {
		return "", fmt.Errorf("opening the default session of %s: %w", dir, err)
	}
	return resp.GetSession().GetId(), nil
}

// ProtocolStdio returns the stdin and stdout of a command that speaks a
// protocol on them for its whole life (mcp serve, acp, bridge), read and
// written through Go's poller when they are pipes or sockets (internal/pollfd),
// and the function that restores them, to call when serving ends.
func (a *App) ProtocolStdio() (io.Reader, io.Writer, func()) {
	in, out := a.Stdin, a.Stdout
	restoreIn, restoreOut := func() {}, func() {}
	if f, ok := in.(*os.File); ok {
		in, restoreIn = pollfd.Open(f)
	}
	if f, ok := out.(*os.File); ok {
		out, restoreOut = pollfd.Open(f)
	}
	return in, out, func() { restoreIn(); restoreOut() }
}

// Package cli is the `tackle` command: a thin client of tackled built with
// cobra, one file per subcommand. It talks to the daemon only through
// clients/client and prints for people or, with --json, in the stable shapes
// of the CLI contract. It holds no state of its own and never runs a tool.
//
// Main runs the command in-process with explicit stdio and environment, so
// tests need no binary; cmd/tackle is the thin main around it.
package cli

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
)

// Version is the CLI's version, set with -ldflags "-X .../clients/cli.Version=...".
var Version = "dev"

// Exit codes of the CLI contract.
const (
	ExitOK    = 0 // success; for call and batch: no result is an error
	ExitError = 1 // a tool result is_error, or the daemon failed a request
	ExitUsage = 2 // usage or connection errors (message on stderr)
)

// permissionModes are the accepted values of --permission-mode.
var permissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"}

// app is one run of the command: its stdio, environment and global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	environ        []string

	socket      string
	noAutostart bool

	version string // the CLI's version (Version), for the clients it serves
}

// exitError carries an exit code. A nil err means the reason was already
// printed (e.g. a tool result that is_error).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a usage error (exit 2).
func usageError(format string, args ...any) error {
	return &exitError{code: ExitUsage, err: fmt.Errorf(format, args...)}
}

// runError marks an error returned by a command's own code, as opposed to
// cobra's flag and argument errors, which are usage errors.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

// Main runs tackle with args (without the program name) and returns the exit
// code. environ replaces the process environment for every lookup (socket,
// session, colours) and is sent with new sessions. Cancelling ctx is an
// interrupt: attach ends with 0, a running call is cancelled.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, environ: environ, version: Version}
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "tackle: %s\n", tidyError(ee.err.Error()))
		}
		return ee.code
	}
	var re *runError
	if !errors.As(err, &re) {
		// cobra's own errors: unknown command, bad flag, wrong arguments.
		fmt.Fprintf(stderr, "tackle: %v\nRun 'tackle --help' for usage.\n", err)
		return ExitUsage
	}
	fmt.Fprintf(stderr, "tackle: %s\n", tidyError(hint(re.err).Error()))
	return exitCode(re.err)
}

// exitCode classifies an error of a command: connection problems and
// rejected requests are 2, everything else 1.
func exitCode(err error) int {
	for _, e := range []error{client.ErrNoDaemon, client.ErrPermissionDenied, client.ErrStartFailed,
		client.ErrUnavailable, client.ErrNotFound, client.ErrInvalidArgument} {
		if errors.Is(err, e) {
			return ExitUsage
		}
	}
	return ExitError
}

// hint adds what to do next to the errors a person meets most.
func hint(err error) error {
	if errors.Is(err, client.ErrNoDaemon) {
		return fmt.Errorf("%w (run without --no-autostart to start one, or start tackled yourself)", err)
	}
	return err
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "tackle",
		Short: "tackle runs an AI coding agent's tools through the tackled daemon",
		Long: `tackle is the command-line client of tackled, the daemon that owns an AI coding
agent's tool pool. It starts the daemon when none answers, runs tool calls
through the daemon's one pipeline, and shows sessions and their events.`,
		Version:       Version,
		SilenceErrors: true,
		SilenceUsage:  true,
		// tackle completion bash|zsh|fish|powershell; the names come from
		// a running daemon (see completion.go).
		CompletionOptions: cobra.CompletionOptions{},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: ExitUsage, err: err}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.socket, "socket", "", "daemon socket (default $TACKLE_SOCKET, else $XDG_RUNTIME_DIR/tackle/tackled.sock)")
	pf.BoolVar(&a.noAutostart, "no-autostart", false, "fail instead of starting tackled when none answers")
	root.AddCommand(
		a.statusCommand(),
		a.daemonCommand(),
		a.toolsCommand(),
		a.callCommand(),
		a.runCommand(),
		a.compactCommand(),
		a.chatCommand(),
		a.sandboxCommand(),
		a.acpCommand(),
		a.bridgeCommand(),
		a.hooksCommand(),
		a.batchCommand(),
		a.attachCommand(),
		a.sessionsCommand(),
		a.shellsCommand(),
		a.permissionsCommand(),
		a.explainCommand(),
		a.trustCommand(),
		a.untrustCommand(),
		a.mcpCommand(),
		a.skillsCommand(),
		a.skillCommand(),
		a.agentsCommand(),
	)
	unknownSubcommands(root)
	a.registerCompletions(root)
	return root
}

// run wraps a command's function so its errors are told apart from cobra's.
func run(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := fn(cmd, args)
		if err == nil {
			return nil
		}
		var ee *exitError
		if errors.As(err, &ee) {
			return err
		}
		return &runError{err: err}
	}
}

// getenv looks key up in the app's environment (the last assignment wins).
func (a *app) getenv(key string) string {
	v := ""
	for _, kv := range a.environ {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// socketPath is --socket, else $TACKLE_SOCKET, else the default.
func (a *app) socketPath() string {
	if a.socket != "" {
		return a.socket
	}
	return client.DefaultSocket(a.getenv)
}

// dial connects to the daemon, starting one unless --no-autostart.
func (a *app) dial(ctx context.Context) (*client.Client, error) {
	return client.Dial(ctx, &client.Options{
		Socket:      a.socketPath(),
		NoAutostart: a.noAutostart,
		Env:         a.environ,
		ClientName:  "tackle-cli",
	})
}

// withClient dials the daemon (starting one unless --no-autostart), runs f
// with the command's context and the client, and closes the client.
func (a *app) withClient(cmd *cobra.Command, f func(ctx context.Context, c *client.Client) error) error {
	ctx := cmd.Context()
	c, err := a.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return f(ctx, c)
}

// withSession is withClient for a command about one session: f gets the
// session that sf chooses (see resolveSession).
func (a *app) withSession(cmd *cobra.Command, sf *sessionFlags, f func(ctx context.Context, c *client.Client, sid string) error) error {
	return a.withClient(cmd, func(ctx context.Context, c *client.Client) error {
		sid, err := a.resolveSession(ctx, c, sf)
		if err != nil {
			return err
		}
		return f(ctx, c, sid)
	})
}

// absDir makes a --cwd value absolute ("" = the current directory).
func absDir(dir string) (string, error) {
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

// checkMode validates --permission-mode.
func checkMode(mode string) error {
	if mode == "" {
		return nil
	}
	for _, m := range permissionModes {
		if m == mode {
			return nil
		}
	}
	return usageError("invalid --permission-mode %q: use one of %s", mode, strings.Join(permissionModes, ", "))
}

// sessionFlags are the flags that choose a session.
type sessionFlags struct {
	session string
	cwd     string
}

func (f *sessionFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.session, "session", "", "session id (default $TACKLE_SESSION, else the directory's default session)")
	cmd.Flags().StringVar(&f.cwd, "cwd", "", "working directory whose default session to use (default: the current directory)")
}

// resolve returns the session id: --session, $TACKLE_SESSION, else the
// default session of --cwd (or the current directory), created on first use
// with this client's environment.
func (a *app) resolveSession(ctx context.Context, c *client.Client, f *sessionFlags) (string, error) {
	if f.session != "" {
		return f.session, a.checkSession(ctx, c, f.session)
	}
	if id := a.getenv("TACKLE_SESSION"); id != "" {
		return id, a.checkSession(ctx, c, id)
	}
	dir, err := absDir(f.cwd)
	if err != nil {
		return "", err
	}
	resp, err := c.CreateSession(ctx, newSessionRequest(dir, a.environ, true))
	if err != nil {
		return "", fmt.Errorf("opening the default session of %s: %w", dir, err)
	}
	return resp.GetSession().GetId(), nil
}

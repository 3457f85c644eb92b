// Package cli is the `tackle` command: a thin client of tackled built with
// cobra. It talks to the daemon only through clients/client and prints for
// people or, with --json, in the stable shapes of the CLI contract. It holds
// no state of its own and never runs a tool.
//
// This package only wires the root command and its exit codes. Each command
// group is a package of its own (call, run, chat, attach, sessions,
// permissions, mcp, skills, agents, hooks, shells, sandbox, status, tools,
// completion, editor); what they share is in internal/cmdutil (the App:
// streams, environment, global flags, dialing, session choice, exit errors),
// internal/render (the --json shapes and all output for people) and
// internal/ask (permission prompts, and a turn of calls with them).
//
// Main runs the command in-process with explicit stdio and environment, so
// tests need no binary; cmd/tackle is the thin main around it. The tests of
// this package run the whole command against a real daemon.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/agents"
	"github.com/tackle-agent/tackle/clients/cli/attach"
	"github.com/tackle-agent/tackle/clients/cli/call"
	"github.com/tackle-agent/tackle/clients/cli/chat"
	"github.com/tackle-agent/tackle/clients/cli/completion"
	"github.com/tackle-agent/tackle/clients/cli/editor"
	"github.com/tackle-agent/tackle/clients/cli/hooks"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/mcp"
	"github.com/tackle-agent/tackle/clients/cli/permissions"
	"github.com/tackle-agent/tackle/clients/cli/run"
	"github.com/tackle-agent/tackle/clients/cli/sandbox"
	"github.com/tackle-agent/tackle/clients/cli/sessions"
	"github.com/tackle-agent/tackle/clients/cli/shells"
	"github.com/tackle-agent/tackle/clients/cli/skills"
	"github.com/tackle-agent/tackle/clients/cli/status"
	"github.com/tackle-agent/tackle/clients/cli/tools"
	"github.com/tackle-agent/tackle/clients/client"
)

// Version is the CLI's version, set with -ldflags "-X .../clients/cli.Version=...".
var Version = "dev"

// Main runs tackle with args (without the program name) and returns the exit
// code. environ replaces the process environment for every lookup (socket,
// session, colours) and is sent with new sessions. Cancelling ctx is an
// interrupt: attach ends with 0, a running call is cancelled.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, environ []string) int {
	a := &cmdutil.App{Stdin: stdin, Stdout: stdout, Stderr: stderr, Environ: environ, Version: Version}
	root := rootCommand(a)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return cmdutil.ExitOK
	}
	var ee *cmdutil.ExitCodeError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "tackle: %s\n", tidyError(ee.Err.Error()))
		}
		return ee.Code
	}
	var re *cmdutil.RunError
	if !errors.As(err, &re) {
		// cobra's own errors: unknown command, bad flag, wrong arguments.
		fmt.Fprintf(stderr, "tackle: %v\nRun 'tackle --help' for usage.\n", err)
		return cmdutil.ExitUsage
	}
	fmt.Fprintf(stderr, "tackle: %s\n", tidyError(hint(re.Err).Error()))
	return exitCode(re.Err)
}

// exitCode classifies an error of a command: connection problems and
// rejected requests are 2, everything else 1.
func exitCode(err error) int {
	for _, e := range []error{client.ErrNoDaemon, client.ErrPermissionDenied, client.ErrStartFailed,
		client.ErrUnavailable, client.ErrNotFound, client.ErrInvalidArgument} {
		if errors.Is(err, e) {
			return cmdutil.ExitUsage
		}
	}
	return cmdutil.ExitError
}

// hint adds what to do next to the errors a person meets most.
func hint(err error) error {
	if errors.Is(err, client.ErrNoDaemon) {
		return fmt.Errorf("%w (run without --no-autostart to start one, or start tackled yourself)", err)
	}
	return err
}

func rootCommand(a *cmdutil.App) *cobra.Command {
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
		// a running daemon (see package completion).
		CompletionOptions: cobra.CompletionOptions{},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cmdutil.ExitCodeError{Code: cmdutil.ExitUsage, Err: err}
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.Socket, "socket", "", "daemon socket (default $TACKLE_SOCKET, else $XDG_RUNTIME_DIR/tackle/tackled.sock)")
	pf.BoolVar(&a.NoAutostart, "no-autostart", false, "fail instead of starting tackled when none answers")
	root.AddCommand(
		status.Command(a),
		status.DaemonCommand(a),
		tools.Command(a),
		call.Command(a),
		run.Command(a),
		run.CompactCommand(a),
		chat.Command(a),
		sandbox.Command(a),
		editor.ACPCommand(a),
		editor.BridgeCommand(a),
		hooks.Command(a),
		call.BatchCommand(a),
		attach.Command(a),
		sessions.Command(a),
		shells.Command(a),
		permissions.Command(a),
		permissions.ExplainCommand(a),
		permissions.TrustCommand(a),
		permissions.UntrustCommand(a),
		mcp.Command(a),
		skills.Command(a),
		skills.SkillCommand(a),
		agents.Command(a),
	)
	unknownSubcommands(root)
	completion.Register(a, root)
	return root
}

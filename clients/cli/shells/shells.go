// Package shells is `tackle shells`: a session's background shells.
package shells

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Command is `tackle shells`: a session's background shells.
func Command(a *cmdutil.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "shells",
		Aliases: []string{"shell"},
		Short:   "List, tail and kill a session's background shells",
		Long: `Background shells are commands the model started with Bash and
run_in_background. They belong to their session: any client may list them,
follow their output and kill them.`,
	}
	cmd.AddCommand(shellsListCommand(a), shellsTailCommand(a), shellsKillCommand(a))
	return cmd
}

func shellsListCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List a session's background shells, oldest first",
		Args:    cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				list, err := c.ListShells(ctx, sid)
				if err != nil {
					return fmt.Errorf("listing the shells of session %s: %w", sid, err)
				}
				if asJSON {
					return a.PrintJSON(render.ShellsToJSON(list))
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tSTATUS\tOUTPUT\tSTARTED\tCOMMAND")
				for _, s := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.GetId(), render.ShellState(s), render.ByteCount(s.GetOutputBytes()),
						s.GetStarted().AsTime().Local().Format("15:04:05"), render.OneLine(s.GetCommand()))
				}
				return tw.Flush()
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func shellsKillCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "kill ID",
		Short: "Kill a background shell (its whole process group)",
		Args:  cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				sh, err := c.KillShell(ctx, sid, args[0])
				if err != nil {
					return fmt.Errorf("killing shell %s of session %s: %w", args[0], sid, err)
				}
				if asJSON {
					return a.PrintJSON(render.ShellToJSON(sh))
				}
				fmt.Fprintf(a.Stdout, "%s %s\n", sh.GetId(), render.ShellState(sh))
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the shell as a JSON object")
	return cmd
}

// Polling bounds of `shells tail -f`: the first wait after an empty read,
// and the longest. A shell_updated event wakes the loop at once.
const (
	tailMinWait = 10 * time.Millisecond
	tailMaxWait = 500 * time.Millisecond
)

func shellsTailCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		follow bool
	)
	cmd := &cobra.Command{
		Use:   "tail ID",
		Short: "Print a background shell's output; with -f follow it until the shell ends",
		Long: `Print a background shell's output from its start. With -f, keep printing
new output until the shell ends (or Ctrl-C, which ends tail with status 0 and
leaves the shell running). Reading does not move the model's BashOutput
cursor.`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				var wake <-chan struct{}
				if follow {
					w, stop, err := watchShell(ctx, a, c, sid, args[0])
					if err != nil {
						if ctx.Err() != nil {
							return nil
						}
						return err
					}
					defer stop()
					wake = w
				}
				err := tail(ctx, a, c, sid, args[0], follow, wake)
				if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
					return nil // interrupted
				}
				return err
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new output until the shell ends")
	return cmd
}

// tail copies the shell's output to stdout from offset 0. Without follow it
// stops at the end of what is there; with follow it goes on until the shell
// has ended and everything is printed, waiting between empty reads (with
// backoff) unless wake fires.
func tail(ctx context.Context, a *cmdutil.App, c *client.Client, sid, id string, follow bool, wake <-chan struct{}) error {
	var offset int64
	wait := tailMinWait
	for {
		r, err := c.ReadShellOutput(ctx, sid, id, offset, 0)
		if err != nil {
			return fmt.Errorf("reading the output of shell %s of session %s: %w", id, sid, err)
		}
		if len(r.GetData()) > 0 {
			if _, err := a.Stdout.Write(r.GetData()); err != nil {
				return err
			}
			offset = r.GetNextOffset()
			wait = tailMinWait
			continue
		}
		offset = r.GetNextOffset()
		if !follow {
			return nil
		}
		if r.GetShell().GetStatus() != "running" {
			fmt.Fprintf(a.Stderr, "tackle: shell %s %s\n", id, render.ShellState(r.GetShell()))
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-wake:
			t.Stop()
		case <-t.C:
			wait = min(2*wait, tailMaxWait)
		}
	}
}

// watchShell attaches to the session as an observer and returns a channel
// that gets a token whenever the shell changes state (or the session has
// output progress), so tail -f reads at once instead of at its next poll.
// stop ends the watch.
func watchShell(ctx context.Context, a *cmdutil.App, c *client.Client, sid, id string) (wake <-chan struct{}, stop func(), err error) {
	wctx, cancel := context.WithCancel(ctx)
	s, err := c.Attach(wctx, tacklev1.Role_ROLE_OBSERVER)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if _, err := s.Subscribe(sid, 0, true); err != nil {
		s.Close()
		cancel()
		return nil, nil, err
	}
	w := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range s.Messages() {
			if err != nil {
				return
			}
			e := m.GetEvent()
			if e == nil {
				continue
			}
			if (e.GetType() == "shell_updated" && e.GetShell().GetId() == id) || e.GetType() == "call_progress" {
				select {
				case w <- struct{}{}:
				default:
				}
			}
		}
	}()
	return w, func() {
		s.Close()
		cancel()
		<-done
	}, nil
}

package status

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/client"
)

// stopTimeout bounds waiting for a daemon to finish its in-flight calls.
const stopTimeout = 60 * time.Second

// DaemonCommand is `tackle daemon start|stop`.
func DaemonCommand(a *cmdutil.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "daemon",
		Short: "Start or stop tackled",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "stop",
		Short: "Stop the daemon gracefully (in-flight calls end as cancelled); never starts one",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), stopTimeout)
			defer cancel()
			if err := client.Stop(ctx, a.SocketPath()); err != nil {
				return fmt.Errorf("stopping the daemon: %w", err)
			}
			return nil
		}),
	}, &cobra.Command{
		Use:   "start",
		Short: "Start the daemon unless one answers, and print its pid",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				st, err := c.Status(ctx)
				if err != nil {
					return fmt.Errorf("asking the daemon for its status: %w", err)
				}
				fmt.Fprintf(a.Stdout, "tackled running, pid %d, socket %s\n", st.GetPid(), c.Socket())
				return nil
			})
		}),
	})
	return cmd
}

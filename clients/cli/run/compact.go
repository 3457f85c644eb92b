package run

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
)

// CompactCommand is `tackle compact`: the session's conversation replaced by its summary.
func CompactCommand(a *cmdutil.App) *cobra.Command {
	var f cmdutil.SessionFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compact [INSTRUCTIONS]",
		Short: "Replace the session's conversation by the model's summary of it",
		Long: `Ask the model to summarize the session's conversation and continue from the
summary (the agent also does this by itself when a request passes
autoCompactPercent, 85 %, of the context window). INSTRUCTIONS say what the
summary should focus on. The session's file read-state is kept.`,
		Args: cobra.ArbitraryArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &f, func(ctx context.Context, c *client.Client, sid string) error {
				r, err := c.Compact(ctx, sid, strings.Join(args, " "))
				if err != nil {
					return fmt.Errorf("compacting: %w", err)
				}
				if asJSON {
					return a.PrintJSONLine(map[string]any{"summary": r.GetSummary(), "usage": render.UsageJSON(r.GetUsage())})
				}
				fmt.Fprintln(a.Stdout, r.GetSummary())
				return nil
			})
		}),
	}
	f.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"summary\", \"usage\"}")
	return cmd
}

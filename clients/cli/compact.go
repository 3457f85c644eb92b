package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/client"
)

func (a *app) compactCommand() *cobra.Command {
	var f sessionFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compact [INSTRUCTIONS]",
		Short: "Replace the session's conversation by the model's summary of it",
		Long: `Ask the model to summarize the session's conversation and continue from the
summary (the agent also does this by itself when a request passes
autoCompactPercent, 85 %, of the context window). INSTRUCTIONS say what the
summary should focus on. The session's file read-state is kept.`,
		Args: cobra.ArbitraryArgs,
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withSession(cmd, &f, func(ctx context.Context, c *client.Client, sid string) error {
				r, err := c.Compact(ctx, sid, strings.Join(args, " "))
				if err != nil {
					return fmt.Errorf("compacting: %w", err)
				}
				if asJSON {
					return a.printJSONLine(map[string]any{"summary": r.GetSummary(), "usage": usageJSON(r.GetUsage())})
				}
				fmt.Fprintln(a.stdout, r.GetSummary())
				return nil
			})
		}),
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print {\"summary\", \"usage\"}")
	return cmd
}

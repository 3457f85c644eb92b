// Package tools is `tackle tools`: the tools a session offers.
package tools

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Command is `tackle tools`: the tools a session offers, and loading deferred ones.
func Command(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		all    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools of a session as the model sees them, with their attributes",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				req := &tacklev1.ListToolsRequest{SessionId: sid, All: all}
				resp, err := c.Service().ListTools(ctx, req)
				if err != nil {
					return fmt.Errorf("listing tools: %w", client.Err(err))
				}
				tools := resp.GetTools()
				if asJSON {
					out := make([]render.ToolJSON, 0, len(tools))
					for _, t := range tools {
						out = append(out, render.ToolToJSON(t))
					}
					return a.PrintJSON(out)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tATTRIBUTES\tDESCRIPTION")
				for _, t := range tools {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", t.GetName(), attrSummary(t), render.FirstLine(t.GetDescription()))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if l := resp.GetDeferredListing(); len(l) > 0 {
					fmt.Fprintf(a.Stdout, "\nDeferred, not loaded (the model sees only these names until ToolSearch or tackle tools load loads them):\n  %s\n",
						strings.Join(l, "\n  "))
				}
				return nil
			})
		}),
	}
	cmd.AddCommand(toolsLoadCommand(a))
	sf.Register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "include the input schemas of deferred tools that are not loaded")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// attrSummary is a short list of a tool's attributes for people.
func attrSummary(t *tacklev1.ToolInfo) string {
	at := t.GetAttributes()
	var parts []string
	if at.GetReadOnly() {
		parts = append(parts, "read-only")
	}
	if at.GetDestructive() {
		parts = append(parts, "destructive")
	}
	if at.GetConcurrencySafe() {
		parts = append(parts, "parallel")
	}
	if at.GetInteractive() {
		parts = append(parts, "interactive")
	}
	if at.GetDeferred() {
		if t.GetLoaded() {
			parts = append(parts, "deferred(loaded)")
		} else {
			parts = append(parts, "deferred")
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

func toolsLoadCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "load NAME...",
		Short: "Load deferred tools for a session (names seen in earlier history), as ToolSearch select: does",
		Args:  cobra.MinimumNArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.Service().LoadTools(ctx, &tacklev1.LoadToolsRequest{SessionId: sid, Names: args})
				if err != nil {
					return fmt.Errorf("loading tools: %w", client.Err(err))
				}
				if asJSON {
					return a.PrintJSON(struct {
						Loaded      []string `json:"loaded"`
						NotDeferred []string `json:"not_deferred"`
						Unknown     []string `json:"unknown"`
					}{append([]string{}, resp.GetLoaded()...), append([]string{}, resp.GetNotDeferred()...), append([]string{}, resp.GetUnknown()...)})
				}
				if l := resp.GetLoaded(); len(l) > 0 {
					fmt.Fprintf(a.Stdout, "loaded: %s\n", strings.Join(l, ", "))
				}
				if l := resp.GetNotDeferred(); len(l) > 0 {
					fmt.Fprintf(a.Stdout, "not deferred (always loaded): %s\n", strings.Join(l, ", "))
				}
				if l := resp.GetUnknown(); len(l) > 0 {
					fmt.Fprintf(a.Stderr, "tackle: no such tool in this session: %s\n", strings.Join(l, ", "))
					return &cmdutil.ExitCodeError{Code: cmdutil.ExitError}
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

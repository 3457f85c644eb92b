package cli

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func (a *app) toolsCommand() *cobra.Command {
	var (
		sf     sessionFlags
		all    bool
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List the tools of a session as the model sees them, with their attributes",
		Args:  cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				req := &tacklev1.ListToolsRequest{SessionId: sid, All: all}
				resp, err := c.Service().ListTools(ctx, req)
				if err != nil {
					return fmt.Errorf("listing tools: %w", client.Err(err))
				}
				tools := resp.GetTools()
				if asJSON {
					out := make([]toolJSON, 0, len(tools))
					for _, t := range tools {
						out = append(out, toolToJSON(t))
					}
					return a.printJSON(out)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tATTRIBUTES\tDESCRIPTION")
				for _, t := range tools {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", t.GetName(), attrSummary(t), firstLine(t.GetDescription()))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if l := resp.GetDeferredListing(); len(l) > 0 {
					fmt.Fprintf(a.stdout, "\nDeferred, not loaded (the model sees only these names until ToolSearch or tackle tools load loads them):\n  %s\n",
						strings.Join(l, "\n  "))
				}
				return nil
			})
		}),
	}
	cmd.AddCommand(a.toolsLoadCommand())
	sf.register(cmd)
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

// firstLine returns the first line of s, cut at 80 characters.
func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 80 {
		s = string(r[:79]) + "…"
	}
	return s
}

func (a *app) toolsLoadCommand() *cobra.Command {
	var (
		sf     sessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "load NAME...",
		Short: "Load deferred tools for a session (names seen in earlier history), as ToolSearch select: does",
		Args:  cobra.MinimumNArgs(1),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.Service().LoadTools(ctx, &tacklev1.LoadToolsRequest{SessionId: sid, Names: args})
				if err != nil {
					return fmt.Errorf("loading tools: %w", client.Err(err))
				}
				if asJSON {
					return a.printJSON(struct {
						Loaded      []string `json:"loaded"`
						NotDeferred []string `json:"not_deferred"`
						Unknown     []string `json:"unknown"`
					}{append([]string{}, resp.GetLoaded()...), append([]string{}, resp.GetNotDeferred()...), append([]string{}, resp.GetUnknown()...)})
				}
				if l := resp.GetLoaded(); len(l) > 0 {
					fmt.Fprintf(a.stdout, "loaded: %s\n", strings.Join(l, ", "))
				}
				if l := resp.GetNotDeferred(); len(l) > 0 {
					fmt.Fprintf(a.stdout, "not deferred (always loaded): %s\n", strings.Join(l, ", "))
				}
				if l := resp.GetUnknown(); len(l) > 0 {
					fmt.Fprintf(a.stderr, "tackle: no such tool in this session: %s\n", strings.Join(l, ", "))
					return &exitError{code: ExitError}
				}
				return nil
			})
		}),
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

// Package hooks is `tackle hooks`: the hooks a session's settings configure.
package hooks

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Command is `tackle hooks`: the hooks a session's settings configure.
func Command(a *cmdutil.App) *cobra.Command {
	root := &cobra.Command{Use: "hooks", Short: "The hooks a session's settings configure"}
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	list := &cobra.Command{
		Use:   "list",
		Short: "List every configured hook: event, matcher, what it runs, its file and whether it runs (and why not)",
		Long: `List every hook the session's settings files configure: its event, matcher,
type and command (or URL, or prompt), the file it comes from, and its state —
active, ignored (an event tackle does not run, an entry that does not parse,
disableAllHooks) or untrusted (an untrusted project's: tackle trust runs them) —
with the reason.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				r, err := c.ListHooks(ctx, &tacklev1.ListHooksRequest{SessionId: sid})
				if err != nil {
					return fmt.Errorf("listing hooks: %w", err)
				}
				if asJSON {
					type entry struct {
						Event   string `json:"event"`
						Matcher string `json:"matcher"`
						Type    string `json:"type"`
						What    string `json:"what"`
						Source  string `json:"source"`
						Scope   string `json:"scope"`
						State   string `json:"state"`
						Reason  string `json:"reason,omitempty"`
					}
					out := []entry{}
					for _, h := range r.GetHooks() {
						out = append(out, entry{h.GetEvent(), h.GetMatcher(), h.GetType(), h.GetWhat(), h.GetSource(), h.GetScope(), h.GetState(), h.GetReason()})
					}
					return a.PrintJSON(out)
				}
				if len(r.GetHooks()) == 0 {
					fmt.Fprintln(a.Stdout, "no hooks are configured for this session")
					return nil
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "STATE\tEVENT\tMATCHER\tRUNS\tSOURCE")
				for _, h := range r.GetHooks() {
					what := h.GetWhat()
					if h.GetType() != "" && h.GetType() != "command" {
						what = h.GetType() + ": " + what
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", h.GetState(), dash(h.GetEvent()), dash(h.GetMatcher()), dash(what), dash(h.GetSource()))
					if h.GetReason() != "" {
						fmt.Fprintf(tw, "\t  ↳ %s\t\t\t\n", h.GetReason())
					}
				}
				return tw.Flush()
			})
		}),
	}
	sf.Register(list)
	list.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	root.AddCommand(list)
	return root
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

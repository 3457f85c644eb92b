// Package sandbox is `tackle sandbox`: what the Bash sandbox does for a session.
package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/client"
)

// Command is `tackle sandbox`: what the Bash sandbox does for a session.
func Command(a *cmdutil.App) *cobra.Command {
	root := &cobra.Command{Use: "sandbox", Short: "The Bash sandbox: what it does for a session"}
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	status := &cobra.Command{
		Use:   "status",
		Short: "Show the sandbox settings in force, what this machine can enforce, and what a sandboxed command gets",
		Long: `Show what the Bash sandbox does for a session: the "sandbox" settings in force
(merged over the settings files; an untrusted project's apply only where they
narrow), whether bubblewrap can run here and, if not, what is missing, and the
paths and network a sandboxed command of the session gets now.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				st, err := c.SandboxStatus(ctx, sid)
				if err != nil {
					return fmt.Errorf("reading the sandbox status: %w", err)
				}
				if asJSON {
					return a.PrintJSON(st)
				}
				w := a.Stdout
				switch {
				case !st.GetEnabled():
					fmt.Fprintln(w, "sandbox: off (sandbox.enabled is not set): Bash commands go through the normal permission flow")
				case st.GetAvailable():
					mode := "sandboxed commands run without a prompt unless a deny or ask rule matches (autoAllowBashIfSandboxed)"
					if !st.GetAutoAllow() {
						mode = "sandboxed commands still go through the normal permission flow (autoAllowBashIfSandboxed is false)"
					}
					fmt.Fprintf(w, "sandbox: on, enforced by %s; %s\n", st.GetBwrap(), mode)
				default:
					fmt.Fprintf(w, "sandbox: on, but it cannot run here: %s\n", st.GetWhyUnavailable())
				}
				list := func(label string, items []string) {
					if len(items) > 0 {
						fmt.Fprintf(w, "  %-18s %s\n", label+":", strings.Join(items, ", "))
					}
				}
				if !st.GetAvailable() && st.GetBwrap() == "" {
					fmt.Fprintln(w, "  missing:           bubblewrap (apt-get install bubblewrap)")
				}
				list("writable", st.GetWritable())
				list("read-only", st.GetReadOnly())
				list("hidden", st.GetHidden())
				list("hidden variables", st.GetHiddenEnv())
				list("excluded commands", st.GetExcludedCommands())
				net := st.GetNetwork()
				if net == "proxy" {
					net = "through tackle's proxy (" + st.GetProxyHttpSocket() + ")"
				}
				fmt.Fprintf(w, "  %-18s %s\n", "network:", net)
				list("allowed domains", st.GetAllowedDomains())
				list("denied domains", st.GetDeniedDomains())
				fmt.Fprintf(w, "  %-18s %v\n", "unsandboxed allowed:", st.GetAllowUnsandboxedCommands())
				for _, n := range st.GetNotes() {
					fmt.Fprintf(w, "  note: %s\n", n)
				}
				return nil
			})
		}),
	}
	sf.Register(status)
	status.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	root.AddCommand(status)
	return root
}

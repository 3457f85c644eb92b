// Package status is `tackle status` and `tackle daemon start|stop`: the
// daemon itself.
package status

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// statusJSON is the --json shape of `tackle status`.
type statusJSON struct {
	Version         string `json:"version"`
	BuildID         string `json:"build_id"`
	PID             int64  `json:"pid"`
	Socket          string `json:"socket"`
	UptimeSeconds   int64  `json:"uptime_seconds"`
	Sessions        uint32 `json:"sessions"`
	Clients         uint32 `json:"clients"`
	ProtocolVersion uint32 `json:"protocol_version"`
	RSSBytes        int64  `json:"rss_bytes"`
	PreviousExit    string `json:"previous_exit,omitempty"`
	// SettingsProblems counts the settings files of the directory that do
	// not parse (omitted when none).
	SettingsProblems int `json:"settings_problems,omitempty"`
}

// Command is `tackle status`: it describes the running daemon.
func Command(a *cmdutil.App) *cobra.Command {
	var (
		asJSON bool
		cwd    string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Describe the running daemon (starting one if none answers)",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				dir, err := cmdutil.AbsDir(cwd)
				if err != nil {
					return err
				}
				st, err := c.Service().Status(ctx, &tacklev1.StatusRequest{Cwd: dir})
				if err != nil {
					return fmt.Errorf("asking the daemon for its status: %w", client.Err(err))
				}
				out := statusJSON{
					Version:          st.GetVersion(),
					BuildID:          st.GetBuildId(),
					PID:              st.GetPid(),
					Socket:           st.GetSocket(),
					UptimeSeconds:    st.GetUptimeSeconds(),
					Sessions:         st.GetSessions(),
					Clients:          st.GetClients(),
					ProtocolVersion:  st.GetProtocolVersion(),
					RSSBytes:         st.GetRssBytes(),
					PreviousExit:     st.GetPreviousExit(),
					SettingsProblems: len(st.GetSettingsProblems()),
				}
				if out.Socket == "" {
					out.Socket = c.Socket()
				}
				if asJSON {
					return a.PrintJSON(out)
				}
				w := a.Stdout
				fmt.Fprintf(w, "tackled %s (build %s)\n", out.Version, out.BuildID)
				fmt.Fprintf(w, "pid       %d\n", out.PID)
				fmt.Fprintf(w, "socket    %s\n", out.Socket)
				fmt.Fprintf(w, "uptime    %v\n", time.Duration(out.UptimeSeconds)*time.Second)
				fmt.Fprintf(w, "sessions  %d\n", out.Sessions)
				fmt.Fprintf(w, "clients   %d\n", out.Clients)
				fmt.Fprintf(w, "memory    %.1f MB\n", float64(out.RSSBytes)/(1<<20))
				if out.PreviousExit != "" {
					fmt.Fprintf(w, "note      %s\n", out.PreviousExit)
				}
				if n := out.SettingsProblems; n > 0 {
					fmt.Fprintf(w, "settings  %d %s not parse here (tackle permissions rules shows where)\n", n, render.Plural(n, "file does", "files do"))
				}
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	cmd.Flags().StringVar(&cwd, "cwd", "", "the directory whose settings files are checked (default: the current directory)")
	return cmd
}

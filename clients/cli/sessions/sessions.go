// Package sessions is `tackle sessions`: create, list, show and remove sessions.
package sessions

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Command is `tackle sessions`: create, list, show and remove sessions.
func Command(a *cmdutil.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "sessions",
		Aliases: []string{"session"},
		Short:   "Create, list, show and remove sessions",
	}
	cmd.AddCommand(sessionsNewCommand(a), sessionsListCommand(a), sessionsShowCommand(a), sessionsRmCommand(a))
	return cmd
}

func sessionsNewCommand(a *cmdutil.App) *cobra.Command {
	var (
		cwd       string
		mode      string
		dirs      []string
		mcpConfig []string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "new",
		Short: "Create a session (it records this client's environment)",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			if err := cmdutil.CheckMode(mode); err != nil {
				return err
			}
			dir, err := cmdutil.AbsDir(cwd)
			if err != nil {
				return err
			}
			req := cmdutil.NewSessionRequest(dir, a.Environ, false)
			req.PermissionMode = mode
			for _, d := range dirs {
				abs, err := cmdutil.AbsDir(d)
				if err != nil {
					return err
				}
				req.AdditionalDirectories = append(req.AdditionalDirectories, abs)
			}
			for _, f := range mcpConfig {
				abs, err := filepath.Abs(f)
				if err != nil {
					return err
				}
				req.McpConfig = append(req.McpConfig, abs)
			}
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.CreateSession(ctx, req)
				if err != nil {
					return fmt.Errorf("creating a session: %w", err)
				}
				if asJSON {
					return a.PrintJSON(render.SessionToJSON(resp.GetSession()))
				}
				fmt.Fprintln(a.Stdout, resp.GetSession().GetId())
				return nil
			})
		}),
	}
	cmd.Flags().StringVar(&cwd, "cwd", "", "working directory (default: the current directory)")
	cmd.Flags().StringVar(&mode, "permission-mode", "", "permission mode: default, acceptEdits, plan, dontAsk, bypassPermissions")
	cmd.Flags().StringArrayVar(&dirs, "add-dir", nil, "an additional working directory (repeatable)")
	cmd.Flags().StringArrayVar(&mcpConfig, "mcp-config", nil, "an MCP configuration file ({\"mcpServers\":{...}}) for this session only (repeatable)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the session as a JSON object")
	return cmd
}

func sessionsListCommand(a *cmdutil.App) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List sessions, newest first",
		Args:    cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				list, err := c.ListSessions(ctx)
				if err != nil {
					return fmt.Errorf("listing sessions: %w", err)
				}
				if asJSON {
					out := make([]*render.SessionJSON, 0, len(list))
					for _, s := range list {
						out = append(out, render.SessionToJSON(s))
					}
					return a.PrintJSON(out)
				}
				current := currentSession(a, list)
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tMODE\tEVENTS\tUPDATED\tAGENT\tCWD")
				for _, s := range list {
					agent := "-"
					if l := s.GetAgent(); l != nil {
						agent = "↳ " + l.GetAgentType() + " of " + l.GetParentSessionId()
					}
					mark := ""
					if s.GetId() == current {
						mark = " *"
					}
					fmt.Fprintf(tw, "%s%s\t%s\t%d\t%s\t%s\t%s\n", s.GetId(), mark, render.ModeName(s.GetPermissionMode()), s.GetLastSeq(),
						s.GetUpdatedAt().AsTime().Local().Format("2006-01-02 15:04"), agent, s.GetCwd())
				}
				if current != "" {
					fmt.Fprintln(tw, "(* the session commands use here: "+currentSessionWhy(a)+")")
				}
				return tw.Flush()
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func sessionsShowCommand(a *cmdutil.App) *cobra.Command {
	var (
		asJSON bool
		cwd    string
	)
	cmd := &cobra.Command{
		Use:   "show [ID]",
		Short: "Show one session (default: the directory's): its state, its parent if it is a sub-agent's, its sub-agents",
		Long: `Show one session: its state, its parent if it is a sub-agent's, its sub-agents.

Without ID it shows the session other commands use here: $TACKLE_SESSION,
else the default session of --cwd (or the current directory), created on
first use.`,
		Args: cobra.MaximumNArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				var id string
				if len(args) == 1 {
					id = args[0]
				} else {
					var err error
					if id, err = a.ResolveSession(ctx, c, &cmdutil.SessionFlags{Cwd: cwd}); err != nil {
						return err
					}
				}
				args = []string{id}
				s, err := c.GetSession(ctx, id)
				if err != nil {
					return a.SessionNotFound(ctx, c, "showing session", id, err)
				}
				children, err := sessionChildren(ctx, c, s.GetId())
				if err != nil {
					return fmt.Errorf("listing the sub-agents of session %s: %w", args[0], err)
				}
				var self *tacklev1.Subagent
				if s.GetAgent() != nil {
					self = findSubagent(ctx, c, s.GetId())
				}
				if asJSON {
					out := sessionShowJSON{SessionJSON: render.SessionToJSON(s)}
					for _, sa := range children {
						out.Children = append(out.Children, render.SubagentToJSON(sa))
					}
					if self != nil {
						out.AgentState = render.SubagentToJSON(self)
					}
					return a.PrintJSON(out)
				}
				printSession(a, s, self, children)
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	cmd.Flags().StringVar(&cwd, "cwd", "", "without ID: the directory whose default session to show (default: the current directory)")
	return cmd
}

// currentSession is the id, among list, of the session commands without
// --session use here: $TACKLE_SESSION, else the current directory's
// default session; "" when none of list is.
func currentSession(a *cmdutil.App, list []*tacklev1.Session) string {
	if id := a.Getenv("TACKLE_SESSION"); id != "" {
		for _, s := range list {
			if s.GetId() == id {
				return id
			}
		}
		return ""
	}
	wd, err := cmdutil.AbsDir("")
	if err != nil {
		return ""
	}
	for _, s := range list {
		if s.GetDefaultForCwd() && s.GetCwd() == wd {
			return s.GetId()
		}
	}
	return ""
}

// currentSessionWhy says why currentSession chose its session.
func currentSessionWhy(a *cmdutil.App) string {
	if a.Getenv("TACKLE_SESSION") != "" {
		return "$TACKLE_SESSION"
	}
	return "the default session of this directory"
}

// sessionShowJSON is the output of `tackle sessions show --json`: the
// session, and its sub-agents (children) and, for a sub-agent's session,
// the agent's state.
type sessionShowJSON struct {
	*render.SessionJSON
	AgentState *render.SubagentJSON   `json:"agent_state,omitempty"`
	Children   []*render.SubagentJSON `json:"children,omitempty"`
}

// sessionChildren are the sub-agents session id started: those the daemon
// tracks (running first), then the child sessions it no longer does (of an
// earlier run of the daemon), with status "ended".
func sessionChildren(ctx context.Context, c *client.Client, id string) ([]*tacklev1.Subagent, error) {
	var out []*tacklev1.Subagent
	known := map[string]bool{}
	live, err := c.ListSubagents(ctx, id)
	if err != nil && !errors.Is(err, client.ErrNotFound) {
		return nil, err
	}
	for _, sa := range live {
		if sa.GetParentSessionId() == id {
			out = append(out, sa)
			known[sa.GetId()] = true
		}
	}
	sessions, err := c.ListSessions(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range sessions {
		l := s.GetAgent()
		if l == nil || l.GetParentSessionId() != id || known[s.GetId()] {
			continue
		}
		out = append(out, &tacklev1.Subagent{
			Id: s.GetId(), SessionId: s.GetId(), ParentSessionId: id, ParentCallId: l.GetParentCallId(),
			AgentType: l.GetAgentType(), Description: l.GetDescription(), Status: "ended",
			Background: l.GetBackground(), Depth: l.GetDepth(), Started: s.GetCreatedAt(),
		})
	}
	return out, nil
}

// findSubagent is the state of sub-agent id, nil when the daemon does not
// track it.
func findSubagent(ctx context.Context, c *client.Client, id string) *tacklev1.Subagent {
	list, err := c.ListSubagents(ctx, id)
	if err != nil {
		return nil
	}
	for _, sa := range list {
		if sa.GetId() == id {
			return sa
		}
	}
	return nil
}

// printSession prints a session for people; self is its agent's state
// (for a sub-agent's session), children its sub-agents.
func printSession(a *cmdutil.App, s *tacklev1.Session, self *tacklev1.Subagent, children []*tacklev1.Subagent) {
	j := render.SessionToJSON(s)
	w := a.Stdout
	now := time.Now()
	fmt.Fprintf(w, "session     %s\n", j.ID)
	if l := j.Agent; l != nil {
		kind := ""
		if l.Background {
			kind = ", background"
		}
		fmt.Fprintf(w, "agent       %s (depth %d%s)\n", render.AgentName(l.AgentType, l.Description), l.Depth, kind)
		fmt.Fprintf(w, "parent      %s (Agent call %s)\n", l.ParentSessionID, l.ParentCallID)
		if l.RootSessionID != "" && l.RootSessionID != l.ParentSessionID {
			fmt.Fprintf(w, "root        %s\n", l.RootSessionID)
		}
		if self != nil {
			fmt.Fprintf(w, "state       %s\n", render.SubagentStats(self, now))
		}
	}
	fmt.Fprintf(w, "cwd         %s\n", j.Cwd)
	if j.CurrentDir != "" && j.CurrentDir != j.Cwd {
		fmt.Fprintf(w, "current dir %s\n", j.CurrentDir)
	}
	for _, d := range j.AdditionalDirectories {
		fmt.Fprintf(w, "also        %s\n", d)
	}
	for _, d := range j.SettingsDirectories {
		fmt.Fprintf(w, "also        %s (%s)\n", d.Path, d.Describe())
	}
	fmt.Fprintf(w, "mode        %s\n", render.ModeName(j.PermissionMode))
	fmt.Fprintf(w, "events      %d\n", j.LastSeq)
	fmt.Fprintf(w, "files read  %d\n", j.FilesRead)
	fmt.Fprintf(w, "created     %s\n", j.CreatedAt)
	fmt.Fprintf(w, "updated     %s\n", j.UpdatedAt)
	if len(children) == 0 {
		fmt.Fprintf(w, "sub-agents  (none)\n")
	}
	for i, sa := range children {
		label := "sub-agents  "
		if i > 0 {
			label = "            "
		}
		line := render.SubagentSummary(sa, now)
		if sa.GetStatus() == "ended" {
			line = render.AgentName(sa.GetAgentType(), sa.GetDescription()) + " ended (before the daemon started; no record of its outcome)"
		}
		fmt.Fprintf(w, "%s%s  %s\n", label, sa.GetId(), line)
	}
	if len(j.Todos) == 0 || string(j.Todos) == "[]" {
		fmt.Fprintf(w, "todos       (none)\n")
		return
	}
	fmt.Fprintf(w, "todos       %s\n", render.TodoCounts(string(j.Todos)))
	render.WriteTodos(w, string(j.Todos), "            ", cmdutil.IsTerminal(w))
}

func sessionsRmCommand(a *cmdutil.App) *cobra.Command {
	return &cobra.Command{
		Use:     "rm ID...",
		Aliases: []string{"delete"},
		Short:   "Remove sessions with their events and outputs",
		Args:    cobra.MinimumNArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				for _, id := range args {
					if err := c.DeleteSession(ctx, id); err != nil {
						return fmt.Errorf("removing session %s: %w", id, err)
					}
				}
				return nil
			})
		}),
	}
}

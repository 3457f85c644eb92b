// Package agents is `tackle agents`: the agent types a session offers and the
// sub-agents running or run.
package agents

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// This file is tackle agents: the agent types a session's Agent tool
// offers (their definition files and the built-ins) and the sub-agents
// running or run (SubagentService).

// Command is `tackle agents`: agent types and the sub-agents of sessions.
func Command(a *cmdutil.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "agents",
		Aliases: []string{"agent"},
		Short:   "Agent types (list, show, doctor) and the sub-agents of sessions (ps, kill)",
		Long: `The agent types a session's Agent tool (alias Task) may start — the
definition files of .claude/agents and .tackle/agents in the project, your
user's, the managed ones, and the built-ins — and the sub-agents the model
started. Each sub-agent is a session of its own whose id is the agent's id:
tackle attach --session ID shows its transcript.`,
	}
	cmd.AddCommand(agentsListCommand(a), agentsShowCommand(a), agentsDoctorCommand(a),
		agentsPsCommand(a), agentsKillCommand(a))
	return cmd
}

// AgentTypeJSON is the --json shape of an agent type.
type AgentTypeJSON struct {
	Name            string   `json:"name"`
	Description     string   `json:"description"`
	Source          string   `json:"source"`
	Path            string   `json:"path"`
	Model           string   `json:"model"`
	Tools           []string `json:"tools"`
	DisallowedTools []string `json:"disallowed_tools"`
	PermissionMode  string   `json:"permission_mode"`
	MaxTurns        int32    `json:"max_turns"`
	Background      bool     `json:"background"`
	Skills          []string `json:"skills"`
	Shadowed        bool     `json:"shadowed"`
	// Prompt is the system prompt (agents show only).
	Prompt *string `json:"prompt,omitempty"`
}

func agentTypeToJSON(t *tacklev1.AgentType) AgentTypeJSON {
	list := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return AgentTypeJSON{
		Name: t.GetName(), Description: t.GetDescription(), Source: t.GetSource(), Path: t.GetPath(), Model: t.GetModel(),
		Tools: list(t.GetTools()), DisallowedTools: list(t.GetDisallowedTools()), PermissionMode: t.GetPermissionMode(),
		MaxTurns: t.GetMaxTurns(), Background: t.GetBackground(), Skills: list(t.GetSkills()), Shadowed: t.GetShadowed(),
	}
}

// AgentProblemJSON is a definition file (or a field of one) that was not read.
type AgentProblemJSON struct {
	Path    string `json:"path"`
	Line    int32  `json:"line,omitempty"`
	Column  int32  `json:"column,omitempty"`
	Message string `json:"message"`
}

// agentProblemLine formats a problem as the daemon's agentdef does:
// "path:line:col: message" ("path:line: …", "path: …" without a position).
func agentProblemLine(p *tacklev1.AgentTypeProblem) string {
	switch {
	case p.GetLine() > 0 && p.GetColumn() > 0:
		return fmt.Sprintf("%s:%d:%d: %s", p.GetPath(), p.GetLine(), p.GetColumn(), p.GetMessage())
	case p.GetLine() > 0:
		return fmt.Sprintf("%s:%d: %s", p.GetPath(), p.GetLine(), p.GetMessage())
	}
	return fmt.Sprintf("%s: %s", p.GetPath(), p.GetMessage())
}

// ListAgentTypes lists the agent types of session sid.
func ListAgentTypes(ctx context.Context, c *client.Client, sid string) (*tacklev1.ListAgentTypesResponse, error) {
	resp, err := c.ListAgentTypes(ctx, sid)
	if err != nil {
		return nil, fmt.Errorf("listing agent types: %w", err)
	}
	return resp, nil
}

// modelName is an agent type's model for people.
func modelName(m string) string {
	if m == "" || m == "inherit" {
		return "inherit"
	}
	return m
}

// toolsName is an agent type's tools for people: "all" when it names none.
func toolsName(tools []string) string {
	if len(tools) == 0 {
		return "all"
	}
	return strings.Join(tools, ", ")
}

func agentsListCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf               cmdutil.SessionFlags
		asJSON, shadowed bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the agent types a session may start: name, source, model, tools, path, description",
		Args:    cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := ListAgentTypes(ctx, c, sid)
				if err != nil {
					return err
				}
				if n := len(resp.GetProblems()); n > 0 {
					fmt.Fprintf(a.Stderr, "tackle: %d %s in agent definitions: tackle agents doctor shows them\n", n, render.Plural(n, "problem", "problems"))
				}
				types := resp.GetTypes()
				if shadowed {
					types = append(append([]*tacklev1.AgentType(nil), types...), resp.GetShadowed()...)
				}
				if asJSON {
					out := make([]AgentTypeJSON, 0, len(types))
					for _, t := range types {
						out = append(out, agentTypeToJSON(t))
					}
					return a.PrintJSON(out)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSOURCE\tMODEL\tTOOLS\tPATH\tDESCRIPTION")
				for _, t := range types {
					src := t.GetSource()
					if t.GetShadowed() {
						src += " (shadowed)"
					}
					path := t.GetPath()
					if path == "" {
						path = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", t.GetName(), src, modelName(t.GetModel()),
						render.Clip(toolsName(t.GetTools()), 40), path, render.Clip(render.FirstLine(t.GetDescription()), 70))
				}
				return tw.Flush()
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().BoolVar(&shadowed, "shadowed", false, "also list definitions another of the same name hides")
	return cmd
}

func agentsShowCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show an agent type: every field of its definition and its system prompt",
		Args:  cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := ListAgentTypes(ctx, c, sid)
				if err != nil {
					return err
				}
				var t *tacklev1.AgentType
				for _, x := range resp.GetTypes() {
					if x.GetName() == args[0] {
						t = x
					}
				}
				if t == nil {
					return fmt.Errorf("no agent type %q in session %s (tackle agents list shows them; tackle agents doctor, the files that did not load)", args[0], sid)
				}
				j := agentTypeToJSON(t)
				prompt := t.GetPrompt()
				if asJSON {
					j.Prompt = &prompt
					return a.PrintJSON(j)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				row := func(k, v string) { fmt.Fprintf(tw, "%s:\t%s\n", k, v) }
				row("Name", j.Name)
				row("Description", j.Description)
				row("Source", j.Source)
				if j.Path != "" {
					row("Path", j.Path)
				}
				row("Model", modelName(j.Model))
				row("Tools", toolsName(j.Tools))
				if len(j.DisallowedTools) > 0 {
					row("Disallowed tools", strings.Join(j.DisallowedTools, ", "))
				}
				row("Permission mode", map[bool]string{true: j.PermissionMode, false: "the parent's"}[j.PermissionMode != ""])
				if j.MaxTurns > 0 {
					row("Max turns", fmt.Sprint(j.MaxTurns))
				}
				row("Background", map[bool]string{true: "yes", false: "no"}[j.Background])
				if len(j.Skills) > 0 {
					row("Skills", strings.Join(j.Skills, ", "))
				}
				for _, x := range resp.GetShadowed() {
					if x.GetName() == t.GetName() {
						row("Hides", x.GetPath()+" ("+x.GetSource()+")")
					}
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(a.Stdout)
				fmt.Fprint(a.Stdout, prompt)
				if !strings.HasSuffix(prompt, "\n") {
					fmt.Fprintln(a.Stdout)
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object (with the prompt)")
	return cmd
}

func agentsDoctorCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Report the agent definition files that did not load, and the fields ignored (path:line:col: message)",
		Long: `Check the agent definitions a session sees. Every problem is one line
path:line:col: message on stdout — a file that did not load (no frontmatter,
YAML that does not parse, no name or description, a bad value of a limiting
field) or a field that was ignored — and the exit status is 1. Without
problems it says how many definitions load, and exits 0. Definitions hidden
by another of the same name are listed too.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := ListAgentTypes(ctx, c, sid)
				if err != nil {
					return err
				}
				problems := resp.GetProblems()
				loaded := len(resp.GetTypes()) + len(resp.GetShadowed())
				if asJSON {
					out := struct {
						Loaded   int                `json:"loaded"`
						Problems []AgentProblemJSON `json:"problems"`
						Shadowed []AgentTypeJSON    `json:"shadowed"`
					}{Loaded: loaded, Problems: []AgentProblemJSON{}, Shadowed: []AgentTypeJSON{}}
					for _, p := range problems {
						out.Problems = append(out.Problems, AgentProblemJSON{p.GetPath(), p.GetLine(), p.GetColumn(), p.GetMessage()})
					}
					for _, t := range resp.GetShadowed() {
						out.Shadowed = append(out.Shadowed, agentTypeToJSON(t))
					}
					if err := a.PrintJSON(out); err != nil {
						return err
					}
				} else {
					for _, p := range problems {
						fmt.Fprintln(a.Stdout, agentProblemLine(p))
					}
					winners := map[string]string{}
					for _, t := range resp.GetTypes() {
						winners[t.GetName()] = t.GetPath()
						if winners[t.GetName()] == "" {
							winners[t.GetName()] = t.GetSource()
						}
					}
					for _, t := range resp.GetShadowed() {
						fmt.Fprintf(a.Stdout, "shadowed: %s (%s) is hidden by %s\n", t.GetName(), t.GetPath(), winners[t.GetName()])
					}
					if len(problems) == 0 {
						fmt.Fprintf(a.Stdout, "all %d agent definitions load (%s)\n", loaded, sourceCounts(resp))
					} else {
						fmt.Fprintf(a.Stderr, "tackle: %d %s in agent definitions; %d definitions load\n", len(problems), render.Plural(len(problems), "problem", "problems"), loaded)
					}
				}
				if len(problems) > 0 {
					return &cmdutil.ExitCodeError{Code: cmdutil.ExitError}
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object: {loaded, problems, shadowed}")
	return cmd
}

// sourceCounts says how many definitions come from each source:
// "12 project, 3 builtin".
func sourceCounts(resp *tacklev1.ListAgentTypesResponse) string {
	n := map[string]int{}
	var order []string
	for _, t := range append(append([]*tacklev1.AgentType(nil), resp.GetTypes()...), resp.GetShadowed()...) {
		if n[t.GetSource()] == 0 {
			order = append(order, t.GetSource())
		}
		n[t.GetSource()]++
	}
	sort.SliceStable(order, func(i, j int) bool { return n[order[i]] > n[order[j]] })
	parts := make([]string, 0, len(order))
	for _, s := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
	}
	return strings.Join(parts, ", ")
}

func agentsPsCommand(a *cmdutil.App) *cobra.Command {
	var (
		session string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List sub-agents, running first (every session's unless --session: that session's tree)",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				list, err := c.ListSubagents(ctx, session)
				if err != nil {
					return fmt.Errorf("listing sub-agents: %w", err)
				}
				if asJSON {
					out := make([]*render.SubagentJSON, 0, len(list))
					for _, sa := range list {
						out = append(out, render.SubagentToJSON(sa))
					}
					return a.PrintJSON(out)
				}
				if len(list) == 0 {
					fmt.Fprintln(a.Stdout, "no sub-agents")
					return nil
				}
				now := time.Now()
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tBG\tTOOLS\tTOKENS\tDURATION\tPARENT\tDESCRIPTION")
				for _, sa := range list {
					bg := "-"
					if sa.GetBackground() {
						bg = "yes"
					}
					status := sa.GetStatus()
					if e := sa.GetError(); e != "" {
						status += ": " + render.Clip(render.OneLine(e), 40)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", sa.GetId(), sa.GetAgentType(), status, bg,
						sa.GetToolUses(), render.ShortCount(sa.GetTokens()), render.ShortDuration(render.SubagentDuration(sa, now)),
						sa.GetParentSessionId(), render.Clip(render.OneLine(sa.GetDescription()), 50))
				}
				return tw.Flush()
			})
		}),
	}
	cmd.Flags().StringVar(&session, "session", "", "only the sub-agents of this session's tree")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func agentsKillCommand(a *cmdutil.App) *cobra.Command {
	return &cobra.Command{
		Use:   "kill ID",
		Short: "Stop a running sub-agent (as TaskStop does); its parent is told",
		Long: `Stop a running sub-agent: its model stream and calls are cancelled, and
the Agent call of a foreground one ends; the parent of a background one is
notified. Exit status 0 when it was stopped or had already ended (it says
which), 1 when no sub-agent has the id.`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				sa, stopped, err := c.StopSubagent(ctx, args[0])
				if errors.Is(err, client.ErrNotFound) {
					return &cmdutil.ExitCodeError{Code: cmdutil.ExitError, Err: fmt.Errorf("stopping agent %s: %w", args[0], err)}
				}
				if err != nil {
					return fmt.Errorf("stopping agent %s: %w", args[0], err)
				}
				name := render.AgentName(sa.GetAgentType(), sa.GetDescription())
				if stopped {
					fmt.Fprintf(a.Stdout, "stopped agent %s (%s)\n", args[0], name)
					return nil
				}
				fmt.Fprintf(a.Stdout, "agent %s (%s) had already ended: %s\n", args[0], name, sa.GetStatus())
				return nil
			})
		}),
	}
}

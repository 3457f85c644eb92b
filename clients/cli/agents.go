package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// This file is tackle agents: the agent types a session's Agent tool
// offers (their definition files and the built-ins) and the sub-agents
// running or run (SubagentService).

func (a *app) agentsCommand() *cobra.Command {
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
	cmd.AddCommand(a.agentsListCommand(), a.agentsShowCommand(), a.agentsDoctorCommand(),
		a.agentsPsCommand(), a.agentsKillCommand())
	return cmd
}

// agentTypeJSON is the --json shape of an agent type.
type agentTypeJSON struct {
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

func agentTypeToJSON(t *tacklev1.AgentType) agentTypeJSON {
	list := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return agentTypeJSON{
		Name: t.GetName(), Description: t.GetDescription(), Source: t.GetSource(), Path: t.GetPath(), Model: t.GetModel(),
		Tools: list(t.GetTools()), DisallowedTools: list(t.GetDisallowedTools()), PermissionMode: t.GetPermissionMode(),
		MaxTurns: t.GetMaxTurns(), Background: t.GetBackground(), Skills: list(t.GetSkills()), Shadowed: t.GetShadowed(),
	}
}

// agentProblemJSON is a definition file (or a field of one) that was not read.
type agentProblemJSON struct {
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

// listAgentTypes lists the agent types of session sid.
func listAgentTypes(ctx context.Context, c *client.Client, sid string) (*tacklev1.ListAgentTypesResponse, error) {
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

func (a *app) agentsListCommand() *cobra.Command {
	var (
		sf               sessionFlags
		asJSON, shadowed bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the agent types a session may start: name, source, model, tools, path, description",
		Args:    cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := listAgentTypes(ctx, c, sid)
				if err != nil {
					return err
				}
				if n := len(resp.GetProblems()); n > 0 {
					fmt.Fprintf(a.stderr, "tackle: %d %s in agent definitions: tackle agents doctor shows them\n", n, plural(n, "problem", "problems"))
				}
				types := resp.GetTypes()
				if shadowed {
					types = append(append([]*tacklev1.AgentType(nil), types...), resp.GetShadowed()...)
				}
				if asJSON {
					out := make([]agentTypeJSON, 0, len(types))
					for _, t := range types {
						out = append(out, agentTypeToJSON(t))
					}
					return a.printJSON(out)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
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
						clip(toolsName(t.GetTools()), 40), path, clip(firstLine(t.GetDescription()), 70))
				}
				return tw.Flush()
			})
		}),
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	cmd.Flags().BoolVar(&shadowed, "shadowed", false, "also list definitions another of the same name hides")
	return cmd
}

func (a *app) agentsShowCommand() *cobra.Command {
	var (
		sf     sessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show an agent type: every field of its definition and its system prompt",
		Args:  cobra.ExactArgs(1),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := listAgentTypes(ctx, c, sid)
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
					return a.printJSON(j)
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
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
				fmt.Fprintln(a.stdout)
				fmt.Fprint(a.stdout, prompt)
				if !strings.HasSuffix(prompt, "\n") {
					fmt.Fprintln(a.stdout)
				}
				return nil
			})
		}),
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object (with the prompt)")
	return cmd
}

func (a *app) agentsDoctorCommand() *cobra.Command {
	var (
		sf     sessionFlags
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
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := listAgentTypes(ctx, c, sid)
				if err != nil {
					return err
				}
				problems := resp.GetProblems()
				loaded := len(resp.GetTypes()) + len(resp.GetShadowed())
				if asJSON {
					out := struct {
						Loaded   int                `json:"loaded"`
						Problems []agentProblemJSON `json:"problems"`
						Shadowed []agentTypeJSON    `json:"shadowed"`
					}{Loaded: loaded, Problems: []agentProblemJSON{}, Shadowed: []agentTypeJSON{}}
					for _, p := range problems {
						out.Problems = append(out.Problems, agentProblemJSON{p.GetPath(), p.GetLine(), p.GetColumn(), p.GetMessage()})
					}
					for _, t := range resp.GetShadowed() {
						out.Shadowed = append(out.Shadowed, agentTypeToJSON(t))
					}
					if err := a.printJSON(out); err != nil {
						return err
					}
				} else {
					for _, p := range problems {
						fmt.Fprintln(a.stdout, agentProblemLine(p))
					}
					winners := map[string]string{}
					for _, t := range resp.GetTypes() {
						winners[t.GetName()] = t.GetPath()
						if winners[t.GetName()] == "" {
							winners[t.GetName()] = t.GetSource()
						}
					}
					for _, t := range resp.GetShadowed() {
						fmt.Fprintf(a.stdout, "shadowed: %s (%s) is hidden by %s\n", t.GetName(), t.GetPath(), winners[t.GetName()])
					}
					if len(problems) == 0 {
						fmt.Fprintf(a.stdout, "all %d agent definitions load (%s)\n", loaded, sourceCounts(resp))
					} else {
						fmt.Fprintf(a.stderr, "tackle: %d %s in agent definitions; %d definitions load\n", len(problems), plural(len(problems), "problem", "problems"), loaded)
					}
				}
				if len(problems) > 0 {
					return &exitError{code: ExitError}
				}
				return nil
			})
		}),
	}
	sf.register(cmd)
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

func (a *app) agentsPsCommand() *cobra.Command {
	var (
		session string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "ps",
		Short: "List sub-agents, running first (every session's unless --session: that session's tree)",
		Args:  cobra.NoArgs,
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				list, err := c.ListSubagents(ctx, session)
				if err != nil {
					return fmt.Errorf("listing sub-agents: %w", err)
				}
				if asJSON {
					out := make([]*subagentJSON, 0, len(list))
					for _, sa := range list {
						out = append(out, subagentToJSON(sa))
					}
					return a.printJSON(out)
				}
				if len(list) == 0 {
					fmt.Fprintln(a.stdout, "no sub-agents")
					return nil
				}
				now := time.Now()
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tTYPE\tSTATUS\tBG\tTOOLS\tTOKENS\tDURATION\tPARENT\tDESCRIPTION")
				for _, sa := range list {
					bg := "-"
					if sa.GetBackground() {
						bg = "yes"
					}
					status := sa.GetStatus()
					if e := sa.GetError(); e != "" {
						status += ": " + clip(oneLine(e), 40)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", sa.GetId(), sa.GetAgentType(), status, bg,
						sa.GetToolUses(), shortCount(sa.GetTokens()), shortDuration(subagentDuration(sa, now)),
						sa.GetParentSessionId(), clip(oneLine(sa.GetDescription()), 50))
				}
				return tw.Flush()
			})
		}),
	}
	cmd.Flags().StringVar(&session, "session", "", "only the sub-agents of this session's tree")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func (a *app) agentsKillCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "kill ID",
		Short: "Stop a running sub-agent (as TaskStop does); its parent is told",
		Long: `Stop a running sub-agent: its model stream and calls are cancelled, and
the Agent call of a foreground one ends; the parent of a background one is
notified. Exit status 0 when it was stopped or had already ended (it says
which), 1 when no sub-agent has the id.`,
		Args: cobra.ExactArgs(1),
		RunE: run(func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *client.Client) error {
				sa, stopped, err := c.StopSubagent(ctx, args[0])
				if errors.Is(err, client.ErrNotFound) {
					return &exitError{code: ExitError, err: fmt.Errorf("stopping agent %s: %w", args[0], err)}
				}
				if err != nil {
					return fmt.Errorf("stopping agent %s: %w", args[0], err)
				}
				name := agentName(sa.GetAgentType(), sa.GetDescription())
				if stopped {
					fmt.Fprintf(a.stdout, "stopped agent %s (%s)\n", args[0], name)
					return nil
				}
				fmt.Fprintf(a.stdout, "agent %s (%s) had already ended: %s\n", args[0], name, sa.GetStatus())
				return nil
			})
		}),
	}
}

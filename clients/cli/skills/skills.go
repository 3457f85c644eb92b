// Package skills is `tackle skills` and `tackle skill`: the skills a session
// offers, and one skill's text.
package skills

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

// Command is `tackle skills`: the skills a session offers.
func Command(a *cmdutil.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "List, show and check the skills of a session (SKILL.md files, legacy commands, MCP prompts)",
	}
	cmd.AddCommand(skillsListCommand(a), skillsShowCommand(a), skillsDoctorCommand(a))
	return cmd
}

// skillJSON is the --json shape of a skill.
type skillJSON struct {
	Name           string   `json:"name"`
	Description    string   `json:"description"`
	WhenToUse      string   `json:"when_to_use,omitempty"`
	Source         string   `json:"source"`
	Path           string   `json:"path"`
	ModelInvocable bool     `json:"model_invocable"`
	UserInvocable  bool     `json:"user_invocable"`
	Active         bool     `json:"active"`
	ArgumentHint   string   `json:"argument_hint,omitempty"`
	AllowedTools   []string `json:"allowed_tools,omitempty"`
	Model          string   `json:"model,omitempty"`
	Effort         string   `json:"effort,omitempty"`
	Context        string   `json:"context,omitempty"`
	Paths          []string `json:"paths,omitempty"`
	Warnings       []string `json:"warnings,omitempty"`
	ShadowedBy     string   `json:"shadowed_by,omitempty"`
	Body           *string  `json:"body,omitempty"`
}

func skillToJSON(k *tacklev1.SkillInfo) skillJSON {
	return skillJSON{
		Name: k.GetName(), Description: k.GetDescription(), WhenToUse: k.GetWhenToUse(), Source: k.GetSource(),
		Path: k.GetPath(), ModelInvocable: k.GetModelInvocable(), UserInvocable: k.GetUserInvocable(),
		Active: k.GetActive(), ArgumentHint: k.GetArgumentHint(), AllowedTools: k.GetAllowedTools(),
		Model: k.GetModel(), Effort: k.GetEffort(), Context: k.GetContext(), Paths: k.GetPaths(),
		Warnings: k.GetWarnings(), ShadowedBy: k.GetShadowedBy(),
	}
}

// ListSkills lists the skills of session sid (with shadowed, also those
// hidden by another of the same name).
func ListSkills(ctx context.Context, c *client.Client, sid string, shadowed bool) (*tacklev1.ListSkillsResponse, error) {
	resp, err := c.Service().ListSkills(ctx, &tacklev1.ListSkillsRequest{SessionId: sid, Shadowed: shadowed})
	if err != nil {
		return nil, fmt.Errorf("listing skills: %w", client.Err(err))
	}
	return resp, nil
}

func skillsListCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf               cmdutil.SessionFlags
		shadowed, asJSON bool
	)
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List a session's skills: name, who may invoke it, where it comes from",
		Args:    cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := ListSkills(ctx, c, sid, shadowed)
				if err != nil {
					return err
				}
				if n := len(resp.GetProblems()); n > 0 {
					// A problem is a skill file that cannot be read or an enabled
					// plugin that does not load: doctor says which.
					fmt.Fprintf(a.Stderr, "tackle: %d %s: tackle skills doctor\n", n, render.Plural(n, "problem", "problems"))
				}
				if asJSON {
					out := make([]skillJSON, 0, len(resp.GetSkills()))
					for _, k := range resp.GetSkills() {
						out = append(out, skillToJSON(k))
					}
					return a.PrintJSON(out)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tBY\tSOURCE\tDESCRIPTION")
				for _, k := range resp.GetSkills() {
					by := invokers(k)
					if !k.GetActive() {
						by += " (inactive: paths)"
					}
					if k.GetShadowedBy() != "" {
						by = "shadowed by " + k.GetShadowedBy()
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", k.GetName(), by, k.GetSource(), render.FirstLine(k.GetDescription()))
				}
				return tw.Flush()
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&shadowed, "shadowed", false, "also list skills hidden by another of the same name")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// invokers says who may invoke a skill: "model+user", "user", "model".
func invokers(k *tacklev1.SkillInfo) string {
	switch {
	case k.GetModelInvocable() && k.GetUserInvocable():
		return "model+user"
	case k.GetUserInvocable():
		return "user"
	case k.GetModelInvocable():
		return "model"
	}
	return "nobody"
}

func skillsShowCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a skill: its fields and its body",
		Args:  cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.Service().GetSkill(ctx, &tacklev1.GetSkillRequest{SessionId: sid, Name: args[0]})
				if err != nil {
					return skillNotFound(ctx, c, sid, args[0], client.Err(err))
				}
				j := skillToJSON(resp.GetSkill())
				if asJSON {
					body := resp.GetBody()
					j.Body = &body
					return a.PrintJSON(j)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				row := func(k, v string) {
					if v != "" {
						fmt.Fprintf(tw, "%s:\t%s\n", k, v)
					}
				}
				row("Name", j.Name)
				row("Description", j.Description)
				row("When to use", j.WhenToUse)
				row("Invoked by", invokers(resp.GetSkill()))
				row("Source", j.Source)
				row("Path", j.Path)
				row("Arguments", j.ArgumentHint)
				row("Allowed tools", strings.Join(j.AllowedTools, ", "))
				row("Model", j.Model)
				row("Effort", j.Effort)
				row("Context", j.Context)
				if len(j.Paths) > 0 {
					state := "active"
					if !j.Active {
						state = "inactive until a touched file matches"
					}
					row("Paths", strings.Join(j.Paths, ", ")+" ("+state+")")
				}
				for _, w := range j.Warnings {
					row("Warning", w)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintln(a.Stdout)
				fmt.Fprint(a.Stdout, resp.GetBody())
				if !strings.HasSuffix(resp.GetBody(), "\n") {
					fmt.Fprintln(a.Stdout)
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object (with the body)")
	return cmd
}

func skillsDoctorCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Report skill files that cannot be read (file, line, reason), warnings and shadowed names",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := ListSkills(ctx, c, sid, true)
				if err != nil {
					return err
				}
				type problemJSON struct {
					Path    string `json:"path"`
					Line    int32  `json:"line,omitempty"`
					Column  int32  `json:"column,omitempty"`
					Message string `json:"message"`
				}
				if asJSON {
					out := struct {
						Problems []problemJSON `json:"problems"`
						Warnings []problemJSON `json:"warnings"`
						Shadowed []skillJSON   `json:"shadowed"`
					}{Problems: []problemJSON{}, Warnings: []problemJSON{}, Shadowed: []skillJSON{}}
					for _, p := range resp.GetProblems() {
						out.Problems = append(out.Problems, problemJSON{p.GetPath(), p.GetLine(), p.GetColumn(), p.GetMessage()})
					}
					for _, k := range resp.GetSkills() {
						for _, w := range k.GetWarnings() {
							out.Warnings = append(out.Warnings, problemJSON{Path: k.GetPath(), Message: w})
						}
						if k.GetShadowedBy() != "" {
							out.Shadowed = append(out.Shadowed, skillToJSON(k))
						}
					}
					if err := a.PrintJSON(out); err != nil {
						return err
					}
				} else {
					for _, p := range resp.GetProblems() {
						loc := p.GetPath()
						if p.GetLine() > 0 {
							loc = fmt.Sprintf("%s:%d:%d", loc, p.GetLine(), p.GetColumn())
						}
						fmt.Fprintf(a.Stdout, "error: %s: %s\n", loc, p.GetMessage())
					}
					for _, k := range resp.GetSkills() {
						for _, w := range k.GetWarnings() {
							fmt.Fprintf(a.Stdout, "warning: %s: %s\n", k.GetPath(), w)
						}
						if k.GetShadowedBy() != "" {
							fmt.Fprintf(a.Stdout, "shadowed: %s (%s) is hidden by %s\n", k.GetName(), k.GetPath(), k.GetShadowedBy())
						}
					}
					if len(resp.GetProblems()) == 0 {
						fmt.Fprintf(a.Stdout, "%d skills, every file readable\n", countActive(resp.GetSkills()))
					}
				}
				if len(resp.GetProblems()) > 0 {
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

func countActive(ks []*tacklev1.SkillInfo) int {
	n := 0
	for _, k := range ks {
		if k.GetShadowedBy() == "" {
			n++
		}
	}
	return n
}

// SkillCommand is `tackle skill NAME [ARGS...]`: a skill invoked as a person
// does, its rendered prompt printed.
func SkillCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf      cmdutil.SessionFlags
		mode    string
		timeout uint32
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "skill NAME [ARGS...]",
		Short: "Invoke a skill as a person (/NAME ARGS): print its rendered prompt",
		Long: `Invoke a skill as a person does with /NAME ARGS and print the rendered prompt.
Its !` + "`cmd`" + ` lines run through tackle's pipeline as Bash calls: permission applies
(a prompt goes to the attached clients; nobody answering means denied).`,
		Args: cobra.MinimumNArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckMode(mode); err != nil {
				return err
			}
			req := &tacklev1.RenderSkillRequest{Name: args[0], Args: strings.Join(args[1:], " "),
				PermissionMode: mode, PermissionTimeoutSeconds: timeout}
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				req.SessionId = sid
				resp, err := c.Service().RenderSkill(ctx, req)
				if err != nil {
					return skillNotFound(ctx, c, sid, args[0], client.Err(err))
				}
				if asJSON {
					return a.PrintJSON(struct {
						Text         string   `json:"text"`
						AllowedTools []string `json:"allowed_tools"`
						Model        string   `json:"model,omitempty"`
						Effort       string   `json:"effort,omitempty"`
					}{resp.GetText(), append([]string{}, resp.GetAllowedTools()...), resp.GetModel(), resp.GetEffort()})
				}
				fmt.Fprint(a.Stdout, resp.GetText())
				if !strings.HasSuffix(resp.GetText(), "\n") {
					fmt.Fprintln(a.Stdout)
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().StringVar(&mode, "permission-mode", "", "permission mode for the skill's !cmd lines: default, acceptEdits, plan, dontAsk, bypassPermissions")
	cmd.Flags().Uint32Var(&timeout, "permission-timeout", 0, "seconds a !cmd line's permission prompt waits (default: the setting)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

// skillNotFound turns the daemon's "no skill" error into one naming the
// nearest skills (at most three) and exit 2; other errors pass through.
func skillNotFound(ctx context.Context, c *client.Client, sid, name string, err error) error {
	if !strings.Contains(err.Error(), "no skill") {
		return err
	}
	var names []string
	if resp, lerr := ListSkills(ctx, c, sid, false); lerr == nil {
		for _, k := range resp.GetSkills() {
			names = append(names, k.GetName())
		}
	}
	return cmdutil.UsageError("no skill %q%s (tackle skills list lists them)", name, cmdutil.DidYouMean(name, names))
}

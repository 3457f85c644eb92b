// Package permissions is `tackle permissions` (pending requests, answers,
// rules, the audit log), `tackle explain` and `tackle trust`/`untrust`.
package permissions

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/ask"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Command is `tackle permissions`: pending requests, answers, rules and the audit log.
func Command(a *cmdutil.App) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "permissions",
		Aliases: []string{"perms"},
		Short:   "Pending permission requests, answers, rules and the audit log",
	}
	cmd.AddCommand(pendingCommand(a), answerCommand(a), rulesCommand(a), auditCommand(a))
	return cmd
}

// pendingJSON is one element of `tackle permissions pending --json`.
type pendingJSON struct {
	ID         string              `json:"id"`
	SessionID  string              `json:"session_id"`
	TurnID     string              `json:"turn_id,omitempty"`
	CallID     string              `json:"call_id"`
	Tool       string              `json:"tool"`
	Input      json.RawMessage     `json:"input"`
	Reason     string              `json:"reason"`
	Deadline   string              `json:"deadline,omitempty"`
	Options    []render.OptionJSON `json:"options"`
	AlwaysRule string              `json:"always_rule,omitempty"`
	// Agent names the sub-agent that asks (its request waits in its root
	// session, session_id).
	Agent *render.AgentRefJSON `json:"agent,omitempty"`
}

func pendingCommand(a *cmdutil.App) *cobra.Command {
	var (
		session string
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "pending",
		Short: "List the permission requests waiting for an answer (every session unless --session)",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				reqs, err := c.ListPendingPermissions(ctx, session)
				if err != nil {
					return fmt.Errorf("listing pending permission requests: %w", err)
				}
				if asJSON {
					out := make([]pendingJSON, 0, len(reqs))
					for _, p := range reqs {
						out = append(out, pendingJSON{
							ID: p.GetRequestId(), SessionID: p.GetSessionId(), TurnID: p.GetTurnId(), CallID: p.GetCallId(),
							Tool: p.GetTool(), Input: render.RawJSON(p.GetInputJson(), "{}"), Reason: p.GetReason(),
							Deadline: render.TimeJSON(p.GetDeadline()), Options: render.OptionsToJSON(p.GetOptions()), AlwaysRule: p.GetAlwaysRule(),
							Agent: render.AgentRefToJSON(p.GetAgent()),
						})
					}
					return a.PrintJSON(out)
				}
				if len(reqs) == 0 {
					fmt.Fprintln(a.Stdout, "no permission request is waiting")
					return nil
				}
				for _, p := range reqs {
					fmt.Fprintf(a.Stdout, "%s  session %s  %s\n    %s\n", p.GetRequestId(), p.GetSessionId(), p.GetTool(), render.ReasonLine(p))
					render.WritePreview(a.Stdout, p, "    ", a.Colour(a.Stdout))
					if ag := p.GetAgent(); ag != nil {
						fmt.Fprintf(a.Stdout, "    asked by agent %s, session %s\n", render.AgentRefName(ag), ag.GetId())
					}
					if r := p.GetAlwaysRule(); r != "" {
						fmt.Fprintf(a.Stdout, "    allow-always would save: %s\n", r)
					}
				}
				return nil
			})
		}),
	}
	cmd.Flags().StringVar(&session, "session", "", "only this session's requests")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func answerCommand(a *cmdutil.App) *cobra.Command {
	var session, scope, feedback string
	cmd := &cobra.Command{
		Use:   "answer ID allow|allow-always|deny",
		Short: "Answer a pending permission request once, without attaching",
		Long: `Answer a pending permission request (see 'tackle permissions pending').
The first answer from any client wins; a later one is refused with exit 1.
allow-always saves the request's rule: --scope session (this session),
project (.tackle/settings.local.json, the default) or user (your tackle
settings). --feedback goes with deny and tells the model what to do instead.`,
		Args: cobra.ExactArgs(2),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if _, err := ask.BuildAnswer("", args[0], args[1], scope, feedback); err != nil {
				return cmdutil.UsageError("%v", err)
			}
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				sid := session
				if sid != "" {
					// A sub-agent's requests wait in its root session.
					if s, err := c.GetSession(ctx, sid); err == nil && s.GetAgent().GetRootSessionId() != "" {
						sid = s.GetAgent().GetRootSessionId()
					}
				}
				if sid == "" {
					reqs, err := c.ListPendingPermissions(ctx, "")
					if err != nil {
						return fmt.Errorf("finding permission request %s: %w", args[0], err)
					}
					for _, p := range reqs {
						if p.GetRequestId() == args[0] {
							sid = p.GetSessionId()
						}
					}
					if sid == "" {
						return fmt.Errorf("no pending permission request %s: it was already answered, timed out or never existed", args[0])
					}
				}
				ans, _ := ask.BuildAnswer(sid, args[0], args[1], scope, feedback)
				resp, err := c.AnswerPermission(ctx, ans)
				if err != nil {
					return fmt.Errorf("answering permission request %s: %w", args[0], err)
				}
				if !resp.GetAccepted() {
					return fmt.Errorf("%s", resp.GetMessage())
				}
				fmt.Fprintf(a.Stdout, "answered %s: %s\n", args[0], args[1])
				return nil
			})
		}),
	}
	cmd.Flags().StringVar(&session, "session", "", "the request's session (default: found among the pending requests); a sub-agent's session answers in its root session")
	cmd.Flags().StringVar(&scope, "scope", "", "where allow-always saves the rule: session, project (default) or user")
	cmd.Flags().StringVar(&feedback, "feedback", "", "with deny: what the model should do instead")
	return cmd
}

// sourceJSON is where a rule comes from.
type sourceJSON struct {
	Scope string `json:"scope"`
	Path  string `json:"path,omitempty"`
	Line  int32  `json:"line,omitempty"`
}

func sourceToJSON(s *tacklev1.RuleSource) *sourceJSON {
	if s == nil {
		return nil
	}
	return &sourceJSON{Scope: s.GetScope(), Path: s.GetPath(), Line: s.GetLine()}
}

func (s *sourceJSON) String() string {
	if s == nil {
		return ""
	}
	if s.Path == "" {
		return s.Scope
	}
	if s.Line > 0 {
		return fmt.Sprintf("%s %s:%d", s.Scope, s.Path, s.Line)
	}
	return s.Scope + " " + s.Path
}

// ruleJSON is one rule of `tackle permissions rules --json`.
type ruleJSON struct {
	Rule     string      `json:"rule"`
	Behavior string      `json:"behavior"`
	Source   *sourceJSON `json:"source"`
}

// ruleProblemJSON is a rule that does not parse.
type ruleProblemJSON struct {
	Rule    string      `json:"rule"`
	Message string      `json:"message"`
	Source  *sourceJSON `json:"source"`
}

// rulesJSON is the output of `tackle permissions rules --json`.
type rulesJSON struct {
	SessionID string            `json:"session_id"`
	Rules     []ruleJSON        `json:"rules"`
	Problems  []ruleProblemJSON `json:"problems"`
	// SettingsProblems are the settings files that do not parse (omitted
	// when none).
	SettingsProblems []render.SettingsProblemJSON `json:"settings_problems,omitempty"`
	Trust            *render.TrustJSON            `json:"trust,omitempty"`
}

func rulesCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "List the permission rules in force for a session, with where each comes from",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.ListRules(ctx, sid, "")
				if err != nil {
					return fmt.Errorf("listing permission rules: %w", err)
				}
				out := rulesJSON{SessionID: resp.GetSessionId(), Rules: []ruleJSON{}, Problems: []ruleProblemJSON{}, Trust: render.TrustToJSON(resp.GetTrust())}
				for _, r := range resp.GetRules() {
					out.Rules = append(out.Rules, ruleJSON{Rule: r.GetText(), Behavior: r.GetBehavior(), Source: sourceToJSON(r.GetSource())})
				}
				for _, p := range resp.GetProblems() {
					out.Problems = append(out.Problems, ruleProblemJSON{Rule: p.GetText(), Message: p.GetMessage(), Source: sourceToJSON(p.GetSource())})
				}
				out.SettingsProblems = render.SettingsProblemsToJSON(resp.GetSettingsProblems())
				if asJSON {
					return a.PrintJSON(out)
				}
				render.WriteSettingsProblems(a.Stdout, resp.GetSettingsProblems(), "")
				if len(out.Rules) == 0 {
					fmt.Fprintln(a.Stdout, "no permission rules")
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				for _, r := range out.Rules {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Behavior, r.Rule, r.Source)
				}
				tw.Flush()
				for _, p := range out.Problems {
					fmt.Fprintf(a.Stdout, "ignored: %s: rule %q: %s\n", p.Source, p.Rule, p.Message)
				}
				render.PrintTrust(a, resp.GetTrust())
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

// AuditJSON is one entry of `tackle permissions audit --json`.
type AuditJSON struct {
	Time        string `json:"time"`
	SessionID   string `json:"session_id"`
	CallID      string `json:"call_id"`
	Tool        string `json:"tool"`
	InputSHA256 string `json:"input_sha256"`
	Outcome     string `json:"outcome"`
	DecidedBy   string `json:"decided_by"`
	Rule        string `json:"rule,omitempty"`
	Reason      string `json:"reason,omitempty"`
	ClientName  string `json:"client_name,omitempty"`
	ClientPID   int32  `json:"client_pid"`
	ClientUID   uint32 `json:"client_uid"`
	Scope       string `json:"scope,omitempty"`
}

func auditCommand(a *cmdutil.App) *cobra.Command {
	var (
		session string
		limit   uint32
		asJSON  bool
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "List recorded permission decisions, newest first (every session unless --session)",
		Args:  cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				entries, err := c.Audit(ctx, session, limit)
				if err != nil {
					return fmt.Errorf("reading the audit log: %w", err)
				}
				out := make([]AuditJSON, 0, len(entries))
				for _, e := range entries {
					out = append(out, AuditJSON{
						Time: render.TimeJSON(e.GetTime()), SessionID: e.GetSessionId(), CallID: e.GetCallId(), Tool: e.GetTool(),
						InputSHA256: e.GetInputSha256(), Outcome: e.GetOutcome(), DecidedBy: e.GetDecidedBy(), Rule: e.GetRule(),
						Reason: e.GetReason(), ClientName: e.GetClientName(), ClientPID: e.GetClientPid(), ClientUID: e.GetClientUid(), Scope: e.GetScope(),
					})
				}
				if asJSON {
					return a.PrintJSON(out)
				}
				tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "TIME\tSESSION\tCALL\tTOOL\tOUTCOME\tBY\tRULE / CLIENT")
				for _, e := range out {
					who := e.Rule
					if e.ClientName != "" {
						who = fmt.Sprintf("%s (pid %d, uid %d)", e.ClientName, e.ClientPID, e.ClientUID)
						if e.Scope != "" {
							who += " saved " + e.Rule + " for " + e.Scope
						}
					}
					ts := ""
					if t := e.Time; len(t) >= 19 {
						ts = t[:19]
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", ts, e.SessionID, e.CallID, e.Tool, e.Outcome, e.DecidedBy, who)
				}
				return tw.Flush()
			})
		}),
	}
	cmd.Flags().StringVar(&session, "session", "", "only this session's decisions")
	cmd.Flags().Uint32Var(&limit, "limit", 0, "at most this many entries (0: 1000)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

// ExplainJSON is the output of `tackle explain --json`.
type ExplainJSON struct {
	Decision   string      `json:"decision"`
	Reason     string      `json:"reason"`
	Rule       string      `json:"rule"`
	Source     *sourceJSON `json:"source"`
	AlwaysRule string      `json:"always_rule"`
	DecidedBy  string      `json:"decided_by"`
	Chain      []stepJSON  `json:"chain"`
	// WorkingDirectories are the session's working directories, where each
	// comes from.
	WorkingDirectories []render.WorkingDirJSON `json:"working_directories"`
}

// stepJSON is one step of a decision.
type stepJSON struct {
	Stage   string `json:"stage"`
	Outcome string `json:"outcome"`
	Detail  string `json:"detail,omitempty"`
}

// ExplainCommand is `tackle explain`: what the permission pipeline would decide for a call.
func ExplainCommand(a *cmdutil.App) *cobra.Command {
	var (
		sf     cmdutil.SessionFlags
		mode   string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "explain TOOL [INPUT]",
		Short: "Tell what the permission stage would decide about a call, and why (runs nothing)",
		Long: `Explain what the permission stage would decide about a call of TOOL with
INPUT (a JSON object, default {}) in a session: allow, ask or deny, the rule
that decided and where it is written, the rule "allow always" would save, and
every step taken. Nothing runs: the input is validated and the tool's
permission check is made, but no hook runs and no handler.`,
		Example: `  tackle explain Bash '{"command":"npm test"}' --json`,
		Args:    cobra.RangeArgs(1, 2),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckMode(mode); err != nil {
				return err
			}
			input := "{}"
			if len(args) == 2 {
				input = args[1]
			}
			if !json.Valid([]byte(input)) {
				return cmdutil.UsageError("INPUT is not valid JSON: %s", render.Clip(input, 80))
			}
			return a.WithSession(cmd, &sf, func(ctx context.Context, c *client.Client, sid string) error {
				resp, err := c.Explain(ctx, &tacklev1.ExplainRequest{SessionId: sid, Tool: args[0], InputJson: input, PermissionMode: mode})
				if err != nil {
					return fmt.Errorf("explaining: %w", err)
				}
				out := ExplainJSON{
					Decision: resp.GetDecision(), Reason: resp.GetReason(), Rule: resp.GetRule(), Source: sourceToJSON(resp.GetSource()),
					AlwaysRule: resp.GetAlwaysRule(), DecidedBy: resp.GetDecidedBy(), Chain: []stepJSON{},
					WorkingDirectories: render.WorkingDirsToJSON(resp.GetWorkingDirectories()),
				}
				if out.WorkingDirectories == nil {
					out.WorkingDirectories = []render.WorkingDirJSON{}
				}
				for _, s := range resp.GetChain() {
					out.Chain = append(out.Chain, stepJSON{Stage: s.GetStage(), Outcome: s.GetOutcome(), Detail: s.GetDetail()})
				}
				if asJSON {
					return a.PrintJSON(out)
				}
				fmt.Fprintf(a.Stdout, "%s: %s\n", out.Decision, out.Reason)
				if out.Rule != "" {
					fmt.Fprintf(a.Stdout, "  rule:   %s (%s)\n", out.Rule, out.Source)
				}
				if out.AlwaysRule != "" {
					fmt.Fprintf(a.Stdout, "  allow always would save: %s\n", out.AlwaysRule)
				}
				for _, s := range out.Chain {
					fmt.Fprintf(a.Stdout, "  %-12s %-5s %s\n", s.Stage, s.Outcome, s.Detail)
				}
				for _, d := range out.WorkingDirectories {
					fmt.Fprintf(a.Stdout, "  working dir  %s (%s)\n", d.Path, d.Describe())
				}
				return nil
			})
		}),
	}
	sf.Register(cmd)
	cmd.Flags().StringVar(&mode, "permission-mode", "", "decide in this permission mode instead of the session's")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON object")
	return cmd
}

// TrustCommand is `tackle trust [DIR]`: trust a project directory, or list the trusted ones.
func TrustCommand(a *cmdutil.App) *cobra.Command {
	var list, asJSON, allowBypass bool
	cmd := &cobra.Command{
		Use:   "trust [DIR]",
		Short: "Trust a project directory (default: the current one), or --list the trusted ones",
		Long: `Trust a project directory and everything below it. Until a project is
trusted, its settings may only narrow what tackle does: everything that
widens access or runs code — allow rules, additionalDirectories, a
permission mode other than default or plan, hooks, MCP servers and their
approvals, env, plugins, webSearch — is ignored (tackle permissions rules
lists what); its deny and ask rules apply either way.

Even in a trusted project, permissions.defaultMode "bypassPermissions" from
a project file needs your consent: --allow-bypass gives it for this
directory ("skipDangerousModePermissionPrompt": true in your user settings
gives it for every trusted project).

A project you trusted in Claude Code's trust dialog (~/.claude.json) counts
as trusted too, unless the user setting "trust": {"importClaude": false}
says otherwise; trust --list shows who trusts each directory (tackle or
claude).`,
		Args: cobra.MaximumNArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				if list {
					if len(args) > 0 {
						return cmdutil.UsageError("--list takes no directory")
					}
					resp, err := c.Service().ListTrusted(ctx, &tacklev1.ListTrustedRequest{})
					if err != nil {
						return fmt.Errorf("listing trusted directories: %w", client.Err(err))
					}
					if e := resp.GetClaudeError(); e != "" {
						fmt.Fprintf(a.Stderr, "warning: %s\n", e)
					}
					if asJSON {
						dirs := resp.GetDirs()
						if dirs == nil {
							dirs = []string{}
						}
						return a.PrintJSON(dirs)
					}
					entries := resp.GetEntries()
					if len(entries) == 0 {
						// A daemon of an older build sends dirs only.
						for _, d := range resp.GetDirs() {
							entries = append(entries, &tacklev1.TrustedDir{Dir: d, Source: trustSourceTackle})
						}
					}
					tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
					for _, e := range entries {
						fmt.Fprintf(tw, "%s\t%s\n", e.GetDir(), trustSourceText(e))
					}
					return tw.Flush()
				}
				dir, err := cmdutil.AbsDir(argOr(args, ""))
				if err != nil {
					return err
				}
				resp, err := c.Trust(ctx, dir, allowBypass)
				if err != nil {
					return fmt.Errorf("trusting %s: %w", dir, err)
				}
				bypass := ""
				if allowBypass {
					bypass = " (its settings may set bypassPermissions)"
				}
				if resp.GetAlready() {
					fmt.Fprintf(a.Stdout, "%s is already trusted%s\n", resp.GetDir(), bypass)
				} else {
					fmt.Fprintf(a.Stdout, "trusted %s%s\n", resp.GetDir(), bypass)
				}
				return nil
			})
		}),
	}
	cmd.Flags().BoolVar(&list, "list", false, "list the trusted directories and who trusts each")
	cmd.Flags().BoolVar(&allowBypass, "allow-bypass", false, "also let the project's settings set permissions.defaultMode bypassPermissions")
	cmd.Flags().BoolVar(&asJSON, "json", false, "with --list: print a JSON array")
	return cmd
}

// UntrustCommand is `tackle untrust [DIR]`: stop trusting a project directory.
func UntrustCommand(a *cmdutil.App) *cobra.Command {
	return &cobra.Command{
		Use:   "untrust [DIR]",
		Short: "Stop trusting a project directory (default: the current one)",
		Args:  cobra.MaximumNArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			dir, err := cmdutil.AbsDir(argOr(args, ""))
			if err != nil {
				return err
			}
			return a.WithClient(cmd, func(ctx context.Context, c *client.Client) error {
				resp, err := c.Untrust(ctx, dir)
				if err != nil {
					return fmt.Errorf("untrusting %s: %w", dir, err)
				}
				switch {
				case resp.GetStillTrustedSource() == trustSourceClaude:
					what := "stays trusted"
					if resp.GetRemoved() {
						what = "is no longer in tackle's list but stays trusted"
					}
					fmt.Fprintf(a.Stdout, "%s %s: Claude Code's trust dialog was accepted for %s (~/.claude.json), which tackle counts while the user setting trust.importClaude is on; "+
						"set \"trust\": {\"importClaude\": false} in your user settings to stop counting it\n", resp.GetDir(), what, resp.GetStillTrustedBy())
				case resp.GetStillTrustedBy() != "":
					fmt.Fprintf(a.Stdout, "%s stays trusted: its parent %s is trusted (tackle untrust %s)\n", resp.GetDir(), resp.GetStillTrustedBy(), resp.GetStillTrustedBy())
				case resp.GetRemoved():
					fmt.Fprintf(a.Stdout, "%s is no longer trusted\n", resp.GetDir())
				default:
					fmt.Fprintf(a.Stdout, "%s was not trusted\n", resp.GetDir())
				}
				return nil
			})
		}),
	}
}

// Who trusts a directory (TrustedDir.source, UntrustResponse.still_trusted_source).
const (
	trustSourceTackle = "tackle"
	trustSourceClaude = "claude"
)

// trustSourceText says who trusts a directory, for trust --list.
func trustSourceText(e *tacklev1.TrustedDir) string {
	switch e.GetSource() {
	case trustSourceClaude:
		return "claude (Claude Code's trust dialog, ~/.claude.json; trust.importClaude)"
	case trustSourceTackle:
		if e.GetAllowBypass() {
			return "tackle (may set bypassPermissions)"
		}
		return "tackle"
	}
	return e.GetSource()
}

// argOr returns args[0], or def when there is none.
func argOr(args []string, def string) string {
	if len(args) > 0 {
		return args[0]
	}
	return def
}

package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// completionTimeout bounds the daemon queries of one completion: a shell
// waiting on a TAB must not hang.
const completionTimeout = 800 * time.Millisecond

// lister lists the names a completion offers, asking the daemon about
// session sid.
type lister func(ctx context.Context, c *client.Client, sid string) []string

// completeFrom returns a cobra completion function offering the names of
// list (filtered by the word typed), for the first argument only unless
// every is set. It asks a running daemon and never starts one: with none,
// it offers nothing.
func (a *app) completeFrom(list lister, every bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !every {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := a.completionNames(cmd, list)
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) && !contains(args, n) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionNames runs list against the daemon for the session cmd's
// --session / --cwd flags choose (without creating one).
func (a *app) completionNames(cmd *cobra.Command, list lister) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	c, err := client.Dial(ctx, &client.Options{
		Socket: a.socketPath(), NoAutostart: true, Env: a.environ, ClientName: "tackle-completion",
	})
	if err != nil {
		return nil
	}
	defer c.Close()
	return list(ctx, c, a.completionSession(ctx, c, cmd))
}

// completionSession is the session of cmd's flags: --session,
// $TACKLE_SESSION, else the existing default session of --cwd or the
// current directory; "" when there is none (the daemon then answers for no
// session or not at all).
func (a *app) completionSession(ctx context.Context, c *client.Client, cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("session"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	if id := a.getenv("TACKLE_SESSION"); id != "" {
		return id
	}
	cwd := ""
	if f := cmd.Flags().Lookup("cwd"); f != nil {
		cwd = f.Value.String()
	}
	dir, err := absDir(cwd)
	if err != nil {
		return ""
	}
	list, err := c.ListSessions(ctx)
	if err != nil {
		return ""
	}
	for _, s := range list {
		if s.GetDefaultForCwd() && s.GetCwd() == dir {
			return s.GetId()
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func listToolNames(ctx context.Context, c *client.Client, sid string) []string {
	if sid == "" {
		return nil
	}
	tools, err := c.ListTools(ctx, &tacklev1.ListToolsRequest{SessionId: sid, All: true})
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range tools {
		out = append(out, t.GetName())
	}
	return out
}

func listSessionIDs(ctx context.Context, c *client.Client, _ string) []string {
	list, err := c.ListSessions(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range list {
		out = append(out, s.GetId())
	}
	return out
}

func listMcpNames(ctx context.Context, c *client.Client, sid string) []string {
	if sid == "" {
		return nil
	}
	resp, err := listMcp(ctx, c, sid, true)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range resp.GetServers() {
		out = append(out, s.GetName())
	}
	return out
}

func listSkillNames(ctx context.Context, c *client.Client, sid string) []string {
	if sid == "" {
		return nil
	}
	resp, err := listSkills(ctx, c, sid, false)
	if err != nil {
		return nil
	}
	var out []string
	for _, k := range resp.GetSkills() {
		out = append(out, k.GetName())
	}
	return out
}

func listAgentNames(ctx context.Context, c *client.Client, sid string) []string {
	if sid == "" {
		return nil
	}
	resp, err := listAgentTypes(ctx, c, sid)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range resp.GetTypes() {
		out = append(out, t.GetName())
	}
	return out
}

// registerCompletions attaches the completions of arguments and flags to
// the command tree under root.
func (a *app) registerCompletions(root *cobra.Command) {
	args := map[string]cobra.CompletionFunc{
		"tackle call":              a.completeFrom(listToolNames, false),
		"tackle explain":           a.completeFrom(listToolNames, false),
		"tackle tools load":        a.completeFrom(listToolNames, true),
		"tackle sessions show":     a.completeFrom(listSessionIDs, false),
		"tackle sessions rm":       a.completeFrom(listSessionIDs, true),
		"tackle mcp get":           a.completeFrom(listMcpNames, false),
		"tackle mcp remove":        a.completeFrom(listMcpNames, false),
		"tackle mcp reconnect":     a.completeFrom(listMcpNames, false),
		"tackle mcp approve":       a.completeFrom(listMcpNames, true),
		"tackle mcp logs":          a.completeFrom(listMcpNames, false),
		"tackle mcp prompts":       a.completeFrom(listMcpNames, false),
		"tackle mcp prompt":        a.completeFrom(listMcpNames, false),
		"tackle skill":             a.completeFrom(listSkillNames, false),
		"tackle skills show":       a.completeFrom(listSkillNames, false),
		"tackle agents show":       a.completeFrom(listAgentNames, false),
		"tackle permissions audit": nil,
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if fn := args[cmd.CommandPath()]; fn != nil && cmd.ValidArgsFunction == nil {
			cmd.ValidArgsFunction = fn
		}
		if cmd.Flags().Lookup("permission-mode") != nil {
			_ = cmd.RegisterFlagCompletionFunc("permission-mode", cobra.FixedCompletions(permissionModes, cobra.ShellCompDirectiveNoFileComp))
		}
		if cmd.Flags().Lookup("session") != nil {
			_ = cmd.RegisterFlagCompletionFunc("session", a.completeFrom(listSessionIDs, true))
		}
		if cmd.Flags().Lookup("cwd") != nil {
			_ = cmd.RegisterFlagCompletionFunc("cwd", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return nil, cobra.ShellCompDirectiveFilterDirs
			})
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

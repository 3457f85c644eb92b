// Package completion attaches shell completions (tool, session, MCP server,
// skill and agent names, permission modes) to the command tree; the names
// come from a running daemon, and none is started for them.
package completion

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/agents"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/mcp"
	"github.com/tackle-agent/tackle/clients/cli/skills"
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
func completeFrom(a *cmdutil.App, list lister, every bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !every {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := completionNames(a, cmd, list)
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) && !cmdutil.Contains(args, n) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completionNames runs list against the daemon for the session cmd's
// --session / --cwd flags choose (without creating one).
func completionNames(a *cmdutil.App, cmd *cobra.Command, list lister) []string {
	ctx, cancel := context.WithTimeout(context.Background(), completionTimeout)
	defer cancel()
	c, err := client.Dial(ctx, &client.Options{
		Socket: a.SocketPath(), NoAutostart: true, Env: a.Environ, ClientName: "tackle-completion",
	})
	if err != nil {
		return nil
	}
	defer c.Close()
	return list(ctx, c, completionSession(ctx, a, c, cmd))
}

// completionSession is the session of cmd's flags: --session,
// $TACKLE_SESSION, else the existing default session of --cwd or the
// current directory; "" when there is none (the daemon then answers for no
// session or not at all).
func completionSession(ctx context.Context, a *cmdutil.App, c *client.Client, cmd *cobra.Command) string {
	if f := cmd.Flags().Lookup("session"); f != nil && f.Value.String() != "" {
		return f.Value.String()
	}
	if id := a.Getenv("TACKLE_SESSION"); id != "" {
		return id
	}
	cwd := ""
	if f := cmd.Flags().Lookup("cwd"); f != nil {
		cwd = f.Value.String()
	}
	dir, err := cmdutil.AbsDir(cwd)
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
	resp, err := mcp.ListMcp(ctx, c, sid, true)
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
	resp, err := skills.ListSkills(ctx, c, sid, false)
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
	resp, err := agents.ListAgentTypes(ctx, c, sid)
	if err != nil {
		return nil
	}
	var out []string
	for _, t := range resp.GetTypes() {
		out = append(out, t.GetName())
	}
	return out
}

// Register attaches the completions of arguments and flags to
// the command tree under root.
func Register(a *cmdutil.App, root *cobra.Command) {
	args := map[string]cobra.CompletionFunc{
		"tackle call":              completeFrom(a, listToolNames, false),
		"tackle explain":           completeFrom(a, listToolNames, false),
		"tackle tools load":        completeFrom(a, listToolNames, true),
		"tackle sessions show":     completeFrom(a, listSessionIDs, false),
		"tackle sessions rm":       completeFrom(a, listSessionIDs, true),
		"tackle mcp get":           completeFrom(a, listMcpNames, false),
		"tackle mcp remove":        completeFrom(a, listMcpNames, false),
		"tackle mcp reconnect":     completeFrom(a, listMcpNames, false),
		"tackle mcp approve":       completeFrom(a, listMcpNames, true),
		"tackle mcp logs":          completeFrom(a, listMcpNames, false),
		"tackle mcp prompts":       completeFrom(a, listMcpNames, false),
		"tackle mcp prompt":        completeFrom(a, listMcpNames, false),
		"tackle skill":             completeFrom(a, listSkillNames, false),
		"tackle skills show":       completeFrom(a, listSkillNames, false),
		"tackle agents show":       completeFrom(a, listAgentNames, false),
		"tackle permissions audit": nil,
	}
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		if fn := args[cmd.CommandPath()]; fn != nil && cmd.ValidArgsFunction == nil {
			cmd.ValidArgsFunction = fn
		}
		if cmd.Flags().Lookup("permission-mode") != nil {
			_ = cmd.RegisterFlagCompletionFunc("permission-mode", cobra.FixedCompletions(cmdutil.PermissionModes, cobra.ShellCompDirectiveNoFileComp))
		}
		if cmd.Flags().Lookup("session") != nil {
			_ = cmd.RegisterFlagCompletionFunc("session", completeFrom(a, listSessionIDs, true))
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

// Package editor is the glue for editors: `tackle acp` (the Agent Client
// Protocol on stdio) and `tackle bridge` (tackled's API as JSON-RPC on stdio).
package editor

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/acp"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/client"
)

// ACPCommand is `tackle acp`: the Agent Client Protocol on stdio, for editors.
func ACPCommand(a *cmdutil.App) *cobra.Command {
	return &cobra.Command{
		Use:   "acp",
		Short: "Speak the Agent Client Protocol on stdio, for editors (Zed, JetBrains, Neovim, Emacs)",
		Long: `Run as an Agent Client Protocol (v1) agent on stdin and stdout, for an editor
that starts its agent as a subprocess. It is a client of tackled (started if
needed): an ACP session is a tackle session, so the editor shares the daemon's
tools, MCP connections and permission prompts, and a terminal can attach to the
session the editor drives (tackle attach --session ID). stdout carries protocol
messages only; diagnostics go to stderr.`,
		Example: `  # Zed (settings.json): "agent_servers": {"tackle": {"command": "tackle", "args": ["acp"]}}
  acpx --agent 'tackle acp' exec "explain this repository"`,
		Args: cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := client.Dial(ctx, &client.Options{Socket: a.SocketPath(), NoAutostart: a.NoAutostart, Env: a.Environ, ClientName: "tackle-acp"})
			if err != nil {
				return &cmdutil.ExitCodeError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("tackle acp cannot reach tackled: %w", err)}
			}
			defer c.Close()
			in, out, restore := a.ProtocolStdio()
			defer restore()
			return acp.Serve(ctx, acp.Options{Client: c, Environ: a.Environ, Version: a.Version, Log: a.Stderr, StateDir: acpStateDir(a)}, in, out)
		}),
	}
}

// acpStateDir holds the editor's MCP server lists.
func acpStateDir(a *cmdutil.App) string {
	state := a.Getenv("XDG_STATE_HOME")
	if state == "" || !filepath.IsAbs(state) {
		state = filepath.Join(a.Getenv("HOME"), ".local", "state")
	}
	return filepath.Join(state, "tackle", "acp")
}

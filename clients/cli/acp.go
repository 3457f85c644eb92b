package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tackle-agent/tackle/clients/acp"
	"github.com/tackle-agent/tackle/clients/client"
)

func (a *app) acpCommand() *cobra.Command {
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
		RunE: run(func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := client.Dial(ctx, &client.Options{Socket: a.socketPath(), NoAutostart: a.noAutostart, Env: a.environ, ClientName: "tackle-acp"})
			if err != nil {
				return &exitError{code: ExitUsage, err: fmt.Errorf("tackle acp cannot reach tackled: %w", err)}
			}
			defer c.Close()
			return acp.Serve(ctx, acp.Options{Client: c, Environ: a.environ, Version: a.version, Log: a.stderr, StateDir: a.acpStateDir()}, a.stdin, a.stdout)
		}),
	}
}

// acpStateDir holds the editor's MCP server lists.
func (a *app) acpStateDir() string {
	state := a.getenv("XDG_STATE_HOME")
	if state == "" || !filepath.IsAbs(state) {
		state = filepath.Join(a.getenv("HOME"), ".local", "state")
	}
	return filepath.Join(state, "tackle", "acp")
}

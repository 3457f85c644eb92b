package editor

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/bridge"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/client"
)

// BridgeCommand is `tackle bridge`: tackled's API as newline-delimited JSON-RPC on stdio.
func BridgeCommand(a *cmdutil.App) *cobra.Command {
	var (
		describe bool
		name     string
	)
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Speak tackled's API as newline-delimited JSON-RPC on stdio (for editors without gRPC)",
		Long: `Translate tackled's gRPC API to newline-delimited JSON-RPC 2.0 on stdin and
stdout, for editors and scripts that cannot speak gRPC (Lua, Vimscript, Emacs
Lisp, shell). A unary RPC is the method named by its full name
("tackle.v1.TackleService/ListSessions"), params and result in protojson
(camelCase, 64-bit integers as strings, enums as names). The bridge holds one
Attach stream: "attach/subscribe", "attach/runBatch", "attach/prompt",
"attach/cancel", "attach/permissionAnswer" and "attach/endTurn" send on it, and
its messages arrive as the notifications "welcome", "snapshot", "event",
"batchAccepted" and "error". When tackled restarts, the bridge reconnects,
subscribes again from the last event it delivered, and says "reconnected".
--describe prints every method with the JSON Schemas of its params and result.`,
		Args: cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			if describe {
				return bridge.Describe(a.Stdout)
			}
			dial := func(ctx context.Context) (*client.Client, error) {
				return client.Dial(ctx, &client.Options{Socket: a.SocketPath(), NoAutostart: a.NoAutostart, Env: a.Environ, ClientName: name})
			}
			in, out, restore := a.ProtocolStdio()
			err := bridge.Serve(cmd.Context(), bridge.Options{Dial: dial, Log: a.Stderr}, in, out)
			restore()
			if err != nil {
				return &cmdutil.ExitCodeError{Code: cmdutil.ExitUsage, Err: fmt.Errorf("tackle bridge: %w", err)}
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&describe, "describe", false, "print the methods and notifications with their JSON Schemas, and exit")
	cmd.Flags().StringVar(&name, "client-name", "tackle-bridge", "the name the bridge's Attach stream gives tackled")
	return cmd
}

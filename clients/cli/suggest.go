package cli

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/client"
)

// unknownSubcommands makes every command group (a command with
// subcommands and nothing to run itself) answer an unknown subcommand with
// the nearest names and exit 2, and print its help when given none.
func unknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		unknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Run != nil || cmd.RunE != nil {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		// Aliases are matched too, but the command is named by its name.
		var names []string
		nameOf := map[string]string{}
		for _, sub := range cmd.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				for _, n := range append([]string{sub.Name()}, sub.Aliases...) {
					names = append(names, n)
					nameOf[n] = sub.Name()
				}
			}
		}
		var near []string
		for _, n := range cmdutil.Suggest(args[0], names) {
			if !cmdutil.Contains(near, nameOf[n]) {
				near = append(near, nameOf[n])
			}
		}
		return cmdutil.UsageError("unknown command %q for %q%s\nRun '%s --help' for its commands.",
			args[0], cmd.CommandPath(), cmdutil.PhraseSuggestions(near), cmd.CommandPath())
	}
}

// tidyError is the message of err without a repeated kind: the client's
// "not found: session not found: x" reads "session not found: x".
func tidyError(msg string) string {
	for _, kind := range []string{client.ErrNotFound.Error(), client.ErrInvalidArgument.Error(), client.ErrPermissionDenied.Error()} {
		prefix := kind + ": "
		for i := strings.Index(msg, prefix); i >= 0; {
			rest := msg[i+len(prefix):]
			if strings.Contains(rest, kind) || startsWithProse(rest) {
				msg = msg[:i] + rest
				i = strings.Index(msg, prefix)
				continue
			}
			next := strings.Index(rest, prefix)
			if next < 0 {
				break
			}
			i += len(prefix) + next
		}
	}
	return msg
}

// startsWithProse reports whether s reads as a sentence of its own, so a
// kind in front of it only repeats it ("no skill …", "unknown …").
func startsWithProse(s string) bool {
	for _, p := range []string{"no ", "unknown ", "invalid ", "missing "} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

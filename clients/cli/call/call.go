// Package call is `tackle call` and `tackle batch`: tool calls run through
// the daemon's pipeline as one model turn, without a model.
package call

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/ask"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Command is `tackle call NAME [INPUT]`: one tool call through the daemon's pipeline.
func Command(a *cmdutil.App) *cobra.Command {
	var f ask.TurnFlags
	cmd := &cobra.Command{
		Use:   "call NAME [INPUT]",
		Short: "Run one tool call through the daemon's pipeline",
		Long: `Run one tool call through the daemon's pipeline and print its result.

INPUT is a JSON object, or - to read it from stdin; the default is {}.
Input that is not valid JSON is passed on: the pipeline reports it as an
invalid result, and tackle says where it stops parsing (line, column, the
text there). Exit status: 0 when the result is not an error, 1 when it is,
2 for usage or connection errors and an unknown tool (with the nearest
names).`,
		Example: `  tackle call Read '{"file_path":"/etc/hostname"}'
  echo '{"pattern":"**/*.go"}' | tackle call Glob - --json`,
		Args: cobra.RangeArgs(1, 2),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckMode(f.Mode); err != nil {
				return err
			}
			input, stdinFree := "{}", true
			if len(args) == 2 {
				input = args[1]
				if input == "-" {
					b, err := io.ReadAll(a.Stdin)
					if err != nil {
						return fmt.Errorf("reading the input from stdin: %w", err)
					}
					input, stdinFree = strings.TrimSpace(string(b)), false
					if input == "" {
						input = "{}"
					}
				}
			}
			return a.WithSession(cmd, &f.SessionFlags, func(ctx context.Context, c *client.Client, sid string) error {
				calls := []*tacklev1.ToolCall{{Id: ask.NewID("call_"), Name: args[0], InputJson: input}}
				results, err := ask.RunTurn(ctx, a, c, sid, calls, &f, stdinFree)
				if err != nil {
					return err
				}
				r := results[0]
				// A mistake of the caller's is said for people: where the
				// input does not parse (exit 1, as the invalid result), or
				// the nearest tool names (exit 2).
				var usage error
				if r.GetStatus() == "invalid" {
					if p := jsonProblem(input); p != "" {
						usage = &cmdutil.ExitCodeError{Code: cmdutil.ExitError, Err: fmt.Errorf("the input of %s is not valid JSON: %s", args[0], p)}
					} else if noSuchTool(r) {
						if err := unknownTool(ctx, c, sid, args[0]); err != nil {
							usage = err
						}
					}
				}
				if f.AsJSON {
					if err := a.PrintJSON(render.ResultToJSON(r)); err != nil {
						return err
					}
				} else if usage == nil {
					render.PrintResult(a, r)
				}
				if usage != nil {
					return usage
				}
				if r.GetIsError() {
					return &cmdutil.ExitCodeError{Code: cmdutil.ExitError}
				}
				return nil
			})
		}),
	}
	f.Register(cmd)
	return cmd
}

// noSuchTool reports whether r is the pipeline's answer to a call of a
// tool the session does not have (not, for one, an MCP tool whose server
// is not connected: its result says why).
func noSuchTool(r *tacklev1.ToolResult) bool {
	for _, b := range r.GetContent() {
		if strings.Contains(b.GetText(), "No such tool available") {
			return true
		}
	}
	return false
}

// unknownTool returns a usage error when name is none of the session's
// tools (loaded or deferred, MCP tools included), naming the nearest; nil
// when it is one, or when the tools cannot be listed.
func unknownTool(ctx context.Context, c *client.Client, sid, name string) error {
	tools, err := c.ListTools(ctx, &tacklev1.ListToolsRequest{SessionId: sid, All: true})
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		if t.GetName() == name {
			return nil
		}
		names = append(names, t.GetName())
	}
	return cmdutil.UsageError("unknown tool %q%s (tackle tools --all lists them)", name, cmdutil.DidYouMean(name, names))
}

// jsonProblem locates the syntax error of input, which is not valid JSON:
// "line L, column C: MESSAGE near `TEXT`", or "" when it parses.
func jsonProblem(input string) string {
	var v any
	err := json.Unmarshal([]byte(input), &v)
	if err == nil {
		return ""
	}
	offset := len(input)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		offset = int(se.Offset)
	case errors.As(err, &te):
		offset = int(te.Offset)
	}
	if offset > len(input) {
		offset = len(input)
	}
	line, col := 1, 1
	for _, r := range input[:offset] {
		if r == '\n' {
			line, col = line+1, 1
			continue
		}
		col++
	}
	// The offending text: the line up to the error, at most 40 characters.
	start := strings.LastIndexByte(input[:offset], '\n') + 1
	if offset-start > 40 {
		start = offset - 40
	}
	end := offset
	if nl := strings.IndexByte(input[offset:], '\n'); nl >= 0 {
		end = offset + nl
	} else {
		end = len(input)
	}
	if end-offset > 20 {
		end = offset + 20
	}
	near := strings.TrimSpace(input[start:end])
	msg := strings.TrimPrefix(err.Error(), "json: ")
	if col > 1 {
		col-- // the column of the character the decoder stopped at
	}
	if near == "" {
		return fmt.Sprintf("line %d, column %d: %s", line, col, msg)
	}
	return fmt.Sprintf("line %d, column %d: %s, near `%s`", line, col, msg, near)
}

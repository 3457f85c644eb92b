package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func (a *app) callCommand() *cobra.Command {
	var f turnFlags
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
		RunE: run(func(cmd *cobra.Command, args []string) error {
			if err := checkMode(f.mode); err != nil {
				return err
			}
			input, stdinFree := "{}", true
			if len(args) == 2 {
				input = args[1]
				if input == "-" {
					b, err := io.ReadAll(a.stdin)
					if err != nil {
						return fmt.Errorf("reading the input from stdin: %w", err)
					}
					input, stdinFree = strings.TrimSpace(string(b)), false
					if input == "" {
						input = "{}"
					}
				}
			}
			return a.withSession(cmd, &f.sessionFlags, func(ctx context.Context, c *client.Client, sid string) error {
				calls := []*tacklev1.ToolCall{{Id: newID("call_"), Name: args[0], InputJson: input}}
				results, err := a.runTurn(ctx, c, sid, calls, &f, stdinFree)
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
						usage = &exitError{code: ExitError, err: fmt.Errorf("the input of %s is not valid JSON: %s", args[0], p)}
					} else if noSuchTool(r) {
						if err := unknownTool(ctx, c, sid, args[0]); err != nil {
							usage = err
						}
					}
				}
				if f.asJSON {
					if err := a.printJSON(resultToJSON(r)); err != nil {
						return err
					}
				} else if usage == nil {
					a.printResult(r)
				}
				if usage != nil {
					return usage
				}
				if r.GetIsError() {
					return &exitError{code: ExitError}
				}
				return nil
			})
		}),
	}
	f.register(cmd)
	return cmd
}

// printResult prints a result for a person: a diff for edits (coloured on
// a terminal), else the text content; images as a placeholder line. When
// the result is an error its status goes to stderr.
func (a *app) printResult(r *tacklev1.ToolResult) {
	w := a.stdout
	if !r.GetIsError() && isDiff(r.GetDisplay()) {
		writeDiff(w, r.GetDisplay(), a.colour(w))
		return
	}
	for _, b := range r.GetContent() {
		switch b.GetType() {
		case "image", "audio":
			fmt.Fprintf(w, "[%s %s, %d bytes]\n", b.GetType(), b.GetMimeType(), len(b.GetData()))
		case "resource_link":
			fmt.Fprintf(w, "[resource link %s] %s\n", b.GetUri(), b.GetText())
		case "resource":
			if len(b.GetData()) > 0 && b.GetText() == "" {
				fmt.Fprintf(w, "[resource %s %s, %d bytes]\n", b.GetUri(), b.GetMimeType(), len(b.GetData()))
				continue
			}
			fmt.Fprintf(w, "[resource %s]\n", b.GetUri())
			text := b.GetText()
			io.WriteString(w, text)
			if text != "" && !strings.HasSuffix(text, "\n") {
				io.WriteString(w, "\n")
			}
		default:
			text := forPeople(b.GetText())
			io.WriteString(w, text)
			if text != "" && !strings.HasSuffix(text, "\n") {
				io.WriteString(w, "\n")
			}
		}
	}
	if r.GetIsError() {
		fmt.Fprintf(a.stderr, "tackle: %s %s\n", r.GetName(), r.GetStatus())
	}
}

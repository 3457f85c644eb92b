package call

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/ask"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// batchCall is one element of the batch read from stdin.
type batchCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// BatchCommand is `tackle batch`: a JSON array of tool calls from stdin as one model turn.
func BatchCommand(a *cmdutil.App) *cobra.Command {
	var f ask.TurnFlags
	cmd := &cobra.Command{
		Use:   "batch",
		Short: "Run a JSON array of tool calls from stdin as one model turn",
		Long: `Read a JSON array of {"id","name","input"} on stdin and run it as ONE model
turn: consecutive concurrency-safe calls run in parallel, the others alone, in
order. Ids are generated where missing. With --json the results are printed
as an array in input order. Exit status: 0 when no result is an error, 1 when
one is, 2 for usage or connection errors.`,
		Example: `  echo '[{"name":"Read","input":{"file_path":"/etc/hostname"}}]' | tackle batch --json`,
		Args:    cobra.NoArgs,
		RunE: cmdutil.Run(func(cmd *cobra.Command, _ []string) error {
			if err := cmdutil.CheckMode(f.Mode); err != nil {
				return err
			}
			b, err := io.ReadAll(a.Stdin)
			if err != nil {
				return fmt.Errorf("reading the batch from stdin: %w", err)
			}
			var items []batchCall
			dec := json.NewDecoder(bytes.NewReader(b))
			if err := dec.Decode(&items); err != nil {
				where := jsonProblem(string(b))
				if where == "" {
					where = err.Error()
				}
				return cmdutil.UsageError(`reading the batch from stdin: %s: expected a JSON array of {"id","name","input"}`, where)
			}
			if dec.More() {
				return cmdutil.UsageError("reading the batch from stdin: text after the JSON array")
			}
			if len(items) == 0 {
				return cmdutil.UsageError("the batch on stdin is empty: give at least one call")
			}
			calls := make([]*tacklev1.ToolCall, len(items))
			for i, it := range items {
				id := it.ID
				if id == "" {
					id = ask.NewID("call_")
				}
				input := "{}"
				if len(it.Input) > 0 {
					input = string(it.Input)
				}
				calls[i] = &tacklev1.ToolCall{Id: id, Name: it.Name, InputJson: input}
			}
			return a.WithSession(cmd, &f.SessionFlags, func(ctx context.Context, c *client.Client, sid string) error {
				results, err := ask.RunTurn(ctx, a, c, sid, calls, &f, false)
				if err != nil {
					return err
				}
				anyError := false
				for _, r := range results {
					anyError = anyError || r.GetIsError()
				}
				if f.AsJSON {
					out := make([]*render.ResultJSON, len(results))
					for i, r := range results {
						out[i] = render.ResultToJSON(r)
					}
					if err := a.PrintJSON(out); err != nil {
						return err
					}
				} else {
					for i, r := range results {
						if i > 0 {
							fmt.Fprintln(a.Stdout)
						}
						fmt.Fprintf(a.Stdout, "── %s %s: %s (%d ms)\n", r.GetName(), r.GetId(), r.GetStatus(), r.GetDurationMs())
						render.PrintResult(a, r)
					}
				}
				if anyError {
					return &cmdutil.ExitCodeError{Code: cmdutil.ExitError}
				}
				return nil
			})
		}),
	}
	f.Register(cmd)
	return cmd
}

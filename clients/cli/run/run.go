// Package run is `tackle run` (one prompt through the agent to its end) and
// `tackle compact`.
package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tackle-agent/tackle/clients/cli/internal/ask"
	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// runFlags are the flags of tackle run.
type runFlags struct {
	cmdutil.SessionFlags
	model    string
	mode     string
	maxTurns int32
	asJSON   bool
	files    []string
}

// Command is `tackle run PROMPT`: one prompt through the agent to its end.
func Command(a *cmdutil.App) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run PROMPT",
		Short: "Run one prompt through the agent to its end",
		Long: `Send one prompt to the session's agent (the query loop in the daemon) and
follow it to its end: the model's text streams to stdout, each tool call is
one line on stderr (its name and main argument), edits print as diffs, and
permission requests are asked on the terminal. PROMPT - reads the prompt
from stdin.

With --json every event is one JSON object a line, and the last line is
{"stop_reason", "text", "usage"}. Exit status: 0 when the model ended its
turn, 1 for any other stop (an error, max_tokens, max_turns, cancelled),
2 for usage or connection errors.`,
		Example: `  tackle run "explain what main.go does"
  echo "fix the failing test" | tackle run - --permission-mode acceptEdits`,
		Args: cobra.ExactArgs(1),
		RunE: cmdutil.Run(func(cmd *cobra.Command, args []string) error {
			if err := cmdutil.CheckMode(f.mode); err != nil {
				return err
			}
			text, stdinFree := args[0], true
			if text == "-" {
				b, err := io.ReadAll(a.Stdin)
				if err != nil {
					return fmt.Errorf("reading the prompt from stdin: %w", err)
				}
				text, stdinFree = string(b), false
			}
			if strings.TrimSpace(text) == "" {
				return cmdutil.UsageError("the prompt is empty")
			}
			return a.WithSession(cmd, &f.SessionFlags, func(ctx context.Context, c *client.Client, sid string) error {
				return runPrompt(ctx, a, c, sid, text, &f, stdinFree)
			})
		}),
	}
	f.SessionFlags.Register(cmd)
	cmd.Flags().StringVar(&f.model, "model", "", "the model for this prompt (an alias such as sonnet, or a full id)")
	cmd.Flags().StringVar(&f.mode, "permission-mode", "", "permission mode for the prompt's tool calls")
	cmd.Flags().Int32Var(&f.maxTurns, "max-turns", 0, "the most model requests (0: the maxTurns setting, 100)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print every event as a JSON line, and the outcome last")
	cmd.Flags().StringArrayVar(&f.files, "file", nil, "a file whose content goes with the prompt (read through the pipeline as a Read call; repeatable)")
	return cmd
}

// runOutcome is the last line of tackle run --json.
type runOutcome struct {
	StopReason string          `json:"stop_reason"`
	Text       string          `json:"text"`
	Usage      json.RawMessage `json:"usage"`
	Error      string          `json:"error,omitempty"`
	PromptID   string          `json:"prompt_id"`
}

// runPrompt sends the prompt and follows its events to prompt_ended.
func runPrompt(ctx context.Context, a *cmdutil.App, c *client.Client, sid, text string, f *runFlags, stdinFree bool) error {
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	s, err := c.Attach(sctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		return err
	}
	defer s.Close()
	snap, err := s.Subscribe(sid, 0, true)
	if err != nil {
		return err
	}
	root := ask.RootOf(snap, sid)
	resp, err := c.Prompt(ctx, &tacklev1.PromptRequest{
		SessionId: sid, Text: text, Model: f.model, PermissionMode: f.mode, MaxTurns: f.maxTurns, Files: f.files,
		ClientId: s.Welcome().GetClientId(), NonInteractive: true,
	})
	if err != nil {
		return fmt.Errorf("sending the prompt: %w", err)
	}
	promptID := resp.GetPromptId()
	if resp.GetQueued() && !f.asJSON {
		fmt.Fprintln(a.Stderr, "tackle: another prompt is running in this session; yours is queued and goes to the model with its next request")
	}

	msgs := s.Chan(sctx)
	var pr *ask.Prompter
	if in, out, closeTTY, ok := ask.PromptIO(a, stdinFree); ok {
		defer closeTTY()
		if !f.asJSON {
			pr = ask.NewPrompter(a, s, sid)
			pr.Root = root
			pr.In, pr.Out = in, out
		}
	}
	v := &runView{a: a, asJSON: f.asJSON, tree: render.NewAgentTree(), running: map[string]time.Time{}}
	defer v.stopSpinner()
	if pr != nil {
		pr.Before = func() { v.stopSpinner(); v.tree.Broke() }
	}
	interrupted := ctx.Done()
	var grace <-chan time.Time
	for {
		select {
		case <-interrupted:
			interrupted = nil
			grace = time.After(ask.CancelGrace)
			fmt.Fprintln(a.Stderr, "tackle: interrupted; cancelling the prompt")
			if _, err := c.CancelPrompt(context.WithoutCancel(ctx), sid, ""); err != nil {
				return fmt.Errorf("cancelling the prompt: %w", err)
			}
		case <-grace:
			return fmt.Errorf("interrupted: the prompt did not end within %v after cancelling", ask.CancelGrace)
		case line := <-pr.Input():
			if err := pr.Answer(line); err != nil {
				return err
			}
		case it, ok := <-msgs:
			if !ok {
				return fmt.Errorf("the daemon ended the stream before the prompt ended: %w", client.ErrUnavailable)
			}
			if it.Err != nil {
				return fmt.Errorf("receiving events: %w", it.Err)
			}
			e := it.Msg.GetEvent()
			if se := it.Msg.GetError(); se != nil && se.GetResubscribeFromSeq() != 0 {
				sub := &tacklev1.Subscribe{SessionId: sid, FromSeq: se.GetResubscribeFromSeq()}
				if err := s.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: sub}}); err != nil {
					return fmt.Errorf("subscribing again: %w", err)
				}
				continue
			}
			if e == nil {
				continue
			}
			if err := v.event(e, pr); err != nil {
				return err
			}
			if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == promptID {
				return v.end(e.GetPrompt())
			}
		}
	}
}

// runView prints a prompt's events for a person, or as JSON lines.
type runView struct {
	a         *cmdutil.App
	asJSON    bool
	midLine   bool // the last text printed did not end a line
	sawDeltas bool // text came as deltas: assistant_message need not repeat it
	tree      *render.AgentTree
	live      render.LiveOutput // running calls' output, streamed as it comes

	// On a terminal, while calls run and nothing else prints, a spinner
	// names the call and counts the time since it started.
	running map[string]time.Time // call id → when its turn started
	label   string               // the running call (or how many)
	spin    *render.Spinner
}

// stopSpinner clears the spinner, if one is drawn.
func (v *runView) stopSpinner() {
	v.spin.Stop()
	v.spin = nil
}

// event prints one event; on a terminal the spinner of the running calls
// is cleared first and drawn again after it (not while a prompt waits).
func (v *runView) event(e *tacklev1.Event, pr *ask.Prompter) error {
	if v.asJSON {
		return render.PrintEvent(v.a, e, true, nil)
	}
	v.stopSpinner()
	defer func() {
		if len(v.running) == 0 || (pr != nil && len(pr.Pending) > 0) {
			return
		}
		first := time.Now()
		for _, t := range v.running {
			if t.Before(first) {
				first = t
			}
		}
		v.spin = render.StartSpinner(v.a.Stderr, v.label)
		v.spin.SetStart(first)
	}()
	switch e.GetType() {
	case "turn_started":
		for _, c := range e.GetCalls() {
			v.running[c.GetId()] = time.Now()
		}
		if cs := e.GetCalls(); len(cs) == 1 {
			v.label = strings.TrimSpace(cs[0].GetName() + " " + render.MainArgument(cs[0].GetInputJson()))
		} else {
			v.label = fmt.Sprintf("%d calls", len(cs))
		}
	case "call_result":
		delete(v.running, e.GetCallId())
		delete(v.running, e.GetResult().GetId())
	case "prompt_ended":
		clear(v.running)
	}
	w := v.a.Stdout
	if lines, ok := v.tree.Lines(e); ok {
		if len(lines) > 0 {
			v.endLine()
		}
		for _, l := range lines {
			fmt.Fprintln(v.a.Stderr, l)
		}
		return nil
	}
	switch e.GetType() {
	case "assistant_delta":
		if d := e.GetDelta(); d.GetKind() == "text" {
			v.tree.Broke()
			fmt.Fprint(w, d.GetText())
			v.midLine = !strings.HasSuffix(d.GetText(), "\n")
			v.sawDeltas = true
		}
	case "assistant_message":
		if !v.sawDeltas {
			var m struct {
				Content []struct{ Type, Text string } `json:"content"`
			}
			if json.Unmarshal([]byte(e.GetMessageJson()), &m) == nil {
				for _, b := range m.Content {
					if b.Type == "text" {
						v.tree.Broke()
						fmt.Fprint(w, b.Text)
						v.midLine = !strings.HasSuffix(b.Text, "\n")
					}
				}
			}
		}
		v.sawDeltas = false
	case "turn_started":
		v.endLine()
		v.tree.Broke()
		for _, c := range e.GetCalls() {
			fmt.Fprintf(v.a.Stderr, "● %s %s\n", c.GetName(), render.MainArgument(c.GetInputJson()))
		}
	case "call_progress":
		if lines := v.live.Add(e); len(lines) > 0 {
			v.endLine()
			v.tree.Broke()
			fmt.Fprintln(v.a.Stderr, strings.Join(lines, "\n"))
		}
	case "call_result":
		r := e.GetResult()
		rest, streamed := v.live.End(e.GetCallId())
		if len(rest) > 0 {
			v.tree.Broke()
			fmt.Fprintln(v.a.Stderr, strings.Join(rest, "\n"))
		}
		timing := render.ResultTiming(r, streamed)
		switch {
		case !r.GetIsError() && render.IsDiff(r.GetDisplay()):
			v.tree.Broke()
			render.WriteDiff(v.a.Stderr, r.GetDisplay(), v.a.Colour(v.a.Stderr))
		case r.GetIsError():
			v.tree.Broke()
			fmt.Fprintf(v.a.Stderr, "  ✗ %s %s%s%s\n", r.GetName(), r.GetStatus(), timing, render.SummarySuffix(r))
		case timing != "":
			v.tree.Broke()
			fmt.Fprintf(v.a.Stderr, "  ✓ %s %s%s\n", r.GetName(), r.GetStatus(), timing)
		}
	case "permission_requested":
		v.tree.Broke()
		if pr != nil {
			v.endLine()
			pr.Requested(e.GetPermission())
		} else {
			fmt.Fprintf(v.a.Stderr, "tackle: %s waits for permission (answer with tackle permissions answer %s …)\n", ask.PermissionAsker(e.GetPermission()), e.GetPermission().GetRequestId())
		}
	case "permission_resolved":
		if pr != nil {
			pr.Resolved(e.GetResolution())
		}
	case "model_retry":
		v.tree.Broke()
		r := e.GetRetry()
		fmt.Fprintf(v.a.Stderr, "tackle: retrying in %.1f s: %s\n", float64(r.GetWaitMs())/1000, r.GetReason())
	case "notice":
		v.tree.Broke()
		fmt.Fprintf(v.a.Stderr, "tackle: %s\n", e.GetText())
	case "mcp_auth_required":
		v.tree.Broke()
		fmt.Fprintf(v.a.Stderr, "tackle: %s\n", render.McpAuthLine(e.GetMcpAuth()))
	}
	return nil
}

func (v *runView) endLine() {
	if v.midLine {
		fmt.Fprintln(v.a.Stdout)
		v.midLine = false
	}
}

// end prints the outcome and returns the exit status.
func (v *runView) end(p *tacklev1.PromptInfo) error {
	if v.asJSON {
		if err := v.a.PrintJSONLine(runOutcome{StopReason: p.GetStopReason(), Text: p.GetFinalText(), Usage: render.UsageJSON(p.GetUsage()), Error: p.GetError(), PromptID: p.GetId()}); err != nil {
			return err
		}
	} else {
		v.endLine()
		if p.GetError() != "" {
			fmt.Fprintf(v.a.Stderr, "tackle: %s\n", p.GetError())
		}
	}
	if p.GetStopReason() != "end_turn" {
		if !v.asJSON && p.GetError() == "" {
			fmt.Fprintf(v.a.Stderr, "tackle: the prompt stopped: %s\n", p.GetStopReason())
		}
		return &cmdutil.ExitCodeError{Code: cmdutil.ExitError}
	}
	return nil
}

// Package agent is the query loop: a prompt goes to the model, the model's
// tool calls go through the one pipeline (daemon/dispatch) as one batch,
// their results go back, until the model ends its turn.
//
// It owns the conversation's invariants — every tool_use gets exactly one
// tool_result before the next request, whatever happens (a cut-off input,
// a cancel, a denied permission, a model error); a tool input cut off at
// max_tokens never runs — and the stop reasons. It runs no tool itself and
// decides no permission (dispatch does both), and it never imports the
// server.
package agent

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/model"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Stop reasons of a prompt beyond the model's own (model.Stop*).
const (
	StopMaxTurns  = "max_turns"
	StopCancelled = "cancelled"
	StopError     = "error"
	// StopBlocked: a UserPromptSubmit hook refused the prompt.
	StopBlocked = "blocked"
)

// DefaultMaxTurns bounds the model requests of one prompt (setting maxTurns).
const DefaultMaxTurns = 100

// Synthetic results, as Claude Code words them (reference.md §2).
const (
	interruptedResult = "[Request interrupted by user for tool use]"
	cutOffResult      = "The tool input was cut off at the response's max_tokens limit, so the call did not run. Ask for less at once, or split the work."
)

// Runner runs one model turn's tool calls through the pipeline and returns
// exactly one result per call, in order (dispatch.Dispatcher does).
type Runner interface {
	RunTurn(ctx context.Context, s dispatch.Session, t dispatch.Turn) []*event.Result
}

// Options configures a prompt's loop. Provider and Runner are required.
type Options struct {
	Provider model.Provider
	Runner   Runner
	// Model, MaxTokens, System and Tools go into every request.
	Model     string
	MaxTokens int
	System    string
	Tools     []model.Tool
	// MaxTurns bounds the requests (default DefaultMaxTurns).
	MaxTurns int
	// Turn is the template of every tool batch (client, permission mode…).
	Turn dispatch.Turn
	// OnEvent, if set, sees every stream event as it arrives (deltas for
	// clients); it must not block for long.
	OnEvent func(model.Event)
	// OnMessage, if set, is told of every message the conversation gains
	// after the prompt (the caller records the prompt), in order: the
	// assistant's, then the user's tool results, to persist each before
	// the loop goes on.
	OnMessage func(model.Message)
	// OnRetry, if set, is told of each retry of a request.
	OnRetry func(model.RetryInfo)
	// OnStop, if set, is asked when the model ended its turn (end_turn):
	// goOn makes the loop continue with reason as the next user message (a
	// Stop hook). active is true once it made the loop go on before.
	OnStop func(active bool, lastText string) (goOn bool, reason string)
	// CompactAt, when > 0, is the context size (tokens, from the API's
	// usage) past which the loop compacts the conversation before its next
	// request: the model summarizes it, and the summary is the new start.
	CompactAt int
	// PriorUsage is the last request's usage before this prompt (the
	// conversation's size so far), for CompactAt.
	PriorUsage model.Usage
	// PreCompact, if set, runs before a compaction (PreCompact hooks);
	// OnCompact is told of its result (start: the message the conversation
	// now starts with), to record it.
	PreCompact func()
	OnCompact  func(start model.Message, usage model.Usage)
	// Inbox, if set, is asked for prompts that arrived while this one runs
	// (queued by other clients) whenever the loop is about to send a user
	// message (tool results) or a paused turn: their blocks join it, so they
	// reach the model at the next request.
	Inbox func() []model.Block
}

// Outcome is how a prompt ended.
type Outcome struct {
	// StopReason is the model's last stop reason (end_turn, max_tokens,
	// refusal, model_context_window_exceeded, stop_sequence), or
	// StopMaxTurns, StopCancelled, StopError.
	StopReason string
	// Text is the last assistant message's text.
	Text string
	// Usage sums the requests' usage.
	Usage model.Usage
	// LastUsage is the last request's (its input is the context's size).
	LastUsage model.Usage
	// Requests is how many model requests the prompt made.
	Requests int
	// Err is the error of StopError (a model error after its retries).
	Err error
	// Messages is the conversation after the prompt: history, the prompt,
	// and every message since, valid to send again.
	Messages []model.Message
}

// Run runs prompt (a user message's blocks) after history until the model
// ends its turn, MaxTurns is reached, ctx is cancelled or the model fails.
// The returned conversation is always valid for the next request.
func Run(ctx context.Context, opts Options, s dispatch.Session, history []model.Message, prompt []model.Block) Outcome {
	if opts.MaxTurns <= 0 {
		opts.MaxTurns = DefaultMaxTurns
	}
	out := Outcome{LastUsage: opts.PriorUsage, Messages: Append(append([]model.Message(nil), history...), model.Message{Role: model.RoleUser, Content: prompt})}
	stopActive := false // a Stop hook made the loop go on
	add := func(m model.Message) {
		out.Messages = append(out.Messages, m)
		if opts.OnMessage != nil {
			opts.OnMessage(m)
		}
	}
	for {
		if out.Requests >= opts.MaxTurns {
			out.StopReason = StopMaxTurns
			return out
		}
		if ctx.Err() != nil {
			out.StopReason = StopCancelled
			return out
		}
		if opts.CompactAt > 0 && contextTokens(out.LastUsage) >= opts.CompactAt {
			if !compactNow(ctx, &opts, &out) {
				return out
			}
		}
		if last := out.Messages[len(out.Messages)-1]; last.Role == model.RoleAssistant {
			// pause_turn: the request ends with the assistant's message,
			// unless prompts were queued meanwhile.
			if more := inbox(&opts); len(more) > 0 {
				add(model.Message{Role: model.RoleUser, Content: more})
			}
		}
		out.Requests++
		resp, err := stream(ctx, &opts, out.Messages)
		if resp != nil {
			addUsage(&out.Usage, resp.Usage)
			out.LastUsage = resp.Usage
		}
		msg := assistantMessage(resp)
		if err != nil {
			// Keep what the model said (partial text), never a tool call
			// it did not finish; answer the finished ones without running
			// them, so the conversation stays valid.
			if len(msg.Content) > 0 {
				add(msg)
				if r := unanswered(msg, interruptedResult); r != nil {
					add(*r)
				}
			}
			out.Text = text(msg)
			switch {
			case ctx.Err() != nil:
				out.StopReason = StopCancelled
			default:
				out.StopReason, out.Err = StopError, err
			}
			return out
		}
		if len(msg.Content) == 0 {
			// The API rejects an empty assistant message: say so in one.
			msg.Content = []model.Block{{Type: model.BlockText, Text: "(no content)"}}
		}
		add(msg)
		out.Text = text(msg)
		calls, cutOff := toolCalls(msg)
		if len(calls) == 0 && len(cutOff) == 0 {
			if resp.StopReason == model.StopPauseTurn {
				continue // the server paused its own tool loop: send it back as is
			}
			if resp.StopReason == model.StopEndTurn && opts.OnStop != nil && ctx.Err() == nil {
				if goOn, reason := opts.OnStop(stopActive, out.Text); goOn {
					stopActive = true
					add(model.Message{Role: model.RoleUser, Content: append([]model.Block{{Type: model.BlockText, Text: reason}}, inbox(&opts)...)})
					continue
				}
			}
			out.StopReason = resp.StopReason
			return out
		}
		results := map[string]model.Block{}
		for _, id := range cutOff {
			results[id] = errorResult(id, cutOffResult)
		}
		if len(calls) > 0 {
			t := opts.Turn
			t.ID = ""
			t.Calls = calls
			for _, r := range opts.Runner.RunTurn(ctx, s, t) {
				results[r.CallID] = toolResult(r)
			}
		}
		user := model.Message{Role: model.RoleUser}
		for _, b := range msg.Content {
			if b.Type != model.BlockToolUse {
				continue
			}
			r, ok := results[b.ID]
			if !ok { // the pipeline promises one result per call; never send a gap
				r = errorResult(b.ID, interruptedResult)
			}
			user.Content = append(user.Content, r)
		}
		user.Content = append(user.Content, inbox(&opts)...) // after the results, as the API wants
		add(user)
		if ctx.Err() != nil {
			out.StopReason = StopCancelled
			return out
		}
		// Results sent (a cut-off call's too: the model hears why): go on.
	}
}

// Append adds m to msgs, merged into the last message when that has the
// same role (a prompt after a cancelled prompt's tool results): the API
// wants the roles to alternate.
func Append(msgs []model.Message, m model.Message) []model.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		last := msgs[n-1]
		last.Content = append(append([]model.Block(nil), last.Content...), m.Content...)
		return append(msgs[:n-1:n-1], last)
	}
	return append(msgs, m)
}

// compactNow replaces the conversation by its summary (the pending user
// message, if the loop is inside a tool turn, goes along: its results are
// in the summary's request). false means the prompt ended (cancelled or a
// model error).
func compactNow(ctx context.Context, opts *Options, out *Outcome) bool {
	if opts.PreCompact != nil {
		opts.PreCompact()
	}
	req := model.Request{Model: opts.Model, MaxTokens: opts.MaxTokens, System: opts.System, Retry: opts.OnRetry}
	start, usage, err := Compact(ctx, opts.Provider, req, out.Messages, "")
	out.Requests++
	addUsage(&out.Usage, usage)
	if err != nil {
		if ctx.Err() != nil {
			out.StopReason = StopCancelled
		} else {
			out.StopReason, out.Err = StopError, err
		}
		return false
	}
	out.Messages = []model.Message{start}
	out.LastUsage = model.Usage{}
	if opts.OnCompact != nil {
		opts.OnCompact(start, usage)
	}
	return true
}

// inbox returns the blocks of prompts queued meanwhile (none without an
// Inbox).
func inbox(opts *Options) []model.Block {
	if opts.Inbox == nil {
		return nil
	}
	return opts.Inbox()
}

// stream sends one request and drains its events.
func stream(ctx context.Context, opts *Options, msgs []model.Message) (*model.Response, error) {
	req := model.Request{
		Model: opts.Model, MaxTokens: opts.MaxTokens, System: opts.System,
		Messages: msgs, Tools: opts.Tools, Retry: opts.OnRetry,
	}
	st, err := opts.Provider.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for ev, err := range st.Events() {
		if err != nil {
			return st.Response(), err
		}
		if opts.OnEvent != nil {
			opts.OnEvent(ev)
		}
	}
	if ctx.Err() != nil {
		return st.Response(), ctx.Err()
	}
	return st.Response(), nil
}

// assistantMessage is resp's message as the next request sends it back.
func assistantMessage(resp *model.Response) model.Message {
	m := model.Message{Role: model.RoleAssistant}
	if resp == nil {
		return m
	}
	for _, b := range resp.Message.Content {
		if b.Type == model.BlockText && b.Text == "" {
			continue // the API rejects empty text blocks
		}
		m.Content = append(m.Content, b)
	}
	return m
}

// toolCalls are the message's complete tool calls, in block order, and the
// ids of those whose input was cut off.
func toolCalls(m model.Message) (calls []event.CallInfo, cutOff []string) {
	for _, b := range m.Content {
		if b.Type != model.BlockToolUse {
			continue
		}
		if !b.InputComplete {
			cutOff = append(cutOff, b.ID)
			continue
		}
		calls = append(calls, event.CallInfo{ID: b.ID, Name: b.Name, Input: b.Input})
	}
	return calls, cutOff
}

// unanswered is the user message answering every tool call of m with
// an error result (nil when m has none).
func unanswered(m model.Message, why string) *model.Message {
	var u *model.Message
	for _, b := range m.Content {
		if b.Type == model.BlockToolUse {
			if u == nil {
				u = &model.Message{Role: model.RoleUser}
			}
			u.Content = append(u.Content, errorResult(b.ID, why))
		}
	}
	return u
}

func errorResult(id, msg string) model.Block {
	return model.Block{Type: model.BlockToolResult, ToolUseID: id, IsError: true, Content: []model.Block{{Type: model.BlockText, Text: msg}}}
}

// toolResult maps a pipeline result to the model's tool_result block.
func toolResult(r *event.Result) model.Block {
	b := model.Block{Type: model.BlockToolResult, ToolUseID: r.CallID, IsError: r.IsError}
	for _, c := range r.Content {
		switch c.Type {
		case "image":
			b.Content = append(b.Content, model.Block{Type: model.BlockImage, MediaType: c.MimeType, Source: base64.StdEncoding.EncodeToString(c.Data)})
		default:
			b.Content = append(b.Content, model.Block{Type: model.BlockText, Text: contentText(c)})
		}
	}
	if len(b.Content) == 0 {
		b.Content = []model.Block{{Type: model.BlockText, Text: "(no output)"}}
	}
	return b
}

// contentText renders a non-image block as text (a resource link names
// its URI).
func contentText(c tool.Content) string {
	if c.Type == "resource_link" && c.URI != "" {
		return strings.TrimSpace(c.Text + " " + c.URI)
	}
	return c.Text
}

func text(m model.Message) string {
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == model.BlockText {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func addUsage(sum *model.Usage, u model.Usage) {
	sum.InputTokens += u.InputTokens
	sum.OutputTokens += u.OutputTokens
	sum.CacheCreationInputTokens += u.CacheCreationInputTokens
	sum.CacheReadInputTokens += u.CacheReadInputTokens
}

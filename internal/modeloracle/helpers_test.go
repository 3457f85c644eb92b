package modeloracle_test

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	antoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	oaoption "github.com/openai/openai-go/v3/option"

	"github.com/tackle-agent/tackle/daemon/model"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

const (
	apiKey         = "sk-oracle-test-key"
	anthropicModel = "claude-sonnet-4-5"
	openAIModel    = "gpt-4o"
)

// TestMain clears the variables the SDKs read at construction, so that a
// developer's real key, base URL or custom headers never reach these tests:
// every client here is configured explicitly.
func TestMain(m *testing.M) {
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ANTHROPIC_") || strings.HasPrefix(name, "OPENAI_") {
			os.Unsetenv(name)
		}
	}
	os.Exit(m.Run())
}

// start runs a fake model server for one client. Each client gets its own
// server with the same options: the same seed gives the same ids,
// signatures and redacted data to both, and Requests counts one client's.
func start(t *testing.T, opts fakemodel.Options, script fakemodel.Script) *fakemodel.Server {
	t.Helper()
	opts.APIKey = apiKey
	opts.Script = script
	return fakemodel.Start(t, &opts)
}

// httpClient is a client of its own per test, its idle connections closed
// at the end.
func httpClient(t *testing.T) *http.Client {
	c := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// The Anthropic side: what a client made of one Messages API stream, in the
// terms both clients share.

type antResult struct {
	ID, Model    string
	Blocks       []antBlock
	StopReason   string
	StopSequence string
	Usage        antUsage
}

type antBlock struct {
	Type      string
	Text      string `json:",omitempty"`
	Thinking  string `json:",omitempty"`
	Signature string `json:",omitempty"`
	Data      string `json:",omitempty"`
	ID        string `json:",omitempty"`
	Name      string `json:",omitempty"`
	Input     string `json:",omitempty"` // the tool input's JSON text
	// Raw is a block of another type (a server tool's use and result), as
	// canonical JSON: the SDK's accumulated wire JSON, tackle's Raw.
	Raw string `json:",omitempty"`
}

type antUsage struct{ Input, Output, CacheCreation, CacheRead int64 }

// delta is one normalized stream event, for comparing what each client saw
// while the stream ran (not only the accumulated end): kind is tool_use
// (Text "id name"), text, thinking, signature, input (a piece of a tool
// input), stop (of block Index), message (Text the stop reason). Empty text,
// thinking and input pieces are left out on both sides (tackle yields none).
type delta struct {
	Index int
	Kind  string
	Text  string
}

// antRun is one client's run against a server.
type antRun struct {
	Result antResult
	Deltas []delta
	Err    error
	// Tackle is tackle's Response (nil for the SDK, or when Stream failed).
	Tackle *model.Response
}

func userHi() []model.Message {
	return []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: "hi"}}}}
}

// sdkAnthropic streams one request with anthropic-sdk-go v2 and
// accumulates it with Message.Accumulate.
func sdkAnthropic(t *testing.T, baseURL string) antRun {
	t.Helper()
	client := anthropic.NewClient(
		antoption.WithoutEnvironmentDefaults(),
		antoption.WithBaseURL(baseURL),
		antoption.WithAPIKey(apiKey),
		antoption.WithHTTPClient(httpClient(t)),
	)
	stream := client.Messages.NewStreaming(t.Context(), anthropic.MessageNewParams{
		Model:     anthropicModel,
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	defer stream.Close()
	var run antRun
	var msg anthropic.Message
	for stream.Next() {
		ev := stream.Current()
		run.Deltas = appendSDKAnthropicDelta(run.Deltas, ev)
		if err := msg.Accumulate(ev); err != nil {
			run.Err = err
			break
		}
	}
	if run.Err == nil {
		run.Err = stream.Err()
	}
	run.Result = fromSDKMessage(&msg)
	return run
}

func appendSDKAnthropicDelta(ds []delta, ev anthropic.MessageStreamEventUnion) []delta {
	i := int(ev.Index)
	switch ev.Type {
	case "content_block_start":
		cb := ev.ContentBlock
		switch cb.Type {
		case "tool_use":
			ds = append(ds, delta{i, "tool_use", cb.ID + " " + cb.Name})
		case "text":
			if cb.Text != "" {
				ds = append(ds, delta{i, "text", cb.Text})
			}
		case "thinking":
			if cb.Thinking != "" {
				ds = append(ds, delta{i, "thinking", cb.Thinking})
			}
		}
	case "content_block_delta":
		d := ev.Delta
		switch d.Type {
		case "text_delta":
			if d.Text != "" {
				ds = append(ds, delta{i, "text", d.Text})
			}
		case "thinking_delta":
			if d.Thinking != "" {
				ds = append(ds, delta{i, "thinking", d.Thinking})
			}
		case "signature_delta":
			ds = append(ds, delta{i, "signature", d.Signature})
		case "input_json_delta":
			if d.PartialJSON != "" {
				ds = append(ds, delta{i, "input", d.PartialJSON})
			}
		}
	case "content_block_stop":
		ds = append(ds, delta{i, "stop", ""})
	case "message_delta":
		ds = append(ds, delta{-1, "message", string(ev.Delta.StopReason)})
	}
	return ds
}

func fromSDKMessage(m *anthropic.Message) antResult {
	r := antResult{
		ID: m.ID, Model: m.Model, StopReason: string(m.StopReason), StopSequence: m.StopSequence,
		Usage: antUsage{m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheCreationInputTokens, m.Usage.CacheReadInputTokens},
	}
	for _, b := range m.Content {
		ab := antBlock{Type: b.Type}
		switch b.Type {
		case "text":
			ab.Text = b.Text
		case "thinking":
			ab.Thinking, ab.Signature = b.Thinking, b.Signature
		case "redacted_thinking":
			ab.Data = b.Data
		case "tool_use":
			ab.ID, ab.Name, ab.Input = b.ID, b.Name, string(b.Input)
		default:
			ab.Raw = canonicalJSON(b.RawJSON())
		}
		r.Blocks = append(r.Blocks, ab)
	}
	return r
}

// tackleAnthropic streams the same request with model.NewAnthropic.
func tackleAnthropic(t *testing.T, baseURL string) antRun {
	t.Helper()
	p := model.NewAnthropic(&model.AnthropicOptions{BaseURL: baseURL, APIKey: apiKey, HTTPClient: httpClient(t)})
	st, err := p.Stream(t.Context(), model.Request{Model: anthropicModel, MaxTokens: 1024, Messages: userHi()})
	if err != nil {
		return antRun{Err: err}
	}
	defer st.Close()
	var run antRun
	for ev, err := range st.Events() {
		if err != nil {
			run.Err = err
			break
		}
		run.Deltas = appendTackleDelta(run.Deltas, ev)
	}
	run.Tackle = st.Response()
	run.Result = fromTackleAnthropic(run.Tackle)
	return run
}

func appendTackleDelta(ds []delta, ev model.Event) []delta {
	switch ev.Type {
	case model.EventText:
		return append(ds, delta{ev.Index, "text", ev.Text})
	case model.EventThinking:
		if ev.Text == "" { // the signature's event
			return append(ds, delta{ev.Index, "signature", ev.Signature})
		}
		return append(ds, delta{ev.Index, "thinking", ev.Text})
	case model.EventToolUse:
		return append(ds, delta{ev.Index, "tool_use", ev.ID + " " + ev.Name})
	case model.EventToolInput:
		return append(ds, delta{ev.Index, "input", ev.Text})
	case model.EventBlockStop:
		return append(ds, delta{ev.Index, "stop", ""})
	case model.EventMessage:
		return append(ds, delta{-1, "message", ev.StopReason})
	}
	return ds
}

func fromTackleAnthropic(r *model.Response) antResult {
	out := antResult{
		ID: r.ID, Model: r.Model, StopReason: r.StopReason, StopSequence: r.StopSequence,
		Usage: antUsage{int64(r.Usage.InputTokens), int64(r.Usage.OutputTokens),
			int64(r.Usage.CacheCreationInputTokens), int64(r.Usage.CacheReadInputTokens)},
	}
	for _, b := range r.Message.Content {
		ab := antBlock{Type: b.Type}
		switch b.Type {
		case model.BlockText:
			ab.Text = b.Text
		case model.BlockThinking:
			ab.Thinking, ab.Signature = b.Thinking, b.Signature
		case model.BlockRedactedThinking:
			ab.Data = b.Data
		case model.BlockToolUse:
			ab.ID, ab.Name, ab.Input = b.ID, b.Name, string(b.Input)
		default:
			ab.Raw = canonicalJSON(string(b.Raw))
		}
		out.Blocks = append(out.Blocks, ab)
	}
	return out
}

// The OpenAI side.

// oaResult is what a client made of one chat completions stream: the
// assistant's text (tackle's text blocks joined; the SDK's content), its
// tool calls by index, the usage in OpenAI's terms. The finish reason is
// compared apart: the SDK reports the wire's finish_reason, tackle a stop
// reason it derives (tool calls win over finish_reason).
type oaResult struct {
	ID, Model string
	Content   string
	ToolCalls []oaCall
	Usage     oaUsage
}

type oaCall struct {
	ID, Name  string
	Arguments string
}

type oaUsage struct{ Prompt, Completion, Cached int64 }

// oaDelta is one normalized chunk delta: text, tool_use (ID and Text the
// name) or input (a piece of the arguments of call ID).
type oaDelta struct {
	Kind, ID, Text string
}

type oaRun struct {
	Result oaResult
	// Finish is the SDK's finish_reason, or tackle's stop reason.
	Finish string
	Deltas []oaDelta
	Err    error
	Tackle *model.Response
}

// sdkOpenAI streams one request with openai-go v3 and accumulates it with
// ChatCompletionAccumulator.
func sdkOpenAI(t *testing.T, baseURL string) oaRun {
	t.Helper()
	client := openai.NewClient(
		oaoption.WithBaseURL(baseURL+"/v1"),
		oaoption.WithAPIKey(apiKey),
		oaoption.WithHTTPClient(httpClient(t)),
	)
	stream := client.Chat.Completions.NewStreaming(t.Context(), openai.ChatCompletionNewParams{
		Model:         openAIModel,
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	defer stream.Close()
	var run oaRun
	var acc openai.ChatCompletionAccumulator
	ids := map[int64]string{}
	for stream.Next() {
		chunk := stream.Current()
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			if ch.Delta.Content != "" {
				run.Deltas = append(run.Deltas, oaDelta{"text", "", ch.Delta.Content})
			}
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					ids[tc.Index] = tc.ID
					run.Deltas = append(run.Deltas, oaDelta{"tool_use", tc.ID, tc.Function.Name})
				}
				if tc.Function.Arguments != "" {
					run.Deltas = append(run.Deltas, oaDelta{"input", ids[tc.Index], tc.Function.Arguments})
				}
			}
		}
		if !acc.AddChunk(chunk) {
			run.Err = errString("the accumulator rejected a chunk")
			break
		}
	}
	if run.Err == nil {
		run.Err = stream.Err()
	}
	r := oaResult{ID: acc.ID, Model: acc.Model, Usage: oaUsage{acc.Usage.PromptTokens, acc.Usage.CompletionTokens, acc.Usage.PromptTokensDetails.CachedTokens}}
	if len(acc.Choices) > 0 {
		c := acc.Choices[0]
		run.Finish = c.FinishReason
		r.Content = c.Message.Content
		for _, tc := range c.Message.ToolCalls {
			r.ToolCalls = append(r.ToolCalls, oaCall{tc.ID, tc.Function.Name, tc.Function.Arguments})
		}
	}
	run.Result = r
	return run
}

// tackleOpenAI streams the same request with model.NewOpenAI.
func tackleOpenAI(t *testing.T, baseURL string) oaRun {
	t.Helper()
	p := model.NewOpenAI(&model.OpenAIOptions{BaseURL: baseURL + "/v1", APIKey: apiKey, HTTPClient: httpClient(t)})
	st, err := p.Stream(t.Context(), model.Request{Model: openAIModel, Messages: userHi()})
	if err != nil {
		return oaRun{Err: err}
	}
	defer st.Close()
	var run oaRun
	ids := map[int]string{}
	for ev, err := range st.Events() {
		if err != nil {
			run.Err = err
			break
		}
		switch ev.Type {
		case model.EventText:
			run.Deltas = append(run.Deltas, oaDelta{"text", "", ev.Text})
		case model.EventToolUse:
			ids[ev.Index] = ev.ID
			run.Deltas = append(run.Deltas, oaDelta{"tool_use", ev.ID, ev.Name})
		case model.EventToolInput:
			run.Deltas = append(run.Deltas, oaDelta{"input", ids[ev.Index], ev.Text})
		}
	}
	resp := st.Response()
	run.Tackle = resp
	run.Finish = resp.StopReason
	r := oaResult{ID: resp.ID, Model: resp.Model, Usage: oaUsage{
		Prompt:     int64(resp.Usage.InputTokens + resp.Usage.CacheReadInputTokens + resp.Usage.CacheCreationInputTokens),
		Completion: int64(resp.Usage.OutputTokens),
		Cached:     int64(resp.Usage.CacheReadInputTokens),
	}}
	for _, b := range resp.Message.Content {
		switch b.Type {
		case model.BlockText:
			r.Content += b.Text
		case model.BlockToolUse:
			r.ToolCalls = append(r.ToolCalls, oaCall{b.ID, b.Name, string(b.Input)})
		}
	}
	run.Result = r
	return run
}

// asTackleArguments is what tackle makes of a tool call's streamed
// arguments, by its documented rule (agent.md §2): "" is {}, text that is
// not a JSON object (cut off) is {} and marked incomplete. Applied to the
// SDK's raw string before comparing.
func asTackleArguments(s string) string {
	t := strings.TrimSpace(s)
	if t == "" {
		return "{}"
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(t), &m) != nil || m == nil {
		return "{}"
	}
	return t
}

// canonicalJSON re-encodes s with sorted keys and no spaces, numbers kept
// as written; text that does not parse is returned as is.
func canonicalJSON(s string) string {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}

type errString string

func (e errString) Error() string { return string(e) }

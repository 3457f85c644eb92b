package model

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// DefaultOpenAIBaseURL is OpenAI's API root (tackle adds /chat/completions;
// other servers' roots end in /v1 too: http://localhost:11434/v1 for
// Ollama, http://localhost:8080/v1 for llama.cpp's server, :8000/v1 vLLM).
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// OpenAIOptions configures NewOpenAI; nil means all defaults.
type OpenAIOptions struct {
	// BaseURL is the server's root, usually ending in /v1 (default
	// DefaultOpenAIBaseURL).
	BaseURL string
	// APIKey is sent as authorization: Bearer (local servers ignore it;
	// none is sent when empty).
	APIKey string
	// Headers are added to every request, after the ones above.
	Headers map[string]string
	// HTTPClient sends the requests (default: a client without timeout).
	HTTPClient *http.Client
	// MaxRetries: 0 means DefaultMaxRetries, a negative value none.
	MaxRetries int
	// UserAgent is the user-agent header (default "tackle").
	UserAgent string
	// MaxTokensField is the body field that carries Request.MaxTokens:
	// "max_completion_tokens" (OpenAI's current name; its reasoning models
	// reject the other) or "max_tokens" (what Ollama, llama.cpp and older
	// servers read). Default: the first for api.openai.com, else the
	// second.
	MaxTokensField string
	// KeyVar, BaseURLVar and ModelVar name what sets the key, the base URL
	// and the model, for error hints (defaults: "OPENAI_API_KEY",
	// "OPENAI_BASE_URL", `"model" in settings (or --model)`).
	KeyVar, BaseURLVar, ModelVar string
}

type openAIProvider struct {
	t         transport
	maxTokens string
}

// NewOpenAI returns a provider for OpenAI-compatible chat completions
// (POST {BaseURL}/chat/completions with stream: true and
// stream_options.include_usage): OpenAI, Ollama, llama.cpp's server, vLLM.
// It starts nothing; the provider is safe for concurrent use.
func NewOpenAI(opts *OpenAIOptions) Provider {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	o.BaseURL = cmp.Or(o.BaseURL, DefaultOpenAIBaseURL)
	official := officialHost(o.BaseURL, "api.openai.com")
	if o.MaxTokensField == "" {
		o.MaxTokensField = "max_tokens"
		if official {
			o.MaxTokensField = "max_completion_tokens"
		}
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "text/event-stream")
	if o.APIKey != "" {
		h.Set("Authorization", "Bearer "+o.APIKey)
	}
	h.Set("User-Agent", cmp.Or(o.UserAgent, "tackle"))
	for k, v := range o.Headers {
		h.Set(k, v)
	}
	return &openAIProvider{maxTokens: o.MaxTokensField, t: transport{
		provider:   "openai",
		url:        strings.TrimRight(o.BaseURL, "/") + "/chat/completions",
		baseURL:    o.BaseURL,
		baseURLVar: cmp.Or(o.BaseURLVar, "OPENAI_BASE_URL"),
		keyVar:     cmp.Or(o.KeyVar, "OPENAI_API_KEY"),
		modelVar:   cmp.Or(o.ModelVar, `"model" in settings (or --model)`),
		hasKey:     h.Get("Authorization") != "",
		client:     cmp.Or(o.HTTPClient, http.DefaultClient),
		header:     h,
		maxRetries: retries(o.MaxRetries),
		apiError:   openAIAPIError,
	}}
}

func (p *openAIProvider) Stream(ctx context.Context, req Request) (Stream, error) {
	if req.Model == "" {
		return nil, &Error{Provider: "openai", Type: ErrInvalidRequest, Message: "the request names no model", Hint: "set " + p.t.modelVar}
	}
	if !p.t.hasKey && officialHost(p.t.baseURL, "api.openai.com") {
		return nil, &Error{Provider: "openai", Type: ErrMissingKey, Message: "no API key for " + p.t.baseURL, Hint: "set " + p.t.keyVar}
	}
	body, err := json.Marshal(openAIBody(&req, p.maxTokens))
	if err != nil {
		return nil, &Error{Provider: "openai", Type: ErrInvalidRequest, Message: "encoding the request: " + err.Error(), Err: err}
	}
	return p.t.open(ctx, body, req.Retry, req.Model, func() decoder { return newOpenAIDecoder() })
}

// openAIAPIError reads {"error":{"message","type","param","code"}}, and the
// variants of compatible servers: {"error":"text"} (Ollama) and a
// top-level {"object":"error","message","type"} (vLLM).
func openAIAPIError(e *Error, body []byte) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
	}
	if json.Unmarshal(body, &v) != nil {
		return
	}
	if len(v.Error) == 0 || string(v.Error) == "null" {
		e.Type, e.Message = v.Type, v.Message
		return
	}
	e.Type, e.Message = openAIErrorValue(v.Error)
}

// openAIErrorValue reads an "error" value: an object or a string.
func openAIErrorValue(raw json.RawMessage) (typ, msg string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "", s
	}
	var o struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return "", string(raw)
	}
	var code string
	_ = json.Unmarshal(o.Code, &code)
	switch {
	case code == "model_not_found":
		typ = code // what the hints look for
	case o.Type != "":
		typ = o.Type
	default:
		typ = code
	}
	return typ, o.Message
}

// The request's wire form.

type oaRequest struct {
	Model               string      `json:"model"`
	Messages            []oaMessage `json:"messages"`
	Tools               []oaTool    `json:"tools,omitempty"`
	MaxTokens           int         `json:"max_tokens,omitempty"`
	MaxCompletionTokens int         `json:"max_completion_tokens,omitempty"`
	Stream              bool        `json:"stream"`
	StreamOptions       struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

type oaMessage struct {
	Role       string       `json:"role"`
	Content    any          `json:"content"` // string, []oaPart, or nil (null)
	ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
}

type oaPart struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL *struct {
		URL string `json:"url"`
	} `json:"image_url,omitempty"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

// openAIBody maps req to chat messages: the system prompt first; an
// assistant message's text (its blocks joined by a blank line) and
// tool_calls (arguments as a JSON string), its thinking dropped; a user
// message's tool_result blocks as one "tool" message each, first (the API
// wants them right after the assistant's), then its text and images as one
// user message. A tool result's images, which tool messages cannot carry,
// join that user message; an error result's text starts with "Error: ".
func openAIBody(req *Request, maxTokensField string) *oaRequest {
	r := &oaRequest{Model: req.Model, Stream: true, Messages: []oaMessage{}}
	r.StreamOptions.IncludeUsage = true
	if req.MaxTokens > 0 {
		if maxTokensField == "max_completion_tokens" {
			r.MaxCompletionTokens = req.MaxTokens
		} else {
			r.MaxTokens = req.MaxTokens
		}
	}
	if req.System != "" {
		r.Messages = append(r.Messages, oaMessage{Role: "system", Content: req.System})
	}
	for _, t := range req.Tools {
		var w oaTool
		w.Type = "function"
		w.Function.Name, w.Function.Description = t.Name, t.Description
		w.Function.Parameters = t.InputSchema
		if len(bytes.TrimSpace(w.Function.Parameters)) == 0 {
			w.Function.Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		r.Tools = append(r.Tools, w)
	}
	for _, m := range req.Messages {
		if m.Role == RoleAssistant {
			r.Messages = append(r.Messages, openAIAssistant(m))
			continue
		}
		var parts []oaPart
		for _, b := range m.Content {
			switch b.Type {
			case BlockToolResult:
				text, images := openAIToolResult(b)
				r.Messages = append(r.Messages, oaMessage{Role: "tool", ToolCallID: b.ToolUseID, Content: text})
				if len(images) > 0 {
					parts = append(parts, oaPart{Type: "text", Text: "(the images of tool result " + b.ToolUseID + ")"})
					parts = append(parts, images...)
				}
			case BlockText:
				if b.Text != "" {
					parts = append(parts, oaPart{Type: "text", Text: b.Text})
				}
			case BlockImage:
				parts = append(parts, imagePart(b))
			}
		}
		if len(parts) > 0 {
			r.Messages = append(r.Messages, oaMessage{Role: "user", Content: userContent(parts)})
		}
	}
	return r
}

func openAIAssistant(m Message) oaMessage {
	w := oaMessage{Role: "assistant"}
	var texts []string
	for _, b := range m.Content {
		switch b.Type {
		case BlockText:
			if b.Text != "" {
				texts = append(texts, b.Text)
			}
		case BlockToolUse:
			var c oaToolCall
			c.ID, c.Type = b.ID, "function"
			c.Function.Name = b.Name
			c.Function.Arguments = "{}"
			if validObject(b.Input) {
				c.Function.Arguments = string(b.Input)
			}
			w.ToolCalls = append(w.ToolCalls, c)
		}
	}
	if len(texts) > 0 {
		w.Content = strings.Join(texts, "\n\n")
	}
	return w
}

// openAIToolResult is a tool_result's text, and its images as parts.
func openAIToolResult(b Block) (string, []oaPart) {
	var texts []string
	var images []oaPart
	if b.Text != "" {
		texts = append(texts, b.Text)
	}
	for _, c := range b.Content {
		switch c.Type {
		case BlockText:
			texts = append(texts, c.Text)
		case BlockImage:
			images = append(images, imagePart(c))
		}
	}
	text := strings.Join(texts, "\n")
	if b.IsError && !strings.HasPrefix(strings.ToLower(text), "error") {
		text = "Error: " + text
	}
	return text, images
}

func imagePart(b Block) oaPart {
	p := oaPart{Type: "image_url", ImageURL: &struct {
		URL string `json:"url"`
	}{}}
	p.ImageURL.URL = "data:" + b.MediaType + ";base64," + b.Source
	return p
}

// userContent is a plain string when the parts are all text (what every
// compatible server reads), else the parts.
func userContent(parts []oaPart) any {
	texts := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.Type != "text" {
			return parts
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n\n")
}

// The stream's wire form.

type oaChunk struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Object  string          `json:"object"`
	Choices []oaChoice      `json:"choices"`
	Usage   *oaUsage        `json:"usage"`
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
}

type oaChoice struct {
	Index int `json:"index"`
	Delta struct {
		Content          *string       `json:"content"`
		ReasoningContent *string       `json:"reasoning_content"` // DeepSeek, vLLM, llama.cpp
		Reasoning        *string       `json:"reasoning"`         // Ollama, OpenRouter
		Refusal          *string       `json:"refusal"`
		ToolCalls        []oaToolDelta `json:"tool_calls"`
	} `json:"delta"`
	FinishReason *string `json:"finish_reason"`
}

type oaToolDelta struct {
	Index    *int   `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type oaUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// openAIDecoder accumulates a chat completions stream (choice 0). Blocks
// are made in the order their deltas come: a text (or reasoning, as a
// thinking block without signature) block while deltas of its kind come, a
// tool_use block per tool call. Text and thinking blocks end when another
// block starts, tool calls at [DONE] (parallel calls interleave), where the
// message event comes too, with the usage that arrives after finish_reason.
//
// Usage: the last usage object wins (the values are totals: OpenAI sends
// one, vLLM's continuous stats one per chunk, cumulative); prompt_tokens
// includes the cached ones, so InputTokens is prompt_tokens minus
// cached_tokens and CacheReadInputTokens the cached, as Anthropic counts.
type openAIDecoder struct {
	resp    Response
	states  []*blockState
	cur     int         // the open text or thinking block, -1 if none
	calls   map[int]int // tool call index → position
	last    int         // the last tool call's position, -1 if none
	stopped []bool      // a block_stop event went out
	finish  string      // the last finish_reason
	refused bool
	final   bool
}

func newOpenAIDecoder() *openAIDecoder {
	return &openAIDecoder{cur: -1, last: -1, calls: map[int]int{}}
}

func (d *openAIDecoder) event(name, data []byte, out []Event) ([]Event, bool, error) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return d.done(out), true, nil
	}
	var c oaChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return out, false, &Error{Provider: "openai", Type: ErrInvalidStream, Message: fmt.Sprintf("a chunk does not parse: %v", err)}
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		typ, msg := openAIErrorValue(c.Error)
		return out, false, &Error{Provider: "openai", Type: typ, Message: msg}
	}
	if c.Object == "error" {
		return out, false, &Error{Provider: "openai", Type: c.Type, Message: c.Message}
	}
	if d.resp.ID == "" {
		d.resp.ID = c.ID
	}
	if c.Model != "" {
		d.resp.Model = c.Model
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		if s := ch.Delta.ReasoningContent; s != nil {
			out = d.text(BlockThinking, *s, out)
		}
		if s := ch.Delta.Reasoning; s != nil {
			out = d.text(BlockThinking, *s, out)
		}
		if s := ch.Delta.Content; s != nil {
			out = d.text(BlockText, *s, out)
		}
		if s := ch.Delta.Refusal; s != nil && *s != "" {
			d.refused = true
			out = d.text(BlockText, *s, out)
		}
		for j := range ch.Delta.ToolCalls {
			out = d.toolCall(&ch.Delta.ToolCalls[j], out)
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			d.finish = *ch.FinishReason
		}
	}
	if u := c.Usage; u != nil {
		cached := 0
		if u.PromptTokensDetails != nil {
			cached = u.PromptTokensDetails.CachedTokens
		}
		d.resp.Usage = Usage{InputTokens: max(0, u.PromptTokens-cached), OutputTokens: u.CompletionTokens, CacheReadInputTokens: cached}
	}
	return out, false, nil
}

// text adds a piece of text or thinking, starting a block when needed.
func (d *openAIDecoder) text(typ, s string, out []Event) []Event {
	if s == "" {
		return out
	}
	if d.cur < 0 || d.resp.Message.Content[d.cur].Type != typ {
		out = d.stopCur(out)
		d.cur = d.add(Block{Type: typ})
	}
	d.states[d.cur].buf.WriteString(s)
	ev := EventText
	if typ == BlockThinking {
		ev = EventThinking
	}
	return append(out, Event{Type: ev, Index: d.cur, Text: s})
}

// toolCall adds a tool-call fragment: the first of a call has its index, id
// and name; later ones its index and a piece of the arguments. A fragment
// whose id differs from its index's call starts a new call (servers that
// send each whole call at index 0); one without index belongs to the last
// call unless it has an id. A call without id gets one (the next request
// must name it).
func (d *openAIDecoder) toolCall(tc *oaToolDelta, out []Event) []Event {
	pos, ok := -1, false
	if tc.Index != nil {
		pos, ok = d.calls[*tc.Index]
	} else if tc.ID == "" && d.last >= 0 {
		pos, ok = d.last, true
	}
	if ok && tc.ID != "" && d.resp.Message.Content[pos].ID != tc.ID {
		ok = false
	}
	if !ok {
		out = d.stopCur(out)
		id := tc.ID
		if id == "" {
			id = "call_" + rand.Text()
		}
		pos = d.add(Block{Type: BlockToolUse, ID: id, Name: tc.Function.Name})
		if tc.Index != nil {
			d.calls[*tc.Index] = pos
		}
		d.last = pos
		out = append(out, Event{Type: EventToolUse, Index: pos, ID: id, Name: tc.Function.Name})
	} else if n := tc.Function.Name; n != "" && n != d.resp.Message.Content[pos].Name {
		d.resp.Message.Content[pos].Name += n // as openai-go accumulates it
	}
	args := tc.Function.Arguments
	var piece string
	switch {
	case len(args) == 0 || string(args) == "null":
	case args[0] == '"':
		_ = json.Unmarshal(args, &piece)
	default:
		piece = string(args) // a server that sends the arguments as an object
	}
	if piece != "" {
		st := d.states[pos]
		st.sawInput = true
		st.buf.WriteString(piece)
		out = append(out, Event{Type: EventToolInput, Index: pos, Text: piece})
	}
	return out
}

func (d *openAIDecoder) add(b Block) int {
	d.resp.Message.Content = append(d.resp.Message.Content, b)
	d.states = append(d.states, &blockState{})
	d.stopped = append(d.stopped, false)
	return len(d.resp.Message.Content) - 1
}

// stopCur ends the open text or thinking block.
func (d *openAIDecoder) stopCur(out []Event) []Event {
	if d.cur < 0 {
		return out
	}
	i := d.cur
	d.cur = -1
	d.states[i].stopped, d.stopped[i] = true, true
	d.states[i].finalize(&d.resp.Message.Content[i])
	return append(out, Event{Type: EventBlockStop, Index: i})
}

// done handles [DONE]: every block ends, then the message event.
func (d *openAIDecoder) done(out []Event) []Event {
	out = d.stopCur(out)
	hasCalls := false
	for i := range d.states {
		if d.resp.Message.Content[i].Type == BlockToolUse {
			hasCalls = true
		}
		if !d.stopped[i] {
			d.states[i].stopped, d.stopped[i] = true, true
			out = append(out, Event{Type: EventBlockStop, Index: i})
		}
	}
	switch {
	case d.finish == "length":
		d.resp.StopReason = StopMaxTokens
	case d.finish == "content_filter" || d.refused:
		d.resp.StopReason = StopRefusal
	case hasCalls:
		d.resp.StopReason = StopToolUse // whatever finish_reason said
	default:
		d.resp.StopReason = StopEndTurn
	}
	d.response()
	return append(out, Event{Type: EventMessage, StopReason: d.resp.StopReason, Usage: d.resp.Usage})
}

func (d *openAIDecoder) truncated() error {
	return &Error{Provider: "openai", Type: ErrIncomplete, Message: "the stream ended before [DONE]"}
}

func (d *openAIDecoder) response() *Response {
	if !d.final {
		d.final = true
		for i, st := range d.states {
			st.finalize(&d.resp.Message.Content[i])
		}
		d.resp.Message.Role = RoleAssistant
		markCutOff(&d.resp)
	}
	return &d.resp
}

package fakemodel

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// Format is a wire format.
type Format string

const (
	Anthropic Format = "anthropic" // POST /v1/messages
	OpenAI    Format = "openai"    // POST /v1/chat/completions
)

// Request is one captured request. It is never changed after capture, so
// it may be read from any goroutine.
type Request struct {
	// Index is the request's place in arrival order, from 0.
	Index  int
	Time   time.Time
	Format Format // "" for a path this server does not serve
	Method string
	Path   string // without the query
	Header http.Header
	Body   []byte
	// Anthropic or OpenAI is the parsed body (nil when it did not parse, or
	// for the other format).
	Anthropic *AnthropicRequest
	OpenAI    *OpenAIRequest
}

// Outcome is what the server answered to one request.
type Outcome struct {
	Status int
	// Error is the error message sent: a check's 400 text, a 401, a
	// scripted HTTP or in-stream error ("" for a clean stream).
	Error string
	// Events is how many SSE events (openai: data lines) were written,
	// pings included.
	Events int
	// ClientGone is true when the request's context ended before the
	// response did: the client went away (a cancelled request), or Run
	// stopped. The connection is then cut, never ended cleanly.
	ClientGone bool
	// Turn is the turn served, with generated ids and signatures filled in
	// (nil for a rejected request).
	Turn *Turn
}

// AnthropicRequest is a Messages API request body.
type AnthropicRequest struct {
	Model      string             `json:"model"`
	MaxTokens  int                `json:"max_tokens"`
	System     json.RawMessage    `json:"system,omitempty"` // a string or text blocks
	Messages   []AnthropicMessage `json:"messages"`
	Tools      []AnthropicTool    `json:"tools,omitempty"`
	ToolChoice json.RawMessage    `json:"tool_choice,omitempty"`
	Thinking   *AnthropicThinking `json:"thinking,omitempty"`
	Stream     bool               `json:"stream"`
	Metadata   json.RawMessage    `json:"metadata,omitempty"`
}

// AnthropicThinking is the request's thinking setting.
type AnthropicThinking struct {
	Type         string `json:"type"` // enabled, adaptive, disabled
	BudgetTokens int    `json:"budget_tokens,omitempty"`
}

// enabled reports whether the request asks for thinking.
func (t *AnthropicThinking) enabled() bool { return t != nil && t.Type != "" && t.Type != "disabled" }

// AnthropicTool is a tool definition.
type AnthropicTool struct {
	Type         string          `json:"type,omitempty"`
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// AnthropicMessage is one message of the request. A string content is
// parsed as one text block, with StringContent set.
type AnthropicMessage struct {
	Role          string           `json:"role"`
	Content       []AnthropicBlock `json:"content"`
	StringContent bool             `json:"-"`
}

// UnmarshalJSON accepts content as a string or an array of blocks.
func (m *AnthropicMessage) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	var s string
	if len(raw.Content) > 0 && raw.Content[0] == '"' {
		if err := json.Unmarshal(raw.Content, &s); err != nil {
			return err
		}
		m.Content = []AnthropicBlock{{Type: "text", Text: s}}
		m.StringContent = true
		return nil
	}
	if len(raw.Content) == 0 || string(raw.Content) == "null" {
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// empty reports whether the message has no content.
func (m *AnthropicMessage) empty() bool {
	return len(m.Content) == 0 || (m.StringContent && m.Content[0].Text == "")
}

// AnthropicBlock is a content block of a request message.
type AnthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// tool_use
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// tool_result
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"` // a string or blocks
	IsError   bool            `json:"is_error,omitempty"`
	// thinking, redacted_thinking
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
	// image, document
	Source       json.RawMessage `json:"source,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

// ResultText is a tool_result's content as text (text blocks joined).
func (b *AnthropicBlock) ResultText() string { return contentText(b.Content) }

// OpenAIRequest is a chat completions request body.
type OpenAIRequest struct {
	Model         string          `json:"model"`
	Messages      []OpenAIMessage `json:"messages"`
	Tools         []OpenAITool    `json:"tools,omitempty"`
	ToolChoice    json.RawMessage `json:"tool_choice,omitempty"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options,omitempty"`
	MaxTokens           *int `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int `json:"max_completion_tokens,omitempty"`
}

func (r *OpenAIRequest) includeUsage() bool {
	return r.StreamOptions != nil && r.StreamOptions.IncludeUsage
}

// OpenAIMessage is one message of a chat completions request.
type OpenAIMessage struct {
	Role             string           `json:"role"`
	Content          json.RawMessage  `json:"content,omitempty"` // a string, parts, or null
	Name             string           `json:"name,omitempty"`
	ToolCalls        []OpenAIToolCall `json:"tool_calls,omitempty"`
	ToolCallID       string           `json:"tool_call_id,omitempty"`
	ReasoningContent string           `json:"reasoning_content,omitempty"`
}

// Text is the message's content as text (text parts joined).
func (m *OpenAIMessage) Text() string { return contentText(m.Content) }

// OpenAIToolCall is a tool call of an assistant message.
type OpenAIToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// OpenAITool is a tool definition.
type OpenAITool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// contentText is the text of a content that is a string or an array of
// blocks/parts with "text".
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// ToolResult is one tool result a request sends back.
type ToolResult struct {
	ID      string // the tool_use id / tool_call_id
	Content string // as text
	IsError bool   // Anthropic's is_error (always false for openai)
}

// ToolResults are the tool results of the request's last turn: the
// tool_result blocks of the last user message (Anthropic), or the tool
// messages after the last assistant message (openai), in order.
func (r *Request) ToolResults() []ToolResult {
	var out []ToolResult
	switch {
	case r.Anthropic != nil:
		ms := r.Anthropic.Messages
		if len(ms) == 0 || ms[len(ms)-1].Role != "user" {
			return nil
		}
		for _, b := range ms[len(ms)-1].Content {
			if b.Type == "tool_result" {
				out = append(out, ToolResult{ID: b.ToolUseID, Content: b.ResultText(), IsError: b.IsError})
			}
		}
	case r.OpenAI != nil:
		ms := r.OpenAI.Messages
		i := len(ms)
		for i > 0 && ms[i-1].Role == "tool" {
			i--
		}
		for _, m := range ms[i:] {
			out = append(out, ToolResult{ID: m.ToolCallID, Content: m.Text()})
		}
	}
	return out
}

// LastUserText is the text of the last user message ("" when the request
// ends otherwise).
func (r *Request) LastUserText() string {
	switch {
	case r.Anthropic != nil:
		ms := r.Anthropic.Messages
		if len(ms) == 0 || ms[len(ms)-1].Role != "user" {
			return ""
		}
		var b strings.Builder
		for _, bl := range ms[len(ms)-1].Content {
			if bl.Type == "text" {
				b.WriteString(bl.Text)
			}
		}
		return b.String()
	case r.OpenAI != nil:
		ms := r.OpenAI.Messages
		if len(ms) == 0 || ms[len(ms)-1].Role != "user" {
			return ""
		}
		return ms[len(ms)-1].Text()
	}
	return ""
}

// FirstUserText is the text of the first user message: what a
// conversation began with, which tells apart the conversations of a
// parent and its sub-agents.
func (r *Request) FirstUserText() string {
	switch {
	case r.Anthropic != nil:
		for _, m := range r.Anthropic.Messages {
			if m.Role != "user" {
				continue
			}
			var b strings.Builder
			for _, bl := range m.Content {
				if bl.Type == "text" {
					b.WriteString(bl.Text)
				}
			}
			return b.String()
		}
	case r.OpenAI != nil:
		for _, m := range r.OpenAI.Messages {
			if m.Role == "user" {
				return m.Text()
			}
		}
	}
	return ""
}

// System is the system prompt as text: Anthropic's system, or the openai
// system and developer messages joined by blank lines.
func (r *Request) System() string {
	switch {
	case r.Anthropic != nil:
		return contentText(r.Anthropic.System)
	case r.OpenAI != nil:
		var parts []string
		for _, m := range r.OpenAI.Messages {
			if m.Role == "system" || m.Role == "developer" {
				parts = append(parts, m.Text())
			}
		}
		return strings.Join(parts, "\n\n")
	}
	return ""
}

// ToolNames are the names of the tools the request offers.
func (r *Request) ToolNames() []string {
	var out []string
	switch {
	case r.Anthropic != nil:
		for _, t := range r.Anthropic.Tools {
			out = append(out, t.Name)
		}
	case r.OpenAI != nil:
		for _, t := range r.OpenAI.Tools {
			out = append(out, t.Function.Name)
		}
	}
	return out
}

// Model is the model the request names.
func (r *Request) Model() string {
	switch {
	case r.Anthropic != nil:
		return r.Anthropic.Model
	case r.OpenAI != nil:
		return r.OpenAI.Model
	}
	return ""
}

// Package model speaks to model providers: one streaming interface
// (Provider.Stream) over the Anthropic Messages API and OpenAI-compatible
// chat completions, each a small client of its own over net/http, with the
// retry policy of ../shared/docs/agent.md §3.
//
// It owns the wire formats and their quirks, and nothing of the loop: it
// never runs a tool, never decides a stop, never keeps a conversation. It
// imports nothing of tackle (it sits at the bottom of the import rule) and
// no SDK: the daemon must not link them.
//
// Files: model.go the types; anthropic.go and openai.go the two providers
// (request mapping, stream decoding); sse.go the event-stream reader;
// stream.go the Stream over an HTTP response; retry.go the retry policy and
// the errors' hints; config.go Resolve, the settings and environment
// (Claude Code's names first) to a Provider.
//
// A Stream reads its body on the goroutine that ranges over Events; the
// package starts no goroutine of its own but a 100 ms timer's callback
// (net/http's transport starts its own).
package model

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
)

// Role of a message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// Block types (Anthropic's names; the openai provider maps them).
const (
	BlockText             = "text"
	BlockThinking         = "thinking"
	BlockRedactedThinking = "redacted_thinking"
	BlockToolUse          = "tool_use"
	BlockToolResult       = "tool_result"
	BlockImage            = "image"
)

// Stop reasons a provider reports (the openai provider maps finish_reason
// to these: stop → end_turn, length → max_tokens, tool_calls → tool_use,
// content_filter → refusal).
const (
	StopEndTurn       = "end_turn"
	StopMaxTokens     = "max_tokens"
	StopToolUse       = "tool_use"
	StopStopSequence  = "stop_sequence"
	StopPauseTurn     = "pause_turn"
	StopRefusal       = "refusal"
	StopContextWindow = "model_context_window_exceeded"
)

// Block is one content block of a message.
type Block struct {
	Type string `json:"type"`
	// Text is a text block's text, or a tool result's text.
	Text string `json:"text,omitempty"`
	// Thinking and Signature are a thinking block's, sent back unchanged
	// (the openai provider's reasoning text comes as one without
	// signature, which the anthropic provider leaves out).
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	// Data is a redacted_thinking block's, sent back unchanged.
	Data string `json:"data,omitempty"`
	// ID, Name and Input are a tool_use block's. Input is the accumulated
	// JSON ("" streamed is {}); InputComplete is false when the stream
	// stopped inside it (max_tokens with this the last block, a stream cut
	// off) or it is not a JSON object: such a call must never run, and its
	// Input is then {} (so the message can still be sent back).
	ID            string          `json:"id,omitempty"`
	Name          string          `json:"name,omitempty"`
	Input         json.RawMessage `json:"input,omitempty"`
	InputComplete bool            `json:"input_complete,omitempty"`
	// ToolUseID, IsError and Content are a tool_result block's (Content:
	// text and image blocks).
	ToolUseID string  `json:"tool_use_id,omitempty"`
	IsError   bool    `json:"is_error,omitempty"`
	Content   []Block `json:"content,omitempty"`
	// MediaType and Source are an image block's (base64 data).
	MediaType string `json:"media_type,omitempty"`
	Source    string `json:"source,omitempty"`
	// Raw is a block of a type this package does not model (a server
	// tool's result, say), as the API sent it at its start; the anthropic
	// provider sends it back unchanged, the openai provider drops it.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// Tool is what the model is told about one tool.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Usage is the token use of one response (cumulative over its stream).
type Usage struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
}

// Request is one model request.
type Request struct {
	Model     string
	MaxTokens int
	// System is the system prompt (Anthropic: cache_control is set on it).
	System   string
	Messages []Message
	Tools    []Tool
	// Thinking, when > 0, asks for extended thinking with this budget
	// (thinking type "enabled"); when < 0, for adaptive thinking (type
	// "adaptive": the models from Claude Sonnet 5 on reject a manual
	// budget with a 400). Anthropic only; the openai provider ignores it.
	Thinking int
	// Retry, if set, is told of each retry before its wait, so clients can
	// show it ("retrying in 2.0 s: overloaded").
	Retry func(RetryInfo)
}

// RetryInfo describes one retry.
type RetryInfo struct {
	Attempt int // 1 for the first retry
	Wait    float64
	Status  int    // the HTTP status, 0 for a connection error
	Reason  string // "overloaded", "rate limited", the error's message
}

// EventType says what a stream Event carries.
type EventType string

const (
	// EventText: Text is a piece of the text block at Index.
	EventText EventType = "text"
	// EventThinking: Text is a piece of thinking (Signature set on the
	// signature's event).
	EventThinking EventType = "thinking"
	// EventToolUse: a tool_use block starts at Index (ID, Name).
	EventToolUse EventType = "tool_use"
	// EventToolInput: Text is a piece of the tool input at Index.
	EventToolInput EventType = "tool_input"
	// EventBlockStop: the block at Index is complete.
	EventBlockStop EventType = "block_stop"
	// EventMessage: StopReason and Usage (the message_delta).
	EventMessage EventType = "message"
)

// Event is one normalized stream event. Index is the block's position in
// Response.Message.Content.
type Event struct {
	Type       EventType
	Index      int
	Text       string
	Signature  string
	ID, Name   string
	StopReason string
	Usage      Usage
}

// Response is the accumulated result of a stream.
type Response struct {
	ID         string
	Model      string
	Message    Message // role assistant, the blocks in order
	StopReason string
	// StopSequence names the stop sequence of StopStopSequence.
	StopSequence string
	Usage        Usage
	// RequestID is the server's request-id header (for bug reports).
	RequestID string
}

// Stream is one streaming response. Events yields the normalized events as
// they arrive (with an error last if the stream failed: an in-stream error
// event, a cancelled context, or a stream that ended before its end — never
// an empty success); Response is the accumulated message once Events is
// exhausted, partial when it failed (a tool_use still open then has
// InputComplete false).
//
// Events may be ranged over once, by one goroutine; breaking out of the
// loop closes the stream. Response must not be called while Events runs.
// Close may be called from any goroutine at any time.
type Stream interface {
	Events() iter.Seq2[Event, error]
	Response() *Response
	// Close aborts the HTTP request if it is still open. Idempotent.
	Close() error
}

// Provider streams model responses. Implementations are safe for
// concurrent use.
type Provider interface {
	// Stream sends req and returns its stream once the first event has
	// arrived, after the retries the policy allows for a failure before
	// it (retry.go). Cancelling ctx aborts the request, also mid-stream.
	// Its errors are *Error, or wrap ctx's error.
	Stream(ctx context.Context, req Request) (Stream, error)
}

// Error types of the failures this package finds itself (the API's own
// types, "overloaded_error" and the like, come as the server sent them).
const (
	// ErrMissingKey: no API key for a server that needs one; no request
	// was sent.
	ErrMissingKey = "missing_api_key"
	// ErrConnection: no HTTP response (Status 0), or a body that broke
	// before its first event.
	ErrConnection = "connection_error"
	// ErrIncomplete: the stream ended before its end (message_stop,
	// [DONE]).
	ErrIncomplete = "incomplete_stream"
	// ErrInvalidStream: an event that does not parse, or out of order.
	ErrInvalidStream = "invalid_stream"
	// ErrInvalidRequest: the Request itself cannot be sent (no model).
	ErrInvalidRequest = "invalid_request"
)

// Error is a provider's failure: an HTTP status with the API's error type
// and message, an in-stream error (Status 0, the API's Type), or a failure
// of the transport or the stream (Status 0, the Err* types above).
type Error struct {
	Provider string // "anthropic" or "openai"
	Status   int
	Type     string // "overloaded_error", "rate_limit_error", …
	Message  string
	// Hint says what to set or do, for the errors a person can fix (a
	// missing key, 401/403, an unknown model, an unreachable base URL), or
	// why a retry was not made (a wait too long).
	Hint string
	// Retryable reports whether the retry policy would retry it.
	Retryable bool
	// RequestID is the server's request-id, when it sent one.
	RequestID string
	// Attempts is how many requests were sent (1 + the retries made).
	Attempts int
	// Err is the underlying error, if any: the transport's, or
	// context.DeadlineExceeded when a wait would pass the deadline.
	Err error
}

func (e *Error) Error() string {
	s := e.Provider
	if e.Status != 0 {
		s += fmt.Sprintf(": HTTP %d", e.Status)
	} else {
		s += ":"
	}
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" [after %d attempts]", e.Attempts)
	}
	return s
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

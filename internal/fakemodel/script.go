package fakemodel

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// A Script answers the requests that passed the API's checks (rejected ones
// never reach it), in arrival order. It runs on the request's goroutine: a
// Script used by concurrent requests must be safe for concurrent use. It
// must not call t.Fatal (that is for the test goroutine); a panic is
// answered with a 500 and reported like an unplanned request.
type Script func(r *Request) Turn

// Turns answers the i-th request that reaches the script with turns[i]. A
// request after the last turn gets a 500 api_error and is reported by
// Unplanned (and fails the test when the server came from Start). Safe for
// concurrent use.
func Turns(turns ...Turn) Script {
	var mu sync.Mutex
	next := 0
	return func(r *Request) Turn {
		mu.Lock()
		defer mu.Unlock()
		if next >= len(turns) {
			return Turn{unplanned: fmt.Sprintf("request %d (%s %s) came after the script's last turn (%d turns)",
				r.Index, r.Method, r.Path, len(turns))}
		}
		next++
		return turns[next-1]
	}
}

// Route is one conversation of a Conversations script: the requests
// whose first user message contains Prompt get Script's turns.
type Route struct {
	Prompt string
	Script Script
}

// Conversations scripts several conversations at once (a parent and its
// sub-agents, whose requests interleave): each request goes to the first
// route whose Prompt its first user message contains. A request of no
// route is unplanned.
func Conversations(routes ...Route) Script {
	return func(r *Request) Turn {
		first := r.FirstUserText()
		for _, rt := range routes {
			if strings.Contains(first, rt.Prompt) {
				return rt.Script(r)
			}
		}
		return Turn{unplanned: fmt.Sprintf("request %d belongs to no conversation of the script (its first user message: %.80q)", r.Index, first)}
	}
}

// Repeat answers every request with t.
func Repeat(t Turn) Script { return func(*Request) Turn { return t } }

// Turn is the server's answer to one request: a streamed assistant message,
// or a failure. The zero Turn is an empty end_turn message.
type Turn struct {
	// Blocks are the message's content blocks, in order.
	Blocks []Block
	// StopReason is message_delta's stop_reason (default tool_use when a
	// block is a tool_use, else end_turn). The openai format maps it to
	// finish_reason: end_turn and stop_sequence → stop, max_tokens → length,
	// tool_use → tool_calls, refusal → content_filter.
	StopReason string
	// StopSequence is message_delta's stop_sequence (null when empty).
	StopSequence string
	// StopDetails is message_delta's delta.stop_details (e.g. for refusal),
	// written verbatim when set.
	StopDetails json.RawMessage
	// FinishReason overrides the openai finish_reason (e.g. "stop" after
	// tool calls, as gpt-4o has answered).
	FinishReason string
	// Usage is the final, cumulative usage (message_delta; the openai usage
	// chunk). Zero fields are estimated: input from the request body's size,
	// output from the blocks' size (about 4 bytes a token).
	Usage Usage
	// StartUsage is message_start's usage (default: Usage's input counts and
	// output_tokens 1).
	StartUsage *Usage
	// ID is the message id (default a fresh msg_01… or chatcmpl-…).
	ID string
	// Model is the model reported (default the request's).
	Model string
	// Chunk is the most runes one delta carries (default 10); a Block's
	// Pieces override it.
	Chunk int
	// Pings places Anthropic ping events (default PingDefault). PingAt, when
	// set, puts one ping after each listed count of events (pings not
	// counted), instead.
	Pings  PingMode
	PingAt []int

	// Status, when set and not 200, answers with that HTTP status and an
	// error body instead of a stream: Error's (default: the API's type for
	// the status), or Body verbatim when set.
	Status int
	Error  *APIError
	Body   string
	// Header is added to the response (a stream's or an error's), e.g.
	// retry-after, retry-after-ms, x-should-retry.
	Header http.Header

	// StreamError ends a 200 stream with an in-stream error (event: error,
	// or an openai {"error":…} chunk) after CutAfter events.
	StreamError *APIError
	// Truncate ends the stream after CutAfter events without message_stop
	// (or [DONE]): a clean end of the body. Abort cuts the connection there
	// instead, so the client's read fails.
	Truncate bool
	Abort    bool
	// CutAfter is how many events (openai: data chunks) are written before
	// StreamError, Truncate or Abort, pings included. 0 means right after
	// the last content delta (before its block's stop).
	CutAfter int
	// Delay is waited before each event (and before an error response);
	// the wait ends early when the client goes away.
	Delay time.Duration
	// Hold pauses the stream after some events until released or until the
	// client goes away.
	Hold *Hold

	// Raw, when set, is written verbatim as the 200 body (an SSE recording);
	// CutAfter, StreamError, Truncate, Abort, Delay and Hold apply to its
	// events (separated by blank lines). See Replay.
	Raw []byte

	unplanned string // set by Turns past its end
}

// With returns a copy of t with one more response header.
func (t Turn) With(key, value string) Turn {
	h := t.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	t.Header = h
	return t
}

// PingMode says where Anthropic ping events go.
type PingMode int

const (
	// PingDefault: one ping after the first content_block_start and one
	// between every two blocks, as the live API sends them.
	PingDefault PingMode = iota
	// PingBetween: a ping between every two blocks only.
	PingBetween
	// PingNone: no pings.
	PingNone
)

// Usage is token use, in Anthropic's terms (the openai format reports
// prompt_tokens = input + cache reads + cache writes).
type Usage struct {
	InputTokens              int
	OutputTokens             int
	CacheCreationInputTokens int
	CacheReadInputTokens     int
}

// APIError is an error the API reports: its type (Anthropic's names:
// invalid_request_error, authentication_error, rate_limit_error,
// api_error, overloaded_error, …; the openai format maps them) and message.
// Code and Param are the openai body's (null when empty).
type APIError struct {
	Type    string
	Message string
	Code    string
	Param   string
}

// Block is one content block the assistant sends.
type Block struct {
	// Type is "text", "thinking", "redacted_thinking" or "tool_use".
	Type string
	// Text is a text block's text.
	Text string
	// Thinking is a thinking block's text; Signature its signature (default:
	// one this server makes and later verifies).
	Thinking  string
	Signature string
	// Data is a redacted_thinking block's data (default generated).
	Data string
	// ID (default a fresh toolu_01…, or call_… for openai), Name and Input
	// are a tool_use block's. Input is the JSON text as streamed, which may
	// be cut short (max_tokens in the middle of a tool input); "" is a tool
	// without arguments.
	ID    string
	Name  string
	Input string
	// Pieces, when set, are the deltas exactly (their concatenation is the
	// block's text, thinking or input). A tool_use's input still starts with
	// the empty partial_json "".
	Pieces []string
}

// Text is a text block.
func Text(s string) Block { return Block{Type: "text", Text: s} }

// Thinking is a thinking block, signed by the server.
func Thinking(s string) Block { return Block{Type: "thinking", Thinking: s} }

// RedactedThinking is a redacted_thinking block with generated data.
func RedactedThinking() Block { return Block{Type: "redacted_thinking"} }

// ToolUse is a tool_use block calling name. input is the arguments: a
// string or json.RawMessage is used as the JSON text (it may be invalid, to
// cut it short), nil means no arguments, anything else is marshalled.
func ToolUse(name string, input any) Block {
	var s string
	switch v := input.(type) {
	case nil:
	case string:
		s = v
	case json.RawMessage:
		s = string(v)
	case []byte:
		s = string(v)
	default:
		s = string(jsonText(v))
	}
	return Block{Type: "tool_use", Name: name, Input: s}
}

// Reply is a Turn that sends blocks.
func Reply(blocks ...Block) Turn { return Turn{Blocks: blocks} }

// Say is a Turn that sends one text block.
func Say(text string) Turn { return Reply(Text(text)) }

// Call is a Turn that calls one tool (stop reason tool_use).
func Call(name string, input any) Turn { return Reply(ToolUse(name, input)) }

// HTTPError is a Turn that answers with status and an error body of errType
// and message (empty: the API's defaults for the status).
func HTTPError(status int, errType, message string) Turn {
	e := defaultError(status)
	if errType != "" {
		e.Type = errType
	}
	if message != "" {
		e.Message = message
	}
	return Turn{Status: status, Error: &e}
}

// Overloaded is the API's 529 overloaded_error "Overloaded".
func Overloaded() Turn { return HTTPError(529, "", "") }

// RateLimited is a 429 rate_limit_error; add retry-after with With.
func RateLimited() Turn { return HTTPError(http.StatusTooManyRequests, "", "") }

// Replay is a Turn that writes raw, a recorded SSE body, verbatim. The
// tool_use ids and thinking signatures in it count as issued by this server.
func Replay(raw []byte) Turn { return Turn{Raw: raw} }

// ReplayFile is Replay of a file, or fails t.
func ReplayFile(t testing.TB, path string) Turn {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading recorded stream: %v", err)
	}
	return Replay(b)
}

// Hold pauses a stream: after After events (pings included; 0 is right
// after the response headers) the stream waits until Release or until the
// client goes away. Use one Hold for one request. Safe for concurrent use.
type Hold struct {
	after   int
	reached chan struct{}
	release chan struct{}
	rOnce   sync.Once
	relOnce sync.Once
}

// NewHold makes a Hold that pauses after after events.
func NewHold(after int) *Hold {
	return &Hold{after: after, reached: make(chan struct{}), release: make(chan struct{})}
}

// Reached is closed when the stream has paused.
func (h *Hold) Reached() <-chan struct{} { return h.reached }

// Release lets the stream go on. Idempotent.
func (h *Hold) Release() { h.relOnce.Do(func() { close(h.release) }) }

func (h *Hold) reach() { h.rOnce.Do(func() { close(h.reached) }) }

// defaultError is the Anthropic error for an HTTP status, per
// https://platform.claude.com/docs/en/api/errors.
func defaultError(status int) APIError {
	switch status {
	case 400:
		return APIError{Type: "invalid_request_error", Message: "Invalid request"}
	case 401:
		return APIError{Type: "authentication_error", Message: "invalid x-api-key"}
	case 402:
		return APIError{Type: "billing_error", Message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}
	case 403:
		return APIError{Type: "permission_error", Message: "Your API key does not have permission to use the specified resource."}
	case 404:
		return APIError{Type: "not_found_error", Message: "Not found"}
	case 408:
		return APIError{Type: "timeout_error", Message: "Request timed out"}
	case 409:
		return APIError{Type: "conflict_error", Message: "Conflict"}
	case 413:
		return APIError{Type: "request_too_large", Message: "Request exceeds the maximum allowed number of bytes."}
	case 429:
		return APIError{Type: "rate_limit_error", Message: "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://claude.com/contact-sales to discuss your options for a rate limit increase."}
	case 504:
		return APIError{Type: "timeout_error", Message: "Request timed out"}
	case 529:
		return APIError{Type: "overloaded_error", Message: "Overloaded"}
	}
	if status >= 500 {
		return APIError{Type: "api_error", Message: "Internal server error"}
	}
	return APIError{Type: "invalid_request_error", Message: http.StatusText(status)}
}

// jsonText marshals v without HTML escaping (as the APIs write JSON) and
// without a trailing newline. It panics on unmarshalable values: they are
// programming errors of this package.
func jsonText(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("fakemodel: marshalling %T: %v", v, err))
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// obj builds a JSON object with its keys in the order given: obj(k1, v1,
// k2, v2, …). A json.RawMessage value is written as is, nil as null.
func obj(kvs ...any) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; i+1 < len(kvs); i += 2 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonText(kvs[i].(string)))
		b.WriteByte(':')
		switch v := kvs[i+1].(type) {
		case json.RawMessage:
			b.Write(v)
		case nil:
			b.WriteString("null")
		default:
			b.Write(jsonText(v))
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// arr builds a JSON array of raw elements.
func arr(elems ...json.RawMessage) json.RawMessage {
	parts := make([][]byte, len(elems))
	for i, e := range elems {
		parts[i] = e
	}
	return append(append([]byte{'['}, bytes.Join(parts, []byte{','})...), ']')
}

// pieces splits s into deltas of at most chunk runes.
func pieces(s string, chunk int) []string {
	if chunk <= 0 {
		chunk = 10
	}
	var out []string
	r := []rune(s)
	for len(r) > 0 {
		n := min(chunk, len(r))
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return out
}

// deltas are the pieces of a block's streamed content.
func (b *Block) deltas(content string, chunk int) []string {
	if b.Pieces != nil {
		return b.Pieces
	}
	return pieces(content, chunk)
}

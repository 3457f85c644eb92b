package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"
)

// The chat completions API's error texts: the tool loop's from agent.md §2
// (BerriAI/litellm #10083, aliasrobotics/cai #111), the others as OpenAI
// sends them.
const (
	oaiMissingToolMessages = "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s"
	oaiToolWithoutCalls    = "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'."
	oaiToolIDNotFound      = "Invalid parameter: 'tool_call_id' of '%s' not found in 'tool_calls' of previous message."
	oaiEmptyMessages       = "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead."
	oaiMissingMessages     = "Missing required parameter: 'messages'."
	oaiMissingModel        = "you must provide a model parameter"
	oaiBadRole             = "Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'."
	oaiUnknownModel        = "The model `%s` does not exist or you do not have access to it."
	oaiNoKey               = "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."
	oaiBadKey              = "Incorrect API key provided: %s. You can find your API key at https://platform.openai.com/account/api-keys."
	oaiNotJSON             = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"
)

func (s *Server) serveOpenAI(x *exchange) {
	if s.opts.APIKey != "" {
		keys := apiKeys(x.r, false)
		switch {
		case len(keys) == 0:
			x.fail(http.StatusUnauthorized, APIError{Type: "invalid_request_error", Message: oaiNoKey}, nil)
			return
		case keys[0] != s.opts.APIKey:
			x.fail(http.StatusUnauthorized, APIError{Type: "invalid_request_error", Message: fmt.Sprintf(oaiBadKey, maskKey(keys[0])), Code: "invalid_api_key"}, nil)
			return
		}
	}
	bad := func(e APIError) {
		e.Type = "invalid_request_error"
		x.fail(http.StatusBadRequest, e, nil)
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(x.req.Body, &fields) != nil || x.req.OpenAI == nil {
		bad(APIError{Message: oaiNotJSON})
		return
	}
	req := x.req.OpenAI
	if !s.opts.Unchecked {
		if req.Model == "" {
			bad(APIError{Message: oaiMissingModel})
			return
		}
		if _, ok := fields["messages"]; !ok {
			bad(APIError{Message: oaiMissingMessages, Param: "messages", Code: "missing_required_parameter"})
			return
		}
	}
	if len(s.opts.Models) > 0 && !slices.Contains(s.opts.Models, req.Model) {
		x.fail(http.StatusNotFound, APIError{Type: "invalid_request_error", Message: fmt.Sprintf(oaiUnknownModel, req.Model), Code: "model_not_found"}, nil)
		return
	}
	if !req.Stream && !s.opts.AllowNonStreaming {
		bad(APIError{Message: msgNotStreaming, Param: "stream"})
		return
	}
	if !s.opts.Unchecked {
		if e := checkOpenAI(req); e != nil {
			bad(*e)
			return
		}
	}
	s.answer(x, s.streamOpenAI, s.wholeOpenAI)
}

// checkOpenAI applies the API's rules to the messages.
func checkOpenAI(r *OpenAIRequest) *APIError {
	msgs := r.Messages
	if len(msgs) == 0 {
		return &APIError{Message: oaiEmptyMessages, Param: "messages", Code: "empty_array"}
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return &APIError{Message: fmt.Sprintf(oaiBadRole, m.Role), Param: fmt.Sprintf("messages[%d].role", i), Code: "invalid_value"}
		}
	}
	for i, m := range msgs {
		switch m.Role {
		case "assistant":
			if len(m.ToolCalls) == 0 {
				break
			}
			answered := map[string]bool{}
			for j := i + 1; j < len(msgs) && msgs[j].Role == "tool"; j++ {
				answered[msgs[j].ToolCallID] = true
			}
			var missing []string
			for _, c := range m.ToolCalls {
				if !answered[c.ID] {
					missing = append(missing, c.ID)
				}
			}
			if len(missing) > 0 {
				return &APIError{Message: fmt.Sprintf(oaiMissingToolMessages, joinComma(missing)), Param: fmt.Sprintf("messages.[%d].role", i)}
			}
		case "tool":
			k := i - 1
			for k >= 0 && msgs[k].Role == "tool" {
				k--
			}
			if k < 0 || msgs[k].Role != "assistant" || len(msgs[k].ToolCalls) == 0 {
				return &APIError{Message: oaiToolWithoutCalls, Param: fmt.Sprintf("messages.[%d].role", i)}
			}
			if !slices.ContainsFunc(msgs[k].ToolCalls, func(c OpenAIToolCall) bool { return c.ID == m.ToolCallID }) {
				return &APIError{Message: fmt.Sprintf(oaiToolIDNotFound, m.ToolCallID), Param: fmt.Sprintf("messages.[%d].tool_call_id", i)}
			}
		}
	}
	return nil
}

func joinComma(ids []string) string {
	out := ""
	for i, id := range ids {
		if i > 0 {
			out += ", "
		}
		out += id
	}
	return out
}

// finishReason is the openai finish_reason of a resolved turn.
func (s *Server) finishReason(t *Turn) string {
	if t.FinishReason != "" {
		return t.FinishReason
	}
	switch t.StopReason {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		if s.opts.OpenAIStopAfterToolCalls {
			return "stop"
		}
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

func openAIUsage(u Usage) json.RawMessage {
	prompt := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens
	if u.CacheReadInputTokens > 0 {
		return obj("prompt_tokens", prompt, "completion_tokens", u.OutputTokens, "total_tokens", prompt+u.OutputTokens,
			"prompt_tokens_details", obj("cached_tokens", u.CacheReadInputTokens))
	}
	return obj("prompt_tokens", prompt, "completion_tokens", u.OutputTokens, "total_tokens", prompt+u.OutputTokens)
}

func (s *Server) streamOpenAI(x *exchange, t *Turn) {
	failure := func(e APIError) event { return event{data: obj("error", openAIError(e))} }
	if t.Raw != nil {
		x.writeStream(rawEvents(t.Raw), t, failure)
		return
	}
	x.writeStream(s.openAIEvents(t, x.req.OpenAI.includeUsage()), t, failure)
}

// openAIEvents are the data chunks of a resolved turn.
func (s *Server) openAIEvents(t *Turn, includeUsage bool) []event {
	created := time.Now().Unix()
	fp := s.ids.fingerprint()
	var usageNull json.RawMessage
	if includeUsage {
		usageNull = json.RawMessage("null")
	}
	head := func(choices, usage json.RawMessage) []byte {
		kvs := []any{"id", t.ID, "object", "chat.completion.chunk", "created", created, "model", t.Model, "system_fingerprint", fp}
		if choices != nil {
			kvs = append(kvs, "choices", choices)
		}
		if usage != nil {
			kvs = append(kvs, "usage", usage)
		}
		return obj(kvs...)
	}
	chunk := func(delta json.RawMessage, finish any, kind string) event {
		return event{kind: kind, data: head(arr(obj("index", 0, "delta", delta, "logprobs", nil, "finish_reason", finish)), usageNull)}
	}
	callHeader := func(ci int, b *Block) json.RawMessage {
		return obj("index", ci, "id", b.ID, "type", "function", "function", obj("name", b.Name, "arguments", ""))
	}
	callPiece := func(ci int, p string) json.RawMessage {
		return obj("index", ci, "function", obj("arguments", p))
	}

	var evs []event
	headerSent := false
	if len(t.Blocks) > 0 && t.Blocks[0].Type == "tool_use" {
		evs = append(evs, chunk(obj("role", "assistant", "content", nil,
			"tool_calls", arr(callHeader(0, &t.Blocks[0])), "refusal", nil), nil, kindDelta))
		headerSent = true
	} else {
		evs = append(evs, chunk(obj("role", "assistant", "content", "", "refusal", nil), nil, ""))
	}
	ci := 0 // tool call index
	for i := 0; i < len(t.Blocks); i++ {
		b := &t.Blocks[i]
		switch b.Type {
		case "thinking":
			for _, p := range b.deltas(b.Thinking, t.Chunk) {
				evs = append(evs, chunk(obj("reasoning_content", p), nil, kindDelta))
			}
		case "redacted_thinking":
		case "tool_use":
			// the run of consecutive calls, streamed one after another or
			// interleaved
			j := i
			for j < len(t.Blocks) && t.Blocks[j].Type == "tool_use" {
				j++
			}
			run := t.Blocks[i:j]
			ps := make([][]string, len(run))
			for k := range run {
				ps[k] = run[k].deltas(run[k].Input, t.Chunk)
			}
			emitHeader := func(k int) {
				if k == 0 && i == 0 && headerSent {
					return
				}
				evs = append(evs, chunk(obj("tool_calls", arr(callHeader(ci+k, &run[k]))), nil, kindDelta))
			}
			emitPiece := func(k int, p string) {
				evs = append(evs, chunk(obj("tool_calls", arr(callPiece(ci+k, p))), nil, kindDelta))
			}
			if s.opts.OpenAIInterleaveToolCalls {
				for k := range run {
					emitHeader(k)
				}
				for r := 0; ; r++ {
					more := false
					for k := range run {
						if r < len(ps[k]) {
							emitPiece(k, ps[k][r])
							more = true
						}
					}
					if !more {
						break
					}
				}
			} else {
				for k := range run {
					emitHeader(k)
					for _, p := range ps[k] {
						emitPiece(k, p)
					}
				}
			}
			ci += len(run)
			i = j - 1
		default:
			for _, p := range b.deltas(b.Text, t.Chunk) {
				evs = append(evs, chunk(obj("content", p), nil, kindDelta))
			}
		}
	}
	evs = append(evs, chunk(json.RawMessage("{}"), s.finishReason(t), ""))
	if includeUsage {
		var choices json.RawMessage
		switch s.opts.OpenAIUsageChoices {
		case UsageChoicesEmpty:
			choices = json.RawMessage("[]")
		case UsageChoicesNull:
			choices = json.RawMessage("null")
		}
		evs = append(evs, event{data: head(choices, openAIUsage(t.Usage))})
	}
	return append(evs, event{data: []byte("[DONE]")})
}

// wholeOpenAI answers a non-streaming request with one chat.completion.
func (s *Server) wholeOpenAI(x *exchange, t *Turn) {
	text := ""
	hasText := false
	var calls []json.RawMessage
	for _, b := range t.Blocks {
		switch b.Type {
		case "tool_use":
			calls = append(calls, obj("id", b.ID, "type", "function", "function", obj("name", b.Name, "arguments", b.Input)))
		case "", "text":
			text += b.Text
			hasText = true
		}
	}
	var content any
	if hasText {
		content = text
	}
	msg := obj("role", "assistant", "content", content, "refusal", nil)
	if calls != nil {
		msg = obj("role", "assistant", "content", content, "tool_calls", arr(calls...), "refusal", nil)
	}
	body := obj("id", t.ID, "object", "chat.completion", "created", time.Now().Unix(), "model", t.Model,
		"choices", arr(obj("index", 0, "message", msg, "logprobs", nil, "finish_reason", s.finishReason(t))),
		"usage", openAIUsage(t.Usage), "system_fingerprint", s.ids.fingerprint())
	writeJSON(x, t, body)
}

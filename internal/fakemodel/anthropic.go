package fakemodel

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The Anthropic Messages API's 400 texts. Those of the tool loop and of
// thinking are quoted from real responses (agent.md §1; anthropics/
// claude-code issues #5060, #13460, #10627); the others from real responses
// reported in public issues, except where marked.
const (
	msgToolUseWithoutResult = "messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
	msgUnexpectedToolResult = "messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
	msgInvalidSignature     = "messages.%d.content.%d: Invalid `signature` in `thinking` block"
	msgInvalidRedacted      = "messages.%d.content.%d: Invalid `data` in `redacted_thinking` block" // by analogy, not seen live
	msgThinkingFirst        = "messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
	msgEmptyContent         = "messages.%d: all messages must have non-empty content except for the optional final assistant message"
	msgEmptyText            = "messages: text content blocks must be non-empty"
	msgWhitespaceText       = "messages: text content blocks must contain non-whitespace text"
	msgFirstNotUser         = `messages: first message must use the "user" role`
	msgAlternate            = `messages: roles must alternate between "user" and "assistant", but found multiple "%s" roles in a row`
	msgSystemRole           = "messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role."
	msgBadRole              = "messages.%d.role: Input should be 'user' or 'assistant'"
	msgNoMessages           = "messages: at least one message is required"
	msgInputNotObject       = "messages.%d.content.%d.tool_use.input: Input should be a valid dictionary"
	msgFieldRequired        = "%s: Field required"
	msgVersionRequired      = "anthropic-version: header is required"
	msgKeyRequired          = "x-api-key header is required"
	msgKeyInvalid           = "invalid x-api-key"
	msgUnknownModel         = "model: %s"
	// Not the live API's texts: the fake's own.
	msgNotJSON      = "fakemodel: the request body is not valid JSON: %v"
	msgNotStreaming = `fakemodel: only streaming requests ("stream": true) are served; tackle only streams (Options.AllowNonStreaming answers with one JSON message)`
)

func (s *Server) serveAnthropic(x *exchange) {
	if s.opts.APIKey != "" {
		keys := apiKeys(x.r, true)
		switch {
		case len(keys) == 0:
			x.fail(http.StatusUnauthorized, APIError{Type: "authentication_error", Message: msgKeyRequired}, nil)
			return
		case !slices.Contains(keys, s.opts.APIKey):
			x.fail(http.StatusUnauthorized, APIError{Type: "authentication_error", Message: msgKeyInvalid}, nil)
			return
		}
	}
	bad := func(msg string) {
		x.fail(http.StatusBadRequest, APIError{Type: "invalid_request_error", Message: msg},
			http.Header{"X-Should-Retry": {"false"}})
	}
	if !s.opts.Unchecked && x.r.Header.Get("anthropic-version") == "" {
		bad(msgVersionRequired)
		return
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(x.req.Body, &fields); err != nil || x.req.Anthropic == nil {
		if err == nil {
			err = json.Unmarshal(x.req.Body, new(AnthropicRequest))
		}
		bad(fmt.Sprintf(msgNotJSON, err))
		return
	}
	req := x.req.Anthropic
	if !s.opts.Unchecked {
		for _, f := range []string{"model", "max_tokens", "messages"} {
			if v, ok := fields[f]; !ok || string(v) == "null" || string(v) == `""` {
				bad(fmt.Sprintf(msgFieldRequired, f))
				return
			}
		}
	}
	if len(s.opts.Models) > 0 && !slices.Contains(s.opts.Models, req.Model) {
		x.fail(http.StatusNotFound, APIError{Type: "not_found_error", Message: fmt.Sprintf(msgUnknownModel, req.Model)}, nil)
		return
	}
	if !req.Stream && !s.opts.AllowNonStreaming {
		bad(msgNotStreaming)
		return
	}
	if !s.opts.Unchecked {
		if msg := s.checkAnthropic(req); msg != "" {
			bad(msg)
			return
		}
	}
	s.answer(x, s.streamAnthropic, s.wholeAnthropic)
}

// checkAnthropic applies the API's rules to the messages and returns the
// 400 message of the first violation, or "".
func (s *Server) checkAnthropic(r *AnthropicRequest) string {
	msgs := r.Messages
	if len(msgs) == 0 {
		return msgNoMessages
	}
	for i, m := range msgs {
		switch m.Role {
		case "user", "assistant":
		case "system":
			return msgSystemRole
		default:
			return fmt.Sprintf(msgBadRole, i)
		}
	}
	if msgs[0].Role != "user" {
		return msgFirstNotUser
	}
	if s.opts.MergeConsecutiveRoles {
		msgs = mergeRoles(msgs)
	} else {
		for i := 1; i < len(msgs); i++ {
			if msgs[i].Role == msgs[i-1].Role {
				return fmt.Sprintf(msgAlternate, msgs[i].Role)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	last := len(msgs) - 1
	for i, m := range msgs {
		prefill := i == last && m.Role == "assistant"
		if m.empty() {
			if prefill {
				continue
			}
			return fmt.Sprintf(msgEmptyContent, i)
		}
		for k, b := range m.Content {
			switch b.Type {
			case "text":
				if b.Text == "" {
					return msgEmptyText
				}
				if strings.TrimSpace(b.Text) == "" {
					return msgWhitespaceText
				}
			case "tool_use":
				if !isObject(b.Input) {
					return fmt.Sprintf(msgInputNotObject, i, k)
				}
			case "thinking":
				if m.Role == "assistant" {
					if t, ok := s.signatures[b.Signature]; (!ok || t != b.Thinking) && b.Signature != s.ids.sign(b.Thinking) {
						return fmt.Sprintf(msgInvalidSignature, i, k)
					}
				}
			case "redacted_thinking":
				if m.Role == "assistant" && !s.redacted[b.Data] && !s.ids.verifyRedacted(b.Data) {
					return fmt.Sprintf(msgInvalidRedacted, i, k)
				}
			}
		}
		switch m.Role {
		case "assistant":
			uses := toolUseIDs(m)
			if len(uses) == 0 {
				break
			}
			answered := map[string]bool{}
			if i < last {
				for _, b := range msgs[i+1].Content {
					if b.Type != "tool_result" {
						break // tool_result blocks come first
					}
					answered[b.ToolUseID] = true
				}
			}
			var missing []string
			for _, id := range uses {
				if !answered[id] {
					missing = append(missing, id)
				}
			}
			if len(missing) > 0 {
				return fmt.Sprintf(msgToolUseWithoutResult, i, strings.Join(missing, ", "))
			}
		case "user":
			var prev []string
			if i > 0 {
				prev = toolUseIDs(msgs[i-1])
			}
			for k, b := range m.Content {
				if b.Type == "tool_result" && !slices.Contains(prev, b.ToolUseID) {
					return fmt.Sprintf(msgUnexpectedToolResult, i, k, b.ToolUseID)
				}
			}
		}
	}
	// A continued tool_use turn that began with thinking must still begin
	// with it when thinking is on.
	if r.Thinking.enabled() {
		for i := last; i >= 0; i-- {
			m := msgs[i]
			if m.Role != "assistant" {
				continue
			}
			issuedThinking := false
			for _, id := range toolUseIDs(m) {
				issuedThinking = issuedThinking || s.thinkingTurns[id]
			}
			if issuedThinking && len(m.Content) > 0 {
				if t := m.Content[0].Type; t != "thinking" && t != "redacted_thinking" {
					return fmt.Sprintf(msgThinkingFirst, i, t)
				}
			}
			break
		}
	}
	return ""
}

// mergeRoles joins consecutive messages of one role, as the live API does.
func mergeRoles(msgs []AnthropicMessage) []AnthropicMessage {
	var out []AnthropicMessage
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			prev := &out[n-1]
			if prev.empty() {
				prev.Content = nil
			}
			prev.StringContent = false
			if !m.empty() {
				prev.Content = append(slices.Clone(prev.Content), m.Content...)
			}
			continue
		}
		out = append(out, m)
	}
	return out
}

func toolUseIDs(m AnthropicMessage) []string {
	if m.Role != "assistant" {
		return nil
	}
	var ids []string
	for _, b := range m.Content {
		if b.Type == "tool_use" {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

func isObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return len(raw) > 0 && json.Unmarshal(raw, &m) == nil && m != nil
}

func (s *Server) streamAnthropic(x *exchange, t *Turn) {
	failure := func(e APIError) event {
		return event{name: "error", data: obj("type", "error", "error", obj("type", e.Type, "message", e.Message))}
	}
	if t.Raw != nil {
		x.writeStream(rawEvents(t.Raw), t, failure)
		return
	}
	x.writeStream(anthropicEvents(t), t, failure)
}

// anthropicEvents are the SSE events of a resolved turn.
func anthropicEvents(t *Turn) []event {
	su := Usage{InputTokens: t.Usage.InputTokens, CacheCreationInputTokens: t.Usage.CacheCreationInputTokens,
		CacheReadInputTokens: t.Usage.CacheReadInputTokens, OutputTokens: 1}
	if t.StartUsage != nil {
		su = *t.StartUsage
	}
	startUsage := obj(
		"input_tokens", su.InputTokens,
		"cache_creation_input_tokens", su.CacheCreationInputTokens,
		"cache_read_input_tokens", su.CacheReadInputTokens,
		"cache_creation", obj("ephemeral_5m_input_tokens", su.CacheCreationInputTokens, "ephemeral_1h_input_tokens", 0),
		"output_tokens", su.OutputTokens,
		"service_tier", "standard")
	evs := []event{{name: "message_start", data: obj("type", "message_start", "message", obj(
		"model", t.Model, "id", t.ID, "type", "message", "role", "assistant",
		"content", json.RawMessage("[]"), "stop_reason", nil, "stop_sequence", nil, "usage", startUsage))}}
	delta := func(i int, d json.RawMessage) event {
		return event{name: "content_block_delta", kind: kindDelta, data: obj("type", "content_block_delta", "index", i, "delta", d)}
	}
	for i := range t.Blocks {
		b := &t.Blocks[i]
		var start json.RawMessage
		switch b.Type {
		case "thinking":
			start = obj("type", "thinking", "thinking", "", "signature", "")
		case "redacted_thinking":
			start = obj("type", "redacted_thinking", "data", b.Data)
		case "tool_use":
			start = obj("type", "tool_use", "id", b.ID, "name", b.Name, "input", json.RawMessage("{}"))
		default:
			start = obj("type", "text", "text", "")
		}
		evs = append(evs, event{name: "content_block_start", data: obj("type", "content_block_start", "index", i, "content_block", start)})
		switch b.Type {
		case "thinking":
			for _, p := range b.deltas(b.Thinking, t.Chunk) {
				evs = append(evs, delta(i, obj("type", "thinking_delta", "thinking", p)))
			}
			evs = append(evs, delta(i, obj("type", "signature_delta", "signature", b.Signature)))
		case "redacted_thinking":
		case "tool_use":
			evs = append(evs, delta(i, obj("type", "input_json_delta", "partial_json", "")))
			for _, p := range b.deltas(b.Input, t.Chunk) {
				evs = append(evs, delta(i, obj("type", "input_json_delta", "partial_json", p)))
			}
		default:
			for _, p := range b.deltas(b.Text, t.Chunk) {
				evs = append(evs, delta(i, obj("type", "text_delta", "text", p)))
			}
		}
		evs = append(evs, event{name: "content_block_stop", data: obj("type", "content_block_stop", "index", i)})
	}
	var seq any
	if t.StopSequence != "" {
		seq = t.StopSequence
	}
	d := obj("stop_reason", t.StopReason, "stop_sequence", seq)
	if t.StopDetails != nil {
		d = obj("stop_reason", t.StopReason, "stop_sequence", seq, "stop_details", t.StopDetails)
	}
	evs = append(evs,
		event{name: "message_delta", data: obj("type", "message_delta", "delta", d, "usage", finalUsage(t.Usage))},
		event{name: "message_stop", data: obj("type", "message_stop")})
	return withPings(evs, t)
}

func finalUsage(u Usage) json.RawMessage {
	return obj("input_tokens", u.InputTokens,
		"cache_creation_input_tokens", u.CacheCreationInputTokens,
		"cache_read_input_tokens", u.CacheReadInputTokens,
		"output_tokens", u.OutputTokens)
}

// pingData is ping's data as the live API writes it, with the space.
const pingData = `{"type": "ping"}`

// withPings places the ping events.
func withPings(evs []event, t *Turn) []event {
	ping := event{name: "ping", data: []byte(pingData), kind: kindPing}
	var out []event
	if len(t.PingAt) > 0 {
		at := map[int]int{}
		for _, n := range t.PingAt {
			at[n]++
		}
		for range at[0] {
			out = append(out, ping)
		}
		for n, ev := range evs {
			out = append(out, ev)
			for range at[n+1] {
				out = append(out, ping)
			}
		}
		return out
	}
	if t.Pings == PingNone {
		return evs
	}
	starts := 0
	for _, ev := range evs {
		if ev.name == "content_block_start" {
			starts++
			if starts > 1 {
				out = append(out, ping)
			}
			out = append(out, ev)
			if starts == 1 && t.Pings == PingDefault {
				out = append(out, ping)
			}
			continue
		}
		out = append(out, ev)
	}
	return out
}

// wholeAnthropic answers a non-streaming request with one message.
func (s *Server) wholeAnthropic(x *exchange, t *Turn) {
	var blocks []json.RawMessage
	for _, b := range t.Blocks {
		switch b.Type {
		case "thinking":
			blocks = append(blocks, obj("type", "thinking", "thinking", b.Thinking, "signature", b.Signature))
		case "redacted_thinking":
			blocks = append(blocks, obj("type", "redacted_thinking", "data", b.Data))
		case "tool_use":
			in := json.RawMessage(b.Input)
			if !isObject(in) {
				in = json.RawMessage("{}")
			}
			blocks = append(blocks, obj("type", "tool_use", "id", b.ID, "name", b.Name, "input", in))
		default:
			blocks = append(blocks, obj("type", "text", "text", b.Text))
		}
	}
	var seq any
	if t.StopSequence != "" {
		seq = t.StopSequence
	}
	body := obj("model", t.Model, "id", t.ID, "type", "message", "role", "assistant",
		"content", arr(blocks...), "stop_reason", t.StopReason, "stop_sequence", seq, "usage", finalUsage(t.Usage))
	writeJSON(x, t, body)
}

func writeJSON(x *exchange, t *Turn, body []byte) {
	for k, vs := range t.Header {
		for _, v := range vs {
			x.w.Header().Add(k, v)
		}
	}
	x.w.Header().Set("content-type", "application/json")
	x.setRequestID()
	x.w.WriteHeader(http.StatusOK)
	x.w.Write(body)
	x.out.Status = http.StatusOK
}

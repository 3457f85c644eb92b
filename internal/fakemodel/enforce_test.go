package fakemodel

import (
	"context"
	"encoding/json"
	"testing"
)

func TestAnthropicRules(t *testing.T) {
	noMax := msgs(user("hi"))
	delete(noMax, "max_tokens")
	noModel := msgs(user("hi"))
	delete(noModel, "model")
	noMessages := msgs()
	delete(noMessages, "messages")
	notStreaming := msgs(user("hi"))
	notStreaming["stream"] = false
	use := func(ids ...string) map[string]any {
		var c []any
		c = append(c, textBlock("Let me check."))
		for _, id := range ids {
			c = append(c, toolUseBlock(id, "get_weather", map[string]any{"city": "Paris"}))
		}
		return assistant(c)
	}
	results := func(ids ...string) map[string]any {
		var c []any
		for _, id := range ids {
			c = append(c, toolResultBlock(id, "sunny"))
		}
		return user(c)
	}
	for _, tc := range []struct {
		name    string
		body    any
		headers []string
		want    string // "" : accepted
	}{
		{"tool_use answered", msgs(user("hi"), use("toolu_A", "toolu_B"), results("toolu_B", "toolu_A")), nil, ""},
		{"tool_use without result", msgs(user("hi"), use("toolu_01AbmHJypDhKqBF7NKdRPJ6d"), user("go on")), nil,
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01AbmHJypDhKqBF7NKdRPJ6d. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"one of two answered", msgs(user("hi"), use("toolu_A", "toolu_B"), results("toolu_A")), nil,
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_B. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"tool_use last", msgs(user("hi"), use("toolu_A")), nil,
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_A. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"result after text", msgs(user("hi"), use("toolu_A"), user([]any{textBlock("here"), toolResultBlock("toolu_A", "x")})), nil,
			"messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_A. Each `tool_use` block must have a corresponding `tool_result` block in the next message."},
		{"text after results", msgs(user("hi"), use("toolu_A"), user([]any{toolResultBlock("toolu_A", "x"), textBlock("and more")})), nil, ""},
		{"result without tool_use", msgs(results("toolu_015cqXRmSf7tsfMgJ9ibV1z3")), nil,
			"messages.0.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_015cqXRmSf7tsfMgJ9ibV1z3. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"extra result", msgs(user("hi"), use("toolu_A"), results("toolu_A", "toolu_X")), nil,
			"messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_X. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"result two messages later", msgs(user("hi"), use("toolu_A"), results("toolu_A"), assistant("ok"), results("toolu_A")), nil,
			"messages.4.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_A. Each `tool_result` block must have a corresponding `tool_use` block in the previous message."},
		{"first from assistant", msgs(assistant("hi"), user("hi")), nil, `messages: first message must use the "user" role`},
		{"two users", msgs(user("a"), user("b")), nil, `messages: roles must alternate between "user" and "assistant", but found multiple "user" roles in a row`},
		{"two assistants", msgs(user("a"), assistant("b"), assistant("c")), nil, `messages: roles must alternate between "user" and "assistant", but found multiple "assistant" roles in a row`},
		{"system role", msgs(map[string]any{"role": "system", "content": "be nice"}, user("a")), nil,
			"messages: Unexpected role \"system\". The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role."},
		{"tool role", msgs(user("a"), map[string]any{"role": "tool", "content": "x"}), nil, "messages.1.role: Input should be 'user' or 'assistant'"},
		{"empty content", msgs(user([]any{})), nil, "messages.0: all messages must have non-empty content except for the optional final assistant message"},
		{"empty string", msgs(user("hi"), assistant(""), user("x")), nil, "messages.1: all messages must have non-empty content except for the optional final assistant message"},
		{"final assistant empty", msgs(user("hi"), assistant([]any{})), nil, ""},
		{"empty text block", msgs(user([]any{textBlock("")})), nil, "messages: text content blocks must be non-empty"},
		{"whitespace text", msgs(user([]any{textBlock(" \n ")})), nil, "messages: text content blocks must contain non-whitespace text"},
		{"input not an object", msgs(user("hi"), assistant([]any{toolUseBlock("toolu_A", "x", "a string")}), results("toolu_A")), nil,
			"messages.1.content.0.tool_use.input: Input should be a valid dictionary"},
		{"no messages", msgs(), nil, "messages: at least one message is required"},
		{"no max_tokens", noMax, nil, "max_tokens: Field required"},
		{"no model", noModel, nil, "model: Field required"},
		{"no messages field", noMessages, nil, "messages: Field required"},
		{"no anthropic-version", msgs(user("hi")), []string{"anthropic-version", ""}, "anthropic-version: header is required"},
		{"not streaming", notStreaming, nil, msgNotStreaming},
		{"not JSON", "{", nil, "fakemodel: the request body is not valid JSON: unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, &Options{Script: Repeat(Say("ok"))})
			resp, body := postAnthropic(t, s, tc.body, tc.headers...)
			if tc.want == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != 400 {
				t.Fatalf("status %d, want 400: %s", resp.StatusCode, body)
			}
			rid := resp.Header.Get("request-id")
			if want := anthropicErrorBody("invalid_request_error", tc.want, rid); string(body) != want {
				t.Errorf("body\n got %s\nwant %s", body, want)
			}
			if !reqIDRe.MatchString(rid) || resp.Header.Get("x-should-retry") != "false" || resp.Header.Get("content-type") != "application/json" {
				t.Errorf("headers %v", resp.Header)
			}
			o, err := s.WaitDone(context.Background(), 0)
			if err != nil || o.Status != 400 || o.Error != tc.want || o.Turn != nil {
				t.Errorf("outcome %+v, %v", o, err)
			}
		})
	}
}

func TestMergeConsecutiveRoles(t *testing.T) {
	s := Start(t, &Options{MergeConsecutiveRoles: true, Script: Repeat(Say("ok"))})
	resp, body := postAnthropic(t, s, msgs(user("a"), user("b"), assistant([]any{toolUseBlock("toolu_A", "x", map[string]any{})}),
		user([]any{toolResultBlock("toolu_A", "r")}), user("and more")))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

// TestThinkingComesBackUnchanged: a thinking turn with a tool_use, then the
// continuation with the thinking block unchanged, changed, or dropped.
func TestThinkingComesBackUnchanged(t *testing.T) {
	s := Start(t, &Options{Script: Repeat(Reply(Thinking("I should read the file."), ToolUse("Read", `{"file_path":"/a"}`)))})
	first := msgs(user("read /a"))
	first["thinking"] = map[string]any{"type": "enabled", "budget_tokens": 1024}
	_, body := postAnthropic(t, s, first)
	evs := parseSSE(t, body)
	var thinking, sig, id string
	for _, ev := range evs {
		switch field(t, ev.Data, "delta.type") {
		case "thinking_delta":
			thinking += field(t, ev.Data, "delta.thinking").(string)
		case "signature_delta":
			sig = field(t, ev.Data, "delta.signature").(string)
		}
		if field(t, ev.Data, "content_block.type") == "tool_use" {
			id = field(t, ev.Data, "content_block.id").(string)
		}
	}
	cont := func(blocks ...any) map[string]any {
		b := msgs(user("read /a"), assistant(blocks), user([]any{toolResultBlock(id, "contents")}))
		b["thinking"] = map[string]any{"type": "enabled", "budget_tokens": 1024}
		return b
	}
	think := func(text, sig string) map[string]any {
		return map[string]any{"type": "thinking", "thinking": text, "signature": sig}
	}
	tool := toolUseBlock(id, "Read", map[string]any{"file_path": "/a"})
	for _, tc := range []struct {
		name string
		body any
		want string
	}{
		{"unchanged", cont(think(thinking, sig), tool), ""},
		{"text changed", cont(think(thinking+" ", sig), tool), "messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"signature changed", cont(think(thinking, sig[:len(sig)-4]+"AAAA"), tool), "messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"dropped", cont(tool), "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"},
		{"made up", cont(think("invented", "RXZRQkNrWUlDeGdD"), tool), "messages.1.content.0: Invalid `signature` in `thinking` block"},
		{"redacted made up", cont(map[string]any{"type": "redacted_thinking", "data": "nope"}, tool), "messages.1.content.0: Invalid `data` in `redacted_thinking` block"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := postAnthropic(t, s, tc.body)
			if tc.want == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				return
			}
			if want := anthropicErrorBody("invalid_request_error", tc.want, resp.Header.Get("request-id")); string(body) != want {
				t.Errorf("%d\n got %s\nwant %s", resp.StatusCode, body, want)
			}
		})
	}
	// thinking off: dropping the block is allowed
	b := cont(tool)
	delete(b, "thinking")
	if resp, body := postAnthropic(t, s, b); resp.StatusCode != 200 {
		t.Errorf("thinking off: %d %s", resp.StatusCode, body)
	}
}

func TestUncheckedAcceptsAnything(t *testing.T) {
	s := Start(t, &Options{Unchecked: true, Script: Repeat(Say("ok"))})
	resp, body := postAnthropic(t, s, msgs(assistant([]any{toolUseBlock("toolu_A", "x", map[string]any{})})), "anthropic-version", "")
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
}

func TestOpenAIRules(t *testing.T) {
	noModel := chat(oaiMsg("user", "hi"))
	delete(noModel, "model")
	noMessages := chat()
	delete(noMessages, "messages")
	notStreaming := chat(oaiMsg("user", "hi"))
	notStreaming["stream"] = false
	for _, tc := range []struct {
		name string
		body any
		want string // the whole error object; "" : accepted
	}{
		{"answered", chat(oaiMsg("system", "s"), oaiMsg("user", "hi"), oaiCalls("call_a", "call_b"), oaiTool("call_b", "x"), oaiTool("call_a", "y")), ""},
		{"no tool messages", chat(oaiMsg("user", "hi"), oaiCalls("call_jJATmoUduQWxi4tRwcQjsodM"), oaiMsg("user", "well?")),
			`{"message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_jJATmoUduQWxi4tRwcQjsodM","type":"invalid_request_error","param":"messages.[1].role","code":null}`},
		{"one missing", chat(oaiMsg("user", "hi"), oaiCalls("call_a", "call_b", "call_c"), oaiTool("call_b", "x")),
			`{"message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_a, call_c","type":"invalid_request_error","param":"messages.[1].role","code":null}`},
		{"calls last", chat(oaiMsg("user", "hi"), oaiCalls("call_a")),
			`{"message":"An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_a","type":"invalid_request_error","param":"messages.[1].role","code":null}`},
		{"tool without calls", chat(oaiMsg("user", "hi"), oaiTool("call_a", "x")),
			`{"message":"Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.","type":"invalid_request_error","param":"messages.[1].role","code":null}`},
		{"tool id unknown", chat(oaiMsg("user", "hi"), oaiCalls("call_a"), oaiTool("call_a", "x"), oaiTool("call_z", "y")),
			`{"message":"Invalid parameter: 'tool_call_id' of 'call_z' not found in 'tool_calls' of previous message.","type":"invalid_request_error","param":"messages.[3].tool_call_id","code":null}`},
		{"empty", chat(), `{"message":"Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.","type":"invalid_request_error","param":"messages","code":"empty_array"}`},
		{"no messages", noMessages, `{"message":"Missing required parameter: 'messages'.","type":"invalid_request_error","param":"messages","code":"missing_required_parameter"}`},
		{"no model", noModel, `{"message":"you must provide a model parameter","type":"invalid_request_error","param":null,"code":null}`},
		{"bad role", chat(oaiMsg("robot", "hi")), `{"message":"Invalid value: 'robot'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.","type":"invalid_request_error","param":"messages[0].role","code":"invalid_value"}`},
		{"not streaming", notStreaming, `{"message":` + string(jsonText(msgNotStreaming)) + `,"type":"invalid_request_error","param":"stream","code":null}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Start(t, &Options{Script: Repeat(Say("ok"))})
			resp, body := postOpenAI(t, s, tc.body)
			if tc.want == "" {
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != 400 || string(body) != `{"error":`+tc.want+`}` {
				t.Errorf("%d\n got %s\nwant %s", resp.StatusCode, body, `{"error":`+tc.want+`}`)
			}
		})
	}
}

func TestAuth(t *testing.T) {
	s := Start(t, &Options{APIKey: "sk-ant-right", Models: []string{"claude-sonnet-4-5", "gpt-4o"}, Script: Repeat(Say("ok"))})
	for _, tc := range []struct {
		name    string
		headers []string
		status  int
		body    string
	}{
		{"x-api-key", []string{"x-api-key", "sk-ant-right"}, 200, ""},
		{"bearer", []string{"x-api-key", "", "authorization", "Bearer sk-ant-right"}, 200, ""},
		{"wrong key", []string{"x-api-key", "sk-ant-wrong"}, 401, "invalid x-api-key"},
		{"wrong bearer", []string{"x-api-key", "", "authorization", "Bearer nope"}, 401, "invalid x-api-key"},
		{"no key", []string{"x-api-key", ""}, 401, "x-api-key header is required"},
		{"both, one right", []string{"x-api-key", "sk-ant-right", "authorization", "Bearer other"}, 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := postAnthropic(t, s, msgs(user("hi")), tc.headers...)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.body != "" {
				if want := anthropicErrorBody("authentication_error", tc.body, resp.Header.Get("request-id")); string(body) != want {
					t.Errorf("body\n got %s\nwant %s", body, want)
				}
			}
		})
	}
	unknown := msgs(user("hi"))
	unknown["model"] = "claude-nope"
	resp, body := postAnthropic(t, s, unknown, "x-api-key", "sk-ant-right")
	if want := anthropicErrorBody("not_found_error", "model: claude-nope", resp.Header.Get("request-id")); resp.StatusCode != 404 || string(body) != want {
		t.Errorf("unknown model: %d %s", resp.StatusCode, body)
	}

	resp, body = postOpenAI(t, s, chat(oaiMsg("user", "hi")), "authorization", "Bearer sk-ant-right")
	if resp.StatusCode != 200 {
		t.Errorf("openai right key: %d %s", resp.StatusCode, body)
	}
	resp, body = postOpenAI(t, s, chat(oaiMsg("user", "hi")), "authorization", "Bearer sk-proj-wrongwrong1234")
	if want := `{"error":{"message":"Incorrect API key provided: sk-p********1234. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`; resp.StatusCode != 401 || string(body) != want {
		t.Errorf("openai wrong key: %d %s", resp.StatusCode, body)
	}
	resp, body = postOpenAI(t, s, chat(oaiMsg("user", "hi")), "authorization", "")
	var e struct{ Error map[string]any }
	if json.Unmarshal(body, &e); resp.StatusCode != 401 || e.Error["message"] != oaiNoKey || e.Error["code"] != nil {
		t.Errorf("openai no key: %d %s", resp.StatusCode, body)
	}
	m := chat(oaiMsg("user", "hi"))
	m["model"] = "gpt-nope"
	resp, body = postOpenAI(t, s, m, "authorization", "Bearer sk-ant-right")
	if want := "{\"error\":{\"message\":\"The model `gpt-nope` does not exist or you do not have access to it.\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":\"model_not_found\"}}"; resp.StatusCode != 404 || string(body) != want {
		t.Errorf("openai unknown model: %d %s", resp.StatusCode, body)
	}
	// a path that is neither API
	resp, _ = post(t, s.URL()+"/v1/complete", msgs(user("hi")), anthropicHeaders...)
	if resp.StatusCode != 404 {
		t.Errorf("unknown path: %d", resp.StatusCode)
	}
}

// TestSignaturesSurviveARestart: a new server with the same seed accepts
// the thinking blocks an earlier one issued (a daemon restart test may
// restart the fake too), as the API accepts old signatures.
func TestSignaturesSurviveARestart(t *testing.T) {
	var blocks []any
	var id string
	{
		s := Start(t, &Options{Seed: 7, Script: Turns(Reply(Thinking("plan"), RedactedThinking(), ToolUse("Read", `{}`)))})
		_, body := postAnthropic(t, s, msgs(user("q")))
		var sig, data string
		for _, ev := range parseSSE(t, body) {
			if v, ok := field(t, ev.Data, "delta.signature").(string); ok {
				sig = v
			}
			if v, ok := field(t, ev.Data, "content_block.data").(string); ok {
				data = v
			}
			if v, ok := field(t, ev.Data, "content_block.id").(string); ok {
				id = v
			}
		}
		blocks = []any{map[string]any{"type": "thinking", "thinking": "plan", "signature": sig},
			map[string]any{"type": "redacted_thinking", "data": data}, toolUseBlock(id, "Read", map[string]any{})}
	}
	body := msgs(user("q"), assistant(blocks), user([]any{toolResultBlock(id, "x")}))
	body["thinking"] = map[string]any{"type": "enabled", "budget_tokens": 1024}
	same := Start(t, &Options{Seed: 7, Script: Repeat(Say("ok"))})
	if resp, b := postAnthropic(t, same, body); resp.StatusCode != 200 {
		t.Errorf("same seed: %d %s", resp.StatusCode, b)
	}
	other := Start(t, &Options{Seed: 8, Script: Repeat(Say("ok"))})
	if resp, _ := postAnthropic(t, other, body); resp.StatusCode != 400 {
		t.Errorf("other seed: %d", resp.StatusCode)
	}
}

// Package fakemodel is the one fake in tackle's agent tests: an HTTP server
// that speaks the Anthropic Messages API (POST /v1/messages) and the
// OpenAI-compatible chat completions API (POST /v1/chat/completions, also
// /chat/completions) byte for byte as ../shared/docs/agent.md §1–2 record
// them, and answers from a script that each test writes.
//
// No model runs on the project's machines, so every test of the query loop,
// the providers and the CLI talks to this server instead. It is test
// support: it imports nothing of tackle, keeps no state beyond one Server,
// and must never be linked into tackled or tackle.
//
// # Wire formats
//
// Anthropic: `event:` + `data:` SSE, a blank line after each event;
// message_start (with usage), per block content_block_start → deltas →
// content_block_stop, ping written as {"type": "ping"} (with the space, as
// the live API does) after the first content_block_start and between
// blocks, message_delta (stop_reason, cumulative usage), message_stop. Text
// streams as text_delta, thinking as thinking_delta then one signature_delta
// right before its stop, redacted_thinking whole in its start, a tool_use's
// input as input_json_delta pieces after an empty partial_json "" (a tool
// without arguments gets only that empty one). Headers: content-type
// text/event-stream; charset=utf-8 and request-id: req_….
//
// OpenAI: data-only chat.completion.chunk SSE, a role chunk first, text as
// content and thinking as reasoning_content deltas, tool-call deltas by
// index (id, type and name first with arguments "", then argument pieces;
// parallel calls can interleave), a finish_reason chunk (optionally "stop"
// after tool calls, as gpt-4o has sent), a usage chunk with choices [] (or
// null, or no key) when stream_options.include_usage is set, then
// data: [DONE].
//
// Ids look like the real ones: msg_01…, toolu_01…, req_011C…, call_…,
// chatcmpl-…; they come from a seeded generator (Options.Seed).
//
// # Scripts
//
// A Script maps each request that passed the checks below to a Turn: the
// blocks the assistant sends (text, thinking, redacted thinking, tool_use,
// with configurable delta chunking), its stop reason and usage; or a
// failure: an HTTP error with the API's real body shape and headers
// (retry-after, retry-after-ms, x-should-retry), an in-stream error after
// some events, a stream truncated before message_stop (clean end of body or
// a cut connection), delays between events and holds that wait for the test
// or for the client to go away (the request context is honoured; a stream
// whose context ends is cut, never ended cleanly). A Turn can also replay a
// recorded SSE body verbatim (testdata/ has the get_weather recording of
// agent.md §1). Turns gives a fixed list; a Script is a function of the
// Request, so a test can answer from the tool results it received. A
// request the script has no turn for gets a 500 and fails the test that
// used Start.
//
// # What it enforces
//
// Every request is checked as the real API checks it, and a violation gets
// the real 400 (texts in anthropic.go and openai.go): for Anthropic, the
// anthropic-version header, model, max_tokens and messages present, roles
// user/assistant only (a "system" role has its own message), the first
// message from the user, roles alternating (unless
// Options.MergeConsecutiveRoles, as the live API merges them), no empty
// content but the optional final assistant message, no empty or
// whitespace-only text block, tool_use input an object, every tool_use
// answered by a tool_result at the start of the very next user message
// ("messages.N: `tool_use` ids were found without `tool_result` blocks
// immediately after: …"), every tool_result matching a tool_use of the
// message before ("messages.N.content.M: unexpected `tool_use_id` found in
// `tool_result` blocks: …"), and thinking and redacted_thinking blocks sent
// back unchanged (signatures are checked against what this server, or one
// with the same Options.Seed, issued),
// with a continued tool_use turn that had thinking starting with it when
// thinking is enabled. For OpenAI: model and a non-empty messages array,
// known roles, an assistant message with tool_calls followed by tool
// messages for every id (the text of agent.md §2), and every tool message
// answering a call of the assistant message before it. Both: the API key
// when Options.APIKey is set (401 with the real bodies), the model when
// Options.Models is set (404), and stream: true (a non-streaming request is
// a 400 unless Options.AllowNonStreaming; tackle only streams).
//
// Two 400 texts are the fake's own, marked "fakemodel:": a body that is not
// JSON (Anthropic) and a non-streaming request.
//
// Every request is captured, rejected or not (Requests, WaitRequests), with
// what was answered (WaitDone). The server is safe for concurrent requests.
package fakemodel

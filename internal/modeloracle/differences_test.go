package modeloracle_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// oaChunk is one chat.completion.chunk of choice 0 with delta d (JSON).
func oaChunk(d, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + d + `,"finish_reason":` + f + `}]}` + "\n\n"
}

const oaUsageDone = `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":6,"total_tokens":11}}` + "\n\ndata: [DONE]\n\n"

// TestOpenAICompatibleStreams: streams OpenAI itself does not send but
// compatible servers have, where tackle's client departs from openai-go on
// purpose (agent.md §2: tool calls are told apart by index, and by id where
// a server gets the index wrong). Each case asserts what tackle builds and
// what openai-go v3.99.0 builds, so that the difference is on record; the
// SDK's result is not a target.
func TestOpenAICompatibleStreams(t *testing.T) {
	call := func(index, id, name, args string) string {
		s := `{"tool_calls":[{`
		if index != "" {
			s += `"index":` + index + `,`
		}
		if id != "" {
			s += `"id":"` + id + `","type":"function",`
		}
		return s + `"function":{"name":"` + name + `","arguments":` + args + `}}]}`
	}
	cases := []struct {
		name         string
		body         string
		sdk, tackle  oaResult
		sdkFinish    string
		tackleFinish string
	}{
		{
			// a server that repeats the function name in each fragment
			name: "the name repeated in every fragment",
			body: oaChunk(call("0", "call_a", "Read", `""`), "") + oaChunk(call("0", "", "Read", `"{\"a\":"`), "") +
				oaChunk(call("0", "", "Read", `"1}"`), "") + oaChunk(`{}`, "tool_calls") + oaUsageDone,
			sdk:       oaResult{ID: "chatcmpl-1", Model: "m", ToolCalls: []oaCall{{"call_a", "ReadReadRead", `{"a":1}`}}, Usage: oaUsage{5, 6, 0}},
			tackle:    oaResult{ID: "chatcmpl-1", Model: "m", ToolCalls: []oaCall{{"call_a", "Read", `{"a":1}`}}, Usage: oaUsage{5, 6, 0}},
			sdkFinish: "tool_calls", tackleFinish: "tool_use",
		},
		{
			// a server that sends no index (each call whole, told apart by id)
			name: "two whole calls without index",
			body: oaChunk(call("", "call_a", "Read", `"{\"a\":1}"`), "") + oaChunk(call("", "call_b", "Glob", `"{\"b\":2}"`), "") +
				oaChunk(`{}`, "tool_calls") + oaUsageDone,
			sdk:       oaResult{ID: "chatcmpl-1", Model: "m", ToolCalls: []oaCall{{"call_b", "ReadGlob", `{"a":1}{"b":2}`}}, Usage: oaUsage{5, 6, 0}},
			tackle:    oaResult{ID: "chatcmpl-1", Model: "m", ToolCalls: []oaCall{{"call_a", "Read", `{"a":1}`}, {"call_b", "Glob", `{"b":2}`}}, Usage: oaUsage{5, 6, 0}},
			sdkFinish: "tool_calls", tackleFinish: "tool_use",
		},
		{
			name: "two whole calls both at index 0",
			body: oaChunk(call("0", "call_a", "Read", `"{\"a\":1}"`), "") + oaChunk(call("0", "call_b", "Glob", `"{\"b\":2}"`), "") +
				oaChunk(`{}`, "tool_calls") + oaUsageDone,
			sdk:       oaResult{ID: "chatcmpl-1", Model: "m", ToolCalls: []oaCall{{"call_b", "ReadGlob", `{"a":1}{"b":2}`}}, Usage: oaUsage{5, 6, 0}},
			tackle:    oaResult{ID: "chatcmpl-1", Model: "m", ToolCalls: []oaCall{{"call_a", "Read", `{"a":1}`}, {"call_b", "Glob", `{"b":2}`}}, Usage: oaUsage{5, 6, 0}},
			sdkFinish: "tool_calls", tackleFinish: "tool_use",
		},
		{
			// usage in each chunk, each the total so far (vLLM's continuous
			// usage stats, as tackle's decoder documents them)
			name: "usage in every chunk",
			body: `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"a"},"finish_reason":null}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}` + "\n\n" +
				`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}` + "\n\ndata: [DONE]\n\n",
			sdk:       oaResult{ID: "chatcmpl-1", Model: "m", Content: "ab", Usage: oaUsage{10, 3, 0}},
			tackle:    oaResult{ID: "chatcmpl-1", Model: "m", Content: "ab", Usage: oaUsage{5, 2, 0}},
			sdkFinish: "stop", tackleFinish: "end_turn",
		},
		{
			// a refusal delta: openai-go keeps it apart (Message.Refusal, not
			// compared here); tackle makes it the text and stops with refusal
			name: "refusal",
			body: oaChunk(`{"role":"assistant","content":null,"refusal":"I can't"}`, "") + oaChunk(`{"refusal":" help."}`, "") +
				oaChunk(`{}`, "stop") + oaUsageDone,
			sdk:       oaResult{ID: "chatcmpl-1", Model: "m", Usage: oaUsage{5, 6, 0}},
			tackle:    oaResult{ID: "chatcmpl-1", Model: "m", Content: "I can't help.", Usage: oaUsage{5, 6, 0}},
			sdkFinish: "stop", tackleFinish: "refusal",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := []byte(tc.body)
			sdk := sdkOpenAI(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(body))).URL())
			ours := tackleOpenAI(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(body))).URL())
			if sdk.Err != nil || ours.Err != nil {
				t.Fatalf("openai-go %v, tackle %v", sdk.Err, ours.Err)
			}
			if len(sdk.Result.ToolCalls) == 0 {
				sdk.Result.ToolCalls = nil // [] when the stream had no calls
			}
			if diff := cmp.Diff(tc.tackle, ours.Result); diff != "" {
				t.Errorf("tackle (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.sdk, sdk.Result); diff != "" {
				t.Errorf("openai-go, which this test pins (-want +got):\n%s", diff)
			}
			if sdk.Finish != tc.sdkFinish || ours.Finish != tc.tackleFinish {
				t.Errorf("finish: openai-go %q, tackle %q; want %q, %q", sdk.Finish, ours.Finish, tc.sdkFinish, tc.tackleFinish)
			}
		})
	}
}

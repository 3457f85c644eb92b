package model

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The text of openai-go's streamaccumulator_test.go (expectedContents).
const santorini = `Let's take a journey to the beautiful island of Santorini in Greece.

Santorini is a gem in the Aegean Sea, known for its stunning sunsets, white-washed buildings, and crystal-clear waters. The island's rugged landscape is the result of a volcanic eruption that took place around 3,600 years ago, which gave Santorini its distinct caldera. When you visit the island, you can't miss the picturesque town of Oia, perched high on the cliffs with its narrow streets, blue-domed churches, and panoramic views of the sea. Fira, the island's capital, is buzzing with life, offering a variety of shops, restaurants, and cafes. Don't forget to explore the archaeological site of Akrotiri, an ancient Minoan city preserved in volcanic ash, often referred to as the "Pompeii of the Aegean."

Now, let's check the weather in Santorini.`

func TestOpenAIRecording(t *testing.T) {
	p := parse(t, "openai", readTestdata(t, "openai-streamaccumulator.sse"))
	if p.err != nil {
		t.Fatal(p.err)
	}
	want := &Response{
		ID: "chatcmpl-A3Tguz3LSXTHBTY2NAPBCSyfBltxF", Model: "gpt-4o-2024-05-13", StopReason: StopToolUse,
		// The recording has two usage chunks (its second hand-edited to
		// test openai-go's summing); the last wins here (see openAIDecoder).
		Usage: Usage{InputTokens: 0, OutputTokens: 50, CacheReadInputTokens: 10},
		Message: Message{Role: RoleAssistant, Content: []Block{
			{Type: BlockText, Text: santorini},
			{Type: BlockToolUse, ID: "call_FXoAjBUMcVv1k40fficJ9cSs", Name: "get_weather",
				Input: json.RawMessage(`{"location":"Santorini, Greece"}`), InputComplete: true},
		}},
	}
	if diff := cmp.Diff(want, p.resp); diff != "" {
		t.Errorf("response (-want +got):\n%s", diff)
	}
	if got := joined(p.events, EventText); got != santorini {
		t.Errorf("text events = %q", got)
	}
	if got := joined(p.events, EventToolInput); got != `{"location":"Santorini, Greece"}` {
		t.Errorf("tool input events = %q", got)
	}
	var kinds []EventType
	for _, e := range p.events {
		if e.Type != EventText && e.Type != EventToolInput {
			kinds = append(kinds, e.Type)
		}
	}
	if diff := cmp.Diff([]EventType{EventBlockStop, EventToolUse, EventBlockStop, EventMessage}, kinds); diff != "" {
		t.Errorf("event kinds (-want +got):\n%s", diff)
	}
}

// chunks builds an openai stream from chunk JSONs, with [DONE] unless
// the last is "-".
func chunks(cs ...string) []byte {
	var b strings.Builder
	done := true
	for _, c := range cs {
		if c == "-" {
			done = false
			continue
		}
		b.WriteString("data: " + c + "\n\n")
	}
	if done {
		b.WriteString("data: [DONE]\n\n")
	}
	return []byte(b.String())
}

func choice(delta string, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
}

func call(index int, id, name, args string) string {
	a, _ := json.Marshal(args)
	s := `{"index":` + itoa(index)
	if id != "" {
		s += `,"id":"` + id + `","type":"function"`
	}
	s += `,"function":{`
	if name != "" {
		s += `"name":"` + name + `",`
	}
	return s + `"arguments":` + string(a) + `}}`
}

func TestOpenAIStreams(t *testing.T) {
	usage := `{"id":"chatcmpl-1","object":"chat.completion.chunk","model":"m","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":100}}}`
	wantUsage := Usage{InputTokens: 20, OutputTokens: 30, CacheReadInputTokens: 100}
	tests := []struct {
		name    string
		body    []byte
		stop    string
		content []Block
		usage   Usage
	}{
		{
			name: "text, usage with choices []",
			body: chunks(choice(`{"role":"assistant","content":""}`, ""), choice(`{"content":"Hel"}`, ""), choice(`{"content":"lo"}`, ""), choice(`{}`, "stop"), usage),
			stop: StopEndTurn, content: []Block{{Type: BlockText, Text: "Hello"}}, usage: wantUsage,
		},
		{
			name: "usage with choices null (vLLM)",
			body: chunks(choice(`{"content":"x"}`, "stop"), strings.Replace(usage, `"choices":[]`, `"choices":null`, 1)),
			stop: StopEndTurn, content: []Block{{Type: BlockText, Text: "x"}}, usage: wantUsage,
		},
		{
			name: "usage without choices (vLLM)",
			body: chunks(choice(`{"content":"x"}`, "stop"), strings.Replace(usage, `"choices":[],`, ``, 1)),
			stop: StopEndTurn, content: []Block{{Type: BlockText, Text: "x"}}, usage: wantUsage,
		},
		{
			name:    `finish_reason "stop" after tool calls is tool_use`,
			body:    chunks(choice(`{"tool_calls":[`+call(0, "call_a", "Read", "")+`]}`, ""), choice(`{"tool_calls":[`+call(0, "", "", `{"file_path":"/a"}`)+`]}`, ""), choice(`{}`, "stop")),
			stop:    StopToolUse,
			content: []Block{{Type: BlockToolUse, ID: "call_a", Name: "Read", Input: json.RawMessage(`{"file_path":"/a"}`), InputComplete: true}},
		},
		{
			name: "parallel calls interleaved by index; no arguments is {}",
			body: chunks(
				choice(`{"content":"Two reads."}`, ""),
				choice(`{"tool_calls":[`+call(0, "call_a", "Read", "")+`,`+call(1, "call_b", "Glob", "")+`]}`, ""),
				choice(`{"tool_calls":[`+call(1, "", "", `{"pattern":`)+`]}`, ""),
				choice(`{"tool_calls":[`+call(0, "", "", `{"file_path":`)+`]}`, ""),
				choice(`{"tool_calls":[`+call(1, "", "", `"*.go"}`)+`]}`, ""),
				choice(`{"tool_calls":[`+call(0, "", "", `"/a"}`)+`]}`, ""),
				choice(`{"tool_calls":[`+call(2, "call_c", "TodoRead", "")+`]}`, ""),
				choice(`{}`, "tool_calls")),
			stop: StopToolUse,
			content: []Block{
				{Type: BlockText, Text: "Two reads."},
				{Type: BlockToolUse, ID: "call_a", Name: "Read", Input: json.RawMessage(`{"file_path":"/a"}`), InputComplete: true},
				{Type: BlockToolUse, ID: "call_b", Name: "Glob", Input: json.RawMessage(`{"pattern":"*.go"}`), InputComplete: true},
				{Type: BlockToolUse, ID: "call_c", Name: "TodoRead", Input: json.RawMessage(`{}`), InputComplete: true},
			},
		},
		{
			name: "whole calls all at index 0 with their own ids (Ollama); the done chunk apart",
			body: chunks(
				choice(`{"tool_calls":[`+call(0, "call_a", "Read", `{"file_path":"/a"}`)+`]}`, ""),
				choice(`{"tool_calls":[`+call(0, "call_b", "Read", `{"file_path":"/b"}`)+`]}`, "tool_calls"),
				choice(`{"content":""}`, "stop")),
			stop: StopToolUse,
			content: []Block{
				{Type: BlockToolUse, ID: "call_a", Name: "Read", Input: json.RawMessage(`{"file_path":"/a"}`), InputComplete: true},
				{Type: BlockToolUse, ID: "call_b", Name: "Read", Input: json.RawMessage(`{"file_path":"/b"}`), InputComplete: true},
			},
		},
		{
			name:    "length inside a tool input: max_tokens, the call cut off",
			body:    chunks(choice(`{"tool_calls":[`+call(0, "call_a", "Write", `{"file_path":"/a","content":"hel`)+`]}`, "length")),
			stop:    StopMaxTokens,
			content: []Block{{Type: BlockToolUse, ID: "call_a", Name: "Write", Input: json.RawMessage(`{}`)}},
		},
		{
			name:    "reasoning_content is thinking; content_filter is refusal",
			body:    chunks(choice(`{"reasoning_content":"hmm"}`, ""), choice(`{"content":"no"}`, "content_filter")),
			stop:    StopRefusal,
			content: []Block{{Type: BlockThinking, Thinking: "hmm"}, {Type: BlockText, Text: "no"}},
		},
		{
			name:    "padding and an arguments object",
			body:    chunks(choice(`{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"Read","arguments":{"file_path":"/a"}}}]}`, "tool_calls") + "   "),
			stop:    StopToolUse,
			content: []Block{{Type: BlockToolUse, ID: "call_a", Name: "Read", Input: json.RawMessage(`{"file_path":"/a"}`), InputComplete: true}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, "openai", tc.body)
			if p.err != nil {
				t.Fatal(p.err)
			}
			if p.resp.StopReason != tc.stop {
				t.Errorf("stop = %q, want %q", p.resp.StopReason, tc.stop)
			}
			if diff := cmp.Diff(tc.content, p.resp.Message.Content); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if p.resp.Usage != tc.usage {
				t.Errorf("usage = %+v, want %+v", p.resp.Usage, tc.usage)
			}
			if n, want := count(p.events, EventBlockStop), len(tc.content); n != want {
				t.Errorf("%d block stops, want %d", n, want)
			}
			if m := p.events[len(p.events)-1]; m.Type != EventMessage || m.StopReason != tc.stop {
				t.Errorf("last event = %+v", m)
			}
		})
	}
}

func TestOpenAICallWithoutID(t *testing.T) {
	p := parse(t, "openai", chunks(choice(`{"tool_calls":[{"index":0,"function":{"name":"Read","arguments":"{}"}}]}`, "tool_calls")))
	if p.err != nil {
		t.Fatal(p.err)
	}
	if id := p.resp.Message.Content[0].ID; !strings.HasPrefix(id, "call_") || len(id) < 15 {
		t.Errorf("id = %q, want a made-up call_…", id)
	}
}

func TestOpenAIStreamFailures(t *testing.T) {
	tests := []struct {
		name     string
		body     []byte
		wantType string
		content  []Block
	}{
		{
			name:     "in-stream error after partial text",
			body:     chunks(choice(`{"content":"Hello, wor"}`, ""), `{"error":{"message":"The server is overloaded","type":"server_error","code":null}}`, "-"),
			wantType: "server_error",
			content:  []Block{{Type: BlockText, Text: "Hello, wor"}},
		},
		{
			name:     "no [DONE]",
			body:     chunks(choice(`{"content":"Hel"}`, "stop"), "-"),
			wantType: ErrIncomplete,
			content:  []Block{{Type: BlockText, Text: "Hel"}},
		},
		{
			name:     "cut inside tool calls: not complete even if it parses",
			body:     chunks(choice(`{"tool_calls":[`+call(0, "call_a", "Read", `{"file_path":"/a"}`)+`]}`, ""), "-"),
			wantType: ErrIncomplete,
			content:  []Block{{Type: BlockToolUse, ID: "call_a", Name: "Read", Input: json.RawMessage(`{"file_path":"/a"}`)}},
		},
		{
			name:     "a chunk that does not parse",
			body:     chunks(`{"id":`, "-"),
			wantType: ErrInvalidStream,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, "openai", tc.body)
			var e *Error
			if !errors.As(p.err, &e) || e.Type != tc.wantType {
				t.Fatalf("err = %v, want an *Error of type %q", p.err, tc.wantType)
			}
			if diff := cmp.Diff(tc.content, p.resp.Message.Content); diff != "" {
				t.Errorf("partial content (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOpenAIErrorBodies(t *testing.T) {
	tests := []struct{ body, typ, msg string }{
		{`{"error":{"message":"The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.","type":"invalid_request_error","param":null,"code":"model_not_found"}}`, "model_not_found", "The model `gpt-9` does not exist or you do not have access to it."},
		{`{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`, "invalid_request_error", "Incorrect API key provided"},
		{`{"error":"model \"llama9\" not found, try pulling it first"}`, "", `model "llama9" not found, try pulling it first`},
		{`{"object":"error","message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`, "NotFoundError", "The model `x` does not exist."},
		{`{"error":{"code":500,"message":"boom","type":"server_error"}}`, "server_error", "boom"},
	}
	for _, tc := range tests {
		var e Error
		openAIAPIError(&e, []byte(tc.body))
		if e.Type != tc.typ || e.Message != tc.msg {
			t.Errorf("%s: type %q message %q, want %q %q", tc.body, e.Type, e.Message, tc.typ, tc.msg)
		}
	}
}

func TestOpenAIRequestBody(t *testing.T) {
	req := Request{
		Model: "qwen3-coder", System: "You are tackle.", MaxTokens: 1000, Thinking: 500,
		Tools: []Tool{{Name: "Read", Description: "Reads a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"file_path":{"type":"string"}}}`)}},
		Messages: []Message{
			{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "look"}, {Type: BlockImage, MediaType: "image/png", Source: "iVBO"}}},
			{Role: RoleAssistant, Content: []Block{
				{Type: BlockThinking, Thinking: "dropped"},
				{Type: BlockText, Text: "Reading."},
				{Type: BlockToolUse, ID: "call_a", Name: "Read", Input: json.RawMessage(`{"file_path":"/a"}`), InputComplete: true},
				{Type: BlockToolUse, ID: "call_b", Name: "Read", Input: json.RawMessage(`{}`)},
			}},
			{Role: RoleUser, Content: []Block{
				{Type: BlockToolResult, ToolUseID: "call_a", Content: []Block{{Type: BlockText, Text: "one"}, {Type: BlockImage, MediaType: "image/png", Source: "QUJD"}}},
				{Type: BlockToolResult, ToolUseID: "call_b", IsError: true, Content: []Block{{Type: BlockText, Text: "cut off"}}},
				{Type: BlockText, Text: "and also this"},
			}},
			{Role: RoleAssistant, Content: []Block{{Type: BlockToolUse, ID: "call_c", Name: "Read", Input: json.RawMessage(`{"file_path":"/c"}`)}}},
			{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "call_c", Text: "Error: already an error", IsError: true}}},
		},
	}
	b, err := json.Marshal(openAIBody(&req, "max_tokens"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"qwen3-coder","messages":[` +
		`{"role":"system","content":"You are tackle."},` +
		`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBO"}}]},` +
		`{"role":"assistant","content":"Reading.","tool_calls":[{"id":"call_a","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"/a\"}"}},{"id":"call_b","type":"function","function":{"name":"Read","arguments":"{}"}}]},` +
		`{"role":"tool","content":"one","tool_call_id":"call_a"},` +
		`{"role":"tool","content":"Error: cut off","tool_call_id":"call_b"},` +
		`{"role":"user","content":[{"type":"text","text":"(the images of tool result call_a)"},{"type":"image_url","image_url":{"url":"data:image/png;base64,QUJD"}},{"type":"text","text":"and also this"}]},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_c","type":"function","function":{"name":"Read","arguments":"{\"file_path\":\"/c\"}"}}]},` +
		`{"role":"tool","content":"Error: already an error","tool_call_id":"call_c"}],` +
		`"tools":[{"type":"function","function":{"name":"Read","description":"Reads a file","parameters":{"type":"object","properties":{"file_path":{"type":"string"}}}}}],` +
		`"max_tokens":1000,"stream":true,"stream_options":{"include_usage":true}}`
	if string(b) != want {
		t.Errorf("body:\n got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(openAIBody(&Request{Model: "gpt-5", MaxTokens: 10}, "max_completion_tokens"))
	if !strings.Contains(string(b), `"max_completion_tokens":10`) || strings.Contains(string(b), `"max_tokens"`) {
		t.Errorf("max_completion_tokens body = %s", b)
	}
}

func TestOpenAIReasoningField(t *testing.T) {
	// Ollama and OpenRouter call it "reasoning"; it becomes a thinking block,
	// which the next request to an openai server leaves out.
	p := parse(t, "openai", chunks(choice(`{"reasoning":"let me"}`, ""), choice(`{"reasoning":" see"}`, ""), choice(`{"content":"Done."}`, "stop")))
	if p.err != nil {
		t.Fatal(p.err)
	}
	want := []Block{{Type: BlockThinking, Thinking: "let me see"}, {Type: BlockText, Text: "Done."}}
	if diff := cmp.Diff(want, p.resp.Message.Content); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := joined(p.events, EventThinking); got != "let me see" {
		t.Errorf("thinking events %q", got)
	}
	b, _ := json.Marshal(openAIBody(&Request{Model: "m", Messages: []Message{p.resp.Message}}, "max_tokens"))
	if strings.Contains(string(b), "let me") {
		t.Errorf("thinking sent to an openai server: %s", b)
	}
}

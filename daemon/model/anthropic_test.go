package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const weatherText = "I'd be happy to check the weather in San Francisco for you. Let me get that information for you right away."

func TestAnthropicRecordings(t *testing.T) {
	tests := []struct {
		name string
		body []byte
		want Response
		// counts of events
		text, toolInput, stops int
	}{
		{
			name: "next_streaming (real, padded)",
			body: readTestdata(t, "anthropic-next-streaming.sse"),
			want: Response{
				ID: "msg_01P7nF1bmxyzFZjF8zwbUDBM", Model: "claude-3-7-sonnet-20250219", StopReason: StopToolUse,
				Usage: Usage{InputTokens: 394, OutputTokens: 79},
				Message: Message{Role: RoleAssistant, Content: []Block{
					{Type: BlockText, Text: weatherText},
					{Type: BlockToolUse, ID: "toolu_017QoD96fYwGzCWvLfaPADWg", Name: "get_weather",
						Input: json.RawMessage(`{"city": "San Francisco"}`), InputComplete: true},
				}},
			},
			text: 13, toolInput: 3, stops: 2,
		},
		{
			name: "streaming_all 1 (real)",
			body: readTestdata(t, "anthropic-streaming-all-1.sse"),
			want: Response{
				ID: "msg_01H1pwRRkQxKbUGKi785gT4M", Model: "claude-3-7-sonnet-20250219", StopReason: StopToolUse,
				Usage: Usage{InputTokens: 397, OutputTokens: 89},
				Message: Message{Role: RoleAssistant, Content: []Block{
					{Type: BlockText, Text: "I'll get the current weather in San Francisco for you in Fahrenheit."},
					{Type: BlockToolUse, ID: "toolu_01RaX2WYWRWCbaeFHssmGJXG", Name: "get_weather",
						Input: json.RawMessage(`{"city": "San Francisco", "units": "fahrenheit"}`), InputComplete: true},
				}},
			},
			text: -1, toolInput: 10, stops: 2,
		},
		{
			name: "clear-thinking (real, claude-sonnet-4-5)",
			body: chunksToSSE(t, readTestdata(t, "anthropic-clear-thinking.chunks.txt")),
			want: Response{
				ID: "msg_01Y6V41gqPaKWEw7iPouH7iW", Model: "claude-sonnet-4-5-20250929", StopReason: StopEndTurn,
				Usage: Usage{InputTokens: 69, OutputTokens: 53},
				Message: Message{Role: RoleAssistant, Content: []Block{
					{Type: BlockThinking, Thinking: "The previous result was 925. Now I need to divide that by 5.\n\n925 ÷ 5 = 185",
						Signature: "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv/VeJBNbejNWIWRBn+KPNEgz6HWtKx7p+QRgKsEoaDGjsiqfht7gTRFYHiyIwD1VSmNqHxv3wy8KEMP+LYb/TC4UH3H97tuoaADARFFcA0phdfxnzKQxFnc9lwY+dKlzUsaKSUAFeu1bDL5ikZJ1vL0Fkz6JjoFke0L/wOJRIUDUlDUOFJ1tZ3ea7g6LGE/5hwuvWgLwewdcm64d+43l7F57XrOmqNd6flI2K/oPr/4yzNgvi/EhT6Ca17BgB"},
					{Type: BlockText, Text: "925 ÷ 5 = 185"},
				}},
			},
			text: 3, stops: 2,
		},
		{
			name: "tool-no-args (real): partial_json \"\" is {}",
			body: chunksToSSE(t, readTestdata(t, "anthropic-tool-no-args.chunks.txt")),
			want: Response{
				ID: "msg_01GE2RKp1VYsPzdFs3sS9z5S", Model: "claude-sonnet-4-5-20250929", StopReason: StopToolUse,
				Usage: Usage{InputTokens: 565, OutputTokens: 48},
				Message: Message{Role: RoleAssistant, Content: []Block{
					{Type: BlockText, Text: "I'll update the issue list for you."},
					{Type: BlockToolUse, ID: "toolu_01QE1WLsSVp5hy5Q3GmGTmjP", Name: "updateIssueList",
						Input: json.RawMessage(`{}`), InputComplete: true},
				}},
			},
			text: 2, toolInput: 0, stops: 2,
		},
		{
			name: "message-delta-input-tokens (real): the delta's usage wins",
			body: chunksToSSE(t, readTestdata(t, "anthropic-message-delta-input-tokens.chunks.txt")),
			want: Response{
				ID: "msg_3196a1cc08de4d76b85b8f5777c0d42b", Model: "claude-opus-4-5-20251101", StopReason: StopEndTurn,
				Usage:   Usage{InputTokens: 61, OutputTokens: 2},
				Message: Message{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "pong"}}},
			},
			text: 2, stops: 1,
		},
		{
			name: "data-only (a proxy's): the JSON's type is enough",
			body: dataOnly(readTestdata(t, "anthropic-message-delta-input-tokens.chunks.txt")),
			want: Response{
				ID: "msg_3196a1cc08de4d76b85b8f5777c0d42b", Model: "claude-opus-4-5-20251101", StopReason: StopEndTurn,
				Usage:   Usage{InputTokens: 61, OutputTokens: 2},
				Message: Message{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "pong"}}},
			},
			text: 2, stops: 1,
		},
		{
			name: "refusal (hand-written, anthropic-sdk-go)",
			body: readTestdata(t, "anthropic-refusal.sse"),
			want: Response{
				ID: "msg_primary", Model: "primary-model", StopReason: StopRefusal,
				Usage: Usage{InputTokens: 28, OutputTokens: 106},
				Message: Message{Role: RoleAssistant, Content: []Block{
					{Type: BlockThinking, Thinking: "Simple educational question. Benign.", Signature: "sig-thinking-a"},
					{Type: BlockText, Text: "Hi"},
				}},
			},
			text: 1, stops: 2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, "anthropic", tc.body)
			if p.err != nil {
				t.Fatalf("err = %v", p.err)
			}
			if diff := cmp.Diff(&tc.want, p.resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if tc.text >= 0 {
				if n := count(p.events, EventText); n != tc.text {
					t.Errorf("%d text events, want %d", n, tc.text)
				}
			}
			if n := count(p.events, EventToolInput); n != tc.toolInput {
				t.Errorf("%d tool input events, want %d", n, tc.toolInput)
			}
			if n := count(p.events, EventBlockStop); n != tc.stops {
				t.Errorf("%d block stops, want %d", n, tc.stops)
			}
			if n := count(p.events, EventMessage); n != 1 {
				t.Errorf("%d message events, want 1", n)
			}
			// The events carry the same text as the response.
			var text string
			for _, b := range p.resp.Message.Content {
				text += b.Text
			}
			if got := joined(p.events, EventText); got != text {
				t.Errorf("text events = %q, want %q", got, text)
			}
		})
	}
}

func TestAnthropicEventsOrder(t *testing.T) {
	p := parse(t, "anthropic", readTestdata(t, "anthropic-next-streaming.sse"))
	var kinds []string
	for _, e := range p.events {
		if e.Type == EventText || e.Type == EventToolInput {
			if len(kinds) > 0 && kinds[len(kinds)-1] == string(e.Type)+"…" {
				continue
			}
			kinds = append(kinds, string(e.Type)+"…")
			continue
		}
		kinds = append(kinds, string(e.Type))
	}
	want := []string{"text…", "block_stop", "tool_use", "tool_input…", "block_stop", "message"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("event kinds (-want +got):\n%s", diff)
	}
	tu := p.events[slicesIndex(p.events, EventToolUse)]
	if tu.ID != "toolu_017QoD96fYwGzCWvLfaPADWg" || tu.Name != "get_weather" || tu.Index != 1 {
		t.Errorf("tool_use event = %+v", tu)
	}
	m := p.events[len(p.events)-1]
	if m.StopReason != StopToolUse || m.Usage.OutputTokens != 79 {
		t.Errorf("message event = %+v", m)
	}
}

func slicesIndex(evs []Event, typ EventType) int {
	for i, e := range evs {
		if e.Type == typ {
			return i
		}
	}
	return -1
}

// sse builds an Anthropic stream from data lines (the event: line derived).
func sse(lines ...string) []byte {
	var b strings.Builder
	for _, l := range lines {
		var v struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal([]byte(l), &v)
		b.WriteString("event: " + v.Type + "\ndata: " + l + "\n\n")
	}
	return []byte(b.String())
}

const (
	msgStart  = `{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":10,"output_tokens":1}}}`
	textStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	msgStop   = `{"type":"message_stop"}`
)

func delta(i int, typ, field, value string) string {
	v, _ := json.Marshal(value)
	return `{"type":"content_block_delta","index":` + itoa(i) + `,"delta":{"type":"` + typ + `","` + field + `":` + string(v) + `}}`
}

func blockStop(i int) string { return `{"type":"content_block_stop","index":` + itoa(i) + `}` }

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestAnthropicStreamFailures(t *testing.T) {
	toolStart := `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"Bash","input":{}}}`
	tests := []struct {
		name     string
		body     []byte
		wantType string // the *Error's Type
		want     []Block
		stop     string
	}{
		{
			name: "in-stream error after partial text: partial kept",
			body: sse(msgStart, textStart, delta(0, "text_delta", "text", "Hello, wor"),
				`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			wantType: "overloaded_error",
			want:     []Block{{Type: BlockText, Text: "Hello, wor"}},
		},
		{
			name:     "ends before message_stop",
			body:     sse(msgStart, textStart, delta(0, "text_delta", "text", "Hel"), blockStop(0), `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`),
			wantType: ErrIncomplete,
			want:     []Block{{Type: BlockText, Text: "Hel"}},
			stop:     StopEndTurn,
		},
		{
			name: "ends inside a tool input: never complete",
			body: sse(msgStart, textStart, delta(0, "text_delta", "text", "Let me run it."), blockStop(0),
				toolStart, delta(1, "input_json_delta", "partial_json", ""), delta(1, "input_json_delta", "partial_json", `{"command":"ls`)),
			wantType: ErrIncomplete,
			want: []Block{{Type: BlockText, Text: "Let me run it."},
				{Type: BlockToolUse, ID: "toolu_1", Name: "Bash", Input: json.RawMessage(`{}`)}},
		},
		{
			name:     "an event that does not parse",
			body:     []byte("event: message_start\ndata: " + msgStart + "\n\nevent: content_block_delta\ndata: {\"type\":\"content_bl\n\n"),
			wantType: ErrInvalidStream,
		},
		{
			name:     "a delta for a block that never started",
			body:     sse(msgStart, delta(3, "text_delta", "text", "x")),
			wantType: ErrInvalidStream,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := parse(t, "anthropic", tc.body)
			var e *Error
			if !errors.As(p.err, &e) || e.Type != tc.wantType {
				t.Fatalf("err = %v, want an *Error of type %s", p.err, tc.wantType)
			}
			if e.Retryable {
				t.Errorf("an error after the first event is retryable")
			}
			if diff := cmp.Diff(tc.want, p.resp.Message.Content); diff != "" {
				t.Errorf("partial content (-want +got):\n%s", diff)
			}
			if p.resp.StopReason != tc.stop {
				t.Errorf("stop = %q, want %q", p.resp.StopReason, tc.stop)
			}
		})
	}
}

func TestAnthropicMaxTokensInToolInput(t *testing.T) {
	toolStart := func(i int, id string) string {
		return `{"type":"content_block_start","index":` + itoa(i) + `,"content_block":{"type":"tool_use","id":"` + id + `","name":"Write","input":{}}}`
	}
	maxTok := `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":4096}}`
	tests := []struct {
		name     string
		lastJSON []string
		complete []bool
	}{
		// The API closes the block, then says max_tokens: the input is cut.
		{"cut input", []string{"", `{"file_path":"/tmp/a","content":"hel`}, []bool{true, false}},
		// Even an input that parses (none yet: "" is {}) is not run.
		{"cut right after the start", []string{""}, []bool{true, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			lines := []string{msgStart, toolStart(0, "toolu_a"), delta(0, "input_json_delta", "partial_json", `{"file_path":"/tmp/ok","content":"x"}`), blockStop(0), toolStart(1, "toolu_b")}
			for _, j := range tc.lastJSON {
				lines = append(lines, delta(1, "input_json_delta", "partial_json", j))
			}
			lines = append(lines, blockStop(1), maxTok, msgStop)
			p := parse(t, "anthropic", sse(lines...))
			if p.err != nil {
				t.Fatal(p.err)
			}
			if p.resp.StopReason != StopMaxTokens {
				t.Fatalf("stop = %q", p.resp.StopReason)
			}
			c := p.resp.Message.Content
			if len(c) != 2 || !c[0].InputComplete || c[1].InputComplete {
				t.Fatalf("InputComplete = %v, %v; want true (a finished call), false (the cut one)", c[0].InputComplete, c[1].InputComplete)
			}
			if !json.Valid(c[1].Input) {
				t.Errorf("a cut input is kept as invalid JSON %q: it must stay sendable", c[1].Input)
			}
		})
	}
}

func TestAnthropicRedactedAndUnknownBlocks(t *testing.T) {
	p := parse(t, "anthropic", sse(msgStart,
		`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va"}}`,
		blockStop(0),
		`{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		delta(1, "input_json_delta", "partial_json", `{"query":"go"}`),
		blockStop(1),
		`{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}`,
		blockStop(2),
		`{"type":"some_future_event","x":1}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`, msgStop))
	if p.err != nil {
		t.Fatal(p.err)
	}
	c := p.resp.Message.Content
	if len(c) != 3 || c[0].Type != BlockRedactedThinking || c[0].Data != "EmwKAhgBEgy3va" {
		t.Fatalf("content = %+v", c)
	}
	var srv map[string]any
	if err := json.Unmarshal(c[1].Raw, &srv); err != nil || srv["input"].(map[string]any)["query"] != "go" {
		t.Errorf("server_tool_use raw = %s (%v)", c[1].Raw, err)
	}
	if string(c[2].Raw) != `{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}` {
		t.Errorf("web_search_tool_result raw = %s", c[2].Raw)
	}
	// Sent back unchanged.
	body := anthropicBody(&Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}}, p.resp.Message}})
	got, _ := json.Marshal(body.Messages[1].Content)
	want := `[{"type":"redacted_thinking","data":"EmwKAhgBEgy3va"},{"id":"srvtoolu_1","input":{"query":"go"},"name":"web_search","type":"server_tool_use"},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}]`
	if string(got) != want {
		t.Errorf("sent back:\n got %s\nwant %s", got, want)
	}
}

// TestAnthropicRequestMatchesRecording rebuilds a real request of
// anthropic-sdk-go's cassette (after the streamed answer before it) and
// compares it with what the API accepted, as JSON values.
func TestAnthropicRequestMatchesRecording(t *testing.T) {
	first := parse(t, "anthropic", readTestdata(t, "anthropic-streaming-all-1.sse"))
	if first.err != nil {
		t.Fatal(first.err)
	}
	req := Request{
		Model: "claude-3-7-sonnet-latest", MaxTokens: 512,
		Tools: []Tool{{Name: "get_weather", Description: "Get weather",
			InputSchema: json.RawMessage(`{"properties":{"city":{"type":"string"},"units":{"enum":["celsius","fahrenheit"],"type":"string"}},"required":["city"],"type":"object"}`)}},
		Messages: []Message{
			{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "Weather in SF in fahrenheit?"}}},
			first.resp.Message,
			{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "toolu_01RaX2WYWRWCbaeFHssmGJXG",
				Content: []Block{{Type: BlockText, Text: "The weather in San Francisco is 68 degrees fahrenheit."}}}}},
		},
	}
	got := jsonValue(t, anthropicBody(&req))
	// tackle's prompt caching marks the last block; the recording has none.
	last := got["messages"].([]any)[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	if cc, _ := last["cache_control"].(map[string]any); cc["type"] != "ephemeral" {
		t.Errorf("the last block has no cache_control: %v", last)
	}
	delete(last, "cache_control")
	want := jsonValue(t, json.RawMessage(readTestdata(t, "anthropic-streaming-all-2.request.json")))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-recorded +tackle):\n%s", diff)
	}

	// And the tool_result with is_error of the other cassette.
	rec := jsonValue(t, json.RawMessage(readTestdata(t, "anthropic-tool-call-error-3.request.json")))
	wantMsg := rec["messages"].([]any)[2]
	gotBody := jsonValue(t, anthropicBody(&Request{Model: "m", Messages: []Message{
		{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "x"}}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockToolUse, ID: "t", Name: "n", Input: json.RawMessage(`{}`)}}},
		{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "toolu_01XKSJ1fM9PHM9vpwH1p7PDT", IsError: true,
			Content: []Block{{Type: BlockText, Text: "Error: Unexpected error, try again"}}}}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "y"}}},
	}}))
	if diff := cmp.Diff(wantMsg, gotBody["messages"].([]any)[2]); diff != "" {
		t.Errorf("is_error tool_result (-recorded +tackle):\n%s", diff)
	}
}

func jsonValue(t testing.TB, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAnthropicRequestBody(t *testing.T) {
	thinking := parse(t, "anthropic", chunksToSSE(t, readTestdata(t, "anthropic-clear-thinking.chunks.txt"))).resp.Message
	req := Request{
		Model: "claude-sonnet-4-5", System: "You are tackle.", Thinking: 2048,
		Tools: []Tool{{Name: "Read", Description: "Reads a file"}},
		Messages: []Message{
			{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "look"}, {Type: BlockImage, MediaType: "image/png", Source: "iVBORw0KGgo="}}},
			thinking,
			{Role: RoleUser, Content: []Block{
				{Type: BlockToolResult, ToolUseID: "toolu_1", Content: []Block{{Type: BlockText, Text: "a"}, {Type: BlockImage, MediaType: "image/jpeg", Source: "/9j/"}}},
				{Type: BlockToolResult, ToolUseID: "toolu_2", IsError: true, Text: "boom"},
				{Type: BlockText, Text: ""}, // empty text: dropped
			}},
			{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "ok"}, {Type: BlockThinking, Thinking: "no signature: another provider's"}}},
		},
	}
	b, err := json.Marshal(anthropicBody(&req))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-sonnet-4-5","max_tokens":8192,` +
		`"system":[{"type":"text","text":"You are tackle.","cache_control":{"type":"ephemeral"}}],` +
		`"messages":[` +
		`{"role":"user","content":[{"type":"text","text":"look"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":` + mustJSON(thinking.Content[0].Thinking) + `,"signature":` + mustJSON(thinking.Content[0].Signature) + `},{"type":"text","text":"925 ÷ 5 = 185"}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]},` +
		`{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"boom"}]}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"ok","cache_control":{"type":"ephemeral"}}]}],` +
		`"tools":[{"name":"Read","description":"Reads a file","input_schema":{"type":"object"}}],` +
		`"thinking":{"budget_tokens":2048,"type":"enabled"},"stream":true}`
	if string(b) != want {
		t.Errorf("body:\n got %s\nwant %s", b, want)
	}
	// Adaptive thinking.
	req.Thinking = -1
	if b, _ := json.Marshal(anthropicBody(&req).Thinking); string(b) != `{"type":"adaptive"}` {
		t.Errorf("adaptive thinking = %s", b)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestAnthropicCacheControlPlacement(t *testing.T) {
	// A paused turn ends with the assistant's message; its last block may
	// be one that cannot carry cache_control.
	req := Request{Model: "m", Messages: []Message{
		{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "q"}}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "a"}, {Type: BlockThinking, Thinking: "t", Signature: "s"}, {Type: BlockText, Text: ""}}},
	}}
	b, _ := json.Marshal(anthropicBody(&req).Messages[1].Content)
	if want := `[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"type":"thinking","thinking":"t","signature":"s"}]`; string(b) != want {
		t.Errorf("got %s\nwant %s", b, want)
	}
	if body := anthropicBody(&Request{Model: "m"}); body.System != nil || body.Messages == nil {
		t.Errorf("no system prompt: %+v", body)
	}
}

func TestAnthropicStopSequence(t *testing.T) {
	p := parse(t, "anthropic", sse(msgStart, textStart, delta(0, "text_delta", "text", "a"), blockStop(0),
		`{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":2}}`, msgStop))
	if p.err != nil || p.resp.StopReason != StopStopSequence || p.resp.StopSequence != "END" || p.resp.Usage.InputTokens != 10 {
		t.Errorf("resp %+v, err %v", p.resp, p.err)
	}
}

func TestEventsOnce(t *testing.T) {
	resp := &http.Response{StatusCode: 200, Body: nopCloser{bytes.NewReader(readTestdata(t, "anthropic-next-streaming.sse"))}, Header: http.Header{}}
	st := newHTTPStream("anthropic", context.Background(), func() {}, resp, &anthropicDecoder{})
	if err := st.peek(); err != nil {
		t.Fatal(err)
	}
	for range st.Events() {
	}
	for _, err := range st.Events() {
		if err == nil || !strings.Contains(err.Error(), "only once") {
			t.Errorf("second range: %v", err)
		}
	}
	if st.Response().StopReason != StopToolUse {
		t.Errorf("response lost")
	}
	if st.Close() != nil || st.Close() != nil {
		t.Errorf("Close is not idempotent")
	}
}

// The request as sent (tools encoded once and reused) is the same JSON
// as json.Marshal of its wire form, request after request.
func TestEncodeAnthropicMatchesMarshal(t *testing.T) {
	req := Request{Model: "m", System: "sys <b>&",
		Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}}},
		Tools: []Tool{
			{Name: "Read", Description: "Reads <a file> & more", InputSchema: json.RawMessage(`{ "type": "object", "properties": {"p": {"type": "string"}} }`)},
			{Name: "Empty", Description: "", InputSchema: nil},
		}}
	for round := range 3 {
		if round == 2 {
			req.Tools[0].Description = "changed"
		}
		got, err := encodeAnthropic(anthropicBody(&req))
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(anthropicBody(&req))
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("round %d: not JSON: %v\n%s", round, err, got)
		}
		json.Unmarshal(want, &w)
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		if !bytes.Equal(gb, wb) {
			t.Fatalf("round %d:\n got %s\nwant %s", round, got, want)
		}
	}
	noTools := Request{Model: "m", Messages: req.Messages}
	got, _ := encodeAnthropic(anthropicBody(&noTools))
	want, _ := json.Marshal(anthropicBody(&noTools))
	if !bytes.Equal(got, want) {
		t.Fatalf("without tools:\n got %s\nwant %s", got, want)
	}
}

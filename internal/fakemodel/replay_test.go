package fakemodel

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const recording = "testdata/anthropic_get_weather.sse"

// TestReplayRecording: the recorded stream is written byte for byte,
// padding included, and the conversation it starts continues under the
// server's checks.
func TestReplayRecording(t *testing.T) {
	raw, err := os.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	s := Start(t, &Options{Script: Turns(ReplayFile(t, recording), Say("It is sunny in San Francisco."))})
	first := msgs(user("Weather in SF?"))
	first["tools"] = []any{map[string]any{"name": "get_weather", "description": "Get weather",
		"input_schema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}}}}
	resp, body := postAnthropic(t, s, first)
	if resp.StatusCode != 200 || resp.Header.Get("content-type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	if diff := cmp.Diff(string(raw), string(body)); diff != "" {
		t.Errorf("replay differs from the recording (-want +got):\n%s", diff)
	}
	// the padding is there: parse, never compare bytes (agent.md §1)
	if !strings.Contains(string(body), `"text":"I"}      }`) {
		t.Error("the recording's padding is gone")
	}
	next := msgs(user("Weather in SF?"),
		assistant([]any{textBlock("I'd be happy to check the weather in San Francisco for you. Let me get that information for you right away."),
			toolUseBlock("toolu_017QoD96fYwGzCWvLfaPADWg", "get_weather", map[string]any{"city": "San Francisco"})}),
		user([]any{toolResultBlock("toolu_017QoD96fYwGzCWvLfaPADWg", "Sunny, 18°C")}))
	if resp, body := postAnthropic(t, s, next); resp.StatusCode != 200 {
		t.Errorf("continuation: %d %s", resp.StatusCode, body)
	}
}

func TestReplayCut(t *testing.T) {
	raw, err := os.ReadFile(recording)
	if err != nil {
		t.Fatal(err)
	}
	evs := splitEvents(raw)
	replay := func(t Turn, f func(*Turn)) Turn { f(&t); return t }
	s := Start(t, &Options{Script: Turns(
		replay(Replay(raw), func(t *Turn) { t.CutAfter = 5; t.Truncate = true }),
		replay(Replay(raw), func(t *Turn) { t.StreamError = &APIError{Type: "overloaded_error", Message: "Overloaded"} }),
	)})
	_, body := postAnthropic(t, s, msgs(user("a")))
	if want := strings.Join(bytesToStrings(evs[:5]), ""); string(body) != want {
		t.Errorf("CutAfter 5:\n got %q\nwant %q", body, want)
	}
	// default cut: after the last content delta (the tool input's last piece)
	_, body = postAnthropic(t, s, msgs(user("a")))
	got := parseSSE(t, body)
	names := eventNames(got)
	if names[len(names)-1] != "error" || names[len(names)-2] != "content_block_delta" || !strings.Contains(got[len(got)-2].Data, `co\"}`) {
		t.Errorf("default cut: %v", names)
	}
}

// TestReplayRegistersThinking: a recorded thinking turn (the shape of
// anthropic-sdk-go's refusal.sse) can be continued with its signature.
func TestReplayRegistersThinking(t *testing.T) {
	raw := []byte(`event: message_start
data: {"type":"message_start","message":{"model":"m","id":"msg_x","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":28,"output_tokens":5}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Simple question. "}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Benign."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig-thinking-a"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_R","name":"Read","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":20}}

event: message_stop
data: {"type":"message_stop"}

`)
	s := Start(t, &Options{Script: Repeat(Replay(raw))})
	postAnthropic(t, s, msgs(user("q")))
	cont := func(thinking string) map[string]any {
		var blocks []any
		if thinking != "" {
			blocks = append(blocks, map[string]any{"type": "thinking", "thinking": thinking, "signature": "sig-thinking-a"})
		}
		blocks = append(blocks, toolUseBlock("toolu_R", "Read", map[string]any{}))
		b := msgs(user("q"), assistant(blocks), user([]any{toolResultBlock("toolu_R", "x")}))
		b["thinking"] = map[string]any{"type": "adaptive"}
		return b
	}
	if resp, body := postAnthropic(t, s, cont("Simple question. Benign.")); resp.StatusCode != 200 {
		t.Errorf("unchanged: %d %s", resp.StatusCode, body)
	}
	if resp, _ := postAnthropic(t, s, cont("Simple question.")); resp.StatusCode != 400 {
		t.Errorf("changed: %d", resp.StatusCode)
	}
	if resp, body := postAnthropic(t, s, cont("")); resp.StatusCode != 400 || !strings.Contains(string(body), "Expected `thinking` or `redacted_thinking`, but found `tool_use`") {
		t.Errorf("dropped: %d %s", resp.StatusCode, body)
	}
}

func bytesToStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

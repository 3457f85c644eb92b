package fakemodel

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// recordedGetWeather is the turn that the recording in
// testdata/anthropic_get_weather.sse streams.
func recordedGetWeather() Turn {
	return Turn{
		ID:     "msg_01P7nF1bmxyzFZjF8zwbUDBM",
		Model:  "claude-3-7-sonnet-20250219",
		Usage:  Usage{InputTokens: 394, OutputTokens: 79},
		PingAt: []int{4},
		Blocks: []Block{
			{Type: "text", Text: "I'd be happy to check the weather in San Francisco for you. Let me get that information for you right away.",
				Pieces: []string{"I", "'", "d be", " happy to check", " the weather", " in", " San Francisco for you.", " Let", " me get", " that", " information for you right", " away", "."}},
			{Type: "tool_use", ID: "toolu_017QoD96fYwGzCWvLfaPADWg", Name: "get_weather", Input: `{"city": "San Francisco"}`,
				Pieces: []string{`{"city": "Sa`, "n Francis", `co"}`}},
		},
	}
}

// TestStreamMatchesRecording renders the recorded get_weather turn and
// compares it byte for byte with the live API's stream, its padding
// removed (the ping is kept as the API writes it, with the space).
func TestStreamMatchesRecording(t *testing.T) {
	raw, err := os.ReadFile("testdata/anthropic_get_weather.sse")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, ev := range parseSSE(t, raw) {
		data := ev.Data
		if ev.Event != "ping" {
			var c bytes.Buffer
			if err := json.Compact(&c, []byte(data)); err != nil {
				t.Fatal(err)
			}
			data = c.String()
		}
		want.WriteString("event: " + ev.Event + "\ndata: " + data + "\n\n")
	}

	s := Start(t, &Options{Script: Turns(recordedGetWeather())})
	resp, got := postAnthropic(t, s, msgs(user("Weather in SF?")))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("stream differs from the recording (-want +got):\n%s", diff)
	}
	if ct := resp.Header.Get("content-type"); ct != "text/event-stream; charset=utf-8" {
		t.Errorf("content-type %q", ct)
	}
	if id := resp.Header.Get("request-id"); !reqIDRe.MatchString(id) {
		t.Errorf("request-id %q", id)
	}
}

func TestStreamDefaultShape(t *testing.T) {
	s := Start(t, &Options{Script: Turns(Reply(Text("Let me look."), ToolUse("Read", map[string]any{"file_path": "/tmp/a.txt"})))})
	_, body := postAnthropic(t, s, msgs(user("read it")))
	evs := parseSSE(t, body)
	wantNames := []string{"message_start", "content_block_start", "ping",
		"content_block_delta", "content_block_delta", "content_block_stop", "ping",
		"content_block_start", "content_block_delta", "content_block_delta", "content_block_delta", "content_block_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if diff := cmp.Diff(wantNames, eventNames(evs)); diff != "" {
		t.Fatalf("event order (-want +got):\n%s", diff)
	}
	for _, ev := range evs {
		if ev.Event == "ping" && ev.Data != `{"type": "ping"}` {
			t.Errorf("ping data %q", ev.Data)
		}
		if typ := field(t, ev.Data, "type"); typ != ev.Event {
			t.Errorf("event %s has data type %v", ev.Event, typ)
		}
	}
	if id := field(t, evs[0].Data, "message.id").(string); !msgIDRe.MatchString(id) {
		t.Errorf("message id %q", id)
	}
	if m := field(t, evs[0].Data, "message.model"); m != "claude-sonnet-4-5" {
		t.Errorf("model %v, want the request's", m)
	}
	if id := field(t, evs[7].Data, "content_block.id").(string); !toolIDRe.MatchString(id) {
		t.Errorf("tool_use id %q", id)
	}
	// the input: an empty partial_json first, then pieces of at most 10 runes
	if got := evs[8].Data; got != `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}` {
		t.Errorf("first input delta %s", got)
	}
	var input string
	for _, ev := range evs[8:12] {
		input += field(t, ev.Data, "delta.partial_json").(string)
	}
	if input != `{"file_path":"/tmp/a.txt"}` {
		t.Errorf("input %q", input)
	}
	if sr := field(t, evs[13].Data, "delta.stop_reason"); sr != "tool_use" {
		t.Errorf("stop_reason %v", sr)
	}
	if evs[14].Data != `{"type":"message_stop"}` {
		t.Errorf("message_stop %s", evs[14].Data)
	}
}

func TestToolWithoutArguments(t *testing.T) {
	s := Start(t, &Options{Script: Turns(Call("updateIssueList", nil))})
	_, body := postAnthropic(t, s, msgs(user("update")))
	evs := parseSSE(t, body)
	var deltas []string
	for _, ev := range evs {
		if ev.Event == "content_block_delta" {
			deltas = append(deltas, ev.Data)
		}
	}
	want := []string{`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":""}}`}
	if diff := cmp.Diff(want, deltas); diff != "" {
		t.Errorf("deltas (-want +got):\n%s", diff)
	}
}

// TestThinkingMatchesRecording: agent.md §1's thinking lines (vercel/ai's
// anthropic-clear-thinking recording, signature shortened) byte for byte.
func TestThinkingMatchesRecording(t *testing.T) {
	sig := "EvQBCkYICxgCKkAxhD4N…"
	s := Start(t, &Options{Script: Turns(Reply(Block{Type: "thinking", Thinking: "The previous", Signature: sig, Pieces: []string{"The previous", ""}}))})
	_, body := postAnthropic(t, s, msgs(user("think")))
	var got []string
	for _, ev := range parseSSE(t, body) {
		if strings.HasPrefix(ev.Event, "content_block") {
			got = append(got, ev.Data)
		}
	}
	want := []string{
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The previous"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":""}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EvQBCkYICxgCKkAxhD4N…"}}`,
		`{"type":"content_block_stop","index":0}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("thinking block (-want +got):\n%s", diff)
	}
}

func TestThinkingSignatureAndRedacted(t *testing.T) {
	s := Start(t, &Options{Script: Turns(Reply(Thinking("Let me think about this carefully."), RedactedThinking(), Text("Done.")))})
	_, body := postAnthropic(t, s, msgs(user("think")))
	evs := parseSSE(t, body)
	var sigs int
	for i, ev := range evs {
		if ev.Event == "content_block_delta" && field(t, ev.Data, "delta.type") == "signature_delta" {
			sigs++
			if evs[i+1].Event != "content_block_stop" {
				t.Errorf("signature_delta followed by %s, want content_block_stop", evs[i+1].Event)
			}
			if sig, _ := field(t, ev.Data, "delta.signature").(string); len(sig) < 40 {
				t.Errorf("signature %q too short to look real", sig)
			}
		}
		if ev.Event == "content_block_start" && field(t, ev.Data, "content_block.type") == "redacted_thinking" {
			if d, _ := field(t, ev.Data, "content_block.data").(string); d == "" {
				t.Error("redacted_thinking without data")
			}
			if evs[i+1].Event != "content_block_stop" {
				t.Errorf("redacted_thinking start followed by %s, want its stop", evs[i+1].Event)
			}
		}
	}
	if sigs != 1 {
		t.Errorf("%d signature deltas, want 1", sigs)
	}
}

// TestUsageCumulative: message_start has the start usage, message_delta
// the final one, field by field (as in @ai-sdk's
// anthropic-message-delta-input-tokens recording: 43 at start, 61 after).
func TestUsageCumulative(t *testing.T) {
	s := Start(t, &Options{Script: Turns(Turn{
		Blocks:     []Block{Text("ok")},
		StartUsage: &Usage{InputTokens: 43, OutputTokens: 1},
		Usage:      Usage{InputTokens: 61, OutputTokens: 48, CacheReadInputTokens: 7},
	})})
	_, body := postAnthropic(t, s, msgs(user("hi")))
	evs := parseSSE(t, body)
	start := evs[0].Data
	if !strings.Contains(start, `"usage":{"input_tokens":43,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":0},"output_tokens":1,"service_tier":"standard"}`) {
		t.Errorf("message_start usage: %s", start)
	}
	md := evs[len(evs)-2].Data
	want := `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":61,"cache_creation_input_tokens":0,"cache_read_input_tokens":7,"output_tokens":48}}`
	if md != want {
		t.Errorf("message_delta\n got %s\nwant %s", md, want)
	}
}

func TestChunkingAndStops(t *testing.T) {
	text := "héllo wörld, ünïcode"
	s := Start(t, &Options{Script: Turns(
		Turn{Blocks: []Block{Text(text)}, Chunk: 3, Pings: PingNone, StopReason: "stop_sequence", StopSequence: "END"},
		Turn{Blocks: []Block{Text("no")}, StopReason: "refusal", StopDetails: json.RawMessage(`{"type":"refusal","category":null,"explanation":null}`)},
	)})
	_, body := postAnthropic(t, s, msgs(user("a")))
	evs := parseSSE(t, body)
	var got string
	for _, ev := range evs {
		if ev.Event == "ping" {
			t.Error("ping with PingNone")
		}
		if ev.Event == "content_block_delta" {
			p := field(t, ev.Data, "delta.text").(string)
			if n := len([]rune(p)); n > 3 || n == 0 {
				t.Errorf("piece %q has %d runes", p, n)
			}
			got += p
		}
	}
	if got != text {
		t.Errorf("text %q", got)
	}
	if md := evs[len(evs)-2].Data; !strings.Contains(md, `"delta":{"stop_reason":"stop_sequence","stop_sequence":"END"}`) {
		t.Errorf("message_delta %s", md)
	}
	_, body = postAnthropic(t, s, msgs(user("b")))
	evs = parseSSE(t, body)
	if md := evs[len(evs)-2].Data; !strings.Contains(md, `"delta":{"stop_reason":"refusal","stop_sequence":null,"stop_details":{"type":"refusal","category":null,"explanation":null}}`) {
		t.Errorf("message_delta %s", md)
	}
}

func TestPingModes(t *testing.T) {
	three := []Block{Text("a"), Text("b"), Text("c")}
	s := Start(t, &Options{Script: Turns(Turn{Blocks: three, Pings: PingBetween}, Turn{Blocks: three, PingAt: []int{1, 1}})})
	_, body := postAnthropic(t, s, msgs(user("a")))
	want := []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_stop", "ping",
		"content_block_start", "content_block_delta", "content_block_stop", "ping",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if diff := cmp.Diff(want, eventNames(parseSSE(t, body))); diff != "" {
		t.Errorf("PingBetween (-want +got):\n%s", diff)
	}
	_, body = postAnthropic(t, s, msgs(user("b")))
	if names := eventNames(parseSSE(t, body)); names[1] != "ping" || names[2] != "ping" || names[3] != "content_block_start" {
		t.Errorf("PingAt [1 1]: %v", names)
	}
}

func TestNonStreaming(t *testing.T) {
	s := Start(t, &Options{AllowNonStreaming: true, Script: Turns(Reply(Text("hi"), ToolUse("Read", `{"file_path":"/a"}`)))})
	body := msgs(user("x"))
	body["stream"] = false
	resp, got := postAnthropic(t, s, body)
	if resp.StatusCode != 200 || resp.Header.Get("content-type") != "application/json" {
		t.Fatalf("%d %s: %s", resp.StatusCode, resp.Header.Get("content-type"), got)
	}
	var m struct {
		ID, Type, Role, Model, StopReason string
		Content                           []map[string]any
	}
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatal(err)
	}
	if !msgIDRe.MatchString(m.ID) || m.Type != "message" || m.Role != "assistant" || len(m.Content) != 2 ||
		m.Content[1]["input"].(map[string]any)["file_path"] != "/a" {
		t.Errorf("message %s", got)
	}
}

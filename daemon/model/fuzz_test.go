package model

import (
	"encoding/json"
	"testing"
)

// FuzzStreams: no body a server sends makes a decoder panic, and what it
// builds can always be sent back (every tool input is a JSON object).
func FuzzStreams(f *testing.F) {
	for _, name := range []string{"anthropic-next-streaming.sse", "anthropic-refusal.sse", "anthropic-streaming-all-1.sse", "openai-streamaccumulator.sse"} {
		f.Add(readTestdata(f, name))
	}
	f.Add(chunksToSSE(f, readTestdata(f, "anthropic-clear-thinking.chunks.txt")))
	f.Add(chunks(choice(`{"tool_calls":[`+call(0, "call_a", "Read", `{"a":`)+`,`+call(3, "", "x", `1}`)+`]}`, "length")))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, provider := range []string{"anthropic", "openai"} {
			p := parse(t, provider, body)
			for _, b := range p.resp.Message.Content {
				if b.Type == BlockToolUse && !validObject(b.Input) {
					t.Fatalf("%s: tool input %q is not an object", provider, b.Input)
				}
			}
			if _, err := json.Marshal(p.resp); err != nil {
				t.Fatalf("%s: response does not marshal: %v", provider, err)
			}
			if _, err := json.Marshal(anthropicBody(&Request{Model: "m", Messages: []Message{p.resp.Message}})); err != nil {
				t.Fatalf("%s: request does not marshal: %v", provider, err)
			}
			if _, err := json.Marshal(openAIBody(&Request{Model: "m", Messages: []Message{p.resp.Message}}, "max_tokens")); err != nil {
				t.Fatalf("%s: openai request does not marshal: %v", provider, err)
			}
		}
	})
}

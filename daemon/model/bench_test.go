package model

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

const benchDeltas = 5000

// anthropicBenchBody is a stream of benchDeltas text deltas (and a tool
// call of 50 input pieces), as the API writes it.
func anthropicBenchBody() []byte {
	var b strings.Builder
	w := func(typ, data string) { b.WriteString("event: " + typ + "\ndata: " + data + "\n\n") }
	w("message_start", `{"type":"message_start","message":{"model":"claude-sonnet-5","id":"msg_01P7nF1bmxyzFZjF8zwbUDBM","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":394,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1,"service_tier":"standard"}}}`)
	w("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	w("ping", `{"type": "ping"}`)
	for i := range benchDeltas {
		w("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" word%d"}}`, i))
	}
	w("content_block_stop", `{"type":"content_block_stop","index":0}`)
	w("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_017QoD96fYwGzCWvLfaPADWg","name":"Read","input":{}}}`)
	w("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`)
	w("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"file_path\": \"/a/"}}`)
	for range 48 {
		w("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"dir/"}}`)
	}
	w("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"x.go\"}"}}`)
	w("content_block_stop", `{"type":"content_block_stop","index":1}`)
	w("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":5079}}`)
	w("message_stop", `{"type":"message_stop"}`)
	return []byte(b.String())
}

func openAIBenchBody() []byte {
	var b strings.Builder
	w := func(data string) { b.WriteString("data: " + data + "\n\n") }
	head := `{"id":"chatcmpl-A3Tguz3LSXTHBTY2NAPBCSyfBltxF","object":"chat.completion.chunk","created":1725392480,"model":"gpt-4o-2024-05-13","system_fingerprint":"fp_157b3831f5","choices":[{"index":0,"delta":`
	w(head + `{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}`)
	for i := range benchDeltas {
		w(head + fmt.Sprintf(`{"content":" word%d"},"logprobs":null,"finish_reason":null}],"usage":null}`, i))
	}
	w(head + `{"tool_calls":[{"index":0,"id":"call_FXoAjBUMcVv1k40fficJ9cSs","type":"function","function":{"name":"Read","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`)
	for range 50 {
		w(head + `{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}`)
	}
	w(head + `{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}`)
	w(`{"id":"chatcmpl-A3Tguz3LSXTHBTY2NAPBCSyfBltxF","object":"chat.completion.chunk","created":1725392480,"model":"gpt-4o-2024-05-13","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5051,"total_tokens":5061}}`)
	w("[DONE]")
	return []byte(b.String())
}

func benchParse(b *testing.B, provider string, body []byte) {
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var dec decoder = &anthropicDecoder{}
		if provider == "openai" {
			dec = newOpenAIDecoder()
		}
		resp := &http.Response{StatusCode: 200, Body: nopCloser{bytes.NewReader(body)}, Header: http.Header{}}
		st := newHTTPStream(provider, context.Background(), func() {}, resp, dec)
		if err := st.peek(); err != nil {
			b.Fatal(err)
		}
		n := 0
		for _, err := range st.Events() {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if r := st.Response(); r.StopReason != StopToolUse || n < benchDeltas {
			b.Fatalf("stop %q after %d events", r.StopReason, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchDeltas, "ns/delta")
}

// BenchmarkParseAnthropic5000: a 5,000-delta Messages API stream through
// the SSE reader, the decoder and the iterator.
func BenchmarkParseAnthropic5000(b *testing.B) { benchParse(b, "anthropic", anthropicBenchBody()) }

// BenchmarkParseOpenAI5000: the same for chat completions chunks.
func BenchmarkParseOpenAI5000(b *testing.B) { benchParse(b, "openai", openAIBenchBody()) }

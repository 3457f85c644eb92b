package model

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzAnthropicStream and FuzzOpenAIStream send the input as the body of
// a 200 text/event-stream response from a real HTTP server (in two
// writes, split at split), through the provider's Stream, Events and
// Response, as the agent reads them. Whatever the server sends:
//
//   - Stream fails with a *Error of the provider, or Events yields events
//     and at most one error, last, also a *Error of the provider; a stream
//     that ends without error saw its end (message_stop, [DONE]): never an
//     empty success;
//   - every event names a block of the response; a tool_use event names a
//     tool_use block with that id;
//   - the response holds what the events streamed: a text or thinking
//     block's text is the text its events carried up to its block_stop, a
//     complete tool input is the input its events carried (or the one
//     given whole at the start), always a JSON object, and an incomplete
//     one is a JSON object too, so the message can be sent back;
//   - the response and a request sending it back encode;
//   - all of it within a bounded time, and the stream closes (goleak).
func FuzzAnthropicStream(f *testing.F) {
	for _, name := range []string{"anthropic-next-streaming.sse", "anthropic-refusal.sse", "anthropic-streaming-all-1.sse", "anthropic-streaming-all-2.sse"} {
		f.Add(readTestdata(f, name), uint16(0))
	}
	for _, name := range []string{"anthropic-clear-thinking.chunks.txt", "anthropic-message-delta-input-tokens.chunks.txt", "anthropic-tool-no-args.chunks.txt"} {
		c := readTestdata(f, name)
		f.Add(chunksToSSE(f, c), uint16(17))
		f.Add(dataOnly(c), uint16(1000))
	}
	for _, s := range []string{
		"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"x\",\"content\":[{\"type\":\"text\",\"text\":\"whole\"},{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Read\",\"input\":{\"a\":1}}],\"stop_reason\":\"tool_use\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
		"data: {\"type\":\"message_start\",\"message\":{}}\n\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"x\",\"input\":{}}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\":\"}}\n\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"}}\n\n",
		"data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"a\"}}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"b\"}}\n\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"late\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n",
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
		": ping\n\nevent: ping\ndata: {\"type\": \"ping\"}\r\n\r\n", "data: not json\n\n", "", "\n\n\n", "data: {}", "event: message_stop\ndata: {}\n\n",
	} {
		f.Add([]byte(s), uint16(len(s)/2))
	}
	fuzzStream(f, "anthropic", func(url string, c *http.Client) Provider {
		return NewAnthropic(&AnthropicOptions{BaseURL: url, APIKey: "k", HTTPClient: c, MaxRetries: -1})
	}, "message_stop")
}

// FuzzOpenAIStream: see FuzzAnthropicStream.
func FuzzOpenAIStream(f *testing.F) {
	f.Add(readTestdata(f, "openai-streamaccumulator.sse"), uint16(0))
	for _, b := range [][]byte{
		chunks(choice(`{"role":"assistant","content":"Hel"}`, ""), choice(`{"content":"lo"}`, ""), choice(`{}`, "stop"), `{"id":"c","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}`),
		chunks(choice(`{"reasoning_content":"think"}`, ""), choice(`{"reasoning":"more"}`, ""), choice(`{"content":"answer"}`, "stop")),
		chunks(choice(`{"tool_calls":[`+call(0, "call_a", "Read", `{"file_path":`)+`]}`, ""), choice(`{"tool_calls":[`+call(0, "", "", `"/x"}`)+`]}`, ""), choice(`{}`, "tool_calls")),
		chunks(choice(`{"tool_calls":[`+call(0, "call_a", "Read", `{"a":`)+`,`+call(3, "", "x", `1}`)+`]}`, "length")),
		chunks(choice(`{"tool_calls":[{"id":"c1","function":{"name":"A","arguments":{"x":1}}},{"function":{"arguments":"{}"}}]}`, "")),
		chunks(choice(`{"refusal":"no"}`, "content_filter")), chunks(choice(`{"content":"cut"}`, ""), "-"),
		[]byte("data: {\"error\":{\"message\":\"bad\",\"type\":\"invalid_request_error\"}}\n\n"), []byte("data: {\"object\":\"error\",\"message\":\"m\",\"type\":\"t\"}\n\n"),
		[]byte("data: {\"error\":\"text\"}\n\n"), []byte("data: [DONE]\n\n"), []byte(": keep-alive\n\ndata: [DONE]"), []byte("data: {\"choices\":[{\"index\":1,\"delta\":{\"content\":\"other\"}}]}\n\ndata: [DONE]\n\n"),
	} {
		f.Add(b, uint16(len(b)/3))
	}
	fuzzStream(f, "openai", func(url string, c *http.Client) Provider {
		return NewOpenAI(&OpenAIOptions{BaseURL: url, APIKey: "k", HTTPClient: c, MaxRetries: -1})
	}, "[DONE]")
}

func fuzzStream(f *testing.F, provider string, newProvider func(url string, c *http.Client) Provider, end string) {
	body := &atomic.Pointer[[]byte]{}
	split := &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b := *body.Load()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		n := min(int(split.Load()), len(b))
		w.Write(b[:n])
		w.(http.Flusher).Flush()
		w.Write(b[n:])
	}))
	tr := &http.Transport{}
	f.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	p := newProvider(srv.URL, &http.Client{Transport: tr})
	f.Fuzz(func(t *testing.T, data []byte, at uint16) {
		body.Store(&data)
		split.Store(int64(at))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		start := time.Now()
		defer func() {
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("the stream took %v", d)
			}
		}()
		st, err := p.Stream(ctx, Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}}}})
		if err != nil {
			checkProviderError(t, provider, err)
			return
		}
		defer st.Close()
		var (
			evs    []Event
			errs   []error
			errAt  = -1
			stream = 0
		)
		for ev, err := range st.Events() {
			if err != nil {
				errs = append(errs, err)
				errAt = stream
				continue
			}
			if len(errs) > 0 {
				t.Fatalf("an event after the error %v: %+v", errs[0], ev)
			}
			evs = append(evs, ev)
			stream++
		}
		if len(errs) > 1 || (len(errs) == 1 && errAt != len(evs)) {
			t.Fatalf("errors %v: want at most one, last", errs)
		}
		if len(errs) == 1 {
			checkProviderError(t, provider, errs[0])
		} else if !bytes.Contains(data, []byte(end)) {
			t.Fatalf("a stream without %s ended without error", end)
		}
		resp := st.Response()
		checkResponse(t, provider, evs, resp)
		_ = st.Close() // idempotent
	})
}

func checkProviderError(t *testing.T, provider string, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Provider != provider {
		t.Fatalf("error %v (%T) is not a %s *Error", err, err, provider)
	}
	if strings.TrimSpace(err.Error()) == "" {
		t.Fatal("an error without a message")
	}
}

// checkResponse: the response holds what the events streamed.
func checkResponse(t *testing.T, provider string, evs []Event, resp *Response) {
	t.Helper()
	content := resp.Message.Content
	if resp.Message.Role != RoleAssistant {
		t.Fatalf("role %q", resp.Message.Role)
	}
	text := make([]strings.Builder, len(content))
	sig := make([]strings.Builder, len(content))
	stopped := make([]bool, len(content))
	toolUse := make([]*Event, len(content))
	inputs := make([]int, len(content)) // tool_input events before the block's stop
	for i := range evs {
		ev := &evs[i]
		if ev.Type == EventMessage {
			continue
		}
		if ev.Index < 0 || ev.Index >= len(content) {
			t.Fatalf("event %+v: index outside the %d blocks", ev, len(content))
		}
		b := &content[ev.Index]
		switch ev.Type {
		case EventToolUse:
			if b.Type != BlockToolUse || b.ID != ev.ID || !strings.HasPrefix(b.Name, ev.Name) || toolUse[ev.Index] != nil {
				t.Fatalf("tool_use event %+v for block %+v", ev, b)
			}
			toolUse[ev.Index] = ev
		case EventBlockStop:
			stopped[ev.Index] = true
		case EventText, EventThinking, EventToolInput:
			if !stopped[ev.Index] {
				if ev.Type == EventToolInput {
					inputs[ev.Index]++
				}
				text[ev.Index].WriteString(ev.Text)
				sig[ev.Index].WriteString(ev.Signature)
			}
		default:
			t.Fatalf("event type %q", ev.Type)
		}
	}
	for i := range content {
		b := &content[i]
		got := text[i].String()
		switch b.Type {
		case BlockText:
			if b.Text != got {
				t.Fatalf("block %d: text %q, the events streamed %q", i, b.Text, got)
			}
		case BlockThinking:
			if b.Thinking != got || !strings.HasSuffix(b.Signature, sig[i].String()) {
				t.Fatalf("block %d: thinking %q (signature %q), the events streamed %q (%q)", i, b.Thinking, b.Signature, got, sig[i].String())
			}
		case BlockToolUse:
			if toolUse[i] == nil && provider == "openai" {
				t.Fatalf("block %d: a tool_use block without its event", i)
			}
			if !validObject(b.Input) {
				t.Fatalf("block %d: tool input %q is not a JSON object", i, b.Input)
			}
			// With input deltas, the input is what every delta of the block
			// carried; without, it may be the one given at the start.
			if in := strings.TrimSpace(got); b.InputComplete && inputs[i] > 0 && string(b.Input) != in {
				t.Fatalf("block %d: complete input %q, the events streamed %q", i, b.Input, in)
			}
		}
	}
	if _, err := json.Marshal(resp); err != nil {
		t.Fatalf("the response does not encode: %v", err)
	}
	req := &Request{Model: "m", Messages: []Message{resp.Message}}
	if _, err := json.Marshal(anthropicBody(req)); err != nil {
		t.Fatalf("an anthropic request sending it back does not encode: %v", err)
	}
	if _, err := json.Marshal(openAIBody(req, "max_tokens")); err != nil {
		t.Fatalf("an openai request sending it back does not encode: %v", err)
	}
}

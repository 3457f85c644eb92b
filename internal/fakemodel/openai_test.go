package fakemodel

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// oaiChunk is the part of a chunk the tests look at.
type oaiChunk struct {
	ID                string           `json:"id"`
	Object            string           `json:"object"`
	Created           int64            `json:"created"`
	Model             string           `json:"model"`
	SystemFingerprint string           `json:"system_fingerprint"`
	Choices           []map[string]any `json:"choices"`
	Usage             map[string]any   `json:"usage"`
}

// openAIChunks checks the data-only framing and [DONE] and returns the
// chunks (without [DONE]) and their raw data.
func openAIChunks(t *testing.T, body []byte) ([]oaiChunk, []string) {
	t.Helper()
	evs := parseSSE(t, body)
	if len(evs) == 0 || evs[len(evs)-1].Data != "[DONE]" {
		t.Fatalf("stream does not end with data: [DONE]: %q", body)
	}
	var out []oaiChunk
	var raws []string
	for _, ev := range evs[:len(evs)-1] {
		if ev.Event != "" {
			t.Errorf("openai event line %q", ev.Event)
		}
		var c oaiChunk
		if err := json.Unmarshal([]byte(ev.Data), &c); err != nil {
			t.Fatalf("chunk %q: %v", ev.Data, err)
		}
		out = append(out, c)
		raws = append(raws, ev.Data)
	}
	return out, raws
}

func delta(c oaiChunk) map[string]any {
	if len(c.Choices) == 0 {
		return nil
	}
	d, _ := c.Choices[0]["delta"].(map[string]any)
	return d
}

func TestOpenAITextAndToolCall(t *testing.T) {
	s := Start(t, &Options{Script: Turns(Turn{
		ID:     "chatcmpl-A3Tguz3LSXTHBTY2NAPBCSyfBltxF",
		Model:  "gpt-4o-2024-05-13",
		Usage:  Usage{InputTokens: 10, OutputTokens: 100},
		Blocks: []Block{Text("Let's go."), {Type: "tool_use", ID: "call_FXoAjBUMcVv1k40fficJ9cSs", Name: "get_weather", Input: `{"location":"Santorini, Greece"}`, Pieces: []string{`{"`, "location", `":"`, "Sant", "orini", ",", " Greece", `"}`}}},
	})})
	resp, body := postOpenAI(t, s, chat(oaiMsg("user", "weather?")))
	if resp.StatusCode != 200 || resp.Header.Get("content-type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("%d %q: %s", resp.StatusCode, resp.Header.Get("content-type"), body)
	}
	chunks, raws := openAIChunks(t, body)
	c0 := chunks[0]
	for _, c := range chunks {
		if c.ID != c0.ID || c.Object != "chat.completion.chunk" || c.Created != c0.Created || c.Model != "gpt-4o-2024-05-13" || !strings.HasPrefix(c.SystemFingerprint, "fp_") {
			t.Errorf("common fields of %+v", c)
		}
	}
	common := fmt.Sprintf(`{"id":"chatcmpl-A3Tguz3LSXTHBTY2NAPBCSyfBltxF","object":"chat.completion.chunk","created":%d,"model":"gpt-4o-2024-05-13","system_fingerprint":%q,`, c0.Created, c0.SystemFingerprint)
	// agent.md §2's recorded chunks, but for created, the fingerprint and
	// logprobs (null: the request asked for none)
	want := []string{
		common + `"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
		common + `"choices":[{"index":0,"delta":{"content":"Let's go."},"logprobs":null,"finish_reason":null}],"usage":null}`,
		common + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_FXoAjBUMcVv1k40fficJ9cSs","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
		common + `"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\""}}]},"logprobs":null,"finish_reason":null}],"usage":null}`,
	}
	if diff := cmp.Diff(want, raws[:4]); diff != "" {
		t.Errorf("chunks (-want +got):\n%s", diff)
	}
	var args string
	for _, c := range chunks[3:] {
		if tc, ok := delta(c)["tool_calls"].([]any); ok {
			args += tc[0].(map[string]any)["function"].(map[string]any)["arguments"].(string)
		}
	}
	if args != `{"location":"Santorini, Greece"}` {
		t.Errorf("arguments %q", args)
	}
	n := len(raws)
	if raws[n-2] != common+`"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}` {
		t.Errorf("finish chunk %s", raws[n-2])
	}
	if raws[n-1] != common+`"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":100,"total_tokens":110}}` {
		t.Errorf("usage chunk %s", raws[n-1])
	}
}

func TestOpenAIToolFirstAndIDs(t *testing.T) {
	s := Start(t, &Options{Script: Turns(Call("list", nil))})
	_, body := postOpenAI(t, s, chat(oaiMsg("user", "go")))
	chunks, _ := openAIChunks(t, body)
	if !cmplIDRe.MatchString(chunks[0].ID) {
		t.Errorf("id %q", chunks[0].ID)
	}
	d := delta(chunks[0])
	if d["role"] != "assistant" || d["content"] != nil {
		t.Errorf("first delta %v", d)
	}
	if _, ok := d["content"]; !ok {
		t.Error("first delta has no content: null")
	}
	call := d["tool_calls"].([]any)[0].(map[string]any)
	if !callIDRe.MatchString(call["id"].(string)) || call["function"].(map[string]any)["arguments"] != "" {
		t.Errorf("first call fragment %v", call)
	}
	// no arguments: the first fragment, then the finish chunk
	if len(chunks) != 3 || chunks[1].Choices[0]["finish_reason"] != "tool_calls" {
		t.Errorf("chunks %+v", chunks)
	}
}

func TestOpenAIParallelCalls(t *testing.T) {
	calls := []Block{ToolUse("Read", `{"file_path":"/a"}`), ToolUse("Read", `{"file_path":"/b"}`)}
	for _, interleave := range []bool{false, true} {
		t.Run(fmt.Sprint("interleave=", interleave), func(t *testing.T) {
			s := Start(t, &Options{OpenAIInterleaveToolCalls: interleave, Script: Turns(Turn{Blocks: calls, Chunk: 6})})
			_, body := postOpenAI(t, s, chat(oaiMsg("user", "go")))
			chunks, _ := openAIChunks(t, body)
			var order []string
			args := map[float64]string{}
			ids := map[float64]string{}
			for _, c := range chunks {
				tcs, _ := delta(c)["tool_calls"].([]any)
				for _, tc := range tcs {
					m := tc.(map[string]any)
					i := m["index"].(float64)
					if id, ok := m["id"].(string); ok {
						ids[i] = id
						order = append(order, fmt.Sprintf("h%v", i))
						if m["function"].(map[string]any)["name"] != "Read" {
							t.Errorf("name in %v", m)
						}
					} else {
						order = append(order, fmt.Sprintf("p%v", i))
					}
					args[i] += m["function"].(map[string]any)["arguments"].(string)
				}
			}
			if args[0] != `{"file_path":"/a"}` || args[1] != `{"file_path":"/b"}` || ids[0] == ids[1] {
				t.Errorf("args %v ids %v", args, ids)
			}
			want := "h0 p0 p0 p0 h1 p1 p1 p1"
			if interleave {
				want = "h0 h1 p0 p1 p0 p1 p0 p1"
			}
			if got := strings.Join(order, " "); got != want {
				t.Errorf("fragment order %q, want %q", got, want)
			}
		})
	}
}

func TestOpenAIFinishStopAfterToolCalls(t *testing.T) {
	finish := func(t *testing.T, body []byte) any {
		chunks, _ := openAIChunks(t, body)
		return chunks[len(chunks)-2].Choices[0]["finish_reason"]
	}
	s := Start(t, &Options{OpenAIStopAfterToolCalls: true, Script: Repeat(Call("Read", `{}`))})
	_, body := postOpenAI(t, s, chat(oaiMsg("user", "go")))
	if f := finish(t, body); f != "stop" {
		t.Errorf("finish_reason %v, want stop", f)
	}
	s2 := Start(t, &Options{Script: Turns(Turn{Blocks: []Block{ToolUse("Read", `{}`)}, FinishReason: "stop"}, Turn{Blocks: []Block{Text("x")}, StopReason: "max_tokens"})})
	_, body = postOpenAI(t, s2, chat(oaiMsg("user", "go")))
	if f := finish(t, body); f != "stop" {
		t.Errorf("finish_reason %v, want stop", f)
	}
	_, body = postOpenAI(t, s2, chat(oaiMsg("user", "go")))
	if f := finish(t, body); f != "length" {
		t.Errorf("finish_reason %v, want length", f)
	}
}

func TestOpenAIUsageVariants(t *testing.T) {
	for _, tc := range []struct {
		mode UsageChoices
		want string
	}{
		{UsageChoicesEmpty, `"choices":[],"usage":{`},
		{UsageChoicesNull, `"choices":null,"usage":{`},
		{UsageChoicesOmitted, `"system_fingerprint":"fp_`},
	} {
		s := Start(t, &Options{OpenAIUsageChoices: tc.mode, Script: Repeat(Say("hi"))})
		_, body := postOpenAI(t, s, chat(oaiMsg("user", "go")))
		_, raws := openAIChunks(t, body)
		last := raws[len(raws)-1]
		if !strings.Contains(last, tc.want) || !strings.Contains(last, `"usage":{"prompt_tokens":`) {
			t.Errorf("mode %d: usage chunk %s", tc.mode, last)
		}
		if tc.mode == UsageChoicesOmitted && strings.Contains(last, "choices") {
			t.Errorf("choices not omitted: %s", last)
		}
		// without include_usage: no usage chunk, no usage key
		body2 := chat(oaiMsg("user", "go"))
		delete(body2, "stream_options")
		_, b := postOpenAI(t, s, body2)
		_, raws = openAIChunks(t, b)
		for _, r := range raws {
			if strings.Contains(r, "usage") {
				t.Errorf("usage without include_usage: %s", r)
			}
		}
		if !strings.Contains(raws[len(raws)-1], `"finish_reason":"stop"`) {
			t.Errorf("last chunk %s", raws[len(raws)-1])
		}
	}
}

func TestOpenAIReasoningAndPaths(t *testing.T) {
	s := Start(t, &Options{Script: Repeat(Reply(Thinking("hmm"), Text("ok")))})
	for _, path := range []string{"/v1/chat/completions", "/chat/completions"} {
		_, body := post(t, s.URL()+path, chat(oaiMsg("user", "go")), "authorization", "Bearer k")
		chunks, _ := openAIChunks(t, body)
		if delta(chunks[1])["reasoning_content"] != "hmm" || delta(chunks[2])["content"] != "ok" {
			t.Errorf("%s: chunks %+v", path, chunks)
		}
	}
}

func TestOpenAINonStreaming(t *testing.T) {
	s := Start(t, &Options{AllowNonStreaming: true, Script: Turns(Reply(Text("a"), ToolUse("Read", `{"x":1}`)))})
	body := chat(oaiMsg("user", "go"))
	body["stream"] = false
	_, got := postOpenAI(t, s, body)
	var c struct {
		Object  string
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct {
				Content   string
				ToolCalls []OpenAIToolCall `json:"tool_calls"`
			}
		}
	}
	if err := json.Unmarshal(got, &c); err != nil {
		t.Fatal(err)
	}
	if c.Object != "chat.completion" || c.Choices[0].Message.Content != "a" || c.Choices[0].Message.ToolCalls[0].Function.Arguments != `{"x":1}` || c.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("completion %s", got)
	}
}

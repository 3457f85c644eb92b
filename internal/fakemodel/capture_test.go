package fakemodel

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCapture(t *testing.T) {
	s := Start(t, &Options{Script: Repeat(Say("ok"))})
	body := msgs(user("read it"), assistant([]any{toolUseBlock("toolu_A", "Read", map[string]any{"file_path": "/a"})}),
		user([]any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_A", "is_error": true,
			"content": []any{map[string]any{"type": "text", "text": "Error: no such file"}}}}))
	body["system"] = []any{map[string]any{"type": "text", "text": "You are tackle.", "cache_control": map[string]any{"type": "ephemeral"}}}
	body["tools"] = []any{map[string]any{"name": "Read", "input_schema": map[string]any{"type": "object"}}}
	postAnthropic(t, s, body, "user-agent", "tackle-test")
	postOpenAI(t, s, chat(oaiMsg("system", "Be brief."), oaiMsg("user", "go"), oaiCalls("call_a"), oaiTool("call_a", "sunny")))

	reqs, err := s.WaitRequests(ctxTimeout(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	a, o := reqs[0], reqs[1]
	if a.Index != 0 || a.Format != Anthropic || a.Method != "POST" || a.Path != "/v1/messages" ||
		a.Header.Get("user-agent") != "tackle-test" || a.Header.Get("x-api-key") != "sk-ant-test" || !strings.Contains(string(a.Body), `"stream":true`) {
		t.Errorf("anthropic request %+v", a)
	}
	if a.Model() != "claude-sonnet-4-5" || a.System() != "You are tackle." || a.Anthropic.MaxTokens != 1024 || len(a.Anthropic.Messages) != 3 {
		t.Errorf("parsed %+v", a.Anthropic)
	}
	if diff := cmp.Diff([]ToolResult{{ID: "toolu_A", Content: "Error: no such file", IsError: true}}, a.ToolResults()); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Read"}, a.ToolNames()); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if o.Index != 1 || o.Format != OpenAI || o.System() != "Be brief." || o.Header.Get("authorization") != "Bearer sk-test" || !o.OpenAI.includeUsage() {
		t.Errorf("openai request %+v", o)
	}
	if diff := cmp.Diff([]ToolResult{{ID: "call_a", Content: "sunny"}}, o.ToolResults()); diff != "" {
		t.Errorf("openai tool results (-want +got):\n%s", diff)
	}
	if got := len(s.Requests()); got != 2 {
		t.Errorf("%d requests", got)
	}
	// waiting for a request that does not come
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := s.WaitRequests(ctx, 3); err == nil || !strings.Contains(err.Error(), "2 arrived") {
		t.Errorf("WaitRequests(3): %v", err)
	}
}

func TestWaitRequestsWakesUp(t *testing.T) {
	s := Start(t, &Options{Script: Repeat(Say("ok"))})
	got := make(chan []*Request, 1)
	go func() {
		reqs, _ := s.WaitRequests(ctxTimeout(t), 2)
		got <- reqs
	}()
	postAnthropic(t, s, msgs(user("one")))
	postAnthropic(t, s, msgs(user("two")))
	reqs := <-got
	if len(reqs) != 2 || reqs[1].LastUserText() != "two" {
		t.Errorf("requests %v", reqs)
	}
}

func TestConcurrentRequests(t *testing.T) {
	s := Start(t, &Options{Script: Repeat(Reply(Thinking("hm"), Text("some text here"), ToolUse("Read", `{"file_path":"/a"}`)))})
	const n = 16
	var wg sync.WaitGroup
	ids := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body []byte
			if i%2 == 0 {
				_, body = postAnthropic(t, s, msgs(user(fmt.Sprint("q", i))))
			} else {
				_, body = postOpenAI(t, s, chat(oaiMsg("user", fmt.Sprint("q", i))))
			}
			evs := parseSSE(t, body)
			ids[i] = evs[0].Data[:80]
		}()
	}
	wg.Wait()
	reqs := s.Requests()
	if len(reqs) != n {
		t.Fatalf("%d requests", len(reqs))
	}
	seen := map[int]bool{}
	for _, r := range reqs {
		seen[r.Index] = true
		o, err := s.WaitDone(ctxTimeout(t), r.Index)
		if err != nil || o.Status != 200 || o.Turn == nil || o.Events == 0 {
			t.Errorf("request %d outcome %+v %v", r.Index, o, err)
		}
	}
	if len(seen) != n {
		t.Errorf("indices %v", seen)
	}
	uniq := map[string]bool{}
	for _, id := range ids {
		uniq[id] = true
	}
	if len(uniq) != n {
		t.Errorf("%d distinct message starts for %d streams", len(uniq), n)
	}
}

// TestScriptFromToolResults: a script that answers from what the client
// sent back.
func TestScriptFromToolResults(t *testing.T) {
	s := Start(t, &Options{Script: func(r *Request) Turn {
		if res := r.ToolResults(); len(res) > 0 {
			return Say("The file says: " + res[0].Content)
		}
		return Turn{Blocks: []Block{{Type: "tool_use", ID: "toolu_01FIXED", Name: "Read", Input: `{"file_path":"/a"}`}}}
	}})
	_, body := postAnthropic(t, s, msgs(user("read /a")))
	if !strings.Contains(string(body), `"id":"toolu_01FIXED"`) {
		t.Fatalf("first turn %s", body)
	}
	_, body = postAnthropic(t, s, msgs(user("read /a"), assistant([]any{toolUseBlock("toolu_01FIXED", "Read", map[string]any{"file_path": "/a"})}),
		user([]any{toolResultBlock("toolu_01FIXED", "hello")})))
	var text string
	for _, ev := range parseSSE(t, body) {
		if ev.Event == "content_block_delta" {
			text += field(t, ev.Data, "delta.text").(string)
		}
	}
	if text != "The file says: hello" {
		t.Errorf("text %q", text)
	}
}

// TestUnplanned: a request past the script's end, and a panicking script,
// get a 500 and are reported (Start would fail the test; New/Run do not).
func TestUnplanned(t *testing.T) {
	s := New(&Options{Script: Turns(Say("one"))})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx, ln) }()
	defer func() {
		cancel()
		<-ran
	}()
	url := "http://" + ln.Addr().String() + "/v1/messages"
	post(t, url, msgs(user("a")), anthropicHeaders...)
	resp, body := post(t, url, msgs(user("b")), anthropicHeaders...)
	want := anthropicErrorBody("api_error", "fakemodel: request 1 (POST /v1/messages) came after the script's last turn (1 turns)", resp.Header.Get("request-id"))
	if resp.StatusCode != 500 || string(body) != want {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	s.SetScript(func(*Request) Turn { panic("boom") })
	resp, _ = post(t, url, msgs(user("c")), anthropicHeaders...)
	s.SetScript(Repeat(Reply(Block{Type: "image"})))
	resp2, _ := post(t, url, msgs(user("d")), anthropicHeaders...)
	if resp.StatusCode != 500 || resp2.StatusCode != 500 {
		t.Errorf("panic: %d, bad block: %d", resp.StatusCode, resp2.StatusCode)
	}
	want2 := []string{
		"request 1 (POST /v1/messages) came after the script's last turn (1 turns)",
		"the script panicked on request 2: boom",
		`the turn for request 3 has a block of unknown type "image"`,
	}
	if diff := cmp.Diff(want2, s.Unplanned()); diff != "" {
		t.Errorf("unplanned (-want +got):\n%s", diff)
	}
}

func TestSeededIDs(t *testing.T) {
	first := func() string {
		s := Start(t, &Options{Seed: 42, Script: Repeat(Call("Read", `{}`))})
		_, body := postAnthropic(t, s, msgs(user("a")))
		return string(body)
	}
	if a, b := first(), first(); a != b {
		t.Errorf("same seed, different streams:\n%s\n%s", a, b)
	}
}

package model

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// End-to-end: the providers against internal/fakemodel, which enforces the
// APIs' request rules (a tool_use without its tool_result, a changed
// thinking signature, … get the real 400).

func weatherTool() Tool {
	return Tool{Name: "get_weather", Description: "Get weather",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
}

// collect drains st: its events and error.
func collect(st Stream) ([]Event, error) {
	defer st.Close()
	var evs []Event
	for ev, err := range st.Events() {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// TestConversation: a tool-using turn with thinking, its results sent back,
// the answer; the fake checks every request as the API would.
func TestConversation(t *testing.T) {
	for _, f := range []fakemodel.Format{fakemodel.Anthropic, fakemodel.OpenAI} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			first := fakemodel.Reply(
				fakemodel.Thinking("The user wants the weather."),
				fakemodel.Text("Let me check."),
				fakemodel.ToolUse("get_weather", map[string]string{"city": "Paris"}),
				fakemodel.ToolUse("get_weather", map[string]string{"city": "Rome"}))
			first.Usage = fakemodel.Usage{InputTokens: 50, OutputTokens: 40, CacheReadInputTokens: 30}
			srv := fakemodel.Start(t, &fakemodel.Options{
				Script:                    fakemodel.Turns(first, fakemodel.Say("Sunny in both.")),
				OpenAIStopAfterToolCalls:  true, // finish_reason "stop" after tool calls
				OpenAIInterleaveToolCalls: true,
			})
			p := client(t, f, srv.URL(), nil)
			req := hello()
			req.System = "You are tackle."
			req.Tools = []Tool{weatherTool()}
			req.Thinking, req.MaxTokens = 1024, 4096
			st, err := p.Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			evs, err := collect(st)
			if err != nil {
				t.Fatal(err)
			}
			resp := st.Response()
			if resp.StopReason != StopToolUse {
				t.Fatalf("stop = %q", resp.StopReason)
			}
			var calls []Block
			for _, b := range resp.Message.Content {
				if b.Type == BlockToolUse {
					calls = append(calls, b)
				}
			}
			if len(calls) != 2 || !calls[0].InputComplete || !calls[1].InputComplete {
				t.Fatalf("calls = %+v", calls)
			}
			var in struct{ City string }
			if json.Unmarshal(calls[1].Input, &in); in.City != "Rome" {
				t.Errorf("second call input %s", calls[1].Input)
			}
			if f == fakemodel.Anthropic {
				if b := resp.Message.Content[0]; b.Type != BlockThinking || b.Thinking != "The user wants the weather." || b.Signature == "" {
					t.Errorf("thinking block = %+v", b)
				}
				if resp.Usage != (Usage{InputTokens: 50, OutputTokens: 40, CacheReadInputTokens: 30}) {
					t.Errorf("usage = %+v", resp.Usage)
				}
			} else if resp.Usage.CacheReadInputTokens != 30 || resp.Usage.InputTokens != 50 {
				t.Errorf("usage = %+v (prompt_tokens includes the cached ones)", resp.Usage)
			}
			if n := count(evs, EventToolUse); n != 2 {
				t.Errorf("%d tool_use events", n)
			}

			// Send it back with the results.
			req.Messages = append(req.Messages, resp.Message, Message{Role: RoleUser, Content: []Block{
				{Type: BlockToolResult, ToolUseID: calls[0].ID, Content: []Block{{Type: BlockText, Text: "Sunny, 25°C"}}},
				{Type: BlockToolResult, ToolUseID: calls[1].ID, Content: []Block{{Type: BlockText, Text: "Sunny, 28°C"}}},
			}})
			st, err = p.Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if text, err := drain(st); err != nil || text != "Sunny in both." {
				t.Fatalf("second turn: %q, %v", text, err)
			}
			reqs := srv.Requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			got := reqs[1]
			if f == fakemodel.Anthropic {
				if got.Header.Get("x-api-key") != "sk-ant-test" || got.Header.Get("anthropic-version") != "2023-06-01" {
					t.Errorf("headers %v", got.Header)
				}
				var body map[string]any
				_ = json.Unmarshal(got.Body, &body)
				if !strings.Contains(string(got.Body), `"system":[{"type":"text","text":"You are tackle.","cache_control":{"type":"ephemeral"}}]`) {
					t.Errorf("system prompt without cache_control: %s", got.Body)
				}
				msgs := body["messages"].([]any)
				last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)
				if cc := last[len(last)-1].(map[string]any)["cache_control"]; cc == nil {
					t.Errorf("the last block has no cache_control")
				}
			} else {
				if got.Header.Get("authorization") != "Bearer sk-test" || !got.OpenAI.StreamOptions.IncludeUsage {
					t.Errorf("request %v %s", got.Header, got.Body)
				}
				if results := got.ToolResults(); len(results) != 2 || results[1].Content != "Sunny, 28°C" {
					t.Errorf("tool results = %+v", results)
				}
			}
		})
	}
}

// TestTruncatedStream: a stream without its end is an error, never an
// empty success; a clean end of body and a cut connection alike.
func TestTruncatedStream(t *testing.T) {
	for _, f := range []fakemodel.Format{fakemodel.Anthropic, fakemodel.OpenAI} {
		for _, abort := range []bool{false, true} {
			t.Run(string(f)+map[bool]string{false: "/end of body", true: "/cut connection"}[abort], func(t *testing.T) {
				t.Parallel()
				turn := fakemodel.Say("Half a sent")
				turn.Truncate, turn.Abort = !abort, abort
				srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(turn)})
				p := client(t, f, srv.URL(), nil)
				st, err := p.Stream(context.Background(), hello())
				if err != nil {
					t.Fatal(err)
				}
				text, err := drain(st)
				var e *Error
				want := ErrIncomplete
				if abort {
					want = ErrConnection
				}
				if !errors.As(err, &e) || e.Type != want {
					t.Fatalf("err = %v, want %s", err, want)
				}
				if text != "Half a sent" || st.Response().Message.Content[0].Text != text {
					t.Errorf("partial text %q / %+v", text, st.Response().Message.Content)
				}
				if len(srv.Requests()) != 1 {
					t.Errorf("retried after the first event")
				}
			})
		}
	}
}

// TestMaxTokensInToolInput: the call cut off at max_tokens is not complete;
// the one before it is.
func TestMaxTokensInToolInput(t *testing.T) {
	for _, f := range []fakemodel.Format{fakemodel.Anthropic, fakemodel.OpenAI} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			turn := fakemodel.Reply(
				fakemodel.ToolUse("Write", map[string]string{"file_path": "/tmp/a", "content": "a"}),
				fakemodel.ToolUse("Write", `{"file_path":"/tmp/b","content":"a long cont`))
			turn.StopReason = "max_tokens"
			srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(turn)})
			p := client(t, f, srv.URL(), nil)
			st, err := p.Stream(context.Background(), hello())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := collect(st); err != nil {
				t.Fatal(err)
			}
			r := st.Response()
			if r.StopReason != StopMaxTokens {
				t.Fatalf("stop = %q", r.StopReason)
			}
			c := r.Message.Content
			if len(c) != 2 || !c[0].InputComplete || c[1].InputComplete || string(c[1].Input) != "{}" {
				t.Fatalf("content = %+v", c)
			}
		})
	}
}

// TestCancelMidStream: cancelling the context (or Close) mid-stream aborts
// the HTTP request: the server sees the client go away.
func TestCancelMidStream(t *testing.T) {
	for _, f := range []fakemodel.Format{fakemodel.Anthropic, fakemodel.OpenAI} {
		for _, how := range []string{"cancel", "close", "break"} {
			t.Run(string(f)+"/"+how, func(t *testing.T) {
				t.Parallel()
				hold := fakemodel.NewHold(4)
				turn := fakemodel.Say("one two three four five six seven eight nine ten")
				turn.Chunk = 4
				turn.Hold = hold
				srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(turn)})
				p := client(t, f, srv.URL(), nil)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				st, err := p.Stream(ctx, hello())
				if err != nil {
					t.Fatal(err)
				}
				var got error
				texts := 0
				for ev, err := range st.Events() {
					if err != nil {
						got = err
						break
					}
					if ev.Type != EventText {
						continue
					}
					texts++
					if texts == 1 {
						<-hold.Reached()
						switch how {
						case "cancel":
							cancel()
						case "close":
							go st.Close() // from another goroutine, as a client would
						}
					}
					if how == "break" {
						break
					}
				}
				if how != "break" && !errors.Is(got, context.Canceled) {
					t.Errorf("err = %v, want context.Canceled", got)
				}
				wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer wcancel()
				o, err := srv.WaitDone(wctx, 0)
				if err != nil {
					t.Fatal(err)
				}
				if !o.ClientGone {
					t.Errorf("the server did not see the client go away: %+v", o)
				}
				if r := st.Response(); r.Message.Content[0].Text == "" {
					t.Errorf("partial text lost: %+v", r.Message)
				}
			})
		}
	}
}

// TestHints: the errors a person can fix say what to set.
func TestHints(t *testing.T) {
	t.Parallel()
	srv := fakemodel.Start(t, &fakemodel.Options{APIKey: "right", Models: []string{"claude-sonnet-4-5", "gpt-x"},
		Script: fakemodel.Repeat(fakemodel.Say("ok"))})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	tests := []struct {
		name   string
		p      Provider
		model  string
		status int
		hint   []string
	}{
		{"anthropic wrong key", NewAnthropic(&AnthropicOptions{BaseURL: srv.URL(), APIKey: "wrong", HTTPClient: hc}), "claude-sonnet-4-5", 401,
			[]string{"rejected the key", "ANTHROPIC_API_KEY"}},
		{"anthropic no key", NewAnthropic(&AnthropicOptions{BaseURL: srv.URL(), HTTPClient: hc}), "claude-sonnet-4-5", 401,
			[]string{"wants a key", "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"}},
		{"anthropic bearer token accepted", NewAnthropic(&AnthropicOptions{BaseURL: srv.URL(), AuthToken: "right", HTTPClient: hc}), "claude-sonnet-4-5", 0, nil},
		{"anthropic unknown model", NewAnthropic(&AnthropicOptions{BaseURL: srv.URL(), APIKey: "right", HTTPClient: hc}), "claude-sonet-9", 404,
			[]string{`model "claude-sonet-9" is not known`, `"model" in settings`, "ANTHROPIC_MODEL"}},
		{"anthropic wrong path", NewAnthropic(&AnthropicOptions{BaseURL: srv.URL() + "/v1", APIKey: "right", HTTPClient: hc}), "claude-sonnet-4-5", 404,
			[]string{"/v1/v1/messages was not found", "ANTHROPIC_BASE_URL"}},
		{"openai wrong key", NewOpenAI(&OpenAIOptions{BaseURL: srv.URL() + "/v1", APIKey: "wrong", HTTPClient: hc, KeyVar: "OPENROUTER_KEY"}), "gpt-x", 401,
			[]string{"rejected the key", "OPENROUTER_KEY"}},
		{"openai unknown model", NewOpenAI(&OpenAIOptions{BaseURL: srv.URL() + "/v1", APIKey: "right", HTTPClient: hc}), "gpt-y", 404,
			[]string{`model "gpt-y" is not known`, `"model" in settings (or --model)`}},
	}
	for _, tc := range tests {
		req := hello()
		req.Model = tc.model
		req.Retry = func(RetryInfo) { t.Errorf("%s: retried", tc.name) }
		st, err := tc.p.Stream(context.Background(), req)
		if tc.status == 0 {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			} else {
				_, _ = drain(st)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Status != tc.status {
			t.Errorf("%s: err = %v, want HTTP %d", tc.name, err, tc.status)
			continue
		}
		for _, s := range tc.hint {
			if !strings.Contains(e.Hint, s) {
				t.Errorf("%s: hint %q lacks %q", tc.name, e.Hint, s)
			}
		}
		if e.RequestID == "" {
			t.Errorf("%s: no request id", tc.name)
		}
	}
}

type noTransport struct{ t *testing.T }

func (n noTransport) RoundTrip(*http.Request) (*http.Response, error) {
	n.t.Error("a request was sent")
	return nil, errors.New("no")
}

// TestMissingKey: no key for the official API fails before sending.
func TestMissingKey(t *testing.T) {
	hc := &http.Client{Transport: noTransport{t}}
	for _, tc := range []struct {
		p    Provider
		hint string
	}{
		{NewAnthropic(&AnthropicOptions{HTTPClient: hc}), "set ANTHROPIC_API_KEY"},
		{NewOpenAI(&OpenAIOptions{HTTPClient: hc}), "set OPENAI_API_KEY"},
	} {
		_, err := tc.p.Stream(context.Background(), hello())
		var e *Error
		if !errors.As(err, &e) || e.Type != ErrMissingKey || !strings.Contains(e.Hint, tc.hint) {
			t.Errorf("err = %v, want a missing key naming %s", err, tc.hint)
		}
	}
	_, err := NewAnthropic(&AnthropicOptions{APIKey: "k", HTTPClient: hc}).Stream(context.Background(), Request{})
	var e *Error
	if !errors.As(err, &e) || e.Type != ErrInvalidRequest {
		t.Errorf("no model: %v", err)
	}
}

// TestExtraHeaders: Headers go out, and may replace the defaults.
func TestExtraHeaders(t *testing.T) {
	t.Parallel()
	srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(fakemodel.Say("ok"))})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	p := NewAnthropic(&AnthropicOptions{BaseURL: srv.URL() + "/", APIKey: "k", HTTPClient: &http.Client{Transport: tr},
		Headers: map[string]string{"anthropic-beta": "context-1m-2025-08-07", "X-Proxy-Auth": "s3cret"}, UserAgent: "tackle/test"})
	st, err := p.Stream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	_, _ = drain(st)
	h := srv.Requests()[0].Header
	want := map[string]string{"Anthropic-Beta": "context-1m-2025-08-07", "X-Proxy-Auth": "s3cret", "User-Agent": "tackle/test",
		"X-Api-Key": "k", "Anthropic-Version": "2023-06-01", "X-Stainless-Retry-Count": "0", "Content-Type": "application/json"}
	got := map[string]string{}
	for k := range want {
		got[k] = h.Get(k)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("headers (-want +got):\n%s", diff)
	}
	if p := srv.Requests()[0].Path; p != "/v1/messages" {
		t.Errorf("path %q", p)
	}
}

// TestReplayRecording: a real recording served over HTTP parses as it does
// from the file.
func TestReplayRecording(t *testing.T) {
	t.Parallel()
	srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(fakemodel.ReplayFile(t, "testdata/anthropic-next-streaming.sse"))})
	p := client(t, fakemodel.Anthropic, srv.URL(), nil)
	st, err := p.Stream(context.Background(), hello())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(st); err != nil {
		t.Fatal(err)
	}
	want := parse(t, "anthropic", readTestdata(t, "anthropic-next-streaming.sse")).resp
	got := st.Response()
	if !strings.HasPrefix(got.RequestID, "req_") {
		t.Errorf("request id %q", got.RequestID)
	}
	want.RequestID = got.RequestID
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-file +http):\n%s", diff)
	}
}

// TestConnectionReused: a finished stream gives its connection back, so the
// next request of a turn does not pay a new connection.
func TestConnectionReused(t *testing.T) {
	t.Parallel()
	body := readTestdata(t, "anthropic-next-streaming.sse")
	var mu sync.Mutex
	conns := 0
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "text/event-stream")
		w.Write(body)
		// The body's end comes a moment after the last event, as over
		// a network.
		http.NewResponseController(w).Flush()
		time.Sleep(20 * time.Millisecond)
	}))
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	hs.Start()
	defer hs.Close()
	p := client(t, fakemodel.Anthropic, hs.URL, nil)
	for range 3 {
		st, err := p.Stream(context.Background(), hello())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := drain(st); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if conns != 1 {
		t.Errorf("%d connections for 3 requests, want 1", conns)
	}
}

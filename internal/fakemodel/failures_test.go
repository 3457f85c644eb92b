package fakemodel

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHTTPErrors(t *testing.T) {
	s := Start(t, &Options{Script: Turns(
		RateLimited().With("retry-after", "1").With("retry-after-ms", "1000").With("x-should-retry", "true"),
		Overloaded(),
		HTTPError(500, "", ""),
		Turn{Status: 503, Body: "upstream connect error", Header: map[string][]string{"X-Should-Retry": {"false"}}},
		RateLimited().With("retry-after", "2"),
		Overloaded(),
	)})
	resp, body := postAnthropic(t, s, msgs(user("hi")))
	rid := resp.Header.Get("request-id")
	if resp.StatusCode != 429 || resp.Header.Get("retry-after") != "1" || resp.Header.Get("retry-after-ms") != "1000" || resp.Header.Get("x-should-retry") != "true" {
		t.Errorf("429: %d %v", resp.StatusCode, resp.Header)
	}
	if want := anthropicErrorBody("rate_limit_error", defaultError(429).Message, rid); string(body) != want {
		t.Errorf("429 body %s", body)
	}
	resp, body = postAnthropic(t, s, msgs(user("hi")))
	if want := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"` + resp.Header.Get("request-id") + `"}`; resp.StatusCode != 529 || string(body) != want {
		t.Errorf("529: %d %s", resp.StatusCode, body)
	}
	resp, body = postAnthropic(t, s, msgs(user("hi")))
	if want := anthropicErrorBody("api_error", "Internal server error", resp.Header.Get("request-id")); resp.StatusCode != 500 || string(body) != want {
		t.Errorf("500: %d %s", resp.StatusCode, body)
	}
	resp, body = postAnthropic(t, s, msgs(user("hi")))
	if resp.StatusCode != 503 || string(body) != "upstream connect error" || resp.Header.Get("x-should-retry") != "false" {
		t.Errorf("503: %d %s %v", resp.StatusCode, body, resp.Header)
	}
	// the openai shapes
	resp, body = postOpenAI(t, s, chat(oaiMsg("user", "hi")))
	if want := `{"error":{"message":` + string(jsonText(defaultError(429).Message)) + `,"type":"requests","param":null,"code":"rate_limit_exceeded"}}`; resp.StatusCode != 429 || string(body) != want || resp.Header.Get("retry-after") != "2" {
		t.Errorf("openai 429: %d %s", resp.StatusCode, body)
	}
	if !strings.HasPrefix(resp.Header.Get("x-request-id"), "req_") {
		t.Errorf("x-request-id %q", resp.Header.Get("x-request-id"))
	}
	resp, body = postOpenAI(t, s, chat(oaiMsg("user", "hi")))
	if want := `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":null}}`; resp.StatusCode != 529 || string(body) != want {
		t.Errorf("openai 529: %d %s", resp.StatusCode, body)
	}
	o, err := s.WaitDone(ctxTimeout(t), 0)
	if err != nil || o.Status != 429 || o.Turn == nil {
		t.Errorf("outcome %+v %v", o, err)
	}
}

func TestStreamErrorAfterPartialText(t *testing.T) {
	s := Start(t, &Options{Script: Turns(
		Turn{Blocks: []Block{Text("Hello, wor")}, Chunk: 5, StreamError: &APIError{Type: "overloaded_error", Message: "Overloaded"}},
		Turn{Blocks: []Block{Text("Hello")}, CutAfter: 2, StreamError: &APIError{Type: "api_error", Message: "Internal server error"}},
	)})
	_, body := postAnthropic(t, s, msgs(user("hi")))
	evs := parseSSE(t, body)
	if diff := cmp.Diff([]string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta", "error"}, eventNames(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if got := evs[len(evs)-1].Data; got != `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}` {
		t.Errorf("error event %s", got)
	}
	o, _ := s.WaitDone(ctxTimeout(t), 0)
	if o.Status != 200 || o.Error != "Overloaded" || o.Events != 6 {
		t.Errorf("outcome %+v", o)
	}
	_, body = postAnthropic(t, s, msgs(user("hi")))
	if diff := cmp.Diff([]string{"message_start", "content_block_start", "error"}, eventNames(parseSSE(t, body))); diff != "" {
		t.Errorf("CutAfter 2 (-want +got):\n%s", diff)
	}
}

func TestTruncatedStream(t *testing.T) {
	s := Start(t, &Options{Script: Turns(
		Turn{Blocks: []Block{Text("partial")}, Truncate: true},
		Turn{Blocks: []Block{Text("partial")}, Truncate: true, CutAfter: 6}, // after message_delta
		Turn{Blocks: []Block{Text("partial")}, Abort: true},
		Turn{Blocks: []Block{Text("partial")}, Truncate: true},
	)})
	_, body := postAnthropic(t, s, msgs(user("hi")))
	if diff := cmp.Diff([]string{"message_start", "content_block_start", "ping", "content_block_delta"}, eventNames(parseSSE(t, body))); diff != "" {
		t.Errorf("truncated (-want +got):\n%s", diff)
	}
	_, body = postAnthropic(t, s, msgs(user("hi")))
	names := eventNames(parseSSE(t, body))
	if names[len(names)-1] != "message_delta" {
		t.Errorf("CutAfter 6 ends with %v", names)
	}
	// Abort: the connection is cut, the client's read fails
	resp, err := httpClient(t).Do(newPost(t, context.Background(), s.URL()+"/v1/messages", msgs(user("hi")), anthropicHeaders...))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Errorf("abort: read %q without an error", b)
	}
	if !strings.Contains(string(b), "content_block_delta") || strings.Contains(string(b), "message_stop") {
		t.Errorf("abort: read %q", b)
	}
	// openai: no finish chunk, no [DONE]
	_, body = postOpenAI(t, s, chat(oaiMsg("user", "hi")))
	evs := parseSSE(t, body)
	if len(evs) != 2 || strings.Contains(string(body), "[DONE]") || strings.Contains(string(body), "finish_reason\":\"") {
		t.Errorf("openai truncated: %s", body)
	}
}

func TestOpenAIStreamError(t *testing.T) {
	s := Start(t, &Options{Script: Turns(Turn{Blocks: []Block{Text("Hello, world")}, StreamError: &APIError{Type: "server_error", Message: "The server had an error while processing your request. Sorry about that!"}})})
	_, body := postOpenAI(t, s, chat(oaiMsg("user", "hi")))
	evs := parseSSE(t, body)
	last := evs[len(evs)-1].Data
	if want := `{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`; last != want {
		t.Errorf("error chunk %s", last)
	}
	if strings.Contains(string(body), "[DONE]") || len(evs) != 4 { // role, 2 text pieces, error
		t.Errorf("stream %s", body)
	}
}

// readEvents reads n events from a stream.
func readEvents(t *testing.T, r *bufio.Reader, n int) string {
	t.Helper()
	var b strings.Builder
	for got := 0; got < n; {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading event %d: %v (read %q)", got, err, b.String())
		}
		b.WriteString(line)
		if line == "\n" {
			got++
		}
	}
	return b.String()
}

func TestHoldAndCancel(t *testing.T) {
	h1, h2 := NewHold(3), NewHold(1)
	s := Start(t, &Options{Script: Turns(
		Turn{Blocks: []Block{Text("Hello, world, and more")}, Hold: h1},
		Turn{Blocks: []Block{Text("Hello")}, Hold: h2},
	)})
	// 1: held after 3 events; the client cancels
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp, err := httpClient(t).Do(newPost(t, ctx, s.URL()+"/v1/messages", msgs(user("hi")), anthropicHeaders...))
	if err != nil {
		t.Fatal(err)
	}
	got := readEvents(t, bufio.NewReader(resp.Body), 3)
	<-h1.Reached()
	if !strings.Contains(got, "event: ping") {
		t.Errorf("first events %q", got)
	}
	cancel()
	resp.Body.Close()
	o, err := s.WaitDone(ctxTimeout(t), 0)
	if err != nil || !o.ClientGone || o.Events != 3 {
		t.Errorf("outcome %+v %v", o, err)
	}
	// 2: held, then released: the whole stream
	go func() {
		<-h2.Reached()
		h2.Release()
	}()
	_, body := postAnthropic(t, s, msgs(user("hi")))
	if names := eventNames(parseSSE(t, body)); names[len(names)-1] != "message_stop" {
		t.Errorf("released stream ends with %v", names)
	}
	if o, _ := s.WaitDone(ctxTimeout(t), 1); o.ClientGone {
		t.Errorf("outcome %+v", o)
	}
}

func TestDelay(t *testing.T) {
	s := Start(t, &Options{Script: Turns(
		Turn{Blocks: []Block{Text("ab")}, Chunk: 1, Pings: PingNone, Delay: 20 * time.Millisecond}, // 7 events
		Turn{Blocks: []Block{Text("slow")}, Delay: time.Minute},
		Turn{Status: 529, Delay: time.Minute},
	)})
	start := time.Now()
	_, body := postAnthropic(t, s, msgs(user("hi")))
	if n := len(parseSSE(t, body)); n != 7 {
		t.Fatalf("%d events", n)
	}
	if d := time.Since(start); d < 7*20*time.Millisecond {
		t.Errorf("stream took %v, want ≥ 140ms", d)
	}
	// a cancelled request ends the wait at once, for a stream and for an error
	for i := 1; i <= 2; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		resp, err := httpClient(t).Do(newPost(t, ctx, s.URL()+"/v1/messages", msgs(user("hi")), anthropicHeaders...))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("request %d: %v, want a deadline error", i, err)
		}
		o, err := s.WaitDone(ctxTimeout(t), i)
		if err != nil || !o.ClientGone || o.Events != 0 {
			t.Errorf("outcome %d: %+v %v", i, o, err)
		}
	}
}

// TestRunStopsHeldStreams: ending Run's context ends held streams and Run
// returns (goleak checks no handler is left).
func TestRunStopsHeldStreams(t *testing.T) {
	h := NewHold(1)
	s := New(&Options{Script: Turns(Turn{Blocks: []Block{Text("x")}, Hold: h})})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx, ln) }()
	done := make(chan error, 1)
	go func() {
		resp, err := httpClient(t).Do(newPost(t, context.Background(), "http://"+ln.Addr().String()+"/v1/messages", msgs(user("hi")), anthropicHeaders...))
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	<-h.Reached()
	cancel()
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := <-done; err == nil {
		t.Error("the held stream ended cleanly after the server stopped")
	}
	if o, err := s.WaitDone(ctxTimeout(t), 0); err != nil || !o.ClientGone {
		t.Errorf("outcome %+v %v", o, err)
	}
}

package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// The retry tests run against internal/fakemodel, the project's fake of
// both APIs (a few need a broken server it does not play and use
// net/http/httptest).

// client is a provider for srv in format f, with its own transport (closed
// at the end, so goleak sees no idle connection).
func client(t *testing.T, f fakemodel.Format, base string, mod func(*transport)) Provider {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	var p Provider
	var tp *transport
	if f == fakemodel.OpenAI {
		op := NewOpenAI(&OpenAIOptions{BaseURL: base + "/v1", APIKey: "sk-test", HTTPClient: hc}).(*openAIProvider)
		p, tp = op, &op.t
	} else {
		ap := NewAnthropic(&AnthropicOptions{BaseURL: base, APIKey: "sk-ant-test", HTTPClient: hc}).(*anthropicProvider)
		p, tp = ap, &ap.t
	}
	if mod != nil {
		mod(tp)
	}
	return p
}

func hello() Request {
	return Request{Model: "claude-sonnet-4-5", MaxTokens: 100, Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hello"}}}}}
}

// retryLog records Request.Retry's calls.
type retryLog struct {
	mu    sync.Mutex
	calls []RetryInfo
}

func (r *retryLog) add(i RetryInfo) { r.mu.Lock(); r.calls = append(r.calls, i); r.mu.Unlock() }
func (r *retryLog) get() []RetryInfo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]RetryInfo(nil), r.calls...)
}

// drain reads a stream to its end: its text and error.
func drain(st Stream) (string, error) {
	defer st.Close()
	var text strings.Builder
	for ev, err := range st.Events() {
		if err != nil {
			return text.String(), err
		}
		if ev.Type == EventText {
			text.WriteString(ev.Text)
		}
	}
	return text.String(), nil
}

// TestRetryAfterTwice: containerd's case: retry-after: 1 twice, then
// success after ≥ 2 s and 3 requests, each a second after the last and
// numbered by X-Stainless-Retry-Count.
func TestRetryAfterTwice(t *testing.T) {
	for _, f := range []fakemodel.Format{fakemodel.Anthropic, fakemodel.OpenAI} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Turns(
				fakemodel.RateLimited().With("retry-after", "1"),
				fakemodel.RateLimited().With("retry-after", "1"),
				fakemodel.Say("made it"))})
			p := client(t, f, srv.URL(), nil)
			var rs retryLog
			req := hello()
			req.Retry = rs.add
			start := time.Now()
			st, err := p.Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			text, err := drain(st)
			if err != nil || text != "made it" {
				t.Fatalf("text %q, err %v", text, err)
			}
			if el := time.Since(start); el < 2*time.Second {
				t.Errorf("took %v, want ≥ 2 s", el)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			for i, r := range reqs {
				if got := r.Header.Get("X-Stainless-Retry-Count"); got != fmt.Sprint(i) {
					t.Errorf("request %d: retry count %q", i, got)
				}
				if i > 0 {
					if gap := r.Time.Sub(reqs[i-1].Time); gap < time.Second {
						t.Errorf("request %d came %v after the last, want ≥ 1 s", i, gap)
					}
				}
			}
			want := []RetryInfo{{Attempt: 1, Wait: 1, Status: 429, Reason: "rate limited"}, {Attempt: 2, Wait: 1, Status: 429, Reason: "rate limited"}}
			if got := rs.get(); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Retry calls = %+v, want %+v", got, want)
			}
		})
	}
}

// TestBackoffWithoutHeader: no retry-after: 0.5 s then 1 s, each minus up to
// 25 % jitter, so 1.125–1.5 s in all.
func TestBackoffWithoutHeader(t *testing.T) {
	t.Parallel()
	srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Turns(fakemodel.Overloaded(), fakemodel.Overloaded(), fakemodel.Say("ok"))})
	p := client(t, fakemodel.Anthropic, srv.URL(), nil)
	var rs retryLog
	req := hello()
	req.Retry = rs.add
	start := time.Now()
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(st); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el < 1125*time.Millisecond {
		t.Errorf("took %v, want ≥ 1.125 s", el)
	}
	got := rs.get()
	if len(got) != 2 || got[0].Wait < 0.375 || got[0].Wait > 0.5 || got[1].Wait < 0.75 || got[1].Wait > 1.0 {
		t.Errorf("waits = %+v, want 0.375–0.5 s then 0.75–1 s", got)
	}
	if got[0].Reason != "overloaded" || got[0].Status != 529 {
		t.Errorf("retry info = %+v", got[0])
	}
}

func TestBackoffSchedule(t *testing.T) {
	for _, j := range []float64{0, 0.999999} {
		tr := &transport{jitter: func() float64 { return j }}
		for n, full := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second, 8 * time.Second} {
			d := tr.backoff(n)
			if d > full || d < full*3/4 {
				t.Errorf("jitter %v: backoff(%d) = %v, want %v minus up to 25 %%", j, n, d, full)
			}
		}
	}
}

// TestRetryAfterPastDeadline: retry-after: 60 with a 1 s context: one
// request, an error at once naming the status and the wait, and
// DeadlineExceeded.
func TestRetryAfterPastDeadline(t *testing.T) {
	t.Parallel()
	srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(fakemodel.RateLimited().With("retry-after", "60"))})
	p := client(t, fakemodel.Anthropic, srv.URL(), nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req := hello()
	req.Retry = func(RetryInfo) { t.Error("Retry called for a wait past the deadline") }
	start := time.Now()
	_, err := p.Stream(ctx, req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	if el := time.Since(start); el > 900*time.Millisecond {
		t.Errorf("took %v: it waited instead of failing at once", el)
	}
	for _, s := range []string{"429", "60.0 s"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %s", err, s)
		}
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestRetryAfterZeroForever: 1 + maxRetries requests, then the 429.
func TestRetryAfterZeroForever(t *testing.T) {
	for _, maxRetries := range []int{0, 4, -1} {
		t.Run(fmt.Sprint(maxRetries), func(t *testing.T) {
			t.Parallel()
			srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(fakemodel.RateLimited().With("retry-after", "0"))})
			p := client(t, fakemodel.Anthropic, srv.URL(), func(tr *transport) { tr.maxRetries = retries0(maxRetries) })
			_, err := p.Stream(context.Background(), hello())
			var e *Error
			if !errors.As(err, &e) || e.Status != 429 || e.Type != "rate_limit_error" {
				t.Fatalf("err = %v, want the 429", err)
			}
			want := 1 + retries0(maxRetries)
			if n := len(srv.Requests()); n != want || e.Attempts != want {
				t.Errorf("%d requests (Attempts %d), want %d", n, e.Attempts, want)
			}
			if !strings.Contains(err.Error(), "HTTP 429") {
				t.Errorf("error %q does not name 429", err)
			}
		})
	}
}

func retries0(n int) int { return retries(n) }

// TestRetryAfterTooLong: retry-after: 300 fails at once (over 60 s).
func TestRetryAfterTooLong(t *testing.T) {
	t.Parallel()
	for _, h := range [][2]string{{"retry-after", "300"}, {"retry-after-ms", "60001"}, {"retry-after", time.Now().Add(10 * time.Minute).UTC().Format(http.TimeFormat)}} {
		srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(fakemodel.Overloaded().With(h[0], h[1]))})
		p := client(t, fakemodel.Anthropic, srv.URL(), nil)
		req := hello()
		req.Retry = func(RetryInfo) { t.Error("Retry called for a wait over the limit") }
		start := time.Now()
		_, err := p.Stream(context.Background(), req)
		var e *Error
		if !errors.As(err, &e) || e.Status != 529 || !strings.Contains(e.Hint, "over tackle's limit of 60.0 s") {
			t.Fatalf("%s: err = %v", h, err)
		}
		if time.Since(start) > time.Second || len(srv.Requests()) != 1 {
			t.Errorf("%s: %d requests in %v, want 1 at once", h, len(srv.Requests()), time.Since(start))
		}
	}
}

func TestServerWait(t *testing.T) {
	now := time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{map[string]string{"retry-after-ms": "250", "retry-after": "30"}, 250 * time.Millisecond, true},
		{map[string]string{"retry-after-ms": "1.5"}, 1500 * time.Microsecond, true},
		{map[string]string{"retry-after-ms": "soon", "retry-after": "2"}, 2 * time.Second, true},
		{map[string]string{"retry-after": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"retry-after": "-3"}, 0, true},
		{map[string]string{"retry-after": "Sat, 01 Aug 2026 12:00:07 GMT"}, 7 * time.Second, true},
		{map[string]string{"retry-after": "Sat, 01 Aug 2026 11:00:00 GMT"}, 0, true},
		{map[string]string{"retry-after": "1e300"}, 24 * time.Hour, true},
		{map[string]string{"retry-after": "NaN"}, 0, false},
		{map[string]string{"retry-after": "tomorrow"}, 0, false},
		{map[string]string{}, 0, false},
	}
	for _, tc := range tests {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		got, ok := serverWait(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%v: %v %v, want %v %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

// TestRetriedStatuses: 408, 409, 429, ≥ 500 are retried, others not;
// x-should-retry overrides either way.
func TestRetriedStatuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status int
		header string // x-should-retry
		retry  bool
	}{
		{408, "", true}, {409, "", true}, {429, "", true}, {500, "", true}, {502, "", true}, {503, "", true}, {504, "", true}, {529, "", true},
		{400, "", false}, {401, "", false}, {403, "", false}, {404, "", false}, {413, "", false}, {422, "", false},
		{529, "false", false}, {429, "false", false}, {400, "true", true}, {404, "true", true},
	}
	for _, tc := range tests {
		first := fakemodel.HTTPError(tc.status, "", "").With("retry-after-ms", "0")
		if tc.header != "" {
			first = first.With("x-should-retry", tc.header)
		}
		turns := []fakemodel.Turn{first}
		if tc.retry {
			turns = append(turns, fakemodel.Say("ok"))
		}
		srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Turns(turns...)})
		p := client(t, fakemodel.Anthropic, srv.URL(), nil)
		st, err := p.Stream(context.Background(), hello())
		if tc.retry {
			if err != nil {
				t.Errorf("%d x-should-retry=%q: %v, want a retry", tc.status, tc.header, err)
				continue
			}
			_, _ = drain(st)
		} else {
			var e *Error
			if !errors.As(err, &e) || e.Status != tc.status || e.Retryable {
				t.Errorf("%d x-should-retry=%q: err = %v, want the error, not retryable", tc.status, tc.header, err)
			}
		}
		if n, want := len(srv.Requests()), len(turns); n != want {
			t.Errorf("%d x-should-retry=%q: %d requests, want %d", tc.status, tc.header, n, want)
		}
	}
}

// TestNoRetryAfterFirstEvent: an in-stream error after partial text ends
// the stream with that error; no second request; the partial text is kept.
func TestNoRetryAfterFirstEvent(t *testing.T) {
	for _, f := range []fakemodel.Format{fakemodel.Anthropic, fakemodel.OpenAI} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			turn := fakemodel.Say("Hello there, this is partial text")
			turn.Chunk = 5
			turn.CutAfter = 0 // after the last content delta
			turn.StreamError = &fakemodel.APIError{Type: "overloaded_error", Message: "Overloaded"}
			srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(turn)})
			p := client(t, f, srv.URL(), nil)
			req := hello()
			req.Retry = func(RetryInfo) { t.Error("a retry after the first event") }
			st, err := p.Stream(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			text, err := drain(st)
			var e *Error
			if !errors.As(err, &e) || e.Message != "Overloaded" || e.Retryable {
				t.Fatalf("err = %v, want the in-stream overloaded error", err)
			}
			if f == fakemodel.Anthropic && e.Type != "overloaded_error" {
				t.Errorf("type %q", e.Type)
			}
			if text != "Hello there, this is partial text" {
				t.Errorf("streamed text %q", text)
			}
			if got := st.Response().Message.Content; len(got) != 1 || got[0].Text != text {
				t.Errorf("partial response %+v", got)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// TestRetryBodyBrokenBeforeFirstEvent: a 200 whose body breaks before any
// event is retried (nothing reached the decoder).
func TestRetryBodyBrokenBeforeFirstEvent(t *testing.T) {
	t.Parallel()
	good := readTestdata(t, "anthropic-next-streaming.sse")
	var mu sync.Mutex
	n := 0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		w.Header().Set("content-type", "text/event-stream")
		w.WriteHeader(200)
		if i == 1 {
			w.Write([]byte("event: message_start\ndata: {\"type\":\"mess")) // cut mid-event
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		w.Write(good)
	}))
	defer hs.Close()
	p := client(t, fakemodel.Anthropic, hs.URL, nil)
	var rs retryLog
	req := hello()
	req.Retry = rs.add
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if text, err := drain(st); err != nil || text != weatherText {
		t.Fatalf("text %q, err %v", text, err)
	}
	if got := rs.get(); len(got) != 1 || got[0].Status != 200 || !strings.HasPrefix(got[0].Reason, "connection error") {
		t.Errorf("retries = %+v", got)
	}
}

// TestNotAStream: a 200 that is not an event stream (a proxy that does not
// stream) fails at once, saying so.
func TestNotAStream(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("content-type", "application/json")
		w.Write([]byte(`{"type":"message","content":[{"type":"text","text":"hi"}]}`))
	}))
	defer hs.Close()
	p := client(t, fakemodel.Anthropic, hs.URL, nil)
	_, err := p.Stream(context.Background(), hello())
	var e *Error
	if !errors.As(err, &e) || e.Type != ErrInvalidStream || e.Attempts != 1 || !strings.Contains(e.Hint, `"application/json"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestUnreachable: a refused connection fails at once, naming the URL and
// its setting; so does a host that does not resolve.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ln.Close()
	for _, f := range []fakemodel.Format{fakemodel.Anthropic, fakemodel.OpenAI} {
		p := client(t, f, base, nil)
		req := hello()
		req.Retry = func(RetryInfo) { t.Error("retried an unreachable base URL") }
		_, err := p.Stream(context.Background(), req)
		var e *Error
		if !errors.As(err, &e) || e.Type != ErrConnection || e.Retryable {
			t.Fatalf("%s: err = %v", f, err)
		}
		v := "ANTHROPIC_BASE_URL"
		if f == fakemodel.OpenAI {
			v = "OPENAI_BASE_URL"
		}
		if !strings.Contains(e.Hint, base) || !strings.Contains(e.Hint, v) {
			t.Errorf("%s: hint %q names neither %s nor %s", f, e.Hint, base, v)
		}
	}
	p := NewAnthropic(&AnthropicOptions{BaseURL: "http://tackle-no-such-host.invalid", APIKey: "k"})
	_, err = p.Stream(context.Background(), hello())
	var e *Error
	if !errors.As(err, &e) || e.Retryable || !strings.Contains(e.Hint, "does not resolve") {
		t.Errorf("unknown host: err = %v", err)
	}
}

// TestRetryOnConnectionReset: a connection cut before any response is
// retried (the SDKs' "no response").
func TestRetryOnConnectionReset(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	n := 0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		if i == 1 {
			panic(http.ErrAbortHandler) // no response at all
		}
		w.Header().Set("content-type", "text/event-stream")
		w.Write(readTestdata(t, "anthropic-next-streaming.sse"))
	}))
	defer hs.Close()
	p := client(t, fakemodel.Anthropic, hs.URL, func(tr *transport) { tr.jitter = func() float64 { return 0.99 } })
	var rs retryLog
	req := hello()
	req.Retry = rs.add
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(st); err != nil {
		t.Fatal(err)
	}
	if got := rs.get(); len(got) != 1 || got[0].Status != 0 || got[0].Wait > 0.5 {
		t.Errorf("retries = %+v", got)
	}
}

// TestCancelDuringWait: cancelling while waiting to retry returns at once.
func TestCancelDuringWait(t *testing.T) {
	t.Parallel()
	srv := fakemodel.Start(t, &fakemodel.Options{Script: fakemodel.Repeat(fakemodel.Overloaded().With("retry-after", "30"))})
	p := client(t, fakemodel.Anthropic, srv.URL(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	req := hello()
	req.Retry = func(RetryInfo) { cancel() }
	start := time.Now()
	_, err := p.Stream(ctx, req)
	if !errors.Is(err, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "529") {
		t.Errorf("error %q does not say what it waited for", err)
	}
}

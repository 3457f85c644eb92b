package modeloracle_test

import (
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/tackle-agent/tackle/daemon/model"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// apiErr is an error in the terms both sides share.
type apiErr struct {
	Status        int // the HTTP status the error came with
	Type, Message string
}

func tackleErr(t *testing.T, err error) (apiErr, *model.Error) {
	t.Helper()
	var e *model.Error
	if !errors.As(err, &e) {
		t.Fatalf("tackle's error is %T (%v), want *model.Error", err, err)
	}
	return apiErr{e.Status, e.Type, e.Message}, e
}

func sdkAnthropicErr(t *testing.T, err error) apiErr {
	t.Helper()
	var e *anthropic.Error
	if !errors.As(err, &e) {
		t.Fatalf("anthropic-sdk-go's error is %T (%v), want *anthropic.Error", err, err)
	}
	return apiErr{e.StatusCode, string(e.Type()), e.Message}
}

// retryCounts are the X-Stainless-Retry-Count headers of the requests.
func retryCounts(s *fakemodel.Server) []string {
	var out []string
	for _, r := range s.Requests() {
		out = append(out, r.Header.Get("X-Stainless-Retry-Count"))
	}
	return out
}

// concurrently runs f and g at once (the retry tests wait out real
// backoffs) and returns both results.
func concurrently[A, B any](f func() A, g func() B) (A, B) {
	var a A
	done := make(chan struct{})
	go func() {
		defer close(done)
		a = f()
	}()
	b := g()
	<-done
	return a, b
}

// checkBackoff checks the default backoff between 3 requests: 0.5 s, then
// 1 s, each less up to 25 % of jitter (a lower bound only: the machine may
// be slow).
func checkBackoff(t *testing.T, who string, s *fakemodel.Server) {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) != 3 {
		return // reported by the caller
	}
	for i, min := range []time.Duration{375 * time.Millisecond, 750 * time.Millisecond} {
		if gap := reqs[i+1].Time.Sub(reqs[i].Time); gap < min {
			t.Errorf("%s: retry %d came %v after the request before it, want at least %v", who, i+1, gap, min)
		}
	}
}

var partialText = fakemodel.Text("Here is the first part of an answer that will not be finished")

// TestAnthropicInStreamError: an overloaded_error event after partial text
// ends both clients' streams with that error and no retry; both keep the
// partial text. The SDK's error carries the 200 of the response it came in;
// tackle's has Status 0 (an in-stream error).
func TestAnthropicInStreamError(t *testing.T) {
	turn := fakemodel.Turn{Blocks: []fakemodel.Block{partialText},
		StreamError: &fakemodel.APIError{Type: "overloaded_error", Message: "Overloaded"},
		Usage:       fakemodel.Usage{InputTokens: 10, OutputTokens: 20}}
	sdkSrv := start(t, fakemodel.Options{}, fakemodel.Turns(turn))
	ourSrv := start(t, fakemodel.Options{}, fakemodel.Turns(turn))
	sdk, ours := sdkAnthropic(t, sdkSrv.URL()), tackleAnthropic(t, ourSrv.URL())
	if sdk.Err == nil || ours.Err == nil {
		t.Fatalf("want both to fail: anthropic-sdk-go %v, tackle %v", sdk.Err, ours.Err)
	}
	se := sdkAnthropicErr(t, sdk.Err)
	te, e := tackleErr(t, ours.Err)
	if diff := cmp.Diff(apiErr{200, "overloaded_error", "Overloaded"}, se); diff != "" {
		t.Errorf("anthropic-sdk-go's error (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(apiErr{0, "overloaded_error", "Overloaded"}, te); diff != "" {
		t.Errorf("tackle's error (-want +got):\n%s", diff)
	}
	if e.Retryable {
		t.Errorf("tackle marks an in-stream error retryable: %v", e)
	}
	if diff := cmp.Diff(sdk.Result, ours.Result); diff != "" {
		t.Errorf("partial message (-sdk +tackle):\n%s", diff)
	}
	if len(sdk.Result.Blocks) != 1 || sdk.Result.Blocks[0].Text != partialText.Text {
		t.Errorf("partial text: %+v, want %q", sdk.Result.Blocks, partialText.Text)
	}
	if n, m := len(sdkSrv.Requests()), len(ourSrv.Requests()); n != 1 || m != 1 {
		t.Errorf("requests: anthropic-sdk-go %d, tackle %d; want 1 each (no retry once the stream started)", n, m)
	}
}

// TestAnthropicTruncatedStream: a stream that ends without message_stop.
// tackle's client fails (incomplete_stream on a clean end of the body, a
// connection_error on a cut connection); anthropic-sdk-go ends a cleanly
// ended body without any error, a partial message with no stop reason
// that a caller cannot tell from a finished one but by that empty stop
// reason, and reports only the cut connection (io.ErrUnexpectedEOF). Both
// keep the same partial message.
func TestAnthropicTruncatedStream(t *testing.T) {
	for _, tc := range []struct {
		name    string
		turn    fakemodel.Turn
		sdkErr  error // nil: none
		ourType string
	}{
		{"clean end of body", fakemodel.Turn{Blocks: []fakemodel.Block{partialText}, Truncate: true}, nil, model.ErrIncomplete},
		{"cut connection", fakemodel.Turn{Blocks: []fakemodel.Block{partialText}, Abort: true}, io.ErrUnexpectedEOF, model.ErrConnection},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.turn.Usage = fakemodel.Usage{InputTokens: 10, OutputTokens: 20}
			sdk := sdkAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(tc.turn)).URL())
			ours := tackleAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(tc.turn)).URL())
			if tc.sdkErr == nil && sdk.Err != nil || tc.sdkErr != nil && !errors.Is(sdk.Err, tc.sdkErr) {
				t.Errorf("anthropic-sdk-go's error: %v, want %v", sdk.Err, tc.sdkErr)
			}
			if ours.Err == nil {
				t.Fatal("tackle: no error for a stream without message_stop")
			}
			if te, _ := tackleErr(t, ours.Err); te.Type != tc.ourType {
				t.Errorf("tackle's error type %q (%v), want %q", te.Type, ours.Err, tc.ourType)
			}
			if sdk.Result.StopReason != "" {
				t.Errorf("anthropic-sdk-go's stop reason %q, want none", sdk.Result.StopReason)
			}
			if diff := cmp.Diff(sdk.Result, ours.Result); diff != "" {
				t.Errorf("partial message (-sdk +tackle):\n%s", diff)
			}
		})
	}
}

// TestAnthropicRetries529: HTTP 529 overloaded_error. Both clients make 3
// requests by default (2 retries, with the default backoff: no
// retry-after), counting them in X-Stainless-Retry-Count, and give up with
// the 529; a 529 twice then a stream succeeds on the third request.
func TestAnthropicRetries529(t *testing.T) {
	t.Parallel()
	t.Run("always", func(t *testing.T) {
		t.Parallel()
		sdkSrv := start(t, fakemodel.Options{}, fakemodel.Repeat(fakemodel.Overloaded()))
		ourSrv := start(t, fakemodel.Options{}, fakemodel.Repeat(fakemodel.Overloaded()))
		sdk, ours := concurrently(func() antRun { return sdkAnthropic(t, sdkSrv.URL()) }, func() antRun { return tackleAnthropic(t, ourSrv.URL()) })
		se := sdkAnthropicErr(t, sdk.Err)
		te, e := tackleErr(t, ours.Err)
		if diff := cmp.Diff(se, te); diff != "" {
			t.Errorf("error (-sdk +tackle):\n%s", diff)
		}
		if se.Status != 529 || se.Type != "overloaded_error" {
			t.Errorf("anthropic-sdk-go: %+v", se)
		}
		if e.Attempts != 3 {
			t.Errorf("tackle's Attempts %d, want 3", e.Attempts)
		}
		want := []string{"0", "1", "2"}
		if diff := cmp.Diff(want, retryCounts(sdkSrv)); diff != "" {
			t.Errorf("anthropic-sdk-go's requests (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, retryCounts(ourSrv)); diff != "" {
			t.Errorf("tackle's requests (-want +got):\n%s", diff)
		}
		checkBackoff(t, "anthropic-sdk-go", sdkSrv)
		checkBackoff(t, "tackle", ourSrv)
	})
	t.Run("twice then a stream", func(t *testing.T) {
		t.Parallel()
		ok := fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("Third time lucky.")}, Usage: fakemodel.Usage{InputTokens: 5, OutputTokens: 4}}
		script := func() fakemodel.Script { return fakemodel.Turns(fakemodel.Overloaded(), fakemodel.Overloaded(), ok) }
		sdkSrv, ourSrv := start(t, fakemodel.Options{}, script()), start(t, fakemodel.Options{}, script())
		sdk, ours := concurrently(func() antRun { return sdkAnthropic(t, sdkSrv.URL()) }, func() antRun { return tackleAnthropic(t, ourSrv.URL()) })
		if sdk.Err != nil || ours.Err != nil {
			t.Fatalf("anthropic-sdk-go %v, tackle %v", sdk.Err, ours.Err)
		}
		if diff := cmp.Diff(sdk.Result, ours.Result); diff != "" {
			t.Errorf("message (-sdk +tackle):\n%s", diff)
		}
		if n, m := len(sdkSrv.Requests()), len(ourSrv.Requests()); n != 3 || m != 3 {
			t.Errorf("requests: anthropic-sdk-go %d, tackle %d; want 3 each", n, m)
		}
	})
}

// sdkOpenAIErr reads openai-go's error: an *openai.Error for an HTTP
// status, a *ssestream.StreamError (the raw chunk) for an in-stream error.
func sdkOpenAIErr(t *testing.T, err error) apiErr {
	t.Helper()
	var e *openai.Error
	if errors.As(err, &e) {
		return apiErr{e.StatusCode, e.Type, e.Message}
	}
	var se *ssestream.StreamError
	if !errors.As(err, &se) {
		t.Fatalf("openai-go's error is %T (%v), want *openai.Error or *ssestream.StreamError", err, err)
	}
	var chunk struct {
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(se.Event.Data, &chunk); err != nil {
		t.Fatalf("openai-go's stream error event %q: %v", se.Event.Data, err)
	}
	return apiErr{0, chunk.Error.Type, chunk.Error.Message}
}

// TestOpenAIInStreamError: an {"error":…} chunk after partial text ends
// both streams with that error, no retry, the partial text kept.
func TestOpenAIInStreamError(t *testing.T) {
	turn := fakemodel.Turn{Blocks: []fakemodel.Block{partialText},
		StreamError: &fakemodel.APIError{Type: "overloaded_error", Message: "The server is overloaded"},
		Usage:       fakemodel.Usage{InputTokens: 10, OutputTokens: 20}}
	sdkSrv := start(t, fakemodel.Options{}, fakemodel.Turns(turn))
	ourSrv := start(t, fakemodel.Options{}, fakemodel.Turns(turn))
	sdk, ours := sdkOpenAI(t, sdkSrv.URL()), tackleOpenAI(t, ourSrv.URL())
	if sdk.Err == nil || ours.Err == nil {
		t.Fatalf("want both to fail: openai-go %v, tackle %v", sdk.Err, ours.Err)
	}
	se := sdkOpenAIErr(t, sdk.Err)
	te, _ := tackleErr(t, ours.Err)
	if diff := cmp.Diff(se, te); diff != "" {
		t.Errorf("error (-sdk +tackle):\n%s", diff)
	}
	if diff := cmp.Diff(apiErr{0, "server_error", "The server is overloaded"}, te); diff != "" {
		t.Errorf("tackle's error (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(sdk.Result, ours.Result); diff != "" {
		t.Errorf("partial completion (-sdk +tackle):\n%s", diff)
	}
	if sdk.Result.Content != partialText.Text {
		t.Errorf("partial text %q, want %q", sdk.Result.Content, partialText.Text)
	}
	if n, m := len(sdkSrv.Requests()), len(ourSrv.Requests()); n != 1 || m != 1 {
		t.Errorf("requests: openai-go %d, tackle %d; want 1 each", n, m)
	}
}

// TestOpenAITruncatedStream: a stream without data: [DONE]. tackle's client
// fails; openai-go ends a cleanly ended body without error.
func TestOpenAITruncatedStream(t *testing.T) {
	turn := fakemodel.Turn{Blocks: []fakemodel.Block{partialText}, Truncate: true, Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 20}}
	sdk := sdkOpenAI(t, start(t, fakemodel.Options{}, fakemodel.Turns(turn)).URL())
	ours := tackleOpenAI(t, start(t, fakemodel.Options{}, fakemodel.Turns(turn)).URL())
	if sdk.Err != nil {
		t.Errorf("openai-go: %v (v3.99.0 ends such a stream without error: this test pins it)", sdk.Err)
	}
	if ours.Err == nil {
		t.Fatal("tackle: no error for a stream without [DONE]")
	}
	if te, _ := tackleErr(t, ours.Err); te.Type != model.ErrIncomplete {
		t.Errorf("tackle's error type %q (%v), want %q", te.Type, ours.Err, model.ErrIncomplete)
	}
	if diff := cmp.Diff(sdk.Result, ours.Result); diff != "" {
		t.Errorf("partial completion (-sdk +tackle):\n%s", diff)
	}
}

// TestOpenAIRetries529: both clients make 3 requests for a 529 and give up
// with it.
func TestOpenAIRetries529(t *testing.T) {
	t.Parallel()
	sdkSrv := start(t, fakemodel.Options{}, fakemodel.Repeat(fakemodel.Overloaded()))
	ourSrv := start(t, fakemodel.Options{}, fakemodel.Repeat(fakemodel.Overloaded()))
	sdk, ours := concurrently(func() oaRun { return sdkOpenAI(t, sdkSrv.URL()) }, func() oaRun { return tackleOpenAI(t, ourSrv.URL()) })
	se := sdkOpenAIErr(t, sdk.Err)
	te, e := tackleErr(t, ours.Err)
	if diff := cmp.Diff(se, te); diff != "" {
		t.Errorf("error (-sdk +tackle):\n%s", diff)
	}
	if se.Status != 529 {
		t.Errorf("openai-go: %+v", se)
	}
	if e.Attempts != 3 {
		t.Errorf("tackle's Attempts %d, want 3", e.Attempts)
	}
	want := []string{"0", "1", "2"}
	if diff := cmp.Diff(want, retryCounts(sdkSrv)); diff != "" {
		t.Errorf("openai-go's requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, retryCounts(ourSrv)); diff != "" {
		t.Errorf("tackle's requests (-want +got):\n%s", diff)
	}
	checkBackoff(t, "openai-go", sdkSrv)
	checkBackoff(t, "tackle", ourSrv)
}

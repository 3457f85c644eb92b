package modeloracle_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// TestHTTPErrors: for HTTP errors before any stream, the SDKs and tackle's
// clients agree on the error (status, type, message) and on how many
// requests they make: what is retried (408, 409, 429, ≥ 500; x-should-retry
// overriding the status either way) and how often (2 retries). The waits
// are short (retry-after-ms, retry-after: 0) to keep the test fast;
// TestAnthropicRetries529 and TestOpenAIRetries529 use the default backoff.
func TestHTTPErrors(t *testing.T) {
	short := func(tn fakemodel.Turn) fakemodel.Turn { return tn.With("retry-after-ms", "10") }
	cases := []struct {
		name     string
		turn     fakemodel.Turn
		requests int
	}{
		{"400", fakemodel.HTTPError(400, "", ""), 1},
		{"401", fakemodel.HTTPError(401, "", ""), 1},
		{"403", fakemodel.HTTPError(403, "", ""), 1},
		{"404", fakemodel.HTTPError(404, "not_found_error", "model: claude-nonexistent"), 1},
		{"413", fakemodel.HTTPError(413, "", ""), 1},
		{"408", short(fakemodel.HTTPError(408, "", "")), 3},
		{"409", short(fakemodel.HTTPError(409, "", "")), 3},
		{"429 retry-after 0", fakemodel.RateLimited().With("retry-after", "0"), 3},
		{"429 retry-after 0.01", fakemodel.RateLimited().With("retry-after", "0.01"), 3},
		{"500", short(fakemodel.HTTPError(500, "", "")), 3},
		{"503", short(fakemodel.HTTPError(503, "", "")), 3},
		{"529 x-should-retry false", fakemodel.Overloaded().With("x-should-retry", "false"), 1},
		{"400 x-should-retry true", short(fakemodel.HTTPError(400, "", "").With("x-should-retry", "true")), 3},
	}
	for _, format := range []string{"anthropic", "openai"} {
		for _, tc := range cases {
			t.Run(format+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				sdkSrv := start(t, fakemodel.Options{}, fakemodel.Repeat(tc.turn))
				ourSrv := start(t, fakemodel.Options{}, fakemodel.Repeat(tc.turn))
				var se, te apiErr
				if format == "anthropic" {
					se = sdkAnthropicErr(t, sdkAnthropic(t, sdkSrv.URL()).Err)
				} else {
					se = sdkOpenAIErr(t, sdkOpenAI(t, sdkSrv.URL()).Err)
				}
				var ourErr error
				if format == "anthropic" {
					ourErr = tackleAnthropic(t, ourSrv.URL()).Err
				} else {
					ourErr = tackleOpenAI(t, ourSrv.URL()).Err
				}
				te, e := tackleErr(t, ourErr)
				if diff := cmp.Diff(se, te); diff != "" {
					t.Errorf("error (-sdk +tackle):\n%s", diff)
				}
				if se.Status != tc.turn.Status || se.Message == "" {
					t.Errorf("the SDK's error: %+v", se)
				}
				if n, m := len(sdkSrv.Requests()), len(ourSrv.Requests()); n != tc.requests || m != tc.requests {
					t.Errorf("requests: the SDK %d, tackle %d; want %d", n, m, tc.requests)
				}
				if e.Attempts != tc.requests {
					t.Errorf("tackle's Attempts %d, want %d", e.Attempts, tc.requests)
				}
			})
		}
	}
}

package modeloracle_test

import (
	"bytes"
	"os"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// The SSE framings a proxy or another server may use for the same events,
// made from the recorded get_weather stream: each is the same stream to
// the WHATWG rules both clients follow.
var framings = []struct {
	name  string
	apply func([]byte) []byte
}{
	{"CRLF line ends", func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) }},
	{"comment lines", func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte("event: "), []byte(": keep-alive\nevent: "))
	}},
	{"no space after the colon", func(b []byte) []byte {
		b = bytes.ReplaceAll(b, []byte("event: "), []byte("event:"))
		return bytes.ReplaceAll(b, []byte("data: "), []byte("data:"))
	}},
	{"data over several lines", func(b []byte) []byte {
		// split the JSON before each key; the lines are joined by "\n",
		// whitespace between JSON tokens
		return regexp.MustCompile(`,"`).ReplaceAll(b, []byte(",\ndata: \""))
	}},
	{"an id: and a retry: field", func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte("event: "), []byte("id: 7\nretry: 1000\nevent: "))
	}},
}

const getWeather = "../fakemodel/testdata/anthropic_get_weather.sse"

// TestAnthropicFramings: tackle's client and anthropic-sdk-go read each
// framing of the recorded stream as the recording itself.
func TestAnthropicFramings(t *testing.T) {
	raw, err := os.ReadFile(getWeather)
	if err != nil {
		t.Fatal(err)
	}
	ref := sdkAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(raw))).URL())
	if ref.Err != nil || len(ref.Result.Blocks) != 2 {
		t.Fatalf("the SDK on the recording: %v, %+v", ref.Err, ref.Result)
	}
	for _, f := range framings {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			body := f.apply(bytes.Clone(raw))
			sdk := sdkAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(body))).URL())
			ours := tackleAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(body))).URL())
			if sdk.Err != nil || ours.Err != nil {
				t.Fatalf("anthropic-sdk-go %v, tackle %v", sdk.Err, ours.Err)
			}
			if diff := cmp.Diff(ref.Result, sdk.Result); diff != "" {
				t.Errorf("anthropic-sdk-go (-recording +framing):\n%s", diff)
			}
			if diff := cmp.Diff(ref.Result, ours.Result); diff != "" {
				t.Errorf("tackle (-recording +framing):\n%s", diff)
			}
			if diff := cmp.Diff(ref.Deltas, ours.Deltas); diff != "" {
				t.Errorf("tackle's deltas (-recording +framing):\n%s", diff)
			}
		})
	}
}

// TestAnthropicDataOnlyStream is a known difference (agent.md §1): the
// recorded stream without its event: lines. anthropic-sdk-go skips every
// event that has no event: name, so it yields nothing and no error, an
// empty message; tackle's client reads each event's type from its JSON and
// builds the recorded message.
func TestAnthropicDataOnlyStream(t *testing.T) {
	raw, err := os.ReadFile(getWeather)
	if err != nil {
		t.Fatal(err)
	}
	ref := tackleAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(raw))).URL())
	body := regexp.MustCompile(`(?m)^event: .*\n`).ReplaceAll(raw, nil)
	sdk := sdkAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(body))).URL())
	ours := tackleAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(body))).URL())
	if sdk.Err != nil || len(sdk.Deltas) != 0 || len(sdk.Result.Blocks) != 0 || sdk.Result.StopReason != "" {
		t.Errorf("anthropic-sdk-go on a data-only stream: error %v, %d deltas, %+v; want nothing at all", sdk.Err, len(sdk.Deltas), sdk.Result)
	}
	if ours.Err != nil {
		t.Fatalf("tackle: %v", ours.Err)
	}
	if diff := cmp.Diff(ref.Result, ours.Result); diff != "" {
		t.Errorf("tackle (-with event lines +without):\n%s", diff)
	}
}

package modeloracle_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// The recordings are read where they are published, from the module cache
// (the versions go.mod pins), not copied: anthropic-sdk-go v2.15.0 and
// openai-go v3.99.0, both Apache-2.0 (their LICENSE files are beside the
// recordings in the module cache). The one copy in the repository is
// internal/fakemodel/testdata/anthropic_get_weather.sse (its README names
// its source and licence).
const (
	anthropicSDK = "github.com/anthropics/anthropic-sdk-go/v2"
	openAISDK    = "github.com/openai/openai-go/v3"
)

// moduleDir is the module cache directory of a required module, or skips
// the test when it is not there (a vendored or pruned cache).
func moduleDir(t *testing.T, path string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), "go", "list", "-m", "-f", "{{.Dir}}", path).Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		t.Skipf("the recordings of %s are read from its module cache directory, and `go list -m %s` gives none (%v): run `go mod download %s` in internal/modeloracle", path, path, err, path)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("the module cache directory of %s is absent (%v): run `go mod download %s` in internal/modeloracle", path, err, path)
	}
	return dir
}

// recording is one recorded SSE body.
type recording struct {
	name string
	body []byte
}

// cassette is the part of a go-vcr cassette read here.
type cassette struct {
	Interactions []struct {
		Response struct {
			Body    string              `yaml:"body"`
			Headers map[string][]string `yaml:"headers"`
			Code    int                 `yaml:"code"`
		} `yaml:"response"`
	} `yaml:"interactions"`
}

// anthropicRecordings are the streamed responses of the go-vcr cassettes
// anthropic-sdk-go recorded from the live API (2025-10-30; agent.md §7),
// the copy of one of them in fakemodel's testdata, and the SDK's
// hand-written fallback streams (thinking with a signature, a refusal with
// stop_details, a tool call).
func anthropicRecordings(t *testing.T) []recording {
	t.Helper()
	dir := moduleDir(t, anthropicSDK)
	var recs []recording
	files, err := filepath.Glob(filepath.Join(dir, "toolrunner/testdata/cassettes/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no cassettes under %s/toolrunner/testdata/cassettes (%v)", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var c cassette
		if err := yaml.Unmarshal(b, &c); err != nil {
			t.Fatalf("parsing %s: %v", f, err)
		}
		for i, in := range c.Interactions {
			ct := strings.Join(in.Response.Headers["Content-Type"], ",")
			if in.Response.Code == 200 && strings.HasPrefix(ct, "text/event-stream") {
				recs = append(recs, recording{
					name: strings.TrimSuffix(filepath.Base(f), ".yaml") + "#" + strconv.Itoa(i),
					body: []byte(in.Response.Body),
				})
			}
		}
	}
	if len(recs) < 3 {
		t.Fatalf("found %d streamed responses in the cassettes, want at least 3 (next_streaming 1, streaming_all 2)", len(recs))
	}
	local := "../fakemodel/testdata/anthropic_get_weather.sse"
	b, err := os.ReadFile(local)
	if err != nil {
		t.Fatalf("reading %s: %v", local, err)
	}
	recs = append(recs, recording{"fakemodel/anthropic_get_weather.sse", b})
	hand, _ := filepath.Glob(filepath.Join(dir, "lib/betafallback/testdata/fallbackstream/*.sse"))
	for _, f := range hand {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, recording{"hand-written/" + filepath.Base(f), b})
	}
	return recs
}

// TestAnthropicRecordedStreams: tackle's client parses the recorded real
// streams, replayed byte for byte by the fake server (the live API's
// padding and pings included), as anthropic-sdk-go does.
func TestAnthropicRecordedStreams(t *testing.T) {
	for _, rec := range anthropicRecordings(t) {
		t.Run(rec.name, func(t *testing.T) {
			t.Parallel()
			sdk := sdkAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(rec.body))).URL())
			ours := tackleAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(rec.body))).URL())
			if sdk.Err != nil {
				t.Fatalf("anthropic-sdk-go: %v", sdk.Err)
			}
			if ours.Err != nil {
				t.Fatalf("tackle: %v", ours.Err)
			}
			if len(sdk.Result.Blocks) == 0 || sdk.Result.StopReason == "" || sdk.Result.Usage.Output == 0 {
				t.Fatalf("the SDK made little of the recording: %+v", sdk.Result)
			}
			if diff := cmp.Diff(sdk.Result, ours.Result); diff != "" {
				t.Errorf("message (-sdk +tackle):\n%s", diff)
			}
			if diff := cmp.Diff(sdk.Deltas, ours.Deltas); diff != "" {
				t.Errorf("deltas (-sdk +tackle):\n%s", diff)
			}
		})
	}
}

// aisdkRecordings are the responses in testdata/ai-sdk-anthropic (see its
// README), made SSE: each line's "type" becomes its event: line, and a new
// response starts after each message_start … message_stop.
func aisdkRecordings(t *testing.T) []recording {
	t.Helper()
	files, err := filepath.Glob("testdata/ai-sdk-anthropic/*.chunks.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no recordings in testdata/ai-sdk-anthropic (%v)", err)
	}
	var recs []recording
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cur bytes.Buffer
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			line := bytes.TrimSpace(sc.Bytes())
			if len(line) == 0 {
				continue
			}
			var ev struct{ Type string }
			if err := json.Unmarshal(line, &ev); err != nil || ev.Type == "" {
				t.Fatalf("%s: a line without a type: %.80s", f, line)
			}
			fmt.Fprintf(&cur, "event: %s\ndata: %s\n\n", ev.Type, line)
			if ev.Type == "message_stop" {
				recs = append(recs, recording{fmt.Sprintf("%s#%d", strings.TrimSuffix(filepath.Base(f), ".chunks.txt"), n), bytes.Clone(cur.Bytes())})
				cur.Reset()
				n++
			}
		}
		if err := sc.Err(); err != nil || cur.Len() > 0 || n == 0 {
			t.Fatalf("%s: %d responses, %d bytes after the last message_stop (%v)", f, n, cur.Len(), err)
		}
	}
	return recs
}

// startContent is the content that a stream's message_start carries
// (normally [], but see TestAISDKRecordedStreams).
func startContent(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	for _, line := range bytes.Split(body, []byte("\n")) {
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Type    string
			Message struct{ Content []json.RawMessage }
		}
		if json.Unmarshal(data, &ev) == nil && ev.Type == "message_start" {
			return ev.Message.Content
		}
	}
	return nil
}

// TestAISDKRecordedStreams: the same comparison over the Vercel AI SDK's
// recordings of the live API (testdata/ai-sdk-anthropic): server tools
// (web search and fetch, code execution, tool search, MCP) whose blocks
// tackle keeps as Raw JSON, compared with the SDK's accumulated JSON of
// the block; citations_delta; a tool without arguments; input_tokens in
// message_delta. Not compared: citations (the SDK accumulates
// citations_delta into the text block; tackle's model.Block has no field
// for them and ignores the delta, so its text blocks go back without them).
//
// With programmatic tool calling, the API answers a tool call made from
// code execution with a stream of only message_start, whose message
// already holds the content ([tool_use with a caller]) and stop_reason
// tool_use, then message_stop (13 responses of
// anthropic-programmatic-tool-calling.1): both clients take the whole
// message from message_start.
func TestAISDKRecordedStreams(t *testing.T) {
	for _, rec := range aisdkRecordings(t) {
		t.Run(rec.name, func(t *testing.T) {
			t.Parallel()
			sdk := sdkAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(rec.body))).URL())
			ours := tackleAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(rec.body))).URL())
			if sdk.Err != nil {
				t.Fatalf("anthropic-sdk-go: %v", sdk.Err)
			}
			if ours.Err != nil {
				t.Fatalf("tackle: %v", ours.Err)
			}
			if len(sdk.Result.Blocks) == 0 || sdk.Result.StopReason == "" {
				t.Fatalf("the SDK made little of the recording: %+v", sdk.Result)
			}
			pre := startContent(t, rec.body)
			if len(pre) > 0 && (len(ours.Result.Blocks) != len(pre) || ours.Result.StopReason != "tool_use") {
				t.Errorf("tackle: %+v, want the %d blocks of message_start and stop tool_use", ours.Result, len(pre))
			}
			if diff := cmp.Diff(sdk.Result, ours.Result); diff != "" {
				t.Errorf("message (-sdk +tackle):\n%s", diff)
			}
			if len(pre) > 0 {
				// The SDK streams no events for a message whole at the
				// start; tackle tells its blocks as started and stopped
				// (the loop shows the tool call like any other).
				return
			}
			if diff := cmp.Diff(sdk.Deltas, ours.Deltas); diff != "" {
				t.Errorf("deltas (-sdk +tackle):\n%s", diff)
			}
		})
	}
}

// openAIRecording is mockResponseBody of openai-go's
// streamaccumulator_test.go: a gpt-4o-2024-05-13 stream (text with
// logprobs, a get_weather tool call, finish_reason tool_calls) whose usage
// part the SDK's authors edited by hand into two usage chunks, to test
// that the accumulator sums them.
func openAIRecording(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(moduleDir(t, openAISDK), "streamaccumulator_test.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Names) != 1 || vs.Names[0].Name != "mockResponseBody" || len(vs.Values) != 1 {
				continue
			}
			lit, ok := vs.Values[0].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				t.Fatalf("%s: mockResponseBody is not a string literal", path)
			}
			body, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: mockResponseBody: %v", path, err)
			}
			return []byte(body)
		}
	}
	t.Fatalf("%s has no mockResponseBody", path)
	return nil
}

// TestOpenAIRecordedStream: the recorded chat completions stream gives the
// same text, tool call and deltas to openai-go and to tackle's client; the
// finish reasons are the wire's tool_calls and tackle's tool_use.
//
// The usage differs, by design: the recording has two usage chunks (hand
// edited; OpenAI sends one). openai-go adds them up (prompt 10+0,
// completion 100+50, cached 20+10); tackle keeps the last (prompt_tokens 0,
// cached 10, completion 50), as vLLM's continuous usage stats are running
// totals (agent.md §2). Both are asserted here.
func TestOpenAIRecordedStream(t *testing.T) {
	body := openAIRecording(t)
	sdk := sdkOpenAI(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(body))).URL())
	ours := tackleOpenAI(t, start(t, fakemodel.Options{}, fakemodel.Turns(fakemodel.Replay(body))).URL())
	if sdk.Err != nil {
		t.Fatalf("openai-go: %v", sdk.Err)
	}
	if ours.Err != nil {
		t.Fatalf("tackle: %v", ours.Err)
	}
	if !strings.HasPrefix(sdk.Result.Content, "Let's take a journey") || len(sdk.Result.ToolCalls) != 1 {
		t.Fatalf("the SDK made little of the recording: %+v", sdk.Result)
	}
	want, got := sdk.Result, ours.Result
	if diff := cmp.Diff(oaUsage{Prompt: 10, Completion: 150, Cached: 30}, want.Usage); diff != "" {
		t.Errorf("openai-go usage (-want +got):\n%s", diff)
	}
	// tackle: InputTokens = max(0, prompt_tokens − cached) = 0, CacheRead
	// 10, so prompt (input + cache read) 10.
	if diff := cmp.Diff(oaUsage{Prompt: 10, Completion: 50, Cached: 10}, got.Usage); diff != "" {
		t.Errorf("tackle usage (-want +got):\n%s", diff)
	}
	want.Usage, got.Usage = oaUsage{}, oaUsage{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("completion (-sdk +tackle):\n%s", diff)
	}
	if diff := cmp.Diff(sdk.Deltas, ours.Deltas); diff != "" {
		t.Errorf("deltas (-sdk +tackle):\n%s", diff)
	}
	if sdk.Finish != "tool_calls" || ours.Finish != "tool_use" {
		t.Errorf("finish: openai-go %q (want tool_calls), tackle %q (want tool_use)", sdk.Finish, ours.Finish)
	}
}

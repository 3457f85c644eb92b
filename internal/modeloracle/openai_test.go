package modeloracle_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// openAITurns are the scripted turns of the chat completions comparison.
// sdkFinish is the finish_reason on the wire (what openai-go reports),
// stop tackle's stop reason; both for a server without quirks.
var openAITurns = []struct {
	name      string
	turn      fakemodel.Turn
	sdkFinish string
	stop      string
}{
	{"text", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("Hello! How can I help you today?")},
		Usage: fakemodel.Usage{InputTokens: 12, OutputTokens: 9}}, "stop", "end_turn"},
	{"text in one-rune deltas, multi-byte", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("héllo — 世界 🎉 <b>&amp;</b>")},
		Chunk: 1, Usage: fakemodel.Usage{InputTokens: 3, OutputTokens: 11}}, "stop", "end_turn"},
	{"text and one tool call", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.Text("I'll read the file."),
		fakemodel.ToolUse("Read", map[string]any{"file_path": "/tmp/notes.txt", "limit": 20}),
	}, Usage: fakemodel.Usage{InputTokens: 394, OutputTokens: 79}}, "tool_calls", "tool_use"},
	{"one tool call first", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.ToolUse("get_weather", map[string]any{"location": "Santorini, Greece"}),
	}, Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 100}}, "tool_calls", "tool_use"},
	{"two tool calls", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.ToolUse("Read", map[string]any{"file_path": "/a"}),
		fakemodel.ToolUse("Grep", map[string]any{"pattern": `func \w+\(`, "path": "/src", "glob": "*.go"}),
	}, Chunk: 4, Usage: fakemodel.Usage{InputTokens: 500, OutputTokens: 120}}, "tool_calls", "tool_use"},
	{"three tool calls after text", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.Text("Three at once."),
		fakemodel.ToolUse("Read", map[string]any{"file_path": "/a"}),
		fakemodel.ToolUse("Read", map[string]any{"file_path": "/b"}),
		fakemodel.ToolUse("Glob", map[string]any{"pattern": "**/*.md"}),
	}, Chunk: 3, Usage: fakemodel.Usage{InputTokens: 500, OutputTokens: 120}}, "tool_calls", "tool_use"},
	{"tool without arguments", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.ToolUse("Now", nil)},
		Usage: fakemodel.Usage{InputTokens: 50, OutputTokens: 12}}, "tool_calls", "tool_use"},
	{"stop length in text", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("This answer is cut")},
		StopReason: "max_tokens", Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 5}}, "length", "max_tokens"},
	{"stop length in tool arguments", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.ToolUse("Write", `{"file_path":"/a","content":"unfinis`),
	}, StopReason: "max_tokens", Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 1024}}, "length", "max_tokens"},
	{"content_filter", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("I can't")},
		StopReason: "refusal", Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 2}}, "content_filter", "refusal"},
	{"usage with cached tokens", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("Cached.")},
		Usage: fakemodel.Usage{InputTokens: 5, OutputTokens: 30, CacheReadInputTokens: 3400}}, "stop", "end_turn"},
	{"reasoning then text", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.Thinking("Think first."),
		fakemodel.Text("Answer."),
	}, Usage: fakemodel.Usage{InputTokens: 5, OutputTokens: 30}}, "stop", "end_turn"},
}

// openAIServers are the server variants every turn runs on: the three
// shapes of the usage chunk, finish_reason "stop" after tool calls (as
// gpt-4o has sent), and interleaved parallel tool calls.
var openAIServers = []struct {
	name string
	opts fakemodel.Options
}{
	{"choices []", fakemodel.Options{OpenAIUsageChoices: fakemodel.UsageChoicesEmpty}},
	{"choices null", fakemodel.Options{OpenAIUsageChoices: fakemodel.UsageChoicesNull}},
	{"choices omitted", fakemodel.Options{OpenAIUsageChoices: fakemodel.UsageChoicesOmitted}},
	{"stop after tool calls", fakemodel.Options{OpenAIStopAfterToolCalls: true}},
	{"interleaved tool calls", fakemodel.Options{OpenAIInterleaveToolCalls: true}},
}

// TestOpenAIScriptedTurns: for each turn and server variant, openai-go v3
// (Chat.Completions.NewStreaming + ChatCompletionAccumulator) and tackle's
// model.NewOpenAI build the same text, tool calls (by index: id, name,
// arguments) and usage, and see the same deltas. The finish reason is
// checked on each side: the SDK reports the wire's, tackle maps it, and
// tackle reports tool_use whenever tool calls arrived, whatever
// finish_reason said.
//
// Arguments are compared after tackle's documented normalization ("" and
// cut-off text become {}): the SDK keeps the raw string.
func TestOpenAIScriptedTurns(t *testing.T) {
	for _, srv := range openAIServers {
		for _, tc := range openAITurns {
			t.Run(fmt.Sprintf("%s/%s", srv.name, tc.name), func(t *testing.T) {
				t.Parallel()
				sdk := sdkOpenAI(t, start(t, srv.opts, fakemodel.Turns(tc.turn)).URL())
				ours := tackleOpenAI(t, start(t, srv.opts, fakemodel.Turns(tc.turn)).URL())
				if sdk.Err != nil {
					t.Fatalf("openai-go: %v", sdk.Err)
				}
				if ours.Err != nil {
					t.Fatalf("tackle: %v", ours.Err)
				}
				want := sdk.Result
				want.ToolCalls = nil
				for _, c := range sdk.Result.ToolCalls {
					c.Arguments = asTackleArguments(c.Arguments)
					want.ToolCalls = append(want.ToolCalls, c)
				}
				if diff := cmp.Diff(want, ours.Result); diff != "" {
					t.Errorf("completion (-sdk +tackle):\n%s", diff)
				}
				if diff := cmp.Diff(sdk.Deltas, ours.Deltas); diff != "" {
					t.Errorf("deltas (-sdk +tackle):\n%s", diff)
				}
				wantFinish := tc.sdkFinish
				if srv.opts.OpenAIStopAfterToolCalls && wantFinish == "tool_calls" {
					wantFinish = "stop"
				}
				if sdk.Finish != wantFinish {
					t.Errorf("openai-go finish_reason %q, want %q", sdk.Finish, wantFinish)
				}
				if ours.Finish != tc.stop {
					t.Errorf("tackle stop reason %q, want %q (finish_reason on the wire %q)", ours.Finish, tc.stop, sdk.Finish)
				}
				if want.Usage.Prompt == 0 || want.Usage.Completion == 0 {
					t.Errorf("the SDK saw no usage: %+v", want.Usage)
				}
				// Beyond the SDK: reasoning_content (DeepSeek's, vLLM's
				// field, not OpenAI's: openai-go drops it) is tackle's
				// thinking block; a call cut off by length is incomplete.
				for i, b := range ours.Tackle.Message.Content {
					switch b.Type {
					case "thinking":
						if tb := tc.turn.Blocks[i]; tb.Type != "thinking" || b.Thinking != tb.Thinking || b.Signature != "" {
							t.Errorf("tackle's block %d: %+v, want thinking %q without signature", i, b, tb.Thinking)
						}
					case "tool_use":
						if b.InputComplete == (tc.stop == "max_tokens") {
							t.Errorf("tackle's block %d: InputComplete %v at stop %s", i, b.InputComplete, tc.stop)
						}
					}
				}
			})
		}
	}
}

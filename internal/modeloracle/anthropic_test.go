package modeloracle_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// anthropicTurns are the scripted turns both clients parse. Every turn sets
// its usage: the fake estimates missing counts from the request body, and
// the SDK's body is not tackle's.
var anthropicTurns = []struct {
	name string
	turn fakemodel.Turn
	// stop and blocks are what both must report (a check that the
	// comparison is not of two empty results).
	stop   string
	blocks int
}{
	{"text", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("Hello! How can I help you today?")},
		Usage: fakemodel.Usage{InputTokens: 12, OutputTokens: 9}}, "end_turn", 1},
	{"text in one-rune deltas, multi-byte", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("héllo — 世界 🎉 <b>&amp;</b>")},
		Chunk: 1, Usage: fakemodel.Usage{InputTokens: 3, OutputTokens: 11}}, "end_turn", 1},
	{"text with empty pieces", fakemodel.Turn{Blocks: []fakemodel.Block{{Type: "text", Pieces: []string{"", "a", "", "b"}}},
		Usage: fakemodel.Usage{InputTokens: 3, OutputTokens: 2}}, "end_turn", 1},
	{"text and one tool_use", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.Text("I'll read the file."),
		fakemodel.ToolUse("Read", map[string]any{"file_path": "/tmp/notes.txt", "limit": 20}),
	}, Usage: fakemodel.Usage{InputTokens: 394, OutputTokens: 79}}, "tool_use", 2},
	{"two tool_uses", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.Text("Reading both."),
		fakemodel.ToolUse("Read", map[string]any{"file_path": "/a"}),
		fakemodel.ToolUse("Grep", map[string]any{"pattern": `func \w+\(`, "path": "/src", "glob": "*.go"}),
	}, Usage: fakemodel.Usage{InputTokens: 500, OutputTokens: 120}}, "tool_use", 3},
	{"tool without arguments", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.ToolUse("Now", nil)},
		Usage: fakemodel.Usage{InputTokens: 50, OutputTokens: 12}}, "tool_use", 1},
	{"tool input in one-rune pieces with escapes", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.ToolUse("Write", map[string]any{"file_path": "/a b/ü.txt", "content": "line 1\nline \"2\"\t<&>\n"}),
	}, Chunk: 1, Usage: fakemodel.Usage{InputTokens: 50, OutputTokens: 40}}, "tool_use", 1},
	{"thinking, signature, text", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.Thinking("The user greets me. I should answer briefly and ask what they need."),
		fakemodel.Text("Hi! What can I do for you?"),
	}, Usage: fakemodel.Usage{InputTokens: 40, OutputTokens: 60}}, "end_turn", 2},
	{"thinking then tool_use", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.Thinking("I need the file first."),
		fakemodel.ToolUse("Read", map[string]any{"file_path": "/etc/hostname"}),
	}, Usage: fakemodel.Usage{InputTokens: 40, OutputTokens: 30}}, "tool_use", 2},
	{"redacted thinking", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.RedactedThinking(),
		fakemodel.Thinking("Visible part."),
		fakemodel.Text("Done."),
	}, Usage: fakemodel.Usage{InputTokens: 40, OutputTokens: 30}}, "end_turn", 3},
	{"stop max_tokens in text", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("This answer is cut")},
		StopReason: "max_tokens", Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 5}}, "max_tokens", 1},
	{"stop max_tokens in a tool input", fakemodel.Turn{Blocks: []fakemodel.Block{
		fakemodel.Text("Writing it."),
		fakemodel.ToolUse("Write", `{"file_path":"/a","content":"unfinis`),
	}, StopReason: "max_tokens", Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 1024}}, "max_tokens", 2},
	{"stop_sequence", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("one two ")},
		StopReason: "stop_sequence", StopSequence: "three", Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 3}}, "stop_sequence", 1},
	{"refusal with stop_details", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("I can't help with that.")},
		StopReason: "refusal", StopDetails: json.RawMessage(`{"type":"refusal","category":null,"explanation":null}`),
		Usage: fakemodel.Usage{InputTokens: 10, OutputTokens: 7}}, "refusal", 1},
	{"usage with cache tokens", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("Cached.")},
		Usage: fakemodel.Usage{InputTokens: 5, OutputTokens: 30, CacheCreationInputTokens: 1200, CacheReadInputTokens: 3400}}, "end_turn", 1},
	{"message_delta usage wins over message_start", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("Counted.")},
		StartUsage: &fakemodel.Usage{InputTokens: 43, OutputTokens: 1, CacheReadInputTokens: 7},
		Usage:      fakemodel.Usage{InputTokens: 61, OutputTokens: 20, CacheReadInputTokens: 9}}, "end_turn", 1},
	{"no pings", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("quiet"), fakemodel.ToolUse("Now", nil)},
		Pings: fakemodel.PingNone, Usage: fakemodel.Usage{InputTokens: 5, OutputTokens: 5}}, "tool_use", 2},
	{"pings everywhere", fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("noisy stream"), fakemodel.ToolUse("Now", nil)},
		PingAt: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Usage: fakemodel.Usage{InputTokens: 5, OutputTokens: 5}}, "tool_use", 2},
	{"empty message", fakemodel.Turn{Usage: fakemodel.Usage{InputTokens: 5, OutputTokens: 1}}, "end_turn", 0},
}

// TestAnthropicScriptedTurns: for each scripted turn, anthropic-sdk-go v2
// (Messages.NewStreaming + Message.Accumulate) and tackle's
// model.NewAnthropic, each against its own fake server with the same
// options, build the same message (blocks in order with their text,
// thinking, signature, data, tool id, name and input JSON; stop reason and
// sequence; usage) and see the same deltas on the way.
func TestAnthropicScriptedTurns(t *testing.T) {
	for _, tc := range anthropicTurns {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script := fakemodel.Turns(tc.turn)
			sdk := sdkAnthropic(t, start(t, fakemodel.Options{}, script).URL())
			ours := tackleAnthropic(t, start(t, fakemodel.Options{}, fakemodel.Turns(tc.turn)).URL())
			if sdk.Err != nil {
				t.Fatalf("anthropic-sdk-go: %v", sdk.Err)
			}
			if ours.Err != nil {
				t.Fatalf("tackle: %v", ours.Err)
			}
			if diff := cmp.Diff(sdk.Result, ours.Result); diff != "" {
				t.Errorf("message (-sdk +tackle):\n%s", diff)
			}
			if diff := cmp.Diff(sdk.Deltas, ours.Deltas); diff != "" {
				t.Errorf("deltas (-sdk +tackle):\n%s", diff)
			}
			if sdk.Result.StopReason != tc.stop || len(sdk.Result.Blocks) != tc.blocks {
				t.Errorf("the SDK saw stop %q and %d blocks, the script sends %q and %d",
					sdk.Result.StopReason, len(sdk.Result.Blocks), tc.stop, tc.blocks)
			}
			// tackle's own rule beyond the SDK: a tool input cut off by
			// max_tokens is marked incomplete, every other one complete.
			for i, b := range ours.Tackle.Message.Content {
				if b.Type != "tool_use" {
					continue
				}
				cut := tc.stop == "max_tokens" && i == len(ours.Tackle.Message.Content)-1
				if b.InputComplete == cut {
					t.Errorf("block %d: InputComplete %v, want %v", i, b.InputComplete, !cut)
				}
			}
		})
	}
}

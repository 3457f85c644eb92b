package toolsearch_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/toolsearch"
)

func TestParseMode(t *testing.T) {
	on, off := toolsearch.Mode{Kind: "on"}, toolsearch.Mode{Kind: "off"}
	tests := []struct {
		raw     string
		want    toolsearch.Mode
		wantErr string
	}{
		{"", on, ""},
		{"null", on, ""},
		{`"on"`, on, ""},
		{`"ON "`, on, ""},
		{`"true"`, on, ""},
		{"true", on, ""},
		{"false", off, ""},
		{`"off"`, off, ""},
		{`"false"`, off, ""},
		{`"auto"`, toolsearch.Mode{Kind: "auto", Percent: 10}, ""},
		{`"auto:25"`, toolsearch.Mode{Kind: "auto", Percent: 25}, ""},
		{`"auto:0"`, toolsearch.Mode{Kind: "auto", Percent: 0}, ""},
		{`"auto:100"`, toolsearch.Mode{Kind: "auto", Percent: 100}, ""},
		{`"auto:5%"`, toolsearch.Mode{Kind: "auto", Percent: 5}, ""},
		{`"auto:101"`, on, "0 to 100"},
		{`"auto:-1"`, on, "0 to 100"},
		{`"auto:x"`, on, "0 to 100"},
		{`"sometimes"`, on, `use "on", "auto", "auto:N" or "off"`},
		{"3", on, "not a string or boolean"},
		{`{"a":1}`, on, "not a string or boolean"},
		{`"on`, on, "reading toolSearch"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := toolsearch.ParseMode(json.RawMessage(tt.raw))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseMode(%s) error = %v, want one containing %q", tt.raw, err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("ParseMode(%s): %v", tt.raw, err)
			}
			if got != tt.want {
				t.Errorf("ParseMode(%s) = %+v, want %+v", tt.raw, got, tt.want)
			}
		})
	}
	for _, m := range []toolsearch.Mode{on, off, {Kind: "auto", Percent: 7}} {
		back, err := toolsearch.ParseModeString(m.String())
		if err != nil || back != m {
			t.Errorf("ParseModeString(%q) = %+v, %v; want %+v", m.String(), back, err, m)
		}
	}
}

func TestNeverDeferred(t *testing.T) {
	for _, n := range []string{"Read", "Write", "Edit", "Glob", "Grep", "Bash", "Skill", "ToolSearch", "Task", "Agent"} {
		if !toolsearch.NeverDeferred(n) {
			t.Errorf("NeverDeferred(%q) = false", n)
		}
	}
	for _, n := range []string{"WebFetch", "TodoWrite", "MultiEdit", "read", "mcp__x__Read"} {
		if toolsearch.NeverDeferred(n) {
			t.Errorf("NeverDeferred(%q) = true", n)
		}
	}
}

func TestDeferred(t *testing.T) {
	mcp := corpus(1)
	base := []tool.Tool{
		builtin("Read", true), // asks for deferral, never deferred
		builtin("Bash", false),
		builtin("WebFetch", true),           // a deferrable built-in
		builtin("TodoWrite", false),         // not deferrable
		builtin("NewAgent", true, "Agent"),  // an alias that never defers
		builtin("SkillRunner", true, "Foo"), // deferrable
	}
	all := append(append([]tool.Tool{}, base...), mcp...)
	deferrable := map[string]bool{"WebFetch": true, "SkillRunner": true}
	tokens := 0
	for _, tl := range mcp {
		deferrable[tl.Spec().Name] = true
		tokens += toolsearch.EstimateTokens(tl.Spec())
	}
	tokens += toolsearch.EstimateTokens(base[2].Spec()) + toolsearch.EstimateTokens(base[5].Spec())
	if tokens < 1000 {
		t.Fatalf("corpus estimate %d tokens: too small for the test", tokens)
	}
	// The threshold at which auto:10 flips: 10 % of contextTokens == tokens.
	flip := tokens * 10
	tests := []struct {
		name    string
		mode    toolsearch.Mode
		context int
		want    map[string]bool
	}{
		{"on", toolsearch.Mode{Kind: "on"}, 0, deferrable},
		{"zero mode is on", toolsearch.Mode{}, 0, deferrable},
		{"off", toolsearch.Mode{Kind: "off"}, 0, map[string]bool{}},
		{"auto default context: under 10 %", toolsearch.Mode{Kind: "auto", Percent: 10}, 0, map[string]bool{}},
		{"auto:0 always defers", toolsearch.Mode{Kind: "auto", Percent: 0}, 0, deferrable},
		{"auto at the threshold", toolsearch.Mode{Kind: "auto", Percent: 10}, flip, deferrable},
		{"auto just under the threshold", toolsearch.Mode{Kind: "auto", Percent: 10}, flip + 10, map[string]bool{}},
		{"auto:N scales", toolsearch.Mode{Kind: "auto", Percent: 5}, flip * 2, deferrable},
		{"auto:N just under", toolsearch.Mode{Kind: "auto", Percent: 5}, flip*2 + 20, map[string]bool{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toolsearch.Deferred(tt.mode, all, tt.context)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Deferred(%+v, %d) (-want +got):\n%s", tt.mode, tt.context, diff)
			}
		})
	}
	// With the default context (200,000 tokens), enough copies of the
	// corpus cross 10 %.
	big := corpus(1 + 20000/tokens + 1)
	if got := toolsearch.Deferred(toolsearch.Mode{Kind: "auto", Percent: 10}, big, 0); len(got) != len(big) {
		t.Errorf("auto with %d tools deferred %d, want all", len(big), len(got))
	}
}

func TestEstimateTokens(t *testing.T) {
	s := tool.Spec{Name: "abcd", Description: strings.Repeat("x", 400), InputSchema: json.RawMessage(`{"type":"object"}`)}
	js, _ := json.Marshal(map[string]any{"name": s.Name, "description": s.Description, "input_schema": s.InputSchema})
	if got, want := toolsearch.EstimateTokens(s), len(js)/4; got != want {
		t.Errorf("EstimateTokens = %d, want len(json)/4 = %d", got, want)
	}
}

package frontmatter

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestSplitList(t *testing.T) {
	for in, want := range map[string][]string{
		"Read, Bash(git add *) Grep":     {"Read", "Bash(git add *)", "Grep"},
		"src/**/*.{ts,tsx}, docs/*.md":   {"src/**/*.{ts,tsx}", "docs/*.md"},
		"  ":                             nil,
		"All tools":                      {"All", "tools"},
		"Bash(a, b),Edit\n\tmcp__srv__x": {"Bash(a, b)", "Edit", "mcp__srv__x"},
	} {
		if got := SplitList(in); !slices.Equal(got, want) {
			t.Errorf("SplitList(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONable(t *testing.T) {
	v := map[any]any{"hooks": []any{map[any]any{1: "x", "y": map[any]any{true: 2}}}}
	b, err := json.Marshal(JSONable(v))
	if err != nil || string(b) != `{"hooks":[{"1":"x","y":{"true":2}}]}` {
		t.Errorf("%s, %v", b, err)
	}
}

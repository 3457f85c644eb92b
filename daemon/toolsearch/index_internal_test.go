package toolsearch

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNameTokens(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"mcp__slack__slack_post_message", []string{"mcp", "slack", "slack", "post", "messag"}},
		{"mcp__notion__API-post-database-query", []string{"mcp", "notion", "api", "post", "databas", "query"}},
		{"mcp__gw__sendHTTPRequest", []string{"mcp", "gw", "send", "http", "request"}},
		{"mcp__google-workspace__calendar_find_free_time", []string{"mcp", "googl", "workspac", "calendar", "find", "free", "tim"}},
		{"mcp__ctx7__get-library-docs", []string{"mcp", "ctx7", "get", "library", "doc"}},
		{"WebFetch", []string{"web", "fetch"}},
		{"s3Bucket", []string{"s3", "bucket"}},
		{"", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, nameTokens(tt.name)); diff != "" {
			t.Errorf("nameTokens(%q) (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestTextTokens(t *testing.T) {
	got := textTokens("Send a message to the Slack channel, with émojis and sendMessage!")
	want := []string{"send", "messag", "slack", "channel", "émojis", "send", "messag"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestStem checks that the forms a query and a description use meet.
func TestStem(t *testing.T) {
	groups := [][]string{
		{"message", "messages"},
		{"create", "created", "creates", "creating"},
		{"update", "updated", "updating", "updates"},
		{"list", "lists", "listing", "listed"},
		{"run", "running", "runs"},
		{"query", "queries"},
		{"branch", "branches"},
		{"issue", "issues"},
		{"repository", "repositories"},
		{"database", "databases"},
		{"status"},
		{"get", "gets", "getting"},
	}
	for _, g := range groups {
		first := stem(g[0])
		for _, w := range g[1:] {
			if got := stem(w); got != first {
				t.Errorf("stem(%q) = %q, stem(%q) = %q: they should meet", w, got, g[0], first)
			}
		}
	}
	for _, w := range []string{"status", "class", "analysis", "ss", "api", "s3"} {
		if got := stem(w); len(got) < len(w)-1 {
			t.Errorf("stem(%q) = %q cuts too much", w, got)
		}
	}
}

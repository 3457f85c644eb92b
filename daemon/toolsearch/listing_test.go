package toolsearch_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/toolsearch"
)

func TestListing(t *testing.T) {
	many := func(srv string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("mcp__%s__t%d", srv, i))
		}
		return out
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name     string
		names    []string
		collapse int
		want     []string
	}{
		{"empty", nil, 0, []string{}},
		{"small servers stay", cat([]string{"WebFetch"}, many("a", 3), many("b", 2)), 0,
			cat([]string{"WebFetch"}, many("a", 3), many("b", 2))},
		{"default collapse is 20", cat(many("big", 21), many("edge", 20)), 0,
			cat([]string{"mcp__big__* (21 tools)"}, many("edge", 20))},
		{"collapsed at the first tool's place", cat([]string{"WebFetch"}, many("s", 2)[:1], []string{"mcp__x__y"}, many("s", 2)[1:]), 1,
			[]string{"WebFetch", "mcp__s__* (2 tools)", "mcp__x__y"}},
		{"duplicates counted once", cat(many("d", 2), many("d", 2)), 2, many("d", 2)},
		{"not MCP names never collapse", []string{"A", "B", "mcp__", "mcp____x", "mcpfoo"}, 1,
			[]string{"A", "B", "mcp__", "mcp____x", "mcpfoo"}},
		{"dashed server", many("google-workspace", 3), 2, []string{"mcp__google-workspace__* (3 tools)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toolsearch.Listing(tt.names, tt.collapse)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Listing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestServer(t *testing.T) {
	for _, tt := range []struct {
		name, srv string
		ok        bool
	}{
		{"mcp__slack__send", "slack", true},
		{"mcp__a-b__c__d", "a-b", true},
		{"mcp__slack", "", false},
		{"mcp____x", "", false},
		{"Read", "", false},
	} {
		srv, ok := toolsearch.Server(tt.name)
		if srv != tt.srv || ok != tt.ok {
			t.Errorf("Server(%q) = %q, %v; want %q, %v", tt.name, srv, ok, tt.srv, tt.ok)
		}
	}
}

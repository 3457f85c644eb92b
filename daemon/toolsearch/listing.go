package toolsearch

import (
	"fmt"
	"strings"
)

// DefaultCollapse is the number of deferred tools of one MCP server above
// which Listing collapses them into one line.
const DefaultCollapse = 20

// Server returns the server part of an MCP tool name ("slack" for
// "mcp__slack__send_message") and whether name is one.
func Server(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, mcpPrefix)
	if !ok {
		return "", false
	}
	srv, _, ok := strings.Cut(rest, "__")
	if !ok || srv == "" {
		return "", false
	}
	return srv, true
}

// Listing is what the model is told of the deferred tools: their names, in
// the given order, except that the tools of an MCP server with more than
// collapse of them (DefaultCollapse when collapse <= 0) become one entry
// "mcp__srv__* (N tools)" where the server's first tool was. Duplicate
// names are listed once.
func Listing(names []string, collapse int) []string {
	if collapse <= 0 {
		collapse = DefaultCollapse
	}
	count := map[string]int{}
	seen := make(map[string]bool, len(names))
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		if srv, ok := Server(n); ok {
			count[srv]++
		}
	}
	out := make([]string, 0, len(names))
	clear(seen)
	listed := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		srv, ok := Server(n)
		if !ok || count[srv] <= collapse {
			out = append(out, n)
			continue
		}
		if !listed[srv] {
			listed[srv] = true
			out = append(out, fmt.Sprintf("%s%s__* (%d tools)", mcpPrefix, srv, count[srv]))
		}
	}
	return out
}

// Package frontmatter holds what the readers of YAML frontmatter (skills,
// agent definitions, hooks written in frontmatter) share: turning decoded
// YAML into values encoding/json takes, and splitting Claude Code's
// comma-or-space separated lists. It imports only the standard library.
package frontmatter

import (
	"fmt"
	"strings"
)

// JSONable turns the map[any]any a YAML decoder may give (which
// encoding/json rejects) into map[string]any, all the way down.
func JSONable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = JSONable(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = JSONable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = JSONable(e)
		}
		return out
	}
	return v
}

// SplitList splits "Read, Bash(git add *) Grep" or "src/**/*.{ts,tsx},
// docs/*.md" on commas and white space outside parentheses, braces and
// brackets, as Claude Code splits tool and path lists (so `tools: All
// tools` names the tools All and tools). It returns nil for a blank s.
func SplitList(s string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			out = append(out, t)
		}
	}
	for i, r := range s {
		switch {
		case r == '(' || r == '{' || r == '[':
			depth++
		case (r == ')' || r == '}' || r == ']') && depth > 0:
			depth--
		case depth == 0 && (r == ',' || r == ' ' || r == '\t' || r == '\n'):
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return out
}

package sysprompt

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFindImports(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []importRef
	}{
		{"alone", "@a.md", []importRef{{"a.md", 1}}},
		{"in prose", "see @a.md and @docs/b.md\nthen @./c.md", []importRef{{"a.md", 1}, {"docs/b.md", 1}, {"./c.md", 2}}},
		{"kinds", "@~/x.md @/abs/y.md @../up.md @_u @-d @9", []importRef{{"~/x.md", 1}, {"/abs/y.md", 1}, {"../up.md", 1}, {"_u", 1}, {"-d", 1}, {"9", 1}}},
		{"not after a word", "mail me@example.com, a@b", nil},
		{"not paths", "@ @@x @#x @/ @%x @(x) @*x", nil},
		{"fragment", "@a.md#setup @#only", []importRef{{"a.md", 1}}},
		{"escaped space", `@my\ notes.md next`, []importRef{{"my notes.md", 1}}},
		{"backslash ends", `@a\b`, []importRef{{"a", 1}}},
		{"crlf", "@a.md\r\n@b.md\r\n", []importRef{{"a.md", 1}, {"b.md", 2}}},
		{"tab before", "x\t@a.md", []importRef{{"a.md", 1}}},

		{"code span", "run `@a.md` or ``x @b.md` y`` now @c.md", []importRef{{"c.md", 1}}},
		{"code span across lines", "a `x\n@a.md` b", nil},
		{"after a code span", "`x`@a.md", []importRef{{"a.md", 1}}},
		{"path ends at a backtick", "@a.md`x`", []importRef{{"a.md", 1}}},
		{"unmatched backticks are text", "a ` @a.md", []importRef{{"a.md", 1}}},
		{"escaped backtick", "\\`x @a.md\\`", []importRef{{"a.md", 1}}},

		{"fence", "```\n@a.md\n```\n@b.md", []importRef{{"b.md", 4}}},
		{"fence with info", "```go\n@a.md\n```", nil},
		{"tilde fence", "~~~\n@a.md\n~~~\n", nil},
		{"longer fence", "````\n```\n@a.md\n````\n@b.md", []importRef{{"b.md", 5}}},
		{"unclosed fence", "```\n@a.md\n", nil},
		{"fence interrupts a paragraph", "text\n```\n@a.md\n```", nil},
		{"not a fence: backtick in info", "``` `x`\n@a.md", []importRef{{"a.md", 2}}},
		{"indented fence", "  ```\n@a.md\n  ```", nil},
		{"fence in a list", "- item\n\n      ```\n      @a.md\n      ```\n- @b.md", []importRef{{"b.md", 6}}},

		{"indented code", "text\n\n    @a.md\n\n@b.md", []importRef{{"b.md", 5}}},
		{"indented code at the start", "    @a.md", nil},
		{"tab indented code", "\t@a.md", nil},
		{"paragraph continuation", "text\n    @a.md", []importRef{{"a.md", 2}}},
		{"list continuation", "- item\n\n    @a.md", []importRef{{"a.md", 3}}},
		{"list item", "- @a.md\n1. @b.md", []importRef{{"a.md", 1}, {"b.md", 2}}},
		{"after a list", "- item\n\ntext\n\n    @a.md", nil},

		{"inline comment", "x <!-- @a.md --> @b.md", []importRef{{"b.md", 1}}},
		{"comment block", "<!--\n@a.md\n\n@b.md\n-->\n@c.md", []importRef{{"c.md", 6}}},
		{"one-line comment block", "<!-- @a.md -->\n@b.md", []importRef{{"b.md", 2}}},
		{"unclosed inline comment", "x <!-- @a.md", []importRef{{"a.md", 1}}},

		{"heading and quote", "# @a.md\n> @b.md", []importRef{{"a.md", 1}, {"b.md", 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := findImports(tc.in)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(importRef{})); diff != "" {
				t.Errorf("findImports(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

func FuzzFindImports(f *testing.F) {
	for _, s := range []string{"@a.md", "```\n@a\n```", "`@a` @b", "<!--\n@a\n-->", "- x\n\n    @a", "@a\\ b#c", "\t``` x\n@y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lines := strings.Count(s, "\n") + 1
		prev := 0
		for _, r := range findImports(s) {
			if !validImport(r.path) || strings.ContainsAny(r.path, "\n#`") {
				t.Errorf("findImports(%q) gave path %q", s, r.path)
			}
			if r.line < 1 || r.line > lines || r.line < prev {
				t.Errorf("findImports(%q) gave line %d of %d (after %d)", s, r.line, lines, prev)
			}
			prev = r.line
		}
	})
}

package permission

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// Rule behaviors.
const (
	BehaviorAllow = "allow"
	BehaviorAsk   = "ask"
	BehaviorDeny  = "deny"
)

// Rule scopes beyond the settings scopes of daemon/config (managed, user,
// project, local).
const (
	ScopeCLI     = "cli"
	ScopeSession = "session"
)

// Rule is one parsed permission rule: `Tool` or `Tool(spec)`.
type Rule struct {
	// Tool is the tool name as written: "Bash", "Read", "mcp__srv__tool",
	// "mcp__srv__*", "mcp__srv", "*".
	Tool string
	// Spec is the text inside the parentheses, "" for a bare tool.
	Spec string
	// Behavior is BehaviorAllow, BehaviorAsk or BehaviorDeny ("" from ParseRule).
	Behavior string
	// Source is where the rule came from.
	Source Source
	// Text is the rule as written.
	Text string
}

// String returns the rule's canonical text: Tool, or Tool(Spec).
func (r Rule) String() string {
	if r.Spec == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Spec + ")"
}

// Source says where a rule came from.
type Source struct {
	// Scope is managed, user, project, local, cli or session.
	Scope string
	// Path is the settings file ("" for cli and session rules).
	Path string
	// Index is the rule's position (0-based) in its list of the file.
	Index int
	// Line is the rule's 1-based line in the file (0: unknown).
	Line int
}

// String returns "path:line" (or the scope when there is no file).
func (s Source) String() string {
	if s.Path == "" {
		if s.Scope == "" {
			return "unknown source"
		}
		return s.Scope
	}
	if s.Line > 0 {
		return fmt.Sprintf("%s:%d", s.Path, s.Line)
	}
	return s.Path
}

// RuleProblem is a rule that does not parse or cannot apply. It is reported
// and ignored: a rule is never widened to make sense of it.
type RuleProblem struct {
	Source  Source
	Text    string
	Message string
}

// Error returns "path:line: rule %q: message".
func (p RuleProblem) Error() string {
	return fmt.Sprintf("%s: rule %q: %s", p.Source, p.Text, p.Message)
}

// ParseError is the error of ParseRule: what is wrong, and where.
type ParseError struct {
	// Column is the 1-based byte position in the rule's text.
	Column int
	Msg    string
}

// Error returns "column N: message".
func (e *ParseError) Error() string { return fmt.Sprintf("column %d: %s", e.Column, e.Msg) }

func perr(col int, format string, args ...any) error {
	return &ParseError{Column: col, Msg: fmt.Sprintf(format, args...)}
}

// Tool families: the tools whose calls Edit and Read rules cover.
var (
	editTools = map[string]bool{"Edit": true, "Write": true, "MultiEdit": true, "ReplaceLines": true, "NotebookEdit": true}
	readTools = map[string]bool{"Read": true, "Grep": true, "Glob": true}
)

// ParseRule parses `Tool` or `Tool(spec)`. Text keeps the input as written
// (surrounding spaces are allowed and ignored). Errors are *ParseError and
// name the column in text.
//
// Tool names are letters, digits, '_' and '-', starting with a letter; '*'
// may end the name (`*`, `mcp__*`, `mcp__srv__*`). Specs are checked per
// tool: Bash and Skill/Task/Agent take a non-empty pattern, Read and Edit
// a path pattern, WebFetch `domain:HOST` (HOST may start with `*.`). MCP
// tools take no spec, and Write/MultiEdit/ReplaceLines/Glob/Grep specs are
// refused (Edit and Read rules cover those tools).
func ParseRule(text string) (Rule, error) {
	r := Rule{Text: text}
	start := 0
	for start < len(text) && isSpace(text[start]) {
		start++
	}
	end := len(text)
	for end > start && isSpace(text[end-1]) {
		end--
	}
	if start == end {
		return r, perr(1, "the rule is empty")
	}
	s := text[start:end]
	i := 0
	for i < len(s) && isNameByte(s[i]) {
		if s[i] == '*' && i+1 < len(s) && s[i+1] != '(' {
			return r, perr(start+i+1, "'*' may only end a tool name")
		}
		i++
	}
	name := s[:i]
	switch {
	case name == "":
		return r, perr(start+1, "expected a tool name, found %q", firstRune(s))
	case !isLetter(name[0]) && name != "*":
		return r, perr(start+1, "a tool name starts with a letter, found %q", name[:1])
	}
	r.Tool = name
	if i == len(s) {
		return r, nil
	}
	if s[i] != '(' {
		return r, perr(start+i+1, "unexpected %q after the tool name %q (a spec goes in parentheses: %s(...))", firstRune(s[i:]), name, name)
	}
	if s[len(s)-1] != ')' {
		return r, perr(start+i+1, "the '(' is never closed: a rule ends with ')'")
	}
	spec := s[i+1 : len(s)-1]
	specCol := start + i + 2
	if strings.TrimSpace(spec) == "" {
		return r, perr(specCol, "the spec in parentheses is empty (write %s alone for every call of the tool)", name)
	}
	if strings.ContainsAny(spec, "\x00\n\r") {
		return r, perr(specCol+strings.IndexAny(spec, "\x00\n\r"), "the spec contains a control character (NUL or a line break)")
	}
	if err := checkSpec(name, spec, specCol); err != nil {
		return r, err
	}
	r.Spec = spec
	return r, nil
}

// checkSpec validates spec for the tool name.
func checkSpec(name, spec string, col int) error {
	switch {
	case strings.HasSuffix(name, "*"):
		return perr(col, "a tool-name pattern takes no spec")
	case strings.HasPrefix(name, "mcp__"):
		return perr(col, "MCP rules take no spec: write %s, mcp__server__* or mcp__server", name)
	case name == "Write" || name == "MultiEdit" || name == "ReplaceLines" || name == "NotebookEdit":
		return perr(col, "%s(...) path rules are not used: write Edit(%s), which covers Edit, Write, MultiEdit and ReplaceLines", name, spec)
	case name == "Glob" || name == "Grep":
		return perr(col, "%s(...) path rules are not used: write Read(%s), which covers Read, Grep and Glob", name, spec)
	case name == "Read" || name == "Edit":
		p := spec
		if strings.HasPrefix(p, "~/") || p == "~" {
			p = p[1:]
		}
		if !doublestar.ValidatePattern(strings.TrimPrefix(p, "/")) {
			return perr(col, "%q is not a valid path pattern (check '[', ']', '{', '}' and '\\')", spec)
		}
		if strings.HasPrefix(spec, "~") && !strings.HasPrefix(spec, "~/") && spec != "~" {
			return perr(col, "only ~/ (the home directory) is supported, not ~user")
		}
	case name == "WebFetch":
		host, ok := strings.CutPrefix(spec, "domain:")
		if !ok {
			return perr(col, "WebFetch rules have the form WebFetch(domain:HOST)")
		}
		hc := col + len("domain:")
		if host == "" {
			return perr(hc, "the domain is empty")
		}
		h := strings.TrimPrefix(host, "*.")
		if h == "" {
			return perr(hc, "the domain %q has nothing after '*.'", host)
		}
		for j := 0; j < len(h); j++ {
			c := h[j]
			if !(isLetter(c) || isDigit(c) || c == '-' || c == '.' || c == '_' || c == ':' || c >= 0x80) {
				off := j + len(host) - len(h)
				return perr(hc+off, "unexpected %q in the domain %q (wildcards only as a leading '*.')", firstRune(h[j:]), host)
			}
		}
	default:
		// Bash, Skill, Task/Agent and other specifier rules: the legacy
		// prefix form ":*" only works at the very end (as in Claude Code);
		// anywhere else, a trailing space included, the rule would match
		// nothing, silently.
		if i := strings.Index(spec, ":*"); i >= 0 && i != len(spec)-2 {
			fixed := strings.Join(strings.Fields(strings.Replace(spec, ":*", " *", 1)), " ")
			return perr(col+i, "the legacy \":*\" must end the spec, but %q follows it, so the rule would match nothing: write %s(%s)", spec[i+2:], name, fixed)
		}
	}
	return nil
}

func isSpace(c byte) bool  { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isNameByte(c byte) bool {
	return isLetter(c) || isDigit(c) || c == '_' || c == '-' || c == '*'
}

func firstRune(s string) string {
	for _, r := range s {
		return string(r)
	}
	return ""
}

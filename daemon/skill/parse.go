package skill

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/goccy/go-yaml"

	"github.com/tackle-agent/tackle/internal/frontmatter"
	"github.com/tackle-agent/tackle/internal/safefile"
	"github.com/tackle-agent/tackle/internal/yamlbound"
)

// MaxDescription is the length in characters (runes) to which a skill's
// description and when_to_use together are cut (reference.md section 6).
const MaxDescription = 1536

// MaxFileSize is the largest SKILL.md or command file read; a larger one is a
// Problem. It is safefile.LimitSkill, which says why.
const MaxFileSize = safefile.LimitSkill

// Sources of a skill (Skill.Source).
const (
	SourceBuiltin    = "builtin"
	SourceManaged    = "managed"
	SourcePlugin     = "plugin"
	SourceUser       = "user"
	SourceProject    = "project"
	SourceAdditional = "additional"
	SourceCommand    = "command"
	SourceNested     = "nested"
	SourceMCP        = "mcp"
)

// Skill is one parsed skill. A Skill handed out by a Catalog or View is
// shared and must not be modified; use Clone to change a copy.
type Skill struct {
	// Name is the invocation name: the directory name of a SKILL.md;
	// "plugin:name" for a plugin's; "dir:name" for a nested one whose name
	// clashes; the file name (without .md) of a command, also of one in a
	// subdirectory of the commands directory ("fe:component" for
	// fe/component.md when "component" is taken: see Catalog.Static);
	// "mcp__srv__prompt" for an MCP prompt.
	Name string
	// Label is the frontmatter `name` (a label only).
	Label string
	// Description is the frontmatter `description`, else the body's first
	// paragraph; Description and WhenToUse together are cut at MaxDescription.
	Description  string
	WhenToUse    string
	ArgumentHint string
	// Arguments are the names of positional arguments, substituted as $name.
	Arguments []string
	// ModelInvocable is false with `disable-model-invocation: true`.
	ModelInvocable bool
	// UserInvocable is `user-invocable` (default true).
	UserInvocable   bool
	AllowedTools    []string
	DisallowedTools []string
	Model           string
	Effort          string
	// Context is "fork" or "" (inline).
	Context string
	Agent   string
	Shell   string
	// Background applies to `context: fork` (default true).
	Background bool
	// Hooks are the frontmatter hooks in the settings JSON shape
	// ({"PreToolUse":[{"matcher":…,"hooks":[…]}]}); nil when there are none.
	Hooks json.RawMessage
	// Paths are activation globs (doublestar, relative to the project root):
	// a skill with Paths is inactive until a touched file matches one.
	Paths []string
	// Source is one of the Source constants.
	Source string
	// Path is the SKILL.md or command file ("" for builtin and MCP skills).
	Path string
	// Dir is the skill's directory, ${TACKLE_SKILL_DIR} ("" for MCP).
	Dir string
	// PluginRoot is the directory of the plugin a plugin's skill comes
	// from, ${CLAUDE_PLUGIN_ROOT} ("" for the others).
	PluginRoot string
	// PluginData is that plugin's persistent directory,
	// ${CLAUDE_PLUGIN_DATA} ("" for the others, and for a plugin that has
	// none).
	PluginData string
	// Body is the markdown after the frontmatter (BOM removed, CRLF as LF).
	Body string
	// Warnings are things a person should fix that did not stop the skill
	// from loading (`tackle skills doctor` shows them).
	Warnings []string
	// Prompt is set for an MCP prompt offered as a skill.
	Prompt *PromptRef
}

// PromptRef names an MCP prompt offered as a skill.
type PromptRef struct {
	Server, Name string
	Args         []PromptArg
}

// PromptArg is one argument of an MCP prompt.
type PromptArg struct {
	Name, Description string
	Required          bool
}

// Clone returns a shallow copy of s (slices and Hooks are shared and must
// not be modified in place).
func (s *Skill) Clone() *Skill {
	c := *s
	return &c
}

// Problem is a file that could not be read as a skill, with where and why.
// Line and Column are 1-based; zero when the problem is not at a place in
// the file (it cannot be read at all).
type Problem struct {
	Path         string
	Line, Column int
	Message      string
}

// Error formats the problem as "path:line:col: message" ("path: message"
// when it has no position).
func (p Problem) Error() string {
	switch {
	case p.Line > 0 && p.Column > 0:
		return fmt.Sprintf("%s:%d:%d: %s", p.Path, p.Line, p.Column, p.Message)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.Path, p.Message)
}

// fields are the frontmatter keys tackle reads.
var fields = map[string]bool{
	"name": true, "description": true, "when_to_use": true, "argument-hint": true, "arguments": true,
	"disable-model-invocation": true, "user-invocable": true, "allowed-tools": true, "disallowed-tools": true,
	"model": true, "effort": true, "context": true, "agent": true, "background": true, "hooks": true,
	"paths": true, "shell": true,
}

// ignoredFields are keys found in real skills that tackle does not use and
// does not warn about.
var ignoredFields = map[string]bool{"license": true, "metadata": true, "version": true, "compatibility": true}

// fieldSpelling maps a normalised spelling (lower case, "_" as "-") of each
// known key to the key, to read allowed_tools as allowed-tools with a warning.
var fieldSpelling = func() map[string]string {
	m := map[string]string{}
	for k := range fields {
		m[normKey(k)] = k
	}
	return m
}()

func normKey(k string) string { return strings.ReplaceAll(strings.ToLower(k), "_", "-") }

// NameFromPath is the invocation name a file gives its skill: the directory
// name for a SKILL.md, the file name without .md for a command file.
func NameFromPath(path string) string {
	base := filepath.Base(path)
	if strings.EqualFold(base, "SKILL.md") {
		return filepath.Base(filepath.Dir(path))
	}
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// Parse reads one SKILL.md (or command .md) file's content. A file without
// frontmatter is a skill whose body is the whole file. A file that cannot be
// read as a skill gives a nil Skill and a Problem saying where and why;
// Parse never panics on any input. When YAML rejects the frontmatter, a
// lenient reading of top-level `key: value` lines (plain values with colons
// in them, simple lists) is tried, and the skill carries a warning. An
// unquoted argument-hint that starts with [ or { ("[pr] [priority]", which
// is not YAML, or "[file]", which YAML reads as a list) is kept as its text,
// as Claude Code keeps it, with a warning.
//
// The result has Name (from the path), Path and Dir set; Source is left
// for the caller.
func Parse(path string, data []byte) (*Skill, []Problem) {
	prob := func(line, col int, format string, args ...any) []Problem {
		return []Problem{{Path: path, Line: line, Column: col, Message: fmt.Sprintf(format, args...)}}
	}
	if len(data) > MaxFileSize {
		return nil, prob(0, 0, "the file is %d bytes; skills are limited to %d bytes", len(data), MaxFileSize)
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return nil, prob(0, 0, "the file is not text (a NUL byte at offset %d)", i)
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	sk := &Skill{
		Name:           NameFromPath(path),
		Path:           path,
		Dir:            filepath.Dir(path),
		ModelInvocable: true,
		UserInvocable:  true,
		Background:     true,
	}
	if !utf8.ValidString(text) {
		sk.Warnings = append(sk.Warnings, "the file is not valid UTF-8: invalid bytes are shown as U+FFFD")
		text = strings.ToValidUTF8(text, "\uFFFD")
	}

	fm, body, hasFM, ok := splitFrontmatter(text)
	if !ok {
		return nil, prob(1, 1, "the frontmatter opened by --- on line 1 is never closed: add a line with only --- after it")
	}
	sk.Body = body
	if hasFM {
		vals, warns, p := readFrontmatter(fm)
		if p != nil {
			p.Path = path
			return nil, []Problem{*p}
		}
		sk.Warnings = append(sk.Warnings, warns...)
		sk.apply(vals)
	}
	if strings.TrimSpace(sk.Description) == "" {
		sk.Description = firstParagraph(sk.Body)
	}
	sk.cutDescription()
	if strings.TrimSpace(sk.Body) == "" {
		sk.Warnings = append(sk.Warnings, "the skill has no instructions: the body after the frontmatter is empty")
	}
	return sk, nil
}

// splitFrontmatter splits text into the frontmatter (without its --- lines)
// and the body. ok is false when the frontmatter is opened and never closed.
func splitFrontmatter(text string) (fm, body string, has, ok bool) {
	first, rest, found := strings.Cut(text, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		return "", text, false, true
	}
	if !found {
		return "", "", true, false
	}
	off := 0
	for off <= len(rest) {
		line, _, _ := strings.Cut(rest[off:], "\n")
		if l := strings.TrimRight(line, " \t"); l == "---" || l == "..." {
			fm = rest[:off]
			end := off + len(line)
			if end < len(rest) {
				end++ // the newline
			}
			return fm, strings.TrimLeft(rest[end:], "\n"), true, true
		}
		off += len(line) + 1
	}
	return "", "", true, false
}

// frontmatterBound is what the frontmatter fm may expand to: what it
// holds itself and 1 KB more of text that aliases repeat (an anchored hooks
// block used a few times). A YAML alias repeats its anchor's whole value,
// so without a bound a few hundred bytes could stand for gigabytes.
func frontmatterBound(fm string) yamlbound.Limits {
	return yamlbound.Limits{Bytes: len(fm) + 1024, Nodes: len(fm)/2 + 1024}
}

// readFrontmatter decodes the frontmatter. A Problem (without Path) is
// returned when neither YAML nor the lenient reading can make sense of it;
// its line is the file's (the frontmatter starts on line 2).
func readFrontmatter(fm string) (map[string]any, []string, *Problem) {
	if strings.TrimSpace(fm) == "" {
		return nil, nil, nil
	}
	if err := yamlbound.Check([]byte(fm), frontmatterBound(fm)); err != nil {
		return nil, nil, &Problem{Line: 2, Column: 1, Message: "the frontmatter is refused: " + err.Error()}
	}
	var v any
	err := yaml.Unmarshal([]byte(fm), &v)
	var hints []string
	if err != nil || !hintIsText(v) {
		// An unquoted argument-hint ("[pr] [priority]", which is not YAML,
		// or "[file]", which YAML reads as a list) is text to Claude Code:
		// quote it and read the frontmatter again.
		if q, warns := quoteHint(fm); len(warns) > 0 {
			var qv any
			qerr := yaml.Unmarshal([]byte(q), &qv)
			switch {
			case qerr == nil:
				if m, ok := asMap(qv); ok {
					return m, warns, nil
				}
			case err != nil: // something else is wrong too: read q leniently
				fm, err, hints = q, qerr, warns
			}
		}
	}
	if err == nil {
		m, ok := asMap(v)
		if !ok {
			return nil, nil, &Problem{Line: 2, Column: 1, Message: fmt.Sprintf("the frontmatter is a %s, not `key: value` lines", kindOf(v))}
		}
		return m, nil, nil
	}
	line, col, msg := yamlPos(err)
	vals, lerr := lenient(fm)
	if lerr != nil {
		msg = "the frontmatter is not valid YAML: " + msg
		if lines := strings.Split(fm, "\n"); line >= 1 && line <= len(lines) && strings.TrimSpace(lines[line-1]) != "" {
			msg += fmt.Sprintf(" (in %q)", cutRunes(strings.TrimSpace(lines[line-1]), 80))
		}
		return nil, nil, &Problem{Line: line + 1, Column: col, Message: msg}
	}
	warn := fmt.Sprintf("frontmatter is not valid YAML (line %d:%d: %s): read leniently as `key: value` lines; quote values that contain \": \"", line+1, col, msg)
	return vals, append([]string{warn}, hints...), nil
}

// isHintKey reports whether a frontmatter key is argument-hint (or a
// misspelling apply reads as it).
func isHintKey(k string) bool { return normKey(k) == "argument-hint" }

// hintIsText reports whether the decoded frontmatter v has no
// argument-hint that YAML read as a list or a mapping.
func hintIsText(v any) bool {
	m, ok := asMap(v)
	if !ok {
		return true
	}
	for k, x := range m {
		if !isHintKey(k) {
			continue
		}
		switch x.(type) {
		case []any, map[string]any, map[any]any:
			return false
		}
	}
	return true
}

// quoteHint rewrites each top-level, one-line argument-hint whose value
// starts with [ or { ("argument-hint: [pr] [priority]") as a quoted YAML
// string, as Claude Code keeps such a hint as text. It returns the new
// frontmatter and a warning for each line rewritten (none: fm unchanged).
// Line numbers are kept: one line becomes one line.
func quoteHint(fm string) (string, []string) {
	lines := strings.Split(fm, "\n")
	var warns []string
	for i, line := range lines {
		m := keyLine.FindStringSubmatch(line)
		if m == nil || !isHintKey(m[1]) {
			continue
		}
		_, rest, _ := strings.Cut(line, ":")
		raw := stripComment(strings.TrimSpace(rest))
		if raw == "" || (raw[0] != '[' && raw[0] != '{') || continues(lines[i+1:]) {
			continue
		}
		q := strconv.Quote(raw) // Go's escapes are all valid in a YAML double-quoted string
		lines[i] = m[1] + ": " + q
		warns = append(warns, fmt.Sprintf("%s: %s is read as the text %s, as Claude Code does (YAML reads an unquoted [ or { as a list or mapping): quote it for other tools: %s: %s",
			m[1], raw, q, m[1], q))
	}
	if len(warns) == 0 {
		return fm, nil
	}
	return strings.Join(lines, "\n"), warns
}

// continues reports whether the lines after a `key: value` line continue
// its value (the next line that is not blank or a comment is indented).
func continues(after []string) bool {
	for _, l := range after {
		if t := strings.TrimSpace(l); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		return l[0] == ' ' || l[0] == '\t'
	}
	return false
}

// yamlPos extracts the position (1-based, within the YAML text) and message
// of a go-yaml error.
func yamlPos(err error) (line, col int, msg string) {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			return tk.Position.Line, tk.Position.Column, ye.GetMessage()
		}
		return 1, 1, ye.GetMessage()
	}
	return 1, 1, err.Error()
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case nil:
		return nil, true
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[fmt.Sprint(k)] = x
		}
		return out, true
	}
	return nil, false
}

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case map[string]any, map[any]any:
		return "mapping"
	}
	return "single value"
}

var keyLine = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_.-]*)[ \t]*:([ \t]|$)`)

// lenient reads frontmatter that YAML rejected as top-level `key: value`
// entries. Each entry is tried as YAML on its own; an entry YAML still
// rejects is read as a plain value (its text after "key:", continuation
// lines folded in) or, when it has no value on its line and every
// continuation is "- item", as a list. Anything else (a line that is not
// `key:` at the top level, an unclosed [ or quote, a key given twice) fails.
func lenient(fm string) (map[string]any, error) {
	type entry struct {
		key   string
		lines []string
	}
	var entries []*entry
	for i, line := range strings.Split(fm, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(line, "#"):
			if len(entries) > 0 {
				entries[len(entries)-1].lines = append(entries[len(entries)-1].lines, line)
			}
		case line[0] == ' ' || line[0] == '\t':
			if len(entries) == 0 {
				return nil, fmt.Errorf("line %d is indented but belongs to no key", i+1)
			}
			entries[len(entries)-1].lines = append(entries[len(entries)-1].lines, line)
		default:
			m := keyLine.FindStringSubmatch(line)
			if m == nil {
				return nil, fmt.Errorf("line %d is not `key: value`", i+1)
			}
			entries = append(entries, &entry{key: m[1], lines: []string{line}})
		}
	}
	out := make(map[string]any, len(entries))
	for _, e := range entries {
		if _, dup := out[e.key]; dup {
			return nil, fmt.Errorf("the key %q is given twice", e.key)
		}
		var m map[string]any
		if err := yaml.Unmarshal([]byte(strings.Join(e.lines, "\n")), &m); err == nil {
			if v, ok := m[e.key]; ok {
				out[e.key] = v
				continue
			}
		}
		_, rest, _ := strings.Cut(e.lines[0], ":")
		rest = stripComment(strings.TrimSpace(rest))
		var cont []string
		for _, l := range e.lines[1:] {
			if t := stripComment(strings.TrimSpace(l)); t != "" && !strings.HasPrefix(strings.TrimSpace(l), "#") {
				cont = append(cont, t)
			}
		}
		if rest == "" {
			var items []any
			for _, c := range cont {
				item, ok := strings.CutPrefix(c, "- ")
				if !ok && c != "-" {
					return nil, fmt.Errorf("the value of %q is neither plain text nor a simple list", e.key)
				}
				items = append(items, unquote(strings.TrimSpace(item)))
			}
			if items == nil {
				out[e.key] = nil
			} else {
				out[e.key] = items
			}
			continue
		}
		if strings.ContainsAny(rest[:1], "[{|>\"'&*!%@`") {
			return nil, fmt.Errorf("the value of %q starts with %q but is not valid YAML", e.key, rest[:1])
		}
		out[e.key] = strings.Join(append([]string{rest}, cont...), " ")
	}
	return out, nil
}

// stripComment removes a YAML comment (" #…") from a plain value.
func stripComment(s string) string {
	if strings.HasPrefix(s, "#") {
		return ""
	}
	if i := strings.Index(s, " #"); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	if i := strings.Index(s, "\t#"); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// apply sets the skill's fields from the decoded frontmatter, warning about
// values of the wrong type and keys tackle does not know.
func (s *Skill) apply(vals map[string]any) {
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	get := map[string]any{}
	for _, k := range keys {
		switch {
		case fields[k]:
			get[k] = vals[k]
		case ignoredFields[k]:
		case fieldSpelling[normKey(k)] != "":
			known := fieldSpelling[normKey(k)]
			if _, both := vals[known]; both {
				s.warnf("frontmatter field %q is ignored: it is a misspelling of %q, which is also given", k, known)
			} else {
				s.warnf("frontmatter field %q is read as %q: spell it %q", k, known, known)
				get[known] = vals[k]
			}
		default:
			s.warnf("unknown frontmatter field %q (ignored)", k)
		}
	}
	s.Label = s.str(get, "name")
	s.Description = s.str(get, "description")
	s.WhenToUse = s.str(get, "when_to_use")
	s.ArgumentHint = s.str(get, "argument-hint")
	s.Arguments = s.list(get, "arguments", splitWords)
	s.ModelInvocable = !s.boolean(get, "disable-model-invocation", false)
	s.UserInvocable = s.boolean(get, "user-invocable", true)
	s.AllowedTools = s.list(get, "allowed-tools", splitTools)
	s.DisallowedTools = s.list(get, "disallowed-tools", splitTools)
	s.Model = s.str(get, "model")
	s.Effort = s.str(get, "effort")
	s.Context = s.str(get, "context")
	switch s.Context {
	case "fork":
	case "", "inline":
		s.Context = ""
	default:
		s.warnf("context: %q is not \"fork\" or \"inline\": the skill runs inline", s.Context)
		s.Context = ""
	}
	s.Agent = s.str(get, "agent")
	s.Shell = s.str(get, "shell")
	s.Background = s.boolean(get, "background", true)
	s.Paths = s.list(get, "paths", splitPaths)
	for _, g := range s.Paths {
		if !doublestar.ValidatePattern(strings.TrimPrefix(g, "./")) {
			s.warnf("paths: %q is not a valid glob: it never matches", g)
		}
	}
	if h, ok := get["hooks"]; ok && h != nil {
		s.Hooks = s.hooks(h)
	}
}

func (s *Skill) warnf(format string, args ...any) {
	s.Warnings = append(s.Warnings, fmt.Sprintf(format, args...))
}

// str reads a scalar field as text.
func (s *Skill) str(get map[string]any, key string) string {
	v, ok := get[key]
	if !ok || v == nil {
		return ""
	}
	switch x := v.(type) {
	case string:
		return strings.TrimSpace(x)
	case []any, map[string]any, map[any]any:
		s.warnf("%s: want text, got a %s (ignored)", key, kindOf(v))
		return ""
	}
	return fmt.Sprint(v)
}

// boolean reads a true/false field; anything else keeps def, with a warning.
func (s *Skill) boolean(get map[string]any, key string, def bool) bool {
	v, ok := get[key]
	if !ok || v == nil {
		return def
	}
	switch x := v.(type) {
	case bool:
		return x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "on":
			return true
		case "false", "no", "off":
			return false
		}
	}
	s.warnf("%s: want true or false, got %v: using %v", key, v, def)
	return def
}

// list reads a field given as a YAML list or as one string split by split.
func (s *Skill) list(get map[string]any, key string, split func(string) []string) []string {
	v, ok := get[key]
	if !ok || v == nil {
		return nil
	}
	switch x := v.(type) {
	case string:
		return split(x)
	case []any:
		var out []string
		for _, it := range x {
			switch it.(type) {
			case []any, map[string]any, map[any]any:
				s.warnf("%s: an item is a %s, not text (ignored)", key, kindOf(it))
				continue
			}
			if t := strings.TrimSpace(fmt.Sprint(it)); t != "" {
				out = append(out, t)
			}
		}
		return out
	case map[string]any, map[any]any:
		s.warnf("%s: want a list, got a mapping (ignored)", key)
		return nil
	}
	return split(fmt.Sprint(v))
}

// hookEvents are the hook events a skill may register (reference.md section 3).
var hookEvents = map[string]bool{
	"PreToolUse": true, "PermissionRequest": true, "PermissionDenied": true, "PostToolUse": true,
	"PostToolUseFailure": true, "PostToolBatch": true, "Notification": true, "SessionStart": true,
	"SessionEnd": true, "CwdChanged": true, "ConfigChange": true, "UserPromptSubmit": true, "Stop": true,
	"SubagentStart": true, "SubagentStop": true, "PreCompact": true,
}

// hooks converts frontmatter hooks to the settings JSON shape.
func (s *Skill) hooks(v any) json.RawMessage {
	m, ok := asMap(v)
	if !ok {
		s.warnf("hooks: want a mapping of event to matchers (as in settings.json), got a %s (ignored)", kindOf(v))
		return nil
	}
	for ev, x := range m {
		if !hookEvents[ev] {
			s.warnf("hooks: unknown event %q", ev)
		}
		if _, isList := x.([]any); !isList {
			s.warnf("hooks.%s: want a list of {matcher, hooks}, got a %s", ev, kindOf(x))
		}
	}
	raw, err := json.Marshal(frontmatter.JSONable(m))
	if err != nil {
		s.warnf("hooks: cannot be converted to JSON (%v): ignored", err)
		return nil
	}
	return raw
}

// splitWords splits "a b, c" into [a b c].
func splitWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' })
}

// splitTools splits "Bash(git add:*), Read Grep" on commas and spaces outside
// parentheses: [Bash(git add:*) Read Grep].
func splitTools(s string) []string { return frontmatter.SplitList(s) }

// splitPaths splits "src/**/*.{ts,tsx}, docs/*.md" on commas (and spaces)
// outside braces and brackets.
func splitPaths(s string) []string { return frontmatter.SplitList(s) }

// firstParagraph is the body's first paragraph that is not only a heading
// (else the first heading's text), on one line.
func firstParagraph(body string) string {
	heading := ""
	inFence := false
	for _, para := range strings.Split(body, "\n\n") {
		var words []string
		for _, line := range strings.Split(para, "\n") {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
				inFence = !inFence
				continue
			}
			if inFence || t == "" {
				continue
			}
			if strings.HasPrefix(t, "#") {
				if heading == "" {
					heading = strings.TrimSpace(strings.TrimLeft(t, "#"))
				}
				continue
			}
			words = append(words, strings.Fields(t)...)
		}
		if len(words) > 0 {
			return strings.Join(words, " ")
		}
	}
	return heading
}

// cutDescription cuts Description + WhenToUse to MaxDescription runes.
func (s *Skill) cutDescription() {
	d := utf8.RuneCountInString(s.Description)
	w := utf8.RuneCountInString(s.WhenToUse)
	if d+w <= MaxDescription {
		return
	}
	s.warnf("description and when_to_use are %d characters together: cut to %d", d+w, MaxDescription)
	if d >= MaxDescription {
		s.Description = cutRunes(s.Description, MaxDescription)
		s.WhenToUse = ""
		return
	}
	s.WhenToUse = cutRunes(s.WhenToUse, MaxDescription-d)
}

func cutRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

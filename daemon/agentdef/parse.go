package agentdef

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/tackle-agent/tackle/internal/frontmatter"
	"github.com/tackle-agent/tackle/internal/yamlbound"
)

// maxValues bounds the values a frontmatter may expand to: YAML aliases
// can make a small file stand for a huge tree, which the daemon would
// walk (hooks) or encode (inline MCP servers).
const maxValues = 10000

// What a field's bad value does to the file (see Parse).
const (
	ignore = false // the field is ignored and the file loads
	skip   = true  // the file is skipped
)

// fields are the frontmatter keys of agent.md section 5 and Claude Code's
// sub-agents docs, and whether a wrong value skips the file: it does for
// the keys that limit the agent, since loading the file without the limit
// would give the agent more than its author wrote.
var fields = map[string]bool{
	"name": skip, "description": skip, "tools": skip, "disallowedTools": skip, "model": ignore,
	"permissionMode": skip, "maxTurns": skip, "skills": ignore, "mcpServers": ignore, "hooks": skip,
	"memory": ignore, "background": skip, "effort": ignore, "isolation": skip, "color": ignore,
	"initialPrompt": ignore, "omitClaudeMd": ignore, "experimental": ignore,
}

// fieldSpelling maps a key reduced by normKey to the field it misspells:
// disallowed-tools, max_turns, PermissionMode; allowed-tools is the skills'
// name for tools.
var fieldSpelling = func() map[string]string {
	m := map[string]string{"allowedtools": "tools"}
	for k := range fields {
		m[normKey(k)] = k
	}
	return m
}()

func normKey(k string) string {
	return strings.NewReplacer("-", "", "_", "", " ", "").Replace(strings.ToLower(k))
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

	permissionModes = []string{PermissionDefault, PermissionAcceptEdits, PermissionAuto, PermissionDontAsk, PermissionBypass, PermissionPlan}
	memoryScopes    = []string{"user", "project", "local"}
	effortLevels    = []string{"low", "medium", "high", "xhigh", "max"}
	colors          = []string{"red", "blue", "green", "yellow", "purple", "orange", "pink", "cyan"}
)

// hookEvents are the events tackle runs hooks for (daemon/hook's Events):
// a frontmatter hook for any other event would never fire.
var hookEvents = []string{"PreToolUse", "PermissionRequest", "PermissionDenied", "PostToolUse", "PostToolUseFailure",
	"PostToolBatch", "Notification", "SessionStart", "SessionEnd", "CwdChanged", "ConfigChange", "UserPromptSubmit",
	"Stop", "PreCompact", "SubagentStart", "SubagentStop"}

// Parse reads one agent file's content. It returns the definition, or nil
// when the file does not load, and the problems found: a file Claude Code
// skips silently — no frontmatter or no `name` (taken for documentation),
// a name that starts with "-", contains ":" or is not lowercase letters,
// digits and hyphens, a name without a description, YAML that does not
// parse — is a Problem with Skipped set, at the line and column concerned.
//
// A bad value skips the file when ignoring it would give the agent more
// than its author wrote: tools and disallowedTools that are not a list (or
// a tools list that is empty), a permissionMode outside default,
// acceptEdits, auto, dontAsk, bypassPermissions, plan (manual reads as
// default), a maxTurns that is not a positive integer, background not
// true or false, isolation other than worktree, hooks that are not a
// mapping of known events to lists, and a misspelled key for any of these
// (Claude Code would ignore `disallowed-tools`; tackle refuses the file).
// A bad model, skills, mcpServers entry, memory, effort, color,
// initialPrompt or omitClaudeMd only narrows when ignored: the field (or
// entry) is dropped with a Problem and the file loads. Unknown keys are
// Problems too and are ignored.
//
// The result has Path and Prompt set; Source is the caller's. Parse never
// panics on any input.
func Parse(path string, data []byte) (*Definition, []Problem) {
	return parse(path, data, false)
}

// parse is Parse; plugin files without a name are named after the file,
// as Claude Code loads them.
func parse(path string, data []byte, plugin bool) (*Definition, []Problem) {
	r := &reader{path: path}
	if len(data) > MaxFileSize {
		r.fatal(position{}, "the file is %d bytes; agent files are limited to %d bytes: the file is skipped", len(data), MaxFileSize)
		return nil, r.probs
	}
	data = bytes.TrimPrefix(data, []byte("\uFEFF"))
	if i := bytes.IndexByte(data, 0); i >= 0 {
		r.fatal(position{}, "the file is not text (a NUL byte at offset %d): the file is skipped", i)
		return nil, r.probs
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	if !utf8.ValidString(text) {
		r.problem(position{}, "the file is not valid UTF-8: invalid bytes are read as U+FFFD")
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	fm, body, has, closed := splitFrontmatter(text)
	switch {
	case !closed:
		r.fatal(position{1, 1}, "the frontmatter opened by --- on line 1 is never closed: add a line with only --- after it; the file is skipped")
		return nil, r.probs
	case !has && !plugin:
		r.fatal(position{1, 1}, "no frontmatter: an agent file starts with a --- line, then name and description; the file is skipped (taken for documentation)")
		return nil, r.probs
	}
	d := &Definition{Path: path, Prompt: strings.TrimSpace(body), pos: map[string]position{}}
	r.def = d
	if !r.readFrontmatter(fm) {
		return nil, r.probs
	}
	r.apply()
	if r.skipped {
		return nil, r.probs
	}
	if !r.nameAndDescription(plugin) {
		return nil, r.probs
	}
	return d, r.probs
}

// splitFrontmatter splits text into the frontmatter (without its ---
// lines) and the body. has is false when the first line is not ---;
// closed is false when the frontmatter is never closed.
func splitFrontmatter(text string) (fm, body string, has, closed bool) {
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
			end := off + len(line)
			if end < len(rest) {
				end++ // the newline
			}
			return rest[:off], rest[end:], true, true
		}
		off += len(line) + 1
	}
	return "", "", true, false
}

// reader reads one file's frontmatter into def, collecting problems.
type reader struct {
	path    string
	def     *Definition
	probs   []Problem
	skipped bool

	keys []entry // in file order
}

// entry is one top-level frontmatter key.
type entry struct {
	key    string
	val    any
	keyPos position
	valPos position // the value's, for a scalar; else the key's
	items  []position
}

func (r *reader) problem(at position, format string, args ...any) {
	r.probs = append(r.probs, Problem{Path: r.path, Line: at.line, Column: at.col, Message: fmt.Sprintf(format, args...)})
}

// fatal records a problem that skips the file.
func (r *reader) fatal(at position, format string, args ...any) {
	r.problem(at, format, args...)
	r.probs[len(r.probs)-1].Skipped = true
	r.skipped = true
}

// readFrontmatter parses fm (which starts on the file's line 2) into
// r.keys. It returns false when the file is skipped.
func (r *reader) readFrontmatter(fm string) bool {
	if strings.TrimSpace(fm) == "" {
		return true
	}
	file, err := parser.ParseBytes([]byte(fm), 0)
	if err != nil {
		line, col, msg := yamlPos(err)
		msg = "the frontmatter is not valid YAML: " + msg
		if lines := strings.Split(fm, "\n"); line >= 1 && line <= len(lines) && strings.TrimSpace(lines[line-1]) != "" {
			text := strings.TrimSpace(lines[line-1])
			msg += fmt.Sprintf(" (in %q)", cutRunes(text, 80))
			if strings.Contains(msg, "mapping value is not allowed") {
				msg += `; quote a value that contains ": "`
			}
		}
		r.fatal(position{line + 1, col}, "%s; the file is skipped", msg)
		return false
	}
	if len(file.Docs) != 1 {
		r.fatal(position{2, 1}, "the frontmatter holds %d YAML documents, not one: the file is skipped", len(file.Docs))
		return false
	}
	root := file.Docs[0].Body
	for {
		// An anchor or a tag on the whole frontmatter wraps the mapping.
		switch n := root.(type) {
		case *ast.AnchorNode:
			root = n.Value
			continue
		case *ast.TagNode:
			root = n.Value
			continue
		}
		break
	}
	if root == nil {
		return true
	}
	if _, isComment := root.(*ast.CommentGroupNode); isComment {
		return true
	}
	m, ok := root.(*ast.MappingNode)
	if !ok {
		r.fatal(position{2, 1}, "the frontmatter is %s, not `key: value` lines: the file is skipped", kindOfNode(root))
		return false
	}
	// A YAML alias repeats its anchor's whole value: what the frontmatter
	// holds itself and 1 KB more of repeated text (an anchored hooks block
	// used a few times), or a few hundred bytes could stand for gigabytes.
	if err := yamlbound.CheckFile(file, yamlbound.Limits{Bytes: len(fm) + 1024, Nodes: min(len(fm)/2+1024, maxValues)}); err != nil {
		r.fatal(position{2, 1}, "the frontmatter is refused: %v; the file is skipped", err)
		return false
	}
	var v any
	if err := yaml.NodeToValue(m, &v); err != nil {
		line, col, msg := yamlPos(err)
		r.fatal(position{line + 1, col}, "the frontmatter is not valid YAML: %s; the file is skipped", msg)
		return false
	}
	vals, _ := asMap(v)
	for _, mv := range m.Values {
		k := mv.Key.GetToken()
		if k == nil || mv.Key.IsMergeKey() {
			continue
		}
		e := entry{key: k.Value, keyPos: tokenPos(k)}
		e.val = vals[e.key]
		// A value on the key's line is pointed at; one below it, by its key.
		e.valPos = e.keyPos
		if p, ok := nodePos(mv.Value); ok && p.line == e.keyPos.line {
			e.valPos = p
		}
		if seq, ok := unwrap(mv.Value).(*ast.SequenceNode); ok {
			for _, it := range seq.Values {
				p, ok := nodePos(it)
				if !ok {
					p = e.keyPos
				}
				e.items = append(e.items, p)
			}
		}
		r.keys = append(r.keys, e)
	}
	return true
}

// unwrap removes anchors and tags around a node.
func unwrap(n ast.Node) ast.Node {
	for {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.TagNode:
			n = x.Value
		default:
			return n
		}
	}
}

// nodePos is where a node starts in the file: a mapping's first key, a
// flow collection's bracket, a scalar's first character.
func nodePos(n ast.Node) (position, bool) {
	switch x := unwrap(n).(type) {
	case nil:
		return position{}, false
	case *ast.MappingNode:
		if x.IsFlowStyle && x.Start != nil {
			return tokenPos(x.Start), true
		}
		if len(x.Values) > 0 {
			return nodePos(x.Values[0])
		}
	case *ast.MappingValueNode:
		if t := x.Key.GetToken(); t != nil {
			return tokenPos(t), true
		}
	case *ast.SequenceNode:
		if x.Start != nil {
			return tokenPos(x.Start), true
		}
	}
	if n == nil {
		return position{}, false
	}
	if t := n.GetToken(); t != nil {
		return tokenPos(t), true
	}
	return position{}, false
}

// tokenPos is a frontmatter token's position in the file.
func tokenPos(t *token.Token) position {
	if t.Position == nil {
		return position{2, 1}
	}
	return position{t.Position.Line + 1, t.Position.Column}
}

// yamlPos extracts the position (1-based, within the YAML text) and
// message of a go-yaml error.
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
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	case nil:
		return "empty"
	}
	return "a single value"
}

func kindOfNode(n ast.Node) string {
	switch unwrap(n).(type) {
	case *ast.SequenceNode:
		return "a list"
	case *ast.MappingNode:
		return "a mapping"
	}
	return "a single value"
}

// apply sets the definition's fields from r.keys.
func (r *reader) apply() {
	d := r.def
	for i := range r.keys {
		e := &r.keys[i]
		key := e.key
		if _, known := fields[key]; !known {
			r.unknown(e)
			continue
		}
		d.pos[key] = e.keyPos
		switch key {
		case "name", "description":
			// nameAndDescription reads them once the rest is known.
		case "tools":
			d.Tools = r.toolList(e, true)
		case "disallowedTools":
			d.DisallowedTools = r.toolList(e, false)
		case "model":
			if s, ok := r.text(e); ok && !strings.EqualFold(s, "inherit") {
				d.Model = s
			}
		case "permissionMode":
			d.PermissionMode = r.permissionMode(e)
		case "maxTurns":
			d.MaxTurns = r.maxTurns(e)
		case "skills":
			d.Skills = r.names(e)
		case "mcpServers":
			d.MCPServers, d.mcpPos = r.mcpServers(e)
		case "hooks":
			d.Hooks = r.hooks(e)
		case "memory":
			d.Memory = r.oneOf(e, memoryScopes, false)
		case "background":
			d.Background = r.boolean(e)
		case "effort":
			d.Effort = r.oneOf(e, effortLevels, false)
		case "isolation":
			if s, ok := r.text(e); ok && s != "" {
				if s != IsolationWorktree {
					r.fatal(e.valPos, "isolation %q is not %q (the only isolation an agent file may ask for): the file is skipped", s, IsolationWorktree)
				} else {
					d.Isolation = s
				}
			}
		case "color":
			d.Color = r.oneOf(e, colors, true)
		case "initialPrompt":
			d.InitialPrompt, _ = r.text(e)
		case "omitClaudeMd":
			d.OmitClaudeMd = r.boolean(e)
		case "experimental":
			// Claude Code's prompt-cache options: nothing for tackle.
		}
	}
}

// unknown reports a key tackle does not read: a misspelling of a
// limiting field skips the file.
func (r *reader) unknown(e *entry) {
	known := fieldSpelling[normKey(e.key)]
	switch {
	case known == "":
		r.problem(e.keyPos, "unknown field %q (ignored)", e.key)
	case fields[known] == skip && known != "name" && known != "description":
		r.fatal(e.keyPos, "field %q is not %q: Claude Code would ignore it and give the agent more than it says; the file is skipped (spell it %q)", e.key, known, known)
	default:
		r.problem(e.keyPos, "unknown field %q (ignored; spell it %q)", e.key, known)
	}
}

// bad records a field's wrong value: fatal for a limiting field,
// else the field is ignored.
func (r *reader) bad(e *entry, at position, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if fields[e.key] == skip {
		r.fatal(at, "%s: the file is skipped", msg)
		return
	}
	r.problem(at, "%s: ignored", msg)
}

// text reads a scalar field; ok is false (with a problem) for a list or
// a mapping.
func (r *reader) text(e *entry) (string, bool) {
	switch x := e.val.(type) {
	case nil:
		return "", true
	case string:
		return strings.TrimSpace(x), true
	case []any, map[string]any, map[any]any:
		r.bad(e, e.keyPos, "%s: want text, got %s", e.key, kindOf(e.val))
		return "", false
	default:
		return fmt.Sprint(x), true
	}
}

// oneOf reads a scalar that must be one of values (compared without case
// when fold is set).
func (r *reader) oneOf(e *entry, values []string, fold bool) string {
	s, ok := r.text(e)
	if !ok || s == "" {
		return ""
	}
	for _, v := range values {
		if s == v || fold && strings.EqualFold(s, v) {
			return v
		}
	}
	r.bad(e, e.valPos, "%s %q is not one of %s", e.key, s, strings.Join(values, ", "))
	return ""
}

func (r *reader) boolean(e *entry) bool {
	switch x := e.val.(type) {
	case nil:
		return false
	case bool:
		return x
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "yes", "on":
			return true
		case "false", "no", "off", "":
			return false
		}
	}
	r.bad(e, e.valPos, "%s: want true or false, got %s", e.key, describe(e.val))
	return false
}

func (r *reader) permissionMode(e *entry) string {
	s, ok := r.text(e)
	if !ok || s == "" {
		return ""
	}
	if s == "manual" {
		return PermissionDefault
	}
	for _, m := range permissionModes {
		if s == m {
			return m
		}
	}
	hint := ""
	for _, m := range append(permissionModes, "manual") {
		if strings.EqualFold(s, m) {
			hint = fmt.Sprintf(" (spell it %q)", m)
		}
	}
	r.fatal(e.valPos, "permissionMode %q is not one of %s or manual%s: the file is skipped", s, strings.Join(permissionModes, ", "), hint)
	return ""
}

func (r *reader) maxTurns(e *entry) int {
	var n float64
	switch x := e.val.(type) {
	case nil:
		return 0
	case uint64:
		n = float64(x)
	case int64:
		n = float64(x)
	case int:
		n = float64(x)
	case float64:
		n = x
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			n = math.NaN()
		} else {
			n = f
		}
	default:
		n = math.NaN()
	}
	if n >= 1 && n <= math.MaxInt32 && n == math.Trunc(n) {
		return int(n)
	}
	r.fatal(e.valPos, "maxTurns: want a positive whole number of turns, got %s: the file is skipped", describe(e.val))
	return 0
}

// describe shows a value in a problem.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case []any, map[string]any, map[any]any, nil:
		return kindOf(v)
	}
	return fmt.Sprint(v)
}

// items reads a field given as a YAML list or as one string split by
// commas and spaces outside parentheses. A mapping, or an item that is a
// list or mapping, is bad.
func (r *reader) items(e *entry) ([]string, bool) {
	switch x := e.val.(type) {
	case nil:
		return nil, true
	case string:
		return splitList(x), true
	case []any:
		out := []string{}
		for i, it := range x {
			at := e.keyPos
			if i < len(e.items) {
				at = e.items[i]
			}
			switch it.(type) {
			case []any, map[string]any, map[any]any, nil:
				r.bad(e, at, "%s: item %d is %s, not a name", e.key, i+1, kindOf(it))
				if fields[e.key] == skip {
					return nil, false
				}
				continue
			}
			out = append(out, splitList(fmt.Sprint(it))...)
		}
		return out, true
	case map[string]any, map[any]any:
		r.bad(e, e.keyPos, "%s: want a list or a comma-separated string, got a mapping", e.key)
		return nil, false
	}
	return splitList(fmt.Sprint(e.val)), true
}

// toolList reads tools or disallowedTools. An empty tools list skips the
// file: Claude Code would give such an agent every tool, its author
// probably meant none.
func (r *reader) toolList(e *entry, allow bool) []string {
	list, ok := r.items(e)
	if !ok {
		return nil
	}
	if e.val == nil {
		return nil // `tools:` with nothing: omitted, as in Claude Code
	}
	if len(list) == 0 {
		if allow {
			r.fatal(e.valPos, "tools is empty: omit the field to give the agent every tool, or name the tools it may use; the file is skipped")
		}
		return nil
	}
	for _, spec := range list {
		name, _, ok := SplitSpec(spec)
		switch {
		case !ok && allow:
			r.problem(e.valPos, "tools: %q is not a tool name or Tool(rule): it matches no tool", spec)
		case !ok:
			r.fatal(e.valPos, "disallowedTools: %q is not a tool name or Tool(rule), so it would remove nothing: the file is skipped", spec)
			return nil
		case allow && name == "mcp__*":
			r.problem(e.valPos, "tools: mcp__* works only in disallowedTools and matches no tool here: name servers as mcp__<server>")
		}
	}
	return list
}

// names reads skills: a list of names.
func (r *reader) names(e *entry) []string {
	list, _ := r.items(e)
	if len(list) == 0 {
		return nil
	}
	return list
}

// mcpServers reads the list of server references and inline
// configurations ({name: {type: …}}), dropping bad entries.
func (r *reader) mcpServers(e *entry) ([]MCPServer, []position) {
	var list []any
	switch x := e.val.(type) {
	case nil:
		return nil, nil
	case string:
		for _, n := range splitList(x) {
			list = append(list, n)
		}
	case []any:
		list = x
	default:
		r.bad(e, e.keyPos, "mcpServers: want a list of server names and {name: config} entries, got %s", kindOf(e.val))
		return nil, nil
	}
	var out []MCPServer
	var at []position
	seen := map[string]bool{}
	for i, it := range list {
		p := e.keyPos
		if i < len(e.items) {
			p = e.items[i]
		}
		var s MCPServer
		switch x := it.(type) {
		case string:
			s.Name = strings.TrimSpace(x)
		case map[string]any, map[any]any:
			m, _ := asMap(x)
			if len(m) != 1 {
				r.problem(p, "mcpServers: item %d has %d keys: an inline server is one key, the server's name, holding its configuration; ignored", i+1, len(m))
				continue
			}
			for name, cfg := range m {
				c, ok := asMap(cfg)
				if !ok || c == nil {
					r.problem(p, "mcpServers: the configuration of inline server %q is %s, not a mapping like a .mcp.json entry; ignored", name, kindOf(cfg))
					break
				}
				s.Name, s.Config = strings.TrimSpace(name), frontmatter.JSONable(c).(map[string]any)
			}
			if s.Config == nil {
				continue
			}
		default:
			r.problem(p, "mcpServers: item %d is %s, not a server name or {name: config}; ignored", i+1, kindOf(it))
			continue
		}
		switch {
		case s.Name == "":
			r.problem(p, "mcpServers: item %d has an empty server name; ignored", i+1)
		case seen[s.Name]:
			r.problem(p, "mcpServers: server %q is given twice; the second is ignored", s.Name)
		default:
			seen[s.Name] = true
			out = append(out, s)
			at = append(at, p)
		}
	}
	return out, at
}

// hooks reads the hooks mapping: known events, each a list of mappings.
func (r *reader) hooks(e *entry) map[string]any {
	if e.val == nil {
		return nil
	}
	m, ok := asMap(e.val)
	if !ok {
		r.bad(e, e.keyPos, "hooks: want a mapping of event to matchers (as in settings.json), got %s", kindOf(e.val))
		return nil
	}
	events := make([]string, 0, len(m))
	for ev := range m {
		events = append(events, ev)
	}
	sort.Strings(events)
	for _, ev := range events {
		x := m[ev]
		if !contains(hookEvents, ev) {
			r.fatal(e.keyPos, "hooks: unknown event %q, whose hooks would never run (events: %s): the file is skipped", ev, strings.Join(hookEvents, ", "))
			return nil
		}
		list, isList := x.([]any)
		if !isList {
			r.fatal(e.keyPos, "hooks.%s: want a list of {matcher, hooks}, got %s: the file is skipped", ev, kindOf(x))
			return nil
		}
		for i, it := range list {
			if _, isMap := asMap(it); !isMap || it == nil {
				r.fatal(e.keyPos, "hooks.%s: item %d is %s, not {matcher, hooks}: the file is skipped", ev, i+1, kindOf(it))
				return nil
			}
		}
	}
	if len(m) == 0 {
		return nil
	}
	return frontmatter.JSONable(m).(map[string]any)
}

// nameAndDescription checks the required fields. A plugin's file without
// a name is named after the file, as Claude Code loads it.
func (r *reader) nameAndDescription(plugin bool) bool {
	var nameE, descE *entry
	for i := range r.keys {
		switch r.keys[i].key {
		case "name":
			nameE = &r.keys[i]
		case "description":
			descE = &r.keys[i]
		}
	}
	d := r.def
	at := position{1, 1}
	if nameE != nil {
		at = nameE.valPos
		var ok bool
		if d.Name, ok = r.text(nameE); !ok {
			return false
		}
	}
	if d.Name == "" {
		switch {
		case !plugin:
			r.fatal(position{1, 1}, "no name in the frontmatter: the file is skipped (taken for documentation)")
			return false
		case descE == nil || descE.val == nil:
			r.fatal(position{1, 1}, "no name and no description in the frontmatter: the file is skipped (taken for documentation)")
			return false
		}
		d.Name = strings.TrimSuffix(filepath.Base(r.path), filepath.Ext(r.path))
	}
	d.pos["name"] = at
	switch n := d.Name; {
	case strings.HasPrefix(n, "-"):
		r.fatal(at, "name %q starts with \"-\": the file is skipped", n)
	case strings.Contains(n, ":"):
		r.fatal(at, "name %q contains \":\", which is reserved for plugin agents: the file is skipped", n)
	case utf8.RuneCountInString(n) > MaxNameLength:
		r.fatal(at, "name is %d characters, over the limit of %d: the file is skipped", utf8.RuneCountInString(n), MaxNameLength)
	case !nameRE.MatchString(n):
		r.fatal(at, "name %q is not lowercase letters, digits and hyphens: the file is skipped (try %q)", n, suggestName(n))
	}
	if r.skipped {
		return false
	}
	if descE != nil {
		var ok bool
		if d.Description, ok = r.text(descE); !ok {
			return false
		}
	}
	if d.Description == "" {
		r.fatal(at, "agent %q has no description, which says when to delegate to it: the file is skipped", d.Name)
		return false
	}
	return true
}

// suggestName is name in lowercase with every run of other characters
// replaced by a hyphen.
func suggestName(name string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := strings.TrimRight(b.String(), "-")
	if s == "" {
		return "my-agent"
	}
	return s
}

// splitList splits "Read, Bash(git add *) Grep" on commas and white space
// outside parentheses: [Read Bash(git add *) Grep]. Claude Code splits the
// same way, so `tools: All tools` names the tools All and tools.
func splitList(s string) []string {
	if l := frontmatter.SplitList(s); l != nil {
		return l
	}
	return []string{}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
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

package toolsearch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Mode kinds, the values of the toolSearch setting.
const (
	// ModeOn defers every deferrable tool (MCP tools without alwaysLoad).
	ModeOn = "on"
	// ModeAuto defers only when the deferrable tools' schemas reach
	// Percent % of the context budget.
	ModeAuto = "auto"
	// ModeOff loads every tool upfront.
	ModeOff = "off"
)

// DefaultPercent is the threshold of "auto" without ":N".
const DefaultPercent = 10

// DefaultContextTokens is the context budget when the contextTokens setting
// is not set.
const DefaultContextTokens = 200_000

// Mode is a parsed toolSearch setting.
type Mode struct {
	// Kind is ModeOn, ModeAuto or ModeOff.
	Kind string
	// Percent is the threshold of ModeAuto, 0 to 100 (DefaultPercent for a
	// bare "auto"); zero for the other kinds.
	Percent int
}

// String returns the setting's form of m: "on", "off", "auto:N".
func (m Mode) String() string {
	if m.Kind == ModeAuto {
		return fmt.Sprintf("auto:%d", m.Percent)
	}
	if m.Kind == "" {
		return ModeOn
	}
	return m.Kind
}

// ParseMode reads the toolSearch setting as it appears in a settings file:
// a JSON string "on", "auto", "auto:N" or "off" (also "true"/"false"), or a
// JSON boolean. An absent value (nil, empty or JSON null) is ModeOn. Any
// other value is an error saying what is accepted.
func ParseMode(raw json.RawMessage) (Mode, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return Mode{Kind: ModeOn}, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return Mode{Kind: ModeOn}, fmt.Errorf("reading toolSearch %s: %w (use \"on\", \"auto\", \"auto:N\" or \"off\")", raw, err)
	}
	switch x := v.(type) {
	case bool:
		if x {
			return Mode{Kind: ModeOn}, nil
		}
		return Mode{Kind: ModeOff}, nil
	case string:
		return ParseModeString(x)
	}
	return Mode{Kind: ModeOn}, fmt.Errorf("reading toolSearch %s: not a string or boolean (use \"on\", \"auto\", \"auto:N\" or \"off\")", raw)
}

// ParseModeString reads the toolSearch setting as a plain string (an
// environment variable such as ENABLE_TOOL_SEARCH): "on", "true", "1",
// "auto", "auto:N" (N an integer 0-100), "off", "false", "0"; case and
// surrounding space are ignored and "" is ModeOn.
func ParseModeString(s string) (Mode, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	switch v {
	case "", ModeOn, "true", "1":
		return Mode{Kind: ModeOn}, nil
	case ModeOff, "false", "0":
		return Mode{Kind: ModeOff}, nil
	case ModeAuto:
		return Mode{Kind: ModeAuto, Percent: DefaultPercent}, nil
	}
	if n, ok := strings.CutPrefix(v, "auto:"); ok {
		p, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(n), "%")))
		if err != nil || p < 0 || p > 100 {
			return Mode{Kind: ModeOn}, fmt.Errorf("reading toolSearch %q: N in auto:N must be a whole percentage from 0 to 100", s)
		}
		return Mode{Kind: ModeAuto, Percent: p}, nil
	}
	return Mode{Kind: ModeOn}, fmt.Errorf("reading toolSearch %q: use \"on\", \"auto\", \"auto:N\" or \"off\"", s)
}

// neverDeferred holds the tools that always load, with their aliases: the
// built-ins of reference.md section 8's always-loaded list (Agent and its
// name Task included) and ToolSearch itself.
var neverDeferred = map[string]bool{
	"Read": true, "Write": true, "Edit": true, "Glob": true, "Grep": true,
	"Bash": true, "Skill": true, "ToolSearch": true, "Task": true, "Agent": true,
}

// NeverDeferred reports whether a tool of this name or alias always loads
// whatever its attributes say: Read, Write, Edit, Glob, Grep, Bash, Skill,
// ToolSearch, and Task (alias Agent).
func NeverDeferred(name string) bool { return neverDeferred[name] }

// neverDeferredSpec reports whether the spec's name or one of its aliases
// never defers.
func neverDeferredSpec(s tool.Spec) bool {
	if NeverDeferred(s.Name) {
		return true
	}
	for _, a := range s.Aliases {
		if NeverDeferred(a) {
			return true
		}
	}
	return false
}

// Deferrable reports whether t may be deferred: its attributes (for an
// empty input) say Deferred and it is not NeverDeferred.
func Deferrable(t tool.Tool) bool {
	return t.Attributes(json.RawMessage("{}")).Deferred && !neverDeferredSpec(t.Spec())
}

// EstimateTokens is the token estimate of a tool's definition as the model
// would get it: the length of {"name","description","input_schema"} as
// JSON, divided by 4.
func EstimateTokens(s tool.Spec) int {
	return (len(s.Name) + len(s.Description) + len(s.InputSchema) + len(`{"name":"","description":"","input_schema":}`)) / 4
}

// Deferred decides which of tools are deferred (by model-facing name): the
// Deferrable ones in ModeOn; none in ModeOff; in ModeAuto the Deferrable
// ones only when their estimated tokens together reach m.Percent % of
// contextTokens (DefaultContextTokens when contextTokens <= 0), else none.
// The map holds only deferred names.
func Deferred(m Mode, tools []tool.Tool, contextTokens int) map[string]bool {
	out := map[string]bool{}
	if m.Kind == ModeOff {
		return out
	}
	tokens := 0
	for _, t := range tools {
		if Deferrable(t) {
			s := t.Spec()
			out[s.Name] = true
			tokens += EstimateTokens(s)
		}
	}
	if m.Kind == ModeAuto {
		if contextTokens <= 0 {
			contextTokens = DefaultContextTokens
		}
		if int64(tokens)*100 < int64(m.Percent)*int64(contextTokens) {
			return map[string]bool{}
		}
	}
	return out
}

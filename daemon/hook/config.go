package hook

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tackle-agent/tackle/daemon/config"
)

// Hook events (reference.md "tackle's decisions" and section 3).
const (
	PreToolUse         = "PreToolUse"
	PermissionRequest  = "PermissionRequest"
	PermissionDenied   = "PermissionDenied"
	PostToolUse        = "PostToolUse"
	PostToolUseFailure = "PostToolUseFailure"
	PostToolBatch      = "PostToolBatch"
	Notification       = "Notification"
	SessionStart       = "SessionStart"
	SessionEnd         = "SessionEnd"
	CwdChanged         = "CwdChanged"
	ConfigChange       = "ConfigChange"
	UserPromptSubmit   = "UserPromptSubmit"
	Stop               = "Stop"
	PreCompact         = "PreCompact"
	SubagentStart      = "SubagentStart"
	SubagentStop       = "SubagentStop"
)

// Events lists the hook events tackle runs.
var Events = []string{PreToolUse, PermissionRequest, PermissionDenied, PostToolUse, PostToolUseFailure,
	PostToolBatch, Notification, SessionStart, SessionEnd, CwdChanged, ConfigChange, UserPromptSubmit, Stop, PreCompact,
	SubagentStart, SubagentStop}

// eventIndex numbers the events for the per-event arrays of a Config.
func eventIndex(name string) int {
	for i, e := range Events {
		if e == name {
			return i
		}
	}
	return -1
}

const (
	idxPreToolUse = iota
	idxPermissionRequest
	idxPermissionDenied
	idxPostToolUse
	idxPostToolUseFailure
	idxPostToolBatch
	idxNotification
	idxSessionStart
	idxSessionEnd
	idxCwdChanged
	idxConfigChange
	idxUserPromptSubmit
	idxStop
	idxPreCompact
	idxSubagentStart
	idxSubagentStop
	numEvents
)

// isToolEvent reports whether the event idx is about a tool call: its
// matcher is the tool name and the `if` field applies.
func isToolEvent(idx int) bool {
	switch idx {
	case idxPreToolUse, idxPermissionRequest, idxPermissionDenied, idxPostToolUse, idxPostToolUseFailure:
		return true
	}
	return false
}

// Handler is one configured hook handler.
type Handler struct {
	// Type is "command" or "http".
	Type string `json:"type"`
	// Command is run with `sh -c` (or exec'd with Args when Args is set).
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	// URL receives the input as a POST (type http).
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// AllowedEnvVars may be interpolated into Headers as $NAME or ${NAME}.
	AllowedEnvVars []string `json:"allowedEnvVars,omitempty"`
	// Timeout is in seconds (0: DefaultTimeout).
	Timeout float64 `json:"timeout,omitempty"`
	// Prompt is what a hook of type prompt asks the model ($ARGUMENTS is
	// the hook input as JSON); Model names the model (default: the small one).
	Prompt string `json:"prompt,omitempty"`
	Model  string `json:"model,omitempty"`
	// If is one permission rule; the handler runs only for calls it matches
	// (tool events only; on other events a handler with If never runs).
	If string `json:"if,omitempty"`

	// Source is the settings file it came from (a plugin's hooks file,
	// scope config.ScopePlugin, for a plugin's hook).
	Source config.Source `json:"-"`
	// Plugin is the plugin a plugin's hook comes from (nil for the others).
	Plugin *PluginRef `json:"-"`

	key  string     // identity for de-duplication
	cond *condition // parsed If
}

// PluginRef is the plugin of a plugin's hook: it runs with
// CLAUDE_PLUGIN_ROOT and CLAUDE_PLUGIN_DATA set, and in its exec form
// (args) ${CLAUDE_PLUGIN_ROOT} and ${CLAUDE_PLUGIN_DATA} are replaced in
// the command and each argument, as Claude Code does.
type PluginRef struct {
	// Label is the plugin's id ("name@marketplace"), else its name.
	Label   string
	Root    string
	DataDir string
}

// Name is how events and logs name the handler: its command line, URL or
// prompt.
func (h *Handler) Name() string {
	switch h.Type {
	case "http":
		return h.URL
	case "prompt":
		return "prompt: " + h.Prompt
	}
	if len(h.Args) > 0 {
		return h.Command + " " + strings.Join(h.Args, " ")
	}
	return h.Command
}

// group is a matcher with its handlers.
type group struct {
	Matcher  string
	Handlers []*Handler
	match    matcher
	trusted  bool // from a scope that needs no workspace trust (user, managed)
	managed  bool
}

// Problem is a hook configuration entry that could not be used; it is
// ignored, never widened.
type Problem struct {
	Source config.Source
	// Plugin is set for a plugin's hooks file.
	Plugin  *PluginRef
	Event   string
	Message string
}

// Error returns "path: hooks.Event: message".
func (p Problem) Error() string {
	return fmt.Sprintf("%s: hooks.%s: %s", p.Source.Path, p.Event, p.Message)
}

// Config is the parsed hooks of every settings layer, merged: the groups
// of every source, lowest precedence first. It is immutable.
type Config struct {
	groups [numEvents][]*group
	// needTrust is set per event when some group comes from a project or
	// local source.
	needTrust [numEvents]bool
	// disableAll is the merged disableAllHooks: only managed hooks run.
	disableAll bool
	Problems   []Problem
}

// Empty reports whether no event has any handler.
func (c *Config) Empty() bool {
	if c == nil {
		return true
	}
	for _, g := range c.groups {
		if len(g) > 0 {
			return false
		}
	}
	return true
}

type rawGroup struct {
	Matcher *string           `json:"matcher"`
	Hooks   []json.RawMessage `json:"hooks"`
}

// Parse reads the "hooks" (and "disableAllHooks") keys of every layer of
// s, then the hooks of its plugins (config.Settings.Plugins: a plugin's
// hooks/hooks.json and its manifest's hooks, after every settings file's,
// as Claude Code merges them). Entries that do not parse are reported in
// Config.Problems and ignored. A plugin's hooks need no workspace trust
// (only the person's settings, or a trusted project's, turn a plugin on);
// disableAllHooks stops them too, but for a plugin the managed settings
// turn on.
func Parse(s *config.Settings) *Config {
	c := &Config{}
	if s == nil {
		return c
	}
	if raw, ok := s.Raw["disableAllHooks"]; ok {
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			c.disableAll = b
		}
	}
	for _, l := range s.Layers {
		raw, ok := l.Raw["hooks"]
		if !ok || string(raw) == "null" {
			continue
		}
		trusted := l.Source.Scope == config.ScopeUser || l.Source.Scope == config.ScopeManaged
		c.add(l.Source, raw, trusted, l.Source.Scope == config.ScopeManaged, nil)
	}
	plugins, _ := s.Plugins()
	for i := range plugins {
		p := &plugins[i]
		ref := &PluginRef{Label: p.Label(), Root: p.Dir, DataDir: p.DataDir}
		for _, f := range p.Hooks {
			c.add(config.Source{Scope: config.ScopePlugin, Path: f.Path}, f.Raw, true, p.Source.Scope == config.ScopeManaged, ref)
		}
	}
	return c
}

// add parses one "hooks" object (events to groups) of the file src.
func (c *Config) add(src config.Source, raw json.RawMessage, trusted, managed bool, plugin *PluginRef) {
	var byEvent map[string][]rawGroup
	if err := json.Unmarshal(raw, &byEvent); err != nil {
		c.Problems = append(c.Problems, Problem{Source: src, Plugin: plugin, Message: fmt.Sprintf("\"hooks\" must map event names to lists of {matcher, hooks}: %v", err)})
		return
	}
	// Go maps are unordered: walk the events in their fixed order.
	for idx, ev := range Events {
		for gi, rg := range byEvent[ev] {
			g, probs := parseGroup(src, ev, idx, gi, rg, plugin)
			c.Problems = append(c.Problems, probs...)
			if g == nil {
				continue
			}
			g.trusted = trusted
			g.managed = managed
			if !trusted {
				c.needTrust[idx] = true
			}
			c.groups[idx] = append(c.groups[idx], g)
		}
	}
	var unknown []string
	for ev := range byEvent {
		if eventIndex(ev) < 0 {
			unknown = append(unknown, ev)
		}
	}
	slices.Sort(unknown)
	for _, ev := range unknown {
		c.Problems = append(c.Problems, Problem{Source: src, Plugin: plugin, Event: ev, Message: "tackle does not run this hook event (yet); its hooks are ignored"})
	}
}

func parseGroup(src config.Source, ev string, idx, gi int, rg rawGroup, plugin *PluginRef) (*group, []Problem) {
	var probs []Problem
	bad := func(format string, a ...any) {
		probs = append(probs, Problem{Source: src, Plugin: plugin, Event: ev, Message: fmt.Sprintf("entry %d: ", gi+1) + fmt.Sprintf(format, a...)})
	}
	g := &group{}
	if rg.Matcher != nil {
		g.Matcher = *rg.Matcher
	}
	m, err := compileMatcher(g.Matcher)
	if err != nil {
		bad("matcher %q: %v", g.Matcher, err)
		return nil, probs
	}
	g.match = m
	for hi, raw := range rg.Hooks {
		var h Handler
		if err := json.Unmarshal(raw, &h); err != nil {
			bad("hook %d: %v", hi+1, err)
			continue
		}
		h.Source, h.Plugin = src, plugin
		switch h.Type {
		case "command":
			if strings.TrimSpace(h.Command) == "" {
				bad("hook %d: a command hook needs a \"command\"", hi+1)
				continue
			}
		case "http":
			if !strings.HasPrefix(h.URL, "http://") && !strings.HasPrefix(h.URL, "https://") {
				bad("hook %d: an http hook needs an http:// or https:// \"url\", got %q", hi+1, h.URL)
				continue
			}
		case "prompt":
			if strings.TrimSpace(h.Prompt) == "" {
				bad("hook %d: a prompt hook needs a \"prompt\"", hi+1)
				continue
			}
		case "agent", "mcp_tool":
			bad("hook %d: type %q is not run yet", hi+1, h.Type)
			continue
		default:
			bad("hook %d: unknown type %q (want command or http)", hi+1, h.Type)
			continue
		}
		if h.Timeout < 0 {
			bad("hook %d: timeout %v is negative", hi+1, h.Timeout)
			continue
		}
		if h.If != "" {
			if !isToolEvent(idx) {
				bad("hook %d: \"if\" applies to tool events only; this hook never runs", hi+1)
				continue
			}
			c, err := parseCondition(h.If)
			if err != nil {
				bad("hook %d: if %q: %v", hi+1, h.If, err)
				continue
			}
			h.cond = c
		}
		h.key = handlerKey(&h)
		if plugin != nil {
			h.key += "\x00" + plugin.Root // a plugin's copy stays separate
		}
		g.Handlers = append(g.Handlers, &h)
	}
	if len(g.Handlers) == 0 {
		return nil, probs
	}
	return g, probs
}

// handlerKey identifies identical handlers: the same handler in several
// settings files runs once.
func handlerKey(h *Handler) string {
	b, _ := json.Marshal(h) // deterministic: struct fields in order, map keys sorted
	return string(b)
}

// matcher matches the matched field of an event (a tool name, a source…).
type matcher struct {
	all   bool
	names []string
	re    *regexp.Regexp
}

func (m *matcher) match(s string) bool {
	if m.all {
		return true
	}
	if s == "Agent" && m.matchOne("Task") {
		return true // the Agent tool's older name matches it too
	}
	return m.matchOne(s)
}

func (m *matcher) matchOne(s string) bool {
	if m.re != nil {
		return m.re.MatchString(s)
	}
	for _, n := range m.names {
		if n == s {
			return true
		}
	}
	return false
}

// compileMatcher: `*`, "" or omitted match everything; a string of only
// [A-Za-z0-9_ ,|-] is an exact name or a list separated by | or ,;
// anything else is an unanchored regular expression.
func compileMatcher(s string) (matcher, error) {
	t := strings.TrimSpace(s)
	if t == "" || t == "*" {
		return matcher{all: true}, nil
	}
	plain := true
	for _, r := range t {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_ ,|-", r)) {
			plain = false
			break
		}
	}
	if plain {
		var m matcher
		for _, n := range strings.FieldsFunc(t, func(r rune) bool { return r == '|' || r == ',' }) {
			if n = strings.TrimSpace(n); n != "" {
				m.names = append(m.names, n)
			}
		}
		if len(m.names) == 0 {
			return matcher{all: true}, nil
		}
		return m, nil
	}
	re, err := regexp.Compile(t)
	if err != nil {
		return matcher{}, fmt.Errorf("not a valid regular expression: %w", err)
	}
	return matcher{re: re}, nil
}

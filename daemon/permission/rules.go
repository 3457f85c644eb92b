package permission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/internal/safefile"
)

// Rules is a parsed, merged set of permission rules, with the problems of
// the rules that were left out. It is immutable and safe for concurrent use.
type Rules struct {
	deny, ask, allow []*compiled
	dirs             []string
	ignored          []Rule
	ignoredDirs      []string
	problems         []RuleProblem
	// links caches the files path rules cover, for hard-link checks: a
	// new one for every LoadRules (every turn), since files change.
	links *linkIndex
}

// NewRules returns the rules of rs (each with its Behavior set), in order.
// A rule whose Behavior is unknown, or that does not parse again from its
// Text (when Tool is empty) or break the allow-rule limits, becomes a
// problem. It is meant for CLI and session rules and for tests.
func NewRules(rs ...Rule) *Rules {
	b := newBuilder()
	for _, r := range rs {
		b.add(r)
	}
	return b.rules
}

// Deny returns the deny rules, in order.
func (r *Rules) Deny() []Rule { return plain(r.deny) }

// Ask returns the ask rules, in order.
func (r *Rules) Ask() []Rule { return plain(r.ask) }

// Allow returns the allow rules that apply, in order.
func (r *Rules) Allow() []Rule { return plain(r.allow) }

// All returns every rule that applies: deny, then ask, then allow.
func (r *Rules) All() []Rule {
	return append(append(r.Deny(), r.Ask()...), r.Allow()...)
}

// AdditionalDirs returns the permissions.additionalDirectories that apply
// (absolute; relative entries are resolved against their settings file's
// root, ~/ against the home directory), without duplicates.
func (r *Rules) AdditionalDirs() []string { return append([]string(nil), r.dirs...) }

// Ignored returns the allow rules left out because their project is not
// trusted.
func (r *Rules) Ignored() []Rule { return append([]Rule(nil), r.ignored...) }

// IgnoredDirs returns the additionalDirectories left out because their
// project is not trusted.
func (r *Rules) IgnoredDirs() []string { return append([]string(nil), r.ignoredDirs...) }

// ToolDenied returns the deny rule that takes the whole tool away (a bare
// `Tool`, `mcp__srv`, `mcp__srv__*`, `*`), if any: such a tool can be left
// out of what the model sees.
func (r *Rules) ToolDenied(name string) (Rule, bool) {
	for _, c := range r.deny {
		if c.kind == kindBare && coversTool(c.rule.Tool, name) {
			return c.rule, true
		}
	}
	return Rule{}, false
}

// Problems returns the rules that were reported and left out.
func (r *Rules) Problems() []RuleProblem { return append([]RuleProblem(nil), r.problems...) }

func plain(cs []*compiled) []Rule {
	out := make([]Rule, len(cs))
	for i, c := range cs {
		out[i] = c.rule
	}
	return out
}

type builder struct {
	rules *Rules
	seen  map[string]bool // behavior + "\x00" + canonical text
	dirs  map[string]bool
}

func newBuilder() *builder {
	return &builder{rules: &Rules{}, seen: map[string]bool{}, dirs: map[string]bool{}}
}

func (b *builder) problem(src Source, text, format string, args ...any) {
	b.rules.problems = append(b.rules.problems, RuleProblem{Source: src, Text: text, Message: fmt.Sprintf(format, args...)})
}

// add parses (if needed), checks and adds one rule.
func (b *builder) add(r Rule) {
	if r.Tool == "" {
		p, err := ParseRule(r.Text)
		if err != nil {
			b.problem(r.Source, r.Text, "%v", err)
			return
		}
		p.Behavior, p.Source = r.Behavior, r.Source
		r = p
	}
	if r.Text == "" {
		r.Text = r.String()
	}
	var list *[]*compiled
	switch r.Behavior {
	case BehaviorDeny:
		list = &b.rules.deny
	case BehaviorAsk:
		list = &b.rules.ask
	case BehaviorAllow:
		list = &b.rules.allow
		if strings.HasSuffix(r.Tool, "*") && !isMCPServerGlob(r.Tool) {
			b.problem(r.Source, r.Text, "allow rules may use '*' in a tool name only as mcp__server__*: an allow rule this wide is not used")
			return
		}
	default:
		b.problem(r.Source, r.Text, "unknown behavior %q (want allow, ask or deny)", r.Behavior)
		return
	}
	c := compile(r)
	if b.seen[c.key] {
		return
	}
	b.seen[c.key] = true
	*list = append(*list, c)
}

// isMCPServerGlob reports whether name is mcp__SERVER__*.
func isMCPServerGlob(name string) bool {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return false
	}
	srv, tail, ok := strings.Cut(rest, "__")
	return ok && srv != "" && tail == "*"
}

func (b *builder) addDir(d string) {
	if !b.dirs[d] {
		b.dirs[d] = true
		b.rules.dirs = append(b.rules.dirs, d)
	}
}

// LoadRules returns the rules of every layer of s (lowest precedence first),
// then the session rules (their Scope set to session when empty, Behavior
// allow when empty), and the problems of the rules left out. Each rule's
// Source names its scope, file, index in its list and line in the file (the
// line is read from the file; 0 if the file changed since it was loaded).
//
// When trusted is false, the allow rules and additionalDirectories of the
// project and local scopes are ignored (see Ignored and IgnoredDirs); their
// deny and ask rules still apply. A nil s gives only the session rules.
//
// Results for the same *config.Settings (which config.Loader reuses while
// no file changes) and trust are cached; only the session rules are added
// per call.
func LoadRules(s *config.Settings, trusted bool, session []Rule) (*Rules, []RuleProblem) {
	base := loadBase(s, trusted)
	cur := *base // base is cached across turns; the link cache is not
	cur.links = &linkIndex{}
	rs := &cur
	if len(session) > 0 {
		b := newBuilder()
		cp := *base
		cp.deny = append([]*compiled(nil), base.deny...)
		cp.ask = append([]*compiled(nil), base.ask...)
		cp.allow = append([]*compiled(nil), base.allow...)
		cp.problems = append([]RuleProblem(nil), base.problems...)
		cp.links = &linkIndex{}
		b.rules = &cp
		for _, list := range [][]*compiled{cp.deny, cp.ask, cp.allow} {
			for _, c := range list {
				b.seen[c.key] = true
			}
		}
		for i, r := range session {
			if r.Source.Scope == "" {
				r.Source.Scope = ScopeSession
			}
			if r.Source.Scope == ScopeSession && r.Source.Path == "" && r.Source.Index == 0 {
				r.Source.Index = i
			}
			if r.Behavior == "" {
				r.Behavior = BehaviorAllow
			}
			b.add(r)
		}
		rs = b.rules
	}
	return rs, rs.Problems()
}

type cacheKey struct {
	s       *config.Settings
	trusted bool
}

var (
	cacheMu sync.Mutex
	cache   = map[cacheKey]*Rules{}
)

func loadBase(s *config.Settings, trusted bool) *Rules {
	if s == nil {
		return &Rules{}
	}
	k := cacheKey{s, trusted}
	cacheMu.Lock()
	r := cache[k]
	cacheMu.Unlock()
	if r != nil {
		return r
	}
	r = buildBase(s, trusted)
	cacheMu.Lock()
	if len(cache) >= 64 {
		clear(cache)
	}
	cache[k] = r
	cacheMu.Unlock()
	return r
}

// filePerms is the part of a settings file's permissions block read here.
type filePerms struct {
	Allow                 []string `json:"allow"`
	Ask                   []string `json:"ask"`
	Deny                  []string `json:"deny"`
	AdditionalDirectories []string `json:"additionalDirectories"`
}

func buildBase(s *config.Settings, trusted bool) *Rules {
	b := newBuilder()
	home, _ := os.UserHomeDir()
	for _, l := range s.Layers {
		raw, ok := l.Raw["permissions"]
		if !ok {
			continue
		}
		var fp filePerms
		if err := json.Unmarshal(raw, &fp); err != nil {
			b.problem(Source{Scope: l.Source.Scope, Path: l.Source.Path}, "", "reading the permissions block: %v", err)
			continue
		}
		var lines map[string][]listItem
		if data, err := safefile.Read(l.Source.Path, safefile.LimitSettings); err == nil {
			lines = listLines(data)
		}
		untrusted := !trusted && (l.Source.Scope == config.ScopeProject || l.Source.Scope == config.ScopeLocal)
		for _, list := range []struct {
			key      string
			behavior string
			items    []string
		}{{"deny", BehaviorDeny, fp.Deny}, {"ask", BehaviorAsk, fp.Ask}, {"allow", BehaviorAllow, fp.Allow}} {
			for i, text := range list.items {
				src := Source{Scope: l.Source.Scope, Path: l.Source.Path, Index: i, Line: lineOf(lines[list.key], i, text)}
				if untrusted && list.behavior == BehaviorAllow {
					r, err := ParseRule(text)
					if err != nil {
						r = Rule{Text: text}
					}
					r.Behavior, r.Source = BehaviorAllow, src
					b.rules.ignored = append(b.rules.ignored, r)
					continue
				}
				b.add(Rule{Text: text, Behavior: list.behavior, Source: src})
			}
		}
		for i, d := range fp.AdditionalDirectories {
			// One resolution for the rules and config.Settings.AdditionalDirectories.
			abs := config.AdditionalDirectory(d, l.Source, s.ProjectDir(), home)
			if abs == "" {
				src := Source{Scope: l.Source.Scope, Path: l.Source.Path, Index: i, Line: lineOf(lines["additionalDirectories"], i, d)}
				b.problem(src, d, "an additional directory must be absolute, ~/…, or relative (to the settings file's project; in user and managed settings to the session's directory)")
				continue
			}
			if untrusted {
				b.rules.ignoredDirs = append(b.rules.ignoredDirs, abs)
				continue
			}
			b.addDir(abs)
		}
	}
	return b.rules
}

// settingsRoot is what `/x` in a rule of that file is relative to: the
// project for project and local files (the directory above .claude or
// .tackle), the home directory for ~/.claude/settings.json, ConfigHome/..
// for tackle's user file. For managed, cli and session rules (and unknown
// files) it is fallback, the session root.
func settingsRoot(scope, path, fallback string) string {
	if path == "" {
		return fallback
	}
	dir := filepath.Dir(path)
	switch scope {
	case config.ScopeProject, config.ScopeLocal:
		return filepath.Dir(dir)
	case config.ScopeUser:
		if filepath.Base(dir) == "tackle" {
			return filepath.Dir(filepath.Dir(dir))
		}
		return filepath.Dir(dir)
	}
	return fallback
}

// listItem is one string of a permissions list, with its line.
type listItem struct {
	text string
	line int
}

// listLines finds the strings of permissions.{allow,ask,deny,
// additionalDirectories} in a settings file and their lines. Of a key given
// twice, the last wins (as in encoding/json). It returns nil for a file that
// does not parse.
func listLines(data []byte) map[string][]listItem {
	dec := json.NewDecoder(bytes.NewReader(data))
	lc := lineCounter{data: data, line: 1}
	out := map[string][]listItem{}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		if k != "permissions" {
			if skipValue(dec) != nil {
				return nil
			}
			continue
		}
		if t, err := dec.Token(); err != nil {
			return nil
		} else if t != json.Delim('{') {
			continue
		}
		for dec.More() {
			pk, err := dec.Token()
			if err != nil {
				return nil
			}
			key, _ := pk.(string)
			switch key {
			case "allow", "ask", "deny", "additionalDirectories":
			default:
				if skipValue(dec) != nil {
					return nil
				}
				continue
			}
			before := dec.InputOffset()
			t, err := dec.Token()
			if err != nil {
				return nil
			}
			if t != json.Delim('[') {
				if d, ok := t.(json.Delim); ok && d == '{' {
					if skipRest(dec) != nil {
						return nil
					}
				}
				continue
			}
			var items []listItem
			for dec.More() {
				before = dec.InputOffset()
				t, err := dec.Token()
				if err != nil {
					return nil
				}
				if d, ok := t.(json.Delim); ok {
					if d == '{' || d == '[' {
						if skipRest(dec) != nil {
							return nil
						}
					}
					items = append(items, listItem{})
					continue
				}
				str, _ := t.(string)
				items = append(items, listItem{text: str, line: lc.lineAt(tokenStartAfter(data, before))})
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil
			}
			out[key] = items
		}
		if _, err := dec.Token(); err != nil { // '}'
			return nil
		}
	}
	return out
}

// tokenStartAfter skips the whitespace, ':' and ',' that follow off.
func tokenStartAfter(data []byte, off int64) int {
	i := int(off)
	for i < len(data) && bytes.IndexByte([]byte(" \t\r\n:,"), data[i]) >= 0 {
		i++
	}
	return i
}

// lineCounter turns increasing offsets into 1-based lines.
type lineCounter struct {
	data []byte
	off  int
	line int
}

func (c *lineCounter) lineAt(off int) int {
	if off < c.off { // not increasing: count from the start
		c.off, c.line = 0, 1
	}
	if off > len(c.data) {
		off = len(c.data)
	}
	c.line += bytes.Count(c.data[c.off:off], []byte("\n"))
	c.off = off
	return c.line
}

// skipValue consumes the next value.
func skipValue(dec *json.Decoder) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); ok && (d == '{' || d == '[') {
		return skipRest(dec)
	}
	return nil
}

// skipRest consumes the rest of an object or array whose opening delimiter
// was read.
func skipRest(dec *json.Decoder) error {
	depth := 1
	for depth > 0 {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		if d, ok := t.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
	}
	return nil
}

// lineOf returns the line of the i-th item if the file still has text there.
func lineOf(items []listItem, i int, text string) int {
	if i < len(items) && items[i].text == text {
		return items[i].line
	}
	return 0
}

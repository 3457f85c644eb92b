package permission

import (
	"net/url"
	"path"
	"strings"
	"sync/atomic"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// ruleKind says what a rule's spec is matched against.
type ruleKind int

const (
	kindBare   ruleKind = iota // no spec: every call of the tool(s)
	kindBash                   // Bash(spec): each simple command
	kindPath                   // Read(spec), Edit(spec): paths
	kindDomain                 // WebFetch(domain:…): the host
	kindSpec                   // Skill(…), Task(…), other tools: Access.Specifier
)

// compiled is a rule prepared for matching.
type compiled struct {
	rule Rule
	key  string // behavior + NUL + canonical text, for duplicates
	kind ruleKind
	// pat is the wildcard pattern of Bash and Specifier rules, with the
	// legacy ":*" turned into " *" and runs of spaces collapsed.
	pat string
	// boundary is set when pat ends with " *": the part before also
	// matches alone (`ls *` matches `ls`).
	boundary bool
	// host is the domain of a WebFetch rule (lower case, without "*.");
	// sub is set for "*.host".
	host string
	sub  bool
	// last caches the path pattern of a Read/Edit rule for the last
	// (cwd, root, home) it was resolved against.
	last atomic.Pointer[pathPat]
}

// pathPat is a Read/Edit rule resolved against a pathCtx.
type pathPat struct {
	pc  pathCtx
	ok  bool
	pat string // the pattern
	sub string // pat + "/**": inside what pat names
	lit string // pat's literal prefix: every match starts with it
}

// resolved returns the rule's pattern for pc (cached).
func (c *compiled) resolved(pc pathCtx) *pathPat {
	if p := c.last.Load(); p != nil && p.pc == pc {
		return p
	}
	p := &pathPat{pc: pc}
	p.pat, p.ok = c.pathPattern(pc)
	if p.ok {
		p.sub = p.pat + "/**"
		if p.pat == "/" {
			p.sub = "/**"
		}
		p.lit = p.pat
		if i := strings.IndexAny(p.pat, `*?[{\`); i >= 0 {
			// A "/**" may match nothing, so the slash before it is optional.
			p.lit = strings.TrimSuffix(p.pat[:i], "/")
		}
	}
	c.last.Store(p)
	return p
}

func compile(r Rule) *compiled {
	c := &compiled{rule: r, key: r.Behavior + "\x00" + r.String()}
	if r.Spec == "" {
		return c
	}
	switch r.Tool {
	case "Bash":
		c.kind = kindBash
		c.pat, c.boundary = wildcardSpec(r.Spec)
	case "Read", "Edit":
		c.kind = kindPath
	case "WebFetch":
		c.kind = kindDomain
		h := strings.ToLower(strings.TrimPrefix(r.Spec, "domain:"))
		c.host, c.sub = strings.CutPrefix(h, "*.")
	default:
		c.kind = kindSpec
		c.pat, c.boundary = wildcardSpec(r.Spec)
	}
	return c
}

// wildcardSpec normalises a Bash-style spec.
func wildcardSpec(spec string) (pat string, boundary bool) {
	pat = strings.Join(strings.Fields(spec), " ")
	if p, ok := strings.CutSuffix(pat, ":*"); ok {
		// `sudo :*` is `sudo *`, not a pattern that needs two spaces.
		pat = strings.TrimRight(p, " ") + " *"
		if pat == " *" {
			pat = "*"
		}
	}
	if pat == "" {
		pat = "*"
	}
	return pat, strings.HasSuffix(pat, " *") && len(pat) > 2
}

// matchWildcard reports whether s matches pat, where '*' matches any run of
// characters (spaces included) and everything else matches itself.
func matchWildcard(pat, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pat) && pat[p] == '*':
			star, mark = p, i
			p++
		case p < len(pat) && pat[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// matchText matches a Bash or Specifier pattern.
func (c *compiled) matchText(s string) bool {
	if matchWildcard(c.pat, s) {
		return true
	}
	return c.boundary && matchWildcard(c.pat[:len(c.pat)-2], s)
}

// coversTool reports whether the rule's tool name covers the tool: Edit
// covers the file-editing tools, Read the file-reading ones, Task and Agent
// are one tool, mcp__srv covers its server's tools, a trailing '*' is a
// prefix.
func coversTool(ruleTool, t string) bool {
	switch {
	case ruleTool == t:
		return true
	case ruleTool == "*":
		return true
	case strings.HasSuffix(ruleTool, "*"):
		return strings.HasPrefix(t, ruleTool[:len(ruleTool)-1])
	case ruleTool == "Edit":
		return editTools[t]
	case ruleTool == "Read":
		return readTools[t]
	case ruleTool == "Task" || ruleTool == "Agent":
		return t == "Task" || t == "Agent"
	case strings.HasPrefix(ruleTool, "mcp__") && !strings.Contains(ruleTool[len("mcp__"):], "__"):
		return strings.HasPrefix(t, ruleTool+"__")
	}
	return false
}

// pathCtx is what relative path rules are resolved against.
type pathCtx struct {
	cwd, root, home string
}

// pathPattern turns a Read/Edit spec into an absolute doublestar pattern.
// ok is false when the pattern cannot be anchored (no cwd for `./x` in an
// allow rule).
func (c *compiled) pathPattern(pc pathCtx) (string, bool) {
	spec := c.rule.Spec
	allow := c.rule.Behavior == BehaviorAllow
	var p string
	switch {
	case strings.HasPrefix(spec, "//"):
		p = spec[1:]
	case spec == "~" || strings.HasPrefix(spec, "~/"):
		if pc.home == "" {
			return "", false
		}
		p = escapeMeta(pc.home) + spec[1:]
	case strings.HasPrefix(spec, "/"):
		root := settingsRoot(c.rule.Source.Scope, c.rule.Source.Path, pc.root)
		if root == "" {
			return "", false
		}
		p = escapeMeta(root) + spec
	case spec == "." || strings.HasPrefix(spec, "./"):
		if pc.cwd == "" {
			if allow {
				return "", false
			}
			p = "/**/" + strings.TrimPrefix(spec[1:], "/")
			break
		}
		p = escapeMeta(pc.cwd) + spec[1:]
	default:
		// gitignore-style relative pattern: a bare name matches at any
		// depth; in deny and ask rules any relative pattern does, in an
		// allow rule it is anchored at the cwd.
		switch {
		case !allow:
			p = "/**/" + spec
		case pc.cwd == "":
			return "", false
		case !strings.Contains(strings.TrimSuffix(spec, "/"), "/"):
			p = escapeMeta(pc.cwd) + "/**/" + spec
		default:
			p = escapeMeta(pc.cwd) + "/" + spec
		}
	}
	p = path.Clean(p)
	return p, true
}

// escapeMeta quotes the doublestar metacharacters of a literal path.
func escapeMeta(s string) string {
	if !strings.ContainsAny(s, `*?[]{}\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[]{}\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// matchPath reports whether the pattern matches p or a directory above it
// (a pattern naming a directory covers what is inside).
func (pp *pathPat) matchPath(p string) bool {
	if !strings.HasPrefix(p, pp.lit) {
		return false
	}
	return doublestar.MatchUnvalidated(pp.pat, p) || doublestar.MatchUnvalidated(pp.sub, p)
}

// anyPath reports the first of paths that the rule matches.
func (c *compiled) anyPath(pc pathCtx, paths []string) (string, bool) {
	if len(paths) == 0 {
		return "", false
	}
	if c.kind == kindBare {
		return paths[0], true
	}
	pp := c.resolved(pc)
	if !pp.ok {
		return "", false
	}
	for _, p := range paths {
		if pp.matchPath(p) {
			return p, true
		}
	}
	return "", false
}

// matchDomain matches a WebFetch rule against a host (a port is ignored
// unless the rule names one).
func (c *compiled) matchDomain(host string) bool {
	host = strings.ToLower(host)
	if !strings.Contains(c.host, ":") {
		if h, _, ok := strings.Cut(host, ":"); ok && !strings.Contains(host, "]") {
			host = h
		}
	}
	host = strings.TrimSuffix(host, ".")
	if c.sub {
		return strings.HasSuffix(host, "."+c.host)
	}
	return host == c.host
}

// input is a request prepared for matching.
type input struct {
	tool     string
	acc      *tool.Access
	commands []string
	reads    []string
	writes   []string
	domain   string
	pc       pathCtx
}

func newInput(r *Request, home string) *input {
	in := &input{tool: r.Tool, acc: &r.Access, pc: pathCtx{cwd: r.Cwd, root: r.Root, home: r.Home}}
	if in.pc.home == "" {
		in.pc.home = home
	}
	if in.pc.cwd == "" {
		in.pc.cwd = r.Root
	}
	if in.pc.root == "" {
		in.pc.root = in.pc.cwd
	}
	a := &r.Access
	in.commands = a.Commands
	if len(in.commands) == 0 && a.Command != "" && (r.Tool == "Bash" || a.Kind == tool.AccessExec) {
		in.commands = []string{a.Command}
	}
	in.reads = a.Reads
	in.writes = a.Writes
	if len(a.Paths) > 0 {
		switch {
		case a.Kind == tool.AccessEdit || editTools[r.Tool]:
			in.writes = union(in.writes, a.Paths)
		case a.Kind == tool.AccessRead || a.Kind == tool.AccessExec || readTools[r.Tool]:
			in.reads = union(in.reads, a.Paths)
		}
	}
	in.domain = a.Domain
	if in.domain == "" && a.Kind == tool.AccessNetwork && a.Command != "" {
		if u, err := url.Parse(a.Command); err == nil && u.Host != "" {
			in.domain = u.Host
		} else if !strings.ContainsAny(a.Command, "/ ") {
			in.domain = a.Command
		}
	}
	return in
}

func union(a, b []string) []string {
	if len(a) == 0 {
		return b
	}
	out := append([]string(nil), a...)
outer:
	for _, p := range b {
		for _, q := range a {
			if p == q {
				continue outer
			}
		}
		out = append(out, p)
	}
	return out
}

// matchAny reports whether a deny or ask rule matches the call: the tool
// (for a bare rule), any one command of Bash, any one path, the domain or
// the specifier. Read rules also match what any tool reads (Bash's cat),
// Edit rules what any tool writes (redirections), and a Read deny what it
// writes. detail names what matched.
func (c *compiled) matchAny(in *input) (detail string, ok bool) {
	rt := c.rule.Tool
	if rt == "Read" || rt == "Edit" {
		var paths []string
		if rt == "Read" {
			paths = in.reads
			if c.rule.Behavior == BehaviorDeny {
				paths = union(paths, in.writes)
			}
		} else {
			paths = in.writes
		}
		if c.kind == kindBare && coversTool(rt, in.tool) {
			return "every call of " + in.tool, true
		}
		if p, ok := c.anyPath(in.pc, paths); ok {
			return p, true
		}
		return "", false
	}
	if !coversTool(rt, in.tool) {
		return "", false
	}
	switch c.kind {
	case kindBare:
		return "every call of " + in.tool, true
	case kindBash:
		for _, cmd := range in.commands {
			if c.matchText(cmd) {
				return cmd, true
			}
			if alt := stripForDeny(cmd); alt != cmd && c.matchText(alt) {
				return cmd, true
			}
		}
	case kindDomain:
		if in.domain != "" && c.matchDomain(in.domain) {
			return in.domain, true
		}
	case kindSpec:
		if s := in.acc.Specifier; s != "" && c.matchText(s) {
			return s, true
		}
	}
	return "", false
}

// stripForDeny removes leading VAR=value words and the directory of the
// command word, so deny and ask rules see past `FOO=1 /bin/rm`.
func stripForDeny(cmd string) string {
	s := cmd
	for {
		w, rest, _ := strings.Cut(s, " ")
		if !isAssignment(w) {
			break
		}
		s = rest
	}
	w, rest, found := strings.Cut(s, " ")
	if i := strings.LastIndexByte(w, '/'); i >= 0 && i < len(w)-1 {
		w = w[i+1:]
		if found {
			return w + " " + rest
		}
		return w
	}
	return s
}

func isAssignment(w string) bool {
	i := strings.IndexByte(w, '=')
	if i <= 0 {
		return false
	}
	for j := 0; j < i; j++ {
		c := w[j]
		if !(isLetter(c) || c == '_' || (j > 0 && isDigit(c))) {
			return false
		}
	}
	return true
}

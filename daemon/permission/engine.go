package permission

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Decision stages (Decision.By).
const (
	ByRule    = "rule"
	ByHook    = "hook"
	ByMode    = "mode"
	ByTool    = "tool"
	ByDefault = "default"
	// BySandbox: a sandboxed command, allowed because the OS sandbox
	// holds its boundary (autoAllowBashIfSandboxed).
	BySandbox = "sandbox"
)

// Step stages.
const (
	StageDeny    = "deny rules"
	StageAsk     = "ask rules"
	StageHook    = "hook"
	StageSandbox = "sandbox"
	StageMode    = "mode"
	StageAllow   = "allow rules"
	StageTool    = "tool"
	StageDefault = "default"
)

const outcomePass = "pass"

// maxAlwaysRules is how many rules an "allow always" of a compound command
// saves at most (as Claude Code).
const maxAlwaysRules = 5

// Engine is the rule-based policy (reference.md section 4). It decides, in
// this order, and the first stage that decides wins:
//
//  1. deny rules: any rule matching the tool, any one Bash command, any
//     path read (Read rules) or written (Edit rules; a Read deny too);
//  2. ask rules, matched the same way;
//  3. the PreToolUse hooks' decision (deny, ask, allow);
//  4. the mode: bypassPermissions allows, plan denies a call that is not
//     read-only, acceptEdits allows a file edit inside the working
//     directories;
//  5. allow rules, which must cover the whole call: every Bash command, and
//     every path of a file tool (Bash's redirection targets must be inside
//     the working directories or covered by an Edit allow rule);
//  6. the tool's check: a read-only call inside the working directories;
//  7. ask (dontAsk: deny).
//
// An interactive tool, and a call whose Access.AlwaysAsk is set, ask where
// stages 3-6 would allow (bypassPermissions still allows an AlwaysAsk call;
// nothing allows an interactive one). In dontAsk every ask is a deny. With
// no rules and no hook decision it decides exactly as NewInterimPolicy.
type Engine struct {
	home string
}

// NewEngine returns the rule engine.
func NewEngine() Policy {
	home, _ := os.UserHomeDir()
	return &Engine{home: home}
}

// Decide implements Policy.
func (e *Engine) Decide(_ context.Context, r Request) Decision {
	in := newInput(&r, e.home)
	var d Decision
	step := func(stage, outcome, format string, args ...any) {
		detail := format
		if len(args) > 0 {
			detail = fmt.Sprintf(format, args...)
		}
		d.Chain = append(d.Chain, Step{Stage: stage, Outcome: outcome, Detail: detail})
	}
	mode := ""
	getMode := func() string {
		if mode == "" {
			mode = r.EffectiveMode()
		}
		return mode
	}
	rules := r.Rules
	if rules == nil {
		rules = &Rules{}
	}
	finish := func(v Verdict, by string, rule *Rule, reason string) Decision {
		if v == Ask && getMode() == ModeDontAsk {
			v = Deny
			if by == ByTool {
				reason += ", and the permission mode is dontAsk"
			} else {
				reason = fmt.Sprintf("the permission mode is dontAsk and %s would need approval (%s)", r.Tool, reason)
			}
		}
		d.Verdict, d.By, d.Rule, d.Reason = v, by, rule, reason
		return d
	}

	// 1. Deny rules: by path, command, domain…, then through a hard link.
	c, what := firstMatch(rules.deny, in)
	if c == nil {
		c, what = rules.hardLinked(rules.deny, in)
	}
	if c != nil {
		step(StageDeny, string(Deny), "%s matches %s", ruleRef(&c.rule), what)
		return finish(Deny, ByRule, ruleCopy(c), fmt.Sprintf("the deny rule %s (%s) matches %s", c.rule.Text, c.rule.Source, what))
	}
	step(StageDeny, outcomePass, "no deny rule matches")

	// 2. Ask rules; and a tree read whole (grep -r, git log -p) holding
	// paths a Read deny or ask rule covers asks, in every mode: the rule
	// must hold, and the analysis cannot see which files are printed.
	if c, what := firstMatch(rules.ask, in); c != nil {
		step(StageAsk, string(Ask), "%s matches %s", ruleRef(&c.rule), what)
		return finish(Ask, ByRule, ruleCopy(c), fmt.Sprintf("the ask rule %s (%s) matches %s", c.rule.Text, c.rule.Source, what))
	}
	if c, what := rules.hardLinked(rules.ask, in); c != nil {
		step(StageAsk, string(Ask), "%s matches %s", ruleRef(&c.rule), what)
		return finish(Ask, ByRule, ruleCopy(c), fmt.Sprintf("the ask rule %s (%s) matches %s", c.rule.Text, c.rule.Source, what))
	}
	for _, list := range [][]*compiled{rules.deny, rules.ask} {
		if c, what := coveredTree(list, in); c != nil {
			step(StageAsk, string(Ask), "the call reads %s, where %s may cover paths", what, ruleRef(&c.rule))
			return finish(Ask, ByRule, ruleCopy(c), fmt.Sprintf("the call reads %s, and the %s rule %s (%s) covers paths there", what, c.rule.Behavior, c.rule.Text, c.rule.Source))
		}
	}
	step(StageAsk, outcomePass, "no ask rule matches")

	// mustAsk is why a call asks where an allow would otherwise apply.
	mustAsk := ""
	switch {
	case r.Attrs.Interactive:
		mustAsk = fmt.Sprintf("%s needs a person", r.Tool)
	case r.Access.AlwaysAsk != "":
		mustAsk = r.Access.AlwaysAsk
	}

	// 3. PreToolUse hooks.
	h := r.Hook
	hookName := h.Hook
	if hookName == "" {
		hookName = "a PreToolUse hook"
	}
	hookReason := h.Reason
	if hookReason == "" {
		hookReason = "no reason given"
	}
	switch h.Decision {
	case "":
		step(StageHook, outcomePass, "no hook decision")
	case Deny:
		step(StageHook, string(Deny), "%s: %s", hookName, hookReason)
		return finish(Deny, ByHook, nil, fmt.Sprintf("%s denied it: %s", hookName, hookReason))
	case Ask:
		step(StageHook, string(Ask), "%s: %s", hookName, hookReason)
		return finish(Ask, ByHook, nil, fmt.Sprintf("%s asks: %s", hookName, hookReason))
	case Allow:
		if r.Attrs.Interactive {
			step(StageHook, outcomePass, "%s allows, but %s", hookName, mustAsk)
			break
		}
		step(StageHook, string(Allow), "%s: %s", hookName, hookReason)
		return finish(Allow, ByHook, nil, fmt.Sprintf("%s allowed it: %s", hookName, hookReason))
	default: // an unknown decision fails closed
		step(StageHook, string(Deny), "%s gave the unknown decision %q", hookName, h.Decision)
		return finish(Deny, ByHook, nil, fmt.Sprintf("%s gave the unknown decision %q", hookName, h.Decision))
	}

	// 3b. The OS sandbox: a command that runs sandboxed, with auto-allow,
	// and that no deny or ask rule or hook stopped, runs: the kernel holds
	// the boundary the analysis cannot (compound commands, forms it cannot
	// judge, code-evaluating words included).
	if r.Access.Sandboxed != "" && !r.Attrs.Interactive && h.Decision == "" {
		step(StageSandbox, string(Allow), "sandboxed: %s", r.Access.Sandboxed)
		return finish(Allow, BySandbox, nil, "allowed: sandboxed ("+r.Access.Sandboxed+")")
	}

	// 4. Mode. A read-only call inside the working directories is allowed
	// by the tool's check in every mode: the mode need not decide (this
	// keeps the decision and its reason independent of the mode).
	roInside := r.Attrs.ReadOnly && !r.Attrs.Interactive && e.readOnlyInside(r.Access)
	// The mode is resolved only when it can matter (resolving reads settings).
	m := ""
	if !roInside || mustAsk != "" {
		m = getMode()
	}
	switch {
	case roInside && mustAsk == "":
		step(StageMode, outcomePass, "the call is read-only, inside the working directories: any mode")
	case m == ModeBypassPermissions:
		if r.Attrs.Interactive {
			step(StageMode, string(Ask), "bypassPermissions, but %s", mustAsk)
			return finish(Ask, ByTool, nil, mustAsk)
		}
		step(StageMode, string(Allow), "bypassPermissions")
		return finish(Allow, ByMode, nil, "permission mode bypassPermissions")
	case m == ModePlan:
		if !r.Attrs.ReadOnly && !r.Attrs.Interactive {
			step(StageMode, string(Deny), "plan: %s is not read-only", r.Tool)
			return finish(Deny, ByMode, nil, fmt.Sprintf("the session is in plan mode, where only read-only tools may run; %s is not read-only", r.Tool))
		}
		step(StageMode, outcomePass, "plan: read-only or interactive")
	case m == ModeAcceptEdits:
		if r.Access.Kind == tool.AccessEdit && r.Access.InsideWorkingDirs || e.fileCommandsInside(&r, in, rules) {
			if mustAsk != "" {
				step(StageMode, outcomePass, "acceptEdits would allow, but %s", mustAsk)
				return finish(Ask, ByTool, nil, mustAsk)
			}
			step(StageMode, string(Allow), "acceptEdits: a file edit inside the working directories")
			return finish(Allow, ByMode, nil, "permission mode acceptEdits: a file edit inside the working directories")
		}
		step(StageMode, outcomePass, "acceptEdits: not a file edit inside the working directories")
	default:
		step(StageMode, outcomePass, "%s", m)
	}

	// 5. Allow rules.
	if c, detail, ok := e.allowed(&r, in, rules); ok {
		if mustAsk != "" {
			step(StageAllow, outcomePass, "%s would allow, but %s", detail, mustAsk)
			return finish(Ask, ByTool, nil, mustAsk)
		}
		step(StageAllow, string(Allow), "%s", detail)
		return finish(Allow, ByRule, ruleCopy(c), fmt.Sprintf("allowed by %s", detail))
	} else {
		step(StageAllow, outcomePass, "%s", detail)
	}

	// 6. The tool's check.
	if roInside {
		if mustAsk != "" {
			step(StageTool, outcomePass, "read-only inside the working directories, but %s", mustAsk)
			return finish(Ask, ByTool, nil, mustAsk)
		}
		step(StageTool, string(Allow), "read-only, inside the working directories")
		return finish(Allow, ByTool, nil, "read-only, inside the working directories")
	}
	step(StageTool, outcomePass, "not read-only inside the working directories")

	// 7. Ask.
	if mustAsk != "" {
		step(StageDefault, string(Ask), "%s", mustAsk)
		return finish(Ask, ByTool, nil, mustAsk)
	}
	reason := askReason(r)
	step(StageDefault, string(Ask), "%s", reason)
	d.AlwaysRules = alwaysRules(in, rules)
	d.AlwaysRule = strings.Join(d.AlwaysRules, ", ")
	return finish(Ask, ByDefault, nil, reason)
}

func ruleCopy(c *compiled) *Rule {
	r := c.rule
	return &r
}

// readOnlyInside is the tool's check: the call touches nothing outside the
// working directories. Unlike the interim policy, a Bash command counts when
// its tool says so (Bash sets InsideWorkingDirs only for a read-only command
// whose paths all resolve inside): issue 4 wants known read-only commands
// inside the working directories to run without a prompt. A network call
// never counts.
func (e *Engine) readOnlyInside(a tool.Access) bool {
	if a.Kind == tool.AccessExec {
		return a.InsideWorkingDirs && len(a.Writes) == 0
	}
	return insideWorkingDirs(a)
}

// acceptEditsCommands are the shell commands acceptEdits allows when every
// file they write is inside the working directories (reference.md section 4).
var acceptEditsCommands = map[string]bool{"mkdir": true, "touch": true, "mv": true, "cp": true}

// fileCommandsInside reports whether a shell call is made only of mkdir,
// touch, mv and cp (and cd or read-only commands inside the working
// directories) whose writes all lie inside the working directories.
func (e *Engine) fileCommandsInside(r *Request, in *input, rules *Rules) bool {
	a := r.Access
	if a.Kind != tool.AccessExec || len(in.commands) == 0 || len(a.Writes) == 0 {
		return false
	}
	dirs := r.WorkingDirs
	if dirs == nil {
		dirs = append([]string{in.pc.cwd, in.pc.root}, rules.dirs...)
	}
	for i, cmd := range in.commands {
		w := strings.Fields(cmd)
		switch {
		case len(w) > 0 && acceptEditsCommands[w[0]]:
		case cdInside(cmd, in.pc.cwd, dirs):
		case len(a.CommandsReadOnly) == len(in.commands) && a.CommandsReadOnly[i]:
		default:
			return false
		}
	}
	for _, p := range a.Writes {
		if !within(dirs, p) {
			return false
		}
	}
	return true
}

// ruleRef names a rule and where it comes from.
func ruleRef(r *Rule) string { return fmt.Sprintf("%s %s (%s)", r.Behavior, r.Text, r.Source) }

// firstMatch returns the first rule of list that matches the call.
func firstMatch(list []*compiled, in *input) (*compiled, string) {
	for _, c := range list {
		if what, ok := c.matchAny(in); ok {
			return c, what
		}
	}
	return nil, ""
}

// allowed reports whether the allow rules cover the whole call, the rule
// that did (the first one used), and a detail for explain either way.
func (e *Engine) allowed(r *Request, in *input, rules *Rules) (*compiled, string, bool) {
	if len(rules.allow) == 0 {
		return nil, "no allow rules", false
	}
	switch {
	case in.tool == "Bash" || (r.Access.Kind == tool.AccessExec && len(in.commands) > 0):
		return e.allowedBash(r, in, rules)
	case editTools[in.tool]:
		return allowedPaths(rules, "Edit", in, in.writes)
	case readTools[in.tool]:
		return allowedPaths(rules, "Read", in, in.reads)
	}
	for _, c := range rules.allow {
		if !coversTool(c.rule.Tool, in.tool) {
			continue
		}
		switch c.kind {
		case kindBare:
			return c, ruleRef(&c.rule), true
		case kindDomain:
			if in.domain != "" && c.matchDomain(in.domain) {
				return c, ruleRef(&c.rule), true
			}
		case kindSpec:
			if s := in.acc.Specifier; s != "" && c.matchText(s) {
				return c, ruleRef(&c.rule), true
			}
		}
	}
	return nil, "no allow rule matches", false
}

// allowedBash: every command must be covered by a Bash allow rule, and every
// write be inside the working directories or covered by an Edit allow rule.
func (e *Engine) allowedBash(r *Request, in *input, rules *Rules) (*compiled, string, bool) {
	var first *compiled
	covered := 0
	missing := ""
	dirs := r.WorkingDirs
	if dirs == nil {
		dirs = append([]string{in.pc.cwd, in.pc.root}, rules.dirs...)
	}
	ro := r.Access.CommandsReadOnly
	for i, cmd := range in.commands {
		if len(in.commands) > 1 && cdInside(cmd, in.pc.cwd, dirs) {
			continue // moving around inside the working directories
		}
		if len(in.commands) > 1 && len(ro) == len(in.commands) && ro[i] {
			continue // read-only inside the working directories: the tool's check passes it
		}
		var by *compiled
		for _, c := range rules.allow {
			if c.rule.Tool != "Bash" {
				continue
			}
			if c.kind == kindBare || c.matchText(cmd) {
				by = c
				break
			}
		}
		if by == nil {
			if missing == "" {
				missing = cmd
			}
			continue
		}
		covered++
		if first == nil {
			first = by
		}
	}
	if len(in.commands) == 0 {
		for _, c := range rules.allow {
			if c.rule.Tool == "Bash" && c.kind == kindBare {
				first = c
			}
		}
		if first == nil {
			return nil, "no command to match", false
		}
	}
	if missing != "" {
		if covered > 0 {
			return nil, fmt.Sprintf("%d of %d commands are allowed by rules; %q is not", covered, len(in.commands), missing), false
		}
		return nil, fmt.Sprintf("no allow rule matches %q", missing), false
	}
	if first == nil { // only cd commands
		return nil, "no command other than cd", false
	}
	for _, w := range in.writes {
		// A redirection is not the command's: an allow rule for `echo`
		// never covers `echo a > x`. Its target is decided as an Edit.
		redirect := contains(r.Access.Redirects, w)
		if within(dirs, w) && (!redirect || r.EffectiveMode() == ModeAcceptEdits) {
			continue
		}
		ok := false
		for _, c := range rules.allow {
			if c.rule.Tool == "Edit" {
				if _, m := c.anyPath(in.pc, []string{w}); m {
					ok = true
					break
				}
			}
		}
		switch {
		case ok:
		case redirect && within(dirs, w):
			return nil, fmt.Sprintf("the commands are allowed, but not the redirection to %s: a redirection is an edit, allowed by an Edit allow rule or in acceptEdits", w), false
		default:
			return nil, fmt.Sprintf("the commands are allowed, but the write to %s is outside the working directories and no Edit allow rule covers it", w), false
		}
	}
	if len(in.commands) > 1 {
		return first, fmt.Sprintf("every command is allowed by a rule (first: %s)", ruleRef(&first.rule)), true
	}
	return first, ruleRef(&first.rule), true
}

// cdInside reports whether cmd is `cd DIR` with DIR (resolved against cwd,
// symlinks resolved as far as it exists) inside the working directories.
func cdInside(cmd, cwd string, dirs []string) bool {
	w := strings.Fields(cmd)
	if len(w) != 2 || w[0] != "cd" || w[1] == "-" || strings.ContainsAny(w[1], "$`~*?[") {
		return false
	}
	p := w[1]
	if !filepath.IsAbs(p) {
		if cwd == "" {
			return false
		}
		p = filepath.Join(cwd, p)
	}
	return within(dirs, resolveExisting(filepath.Clean(p)))
}

// resolveExisting resolves the symlinks of the longest existing prefix of p.
func resolveExisting(p string) string {
	rest := ""
	for {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return filepath.Join(p, rest)
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}

// allowedPaths: every path must be covered by an allow rule of family (or
// of the tool's own name, bare).
func allowedPaths(rules *Rules, family string, in *input, paths []string) (*compiled, string, bool) {
	var first *compiled
	for _, c := range rules.allow {
		if c.kind == kindBare && coversTool(c.rule.Tool, in.tool) {
			return c, ruleRef(&c.rule), true
		}
	}
	if len(paths) == 0 {
		return nil, "no path to match", false
	}
	for _, p := range paths {
		var by *compiled
		for _, c := range rules.allow {
			if c.rule.Tool != family || c.kind != kindPath {
				continue
			}
			if _, ok := c.anyPath(in.pc, []string{p}); ok {
				by = c
				break
			}
		}
		if by == nil {
			return nil, fmt.Sprintf("no %s allow rule covers %s", family, p), false
		}
		if first == nil {
			first = by
		}
	}
	return first, ruleRef(&first.rule), true
}

// within reports whether p is one of dirs or inside one.
func within(dirs []string, p string) bool {
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if p == d || strings.HasPrefix(p, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}

// alwaysRules returns the concrete rules an "allow always" would save for
// the call (see Decision.AlwaysRule).
func alwaysRules(in *input, rules *Rules) []string {
	var out []string
	add := func(s string) {
		for _, o := range out {
			if o == s {
				return
			}
		}
		if len(out) < maxAlwaysRules {
			out = append(out, s)
		}
	}
	dirRule := func(family, p string, isDir bool) string {
		d := p
		if !isDir {
			d = filepath.Dir(p)
		}
		return family + "(/" + escapeMeta(strings.TrimSuffix(d, "/")) + "/**)"
	}
	switch {
	case in.tool == "Bash":
		for _, cmd := range in.commands {
			if coveredByAllow(rules, cmd) {
				continue
			}
			if w := strings.Fields(cmd); len(w) > 0 && w[0] == "cd" && len(in.commands) > 1 {
				continue // inside: needs no rule; outside: no rule of ours should allow it
			}
			if pr := commandPrefix(cmd); pr != "" {
				// Claude Code's prefix form: the prefix with its word
				// boundary (`npm test` and `npm test …`, not `npm tests`).
				add("Bash(" + pr + ":*)")
			}
		}
	case editTools[in.tool]:
		for _, p := range in.writes {
			// Its directory, unless that is the project (or the cwd):
			// then the file alone, never the whole project.
			if d := filepath.Dir(p); d == filepath.Clean(in.pc.root) || d == filepath.Clean(in.pc.cwd) {
				add("Edit(/" + escapeMeta(p) + ")")
				continue
			}
			add(dirRule("Edit", p, false))
		}
	case readTools[in.tool]:
		for _, p := range in.reads {
			fi, err := os.Stat(p)
			add(dirRule("Read", p, err == nil && fi.IsDir()))
		}
	case in.tool == "WebFetch":
		if h := strings.ToLower(in.domain); h != "" {
			add("WebFetch(domain:" + h + ")")
		}
	case (in.tool == "Skill" || in.tool == "Task" || in.tool == "Agent") && in.acc.Specifier != "" && !strings.ContainsAny(in.acc.Specifier, "()*"):
		add(in.tool + "(" + in.acc.Specifier + ")")
	default:
		add(in.tool)
	}
	return out
}

func coveredByAllow(rules *Rules, cmd string) bool {
	for _, c := range rules.allow {
		if c.rule.Tool == "Bash" && (c.kind == kindBare || c.matchText(cmd)) {
			return true
		}
	}
	return false
}

// commandPrefix is the part of a command an "always" rule keeps: the
// command word, and the second word when it looks like a subcommand
// (`npm test`, `git status`; not `rm -rf`, `cat file.txt`).
func commandPrefix(cmd string) string {
	w := strings.Fields(cmd)
	if len(w) == 0 {
		return ""
	}
	if strings.ContainsAny(w[0], "*()") {
		return ""
	}
	if len(w) > 1 && isSubcommand(w[1]) {
		return w[0] + " " + w[1]
	}
	return w[0]
}

func isSubcommand(s string) bool {
	if s == "" || !isLetter(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || isDigit(c) || c == '-' || c == '_' || c == ':') {
			return false
		}
	}
	return true
}

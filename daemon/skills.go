package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/mcp"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/skill"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// DefaultManagedSkills is the directory of managed skills.
const DefaultManagedSkills = "/etc/tackle/skills"

// skillLayer gives each session its skills: the static ones of its
// project and user, the nested ones its tools' files revealed, the
// path-activated ones, and its MCP servers' prompts. It implements
// server.Skills and builds the Skill tool. Loading a skill never changes a
// permission: only an invoked skill's allowed-tools grant, for the turn,
// after the person approved the invocation.
type skillLayer struct {
	d       *Daemon
	catalog *skill.Catalog

	mu    sync.Mutex
	dyn   map[string]*skill.Dynamic  // by session id
	usage map[string]map[string]int  // by session id, then skill name
	hooks map[string]map[string]bool // skills whose hooks a session registered
	seen  map[string]map[string]bool // by session id: the active skills at the last skills_changed
	// src caches each session's sources (see sources); srcGen tells a
	// sources call that raced with reset not to store.
	src    map[string]skill.Sources
	srcGen uint64
}

func newSkillLayer(d *Daemon) *skillLayer {
	return &skillLayer{
		d: d, catalog: skill.NewCatalog(&skill.Options{Logger: d.log.Named("skill")}),
		dyn: map[string]*skill.Dynamic{}, usage: map[string]map[string]int{}, hooks: map[string]map[string]bool{},
		seen: map[string]map[string]bool{}, src: map[string]skill.Sources{},
	}
}

// sources are the places a session's skills come from, cached per session
// until its current directory moves or a settings file changes (reset).
func (l *skillLayer) sources(sess *session.Session) skill.Sources {
	cwd := sess.Cwd()
	l.mu.Lock()
	c, ok := l.src[sess.ID()]
	gen := l.srcGen
	l.mu.Unlock()
	if ok && c.Cwd == cwd {
		return c
	}
	src := l.readSources(sess)
	l.mu.Lock()
	if l.srcGen == gen {
		l.src[sess.ID()] = src
	}
	l.mu.Unlock()
	return src
}

// reset drops the cached sources (a settings file changed: plugins).
func (l *skillLayer) reset() {
	l.mu.Lock()
	clear(l.src)
	l.srcGen++
	l.mu.Unlock()
}

func (l *skillLayer) readSources(sess *session.Session) skill.Sources {
	dirs := sess.WorkingDirs()
	src := skill.Sources{
		Root: sess.Root(), Cwd: sess.Cwd(), ConfigHome: l.d.opts.ConfigHome, Home: l.d.opts.Home,
		ManagedDir: l.d.opts.ManagedSkills,
	}
	if len(dirs) > 1 {
		src.AdditionalDirs = dirs[1:]
	}
	src.Plugins = l.d.plugins(sess)
	return src
}

func (l *skillLayer) dynamic(sessionID string) *skill.Dynamic {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.dyn[sessionID]
	if d == nil {
		d = skill.NewDynamic()
		l.dyn[sessionID] = d
	}
	return d
}

// prompts are the session's MCP prompts as user-invocable skills.
func (l *skillLayer) prompts(sessionID string) []*skill.Skill {
	var out []*skill.Skill
	for _, c := range l.d.mcp.mgr.Conns(sessionID) {
		if c.State() != mcp.Connected {
			continue
		}
		for _, p := range c.Prompts() {
			if p == nil {
				continue
			}
			ref := &skill.PromptRef{Server: c.Name(), Name: p.Name}
			var hint []string
			for _, a := range p.Arguments {
				ref.Args = append(ref.Args, skill.PromptArg{Name: a.Name, Description: a.Description, Required: a.Required})
				if a.Required {
					hint = append(hint, "<"+a.Name+">")
				} else {
					hint = append(hint, "["+a.Name+"]")
				}
			}
			desc := p.Description
			if desc == "" {
				desc = p.Title
			}
			out = append(out, &skill.Skill{
				Name: mcp.ToolName(c.Name(), p.Name), Label: p.Title, Description: desc,
				ArgumentHint: strings.Join(hint, " "), UserInvocable: true, Source: skill.SourceMCP, Prompt: ref,
			})
		}
	}
	return out
}

// view is the session's skills now.
func (l *skillLayer) view(sess *session.Session) *skill.View {
	return l.catalog.View(l.sources(sess), l.dynamic(sess.ID()), l.prompts(sess.ID()))
}

// touched is told every file a tool of the session read, wrote or edited:
// nested skill directories and path-activated skills come alive, and the
// session's clients hear of it.
func (l *skillLayer) touched(sess *session.Session, path string) {
	d := l.dynamic(sess.ID())
	src := l.sources(sess)
	if !d.Touch(l.catalog, src, []string{path}) {
		return
	}
	after := activeNames(l.catalog.View(src, d, nil))
	l.mu.Lock()
	before := l.seen[sess.ID()]
	l.seen[sess.ID()] = after
	l.mu.Unlock()
	if before == nil {
		// The first change: before it the session had only its static skills.
		before = activeNames(l.catalog.View(src, skill.NewDynamic(), nil))
	}
	var added []string
	for n := range after {
		if !before[n] {
			added = append(added, n)
		}
	}
	sort.Strings(added)
	text := "skills changed"
	if len(added) > 0 {
		text = "skills now available: " + strings.Join(added, ", ")
	}
	if _, err := sess.Append(&event.Event{Type: event.SkillsChanged, Text: text}); err != nil {
		l.d.log.Debug("announcing changed skills", "session", sess.ID(), "error", err)
	}
}

func activeNames(v *skill.View) map[string]bool {
	out := map[string]bool{}
	for _, k := range v.All() {
		if v.Active(k.Name) {
			out[k.Name] = true
		}
	}
	return out
}

// release forgets a deleted session.
func (l *skillLayer) release(sessionID string) {
	l.mu.Lock()
	delete(l.dyn, sessionID)
	delete(l.usage, sessionID)
	delete(l.hooks, sessionID)
	delete(l.seen, sessionID)
	delete(l.src, sessionID)
	l.mu.Unlock()
	l.d.hooks.DropSession(sessionID)
}

// budget is the Skill tool's listing budget: skillListingBudget, or
// SLASH_COMMAND_TOOL_CHAR_BUDGET in the session's environment.
func (l *skillLayer) budget(sess *session.Session) int {
	for _, kv := range sess.Environ() {
		if v, ok := strings.CutPrefix(kv, "SLASH_COMMAND_TOOL_CHAR_BUDGET="); ok {
			var n int
			if _, err := fmt.Sscan(v, &n); err == nil && n > 0 {
				return n
			}
		}
	}
	st, _ := l.d.loader.Load(sess.Root())
	if raw, ok := st.Raw["skillListingBudget"]; ok {
		var n int
		if json.Unmarshal(raw, &n) == nil && n > 0 {
			return n
		}
	}
	return skill.DefaultBudget
}

// trustedSkill reports whether a skill's hooks may run without the
// workspace's trust: only skills from outside the project.
func trustedSkill(sk *skill.Skill) bool {
	switch sk.Source {
	case skill.SourceBuiltin, skill.SourceManaged, skill.SourceUser, skill.SourcePlugin:
		return true
	}
	return false
}

// tool is the Skill tool.
func (l *skillLayer) tool() tool.Tool {
	sessOf := func(env tool.Env) *session.Session {
		if s, ok := env.(*session.Session); ok {
			return s
		}
		s, err := l.d.sessions.Get(context.Background(), env.SessionID())
		if err != nil {
			return nil
		}
		return s
	}
	return skill.NewTool(&skill.ToolOptions{
		View: func(env tool.Env) *skill.View {
			if s := sessOf(env); s != nil {
				return l.view(s)
			}
			return nil
		},
		Budget: func(env tool.Env) int {
			if s := sessOf(env); s != nil {
				return l.budget(s)
			}
			return skill.DefaultBudget
		},
		Usage: func(sessionID, name string) int {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.usage[sessionID][name]
		},
		Used: func(sessionID, name string) {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.usage[sessionID] == nil {
				l.usage[sessionID] = map[string]int{}
			}
			l.usage[sessionID][name]++
		},
		Grant: func(sessionID, name string, rules []string) { l.d.perms.grant(sessionID, name, rules) },
		Fork: func(ctx context.Context, call *tool.Call, sk *skill.Skill, task string, _ tool.Progress) (skill.Forked, error) {
			return l.d.agents.fork(ctx, call, sk, task)
		},
		AddHooks: func(sessionID, name string, hooks json.RawMessage) error {
			sess, err := l.d.sessions.Get(context.Background(), sessionID)
			if err != nil {
				return err
			}
			l.mu.Lock()
			done := l.hooks[sessionID][name]
			l.mu.Unlock()
			if done {
				return nil // registered for the session already
			}
			sk, ok := l.view(sess).Lookup(name)
			trusted := ok && trustedSkill(sk) || l.d.trust.Trusted(sess.Root())
			if err := l.d.hooks.AddSession(sessionID, "skill "+name, hooks, trusted); err != nil {
				return err
			}
			l.mu.Lock()
			if l.hooks[sessionID] == nil {
				l.hooks[sessionID] = map[string]bool{}
			}
			l.hooks[sessionID][name] = true
			l.mu.Unlock()
			return nil
		},
	})
}

func skillInfo(v *skill.View, sk *skill.Skill) server.SkillInfo {
	return server.SkillInfo{
		Name: sk.Name, Description: sk.Description, WhenToUse: sk.WhenToUse, Source: sk.Source, Path: sk.Path,
		ArgumentHint: sk.ArgumentHint, Model: sk.Model, Effort: sk.Effort, Context: sk.Context,
		ModelInvocable: sk.ModelInvocable, UserInvocable: sk.UserInvocable, Active: v.Active(sk.Name),
		AllowedTools: sk.AllowedTools, Paths: sk.Paths, Warnings: sk.Warnings,
	}
}

// List implements server.Skills.
func (l *skillLayer) List(sess *session.Session, shadowed bool) ([]server.SkillInfo, []server.SkillProblem) {
	v := l.view(sess)
	var out []server.SkillInfo
	for _, sk := range v.All() {
		out = append(out, skillInfo(v, sk))
	}
	if shadowed {
		for _, sk := range v.Shadowed() {
			info := skillInfo(v, sk)
			info.Active = false
			if winner, ok := v.Find(sk.Name); ok {
				info.ShadowedBy = winner.Source + " " + firstNonEmpty(winner.Path, winner.Name)
			}
			out = append(out, info)
		}
	}
	var ps []server.SkillProblem
	for _, p := range v.Problems() {
		ps = append(ps, server.SkillProblem{Path: p.Path, Line: p.Line, Column: p.Column, Message: p.Message})
	}
	// The plugins that did not load (their hooks' and MCP servers' files
	// are tackle hooks list's and tackle mcp list's).
	for _, p := range l.d.pluginProblems(sess) {
		if p.Part == "" {
			ps = append(ps, server.SkillProblem{Path: p.Path, Message: pluginProblemText(p)})
		}
	}
	return out, ps
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Get implements server.Skills.
func (l *skillLayer) Get(sess *session.Session, name string) (server.SkillInfo, string, error) {
	v := l.view(sess)
	sk, ok := v.Find(name)
	if !ok {
		return server.SkillInfo{}, "", l.unknown(v, name)
	}
	return skillInfo(v, sk), sk.Body, nil
}

func (l *skillLayer) unknown(v *skill.View, name string) error {
	var names []string
	for _, sk := range v.UserSkills() {
		names = append(names, sk.Name)
	}
	if len(names) == 0 {
		return fmt.Errorf("no skill %q: this session has no skills a person can invoke", name)
	}
	return fmt.Errorf("no skill %q (a person can invoke: %s)", name, strings.Join(names, ", "))
}

// Render implements server.Skills: a person invokes a skill. Its !`cmd`
// lines run through the pipeline as Bash calls, in mode (or the
// session's); nobody answering a prompt within timeout denies them.
func (l *skillLayer) Render(ctx context.Context, sess *session.Session, name, args, mode string, timeout time.Duration) (server.RenderedSkill, error) {
	v := l.view(sess)
	sk, ok := v.Find(name)
	if !ok {
		return server.RenderedSkill{}, l.unknown(v, name)
	}
	if !sk.UserInvocable {
		return server.RenderedSkill{}, fmt.Errorf("skill %q is not for people to invoke (user-invocable: false): the model uses it", name)
	}
	if !v.Active(name) {
		return server.RenderedSkill{}, fmt.Errorf("skill %q is not active yet: it applies to files matching %s, and no tool touched one", name, strings.Join(sk.Paths, ", "))
	}
	if sk.Context == "fork" {
		return server.RenderedSkill{}, fmt.Errorf("skill %q runs in a forked agent (context: fork), which the model starts with its Skill tool: ask for it in a prompt (\"use the %s skill\")", name, name)
	}
	if sk.Prompt != nil {
		return l.renderPrompt(ctx, sess, sk, args)
	}
	turn := dispatch.Turn{ClientID: "skill:" + name, PermissionMode: mode, PermissionTimeout: timeout}
	if mode == "" {
		turn.ResolveMode = func() string { return l.d.perms.effectiveMode(sess, "") }
	}
	if timeout <= 0 {
		turn.ResolvePermissionTimeout = func() time.Duration { return l.d.askTimeout(sess.Root()) }
	}
	run := func(cmd string) string {
		t := turn
		in, _ := json.Marshal(map[string]string{"command": cmd})
		t.Calls = []event.CallInfo{{Name: "Bash", Input: in}}
		rs := l.d.disp.RunTurn(ctx, sess, t)
		if len(rs) != 1 || rs[0] == nil {
			return "[!`" + cmd + "` was not run]"
		}
		var sb strings.Builder
		for _, c := range rs[0].Content {
			sb.WriteString(c.Text)
		}
		if rs[0].Status != "completed" && rs[0].Status != "failed" {
			return "[!`" + cmd + "` was not run: " + strings.TrimSpace(sb.String()) + "]"
		}
		return strings.TrimRight(sb.String(), "\n")
	}
	text := skill.Render(sk, args, skill.Vars{SessionID: sess.ID(), ProjectDir: sess.Root(), Effort: sk.Effort}, run)
	// A person invoked it: its hooks join the session and its allowed-tools
	// hold for the turn the rendered prompt starts, as for the model's Skill.
	if len(sk.Hooks) > 0 {
		trusted := trustedSkill(sk) || l.d.trust.Trusted(sess.Root())
		if err := l.d.hooks.AddSession(sess.ID(), "skill "+name, sk.Hooks, trusted); err != nil {
			return server.RenderedSkill{}, err
		}
	}
	l.d.perms.grant(sess.ID(), name, sk.AllowedTools)
	return server.RenderedSkill{Text: text, AllowedTools: sk.AllowedTools, Model: sk.Model, Effort: sk.Effort}, nil
}

// renderPrompt renders an MCP prompt: the words of args fill its
// arguments in order (NAME=VALUE words by name).
func (l *skillLayer) renderPrompt(ctx context.Context, sess *session.Session, sk *skill.Skill, args string) (server.RenderedSkill, error) {
	values := map[string]string{}
	words := skill.SplitArgs(args)
	i := 0
	for _, w := range words {
		if k, val, ok := strings.Cut(w, "="); ok && promptHasArg(sk.Prompt, k) {
			values[k] = val
			continue
		}
		for i < len(sk.Prompt.Args) && values[sk.Prompt.Args[i].Name] != "" {
			i++
		}
		if i >= len(sk.Prompt.Args) {
			return server.RenderedSkill{}, fmt.Errorf("prompt %s takes %d arguments; %q is one too many", sk.Name, len(sk.Prompt.Args), w)
		}
		values[sk.Prompt.Args[i].Name] = w
		i++
	}
	res, err := l.d.mcp.mgr.GetPrompt(ctx, sess.ID(), sk.Prompt.Server, sk.Prompt.Name, values)
	if err != nil {
		return server.RenderedSkill{}, err
	}
	var parts []string
	for _, m := range res.Messages {
		for _, c := range mcp.Contents([]mcpsdk.Content{m.Content}) {
			if c.Text != "" {
				parts = append(parts, c.Text)
			}
		}
	}
	return server.RenderedSkill{Text: strings.Join(parts, "\n\n")}, nil
}

func promptHasArg(p *skill.PromptRef, name string) bool {
	for _, a := range p.Args {
		if a.Name == name {
			return true
		}
	}
	return false
}

// managedSkillsDir returns dir when it exists, else "".
func managedSkillsDir(dir string) string {
	if dir == "" {
		return ""
	}
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return dir
}

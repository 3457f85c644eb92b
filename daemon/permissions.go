package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// This file wires the permission stage: each session's rules (its
// project's settings, the workspace trust, and the session's own "always"
// rules from the database), "always" answers, the audit log, and explain.

// invalidInput is a request the client got wrong: an explain request whose
// input the pipeline would reject, an MCP server the session does not have.
type invalidInput struct{ msg string }

func (e *invalidInput) Error() string { return e.msg }

// InvalidArgument marks it for the server's error mapping.
func (e *invalidInput) InvalidArgument() bool { return true }

// perms holds the sessions' own rules in memory (loaded from the database
// on first use) and implements server.Permissions.
type perms struct {
	d *Daemon

	mu      sync.Mutex
	session map[string][]permission.Rule // by session id
	grants  map[string][]grant           // by session id: a skill's allowed-tools, until the turn ends
}

// grant is a temporary allow rule: a skill's allowed-tools, in force until
// the client's next end of turn or until, whichever comes first.
type grant struct {
	rule  permission.Rule
	until time.Time
}

// grantLifetime bounds a skill's allowed-tools when no client ends the turn.
const grantLifetime = 10 * time.Minute

func newPerms(d *Daemon) *perms {
	return &perms{d: d, session: map[string][]permission.Rule{}, grants: map[string][]grant{}}
}

// grant adds a skill's allowed-tools as allow rules of the session until
// its next end of turn (or 10 minutes). A rule that does not parse is
// logged and skipped; it widens nothing.
func (p *perms) grant(sessionID, skill string, rules []string) {
	until := time.Now().Add(grantLifetime)
	var gs []grant
	for _, text := range rules {
		r, err := permission.ParseRule(text)
		if err != nil {
			p.d.log.Warn("a skill's allowed-tools entry does not parse; ignored", "skill", skill, "rule", text, "error", err)
			continue
		}
		r.Behavior = permission.BehaviorAllow
		r.Source = permission.Source{Scope: permission.ScopeSession, Path: "skill " + skill + " (allowed-tools, until the end of the turn)"}
		gs = append(gs, grant{rule: r, until: until})
	}
	if len(gs) == 0 {
		return
	}
	p.mu.Lock()
	p.grants[sessionID] = append(p.grants[sessionID], gs...)
	p.mu.Unlock()
}

// endTurn drops the session's temporary grants (a client's EndTurn).
func (p *perms) endTurn(sessionID string) {
	p.mu.Lock()
	delete(p.grants, sessionID)
	p.mu.Unlock()
}

// activeGrants returns the session's unexpired grants as rules.
func (p *perms) activeGrants(sessionID string) []permission.Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	gs := p.grants[sessionID]
	if len(gs) == 0 {
		return nil
	}
	now := time.Now()
	var out []permission.Rule
	kept := gs[:0]
	for _, g := range gs {
		if now.Before(g.until) {
			kept = append(kept, g)
			out = append(out, g.rule)
		}
	}
	if len(kept) == 0 {
		delete(p.grants, sessionID)
	} else {
		p.grants[sessionID] = kept
	}
	return out
}

// sessionRules returns the session's own rules, reading them from the
// database the first time.
func (p *perms) sessionRules(id string) []permission.Rule {
	p.mu.Lock()
	defer p.mu.Unlock()
	if rs, ok := p.session[id]; ok {
		return rs
	}
	texts, err := p.d.sessions.SessionRules(context.Background(), id)
	if err != nil {
		// Not cached: the next call tries again. Without them the
		// session only asks more, never less.
		p.d.log.Error("reading a session's own permission rules", "session", id, "error", err)
		return nil
	}
	rs := make([]permission.Rule, 0, len(texts))
	for i, t := range texts {
		r, err := permission.ParseRule(t)
		if err != nil {
			p.d.log.Warn("a stored session rule does not parse; ignored", "session", id, "rule", t, "error", err)
			continue
		}
		r.Behavior = permission.BehaviorAllow
		r.Source = permission.Source{Scope: permission.ScopeSession, Index: i}
		rs = append(rs, r)
	}
	p.session[id] = rs
	return rs
}

// forget drops a deleted session's rules.
func (p *perms) forget(id string) {
	p.mu.Lock()
	delete(p.session, id)
	delete(p.grants, id)
	p.mu.Unlock()
}

// rules returns the rules of a session with root directory root: its
// settings' rules (allow rules and additionalDirectories of an untrusted
// project left out) and its own rules.
func (p *perms) rules(sessionID, root string) (*permission.Rules, []permission.RuleProblem) {
	st, _ := p.d.loader.Load(root)
	return p.rulesFrom(sessionID, st, p.d.trust.Trusted(root))
}

// rulesFrom is rules with the session's settings st already read
// (trusted: its project is trusted).
func (p *perms) rulesFrom(sessionID string, st *config.Settings, trusted bool) (*permission.Rules, []permission.RuleProblem) {
	// A sub-agent's session rules are its root session's: an "always"
	// answer to any agent of the tree applies to the whole tree.
	own := p.sessionRules(p.d.rootSessionID(sessionID))
	if gs := p.activeGrants(sessionID); len(gs) > 0 {
		own = append(append([]permission.Rule(nil), own...), gs...)
	}
	return permission.LoadRules(st, trusted, own)
}

// saveAlways saves the rule of an "always" answer: scope session in the
// database and in memory, project and user in tackle's settings files
// (atomically, under a file lock).
func (p *perms) saveAlways(sessionID, root, scope, rule string) error {
	switch scope {
	case "", permission.ScopeSession:
		rules := permission.SplitRuleList(rule)
		parsed := make([]permission.Rule, 0, len(rules))
		for _, t := range rules {
			r, err := permission.ParseRule(t)
			if err != nil {
				return fmt.Errorf("saving rule %q for session %s: %w", t, sessionID, err)
			}
			parsed = append(parsed, r)
		}
		for _, t := range rules {
			if err := p.d.sessions.AddSessionRule(context.Background(), sessionID, t); err != nil {
				return err
			}
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		cur := slices.Clone(p.session[sessionID])
		if _, loaded := p.session[sessionID]; !loaded {
			// Read them all at the next use, the new ones included.
			return nil
		}
		for _, r := range parsed {
			if slices.ContainsFunc(cur, func(c permission.Rule) bool { return c.String() == r.String() }) {
				continue
			}
			r.Behavior = permission.BehaviorAllow
			r.Source = permission.Source{Scope: permission.ScopeSession, Index: len(cur)}
			cur = append(cur, r)
		}
		p.session[sessionID] = cur
		return nil
	case config.ScopeProject, config.ScopeUser:
		path, err := permission.SaveRule(scope, rule, root, p.d.opts.ConfigHome)
		if err != nil {
			return err
		}
		p.d.log.Info("saved an always-allow rule", "session", sessionID, "scope", scope, "rule", rule, "file", path)
		if scope == config.ScopeProject && !p.d.trust.Trusted(root) {
			// The project's allow rules are ignored until it is trusted:
			// the person's answer still holds for this session.
			if err := p.saveAlways(sessionID, root, permission.ScopeSession, rule); err != nil {
				return err
			}
			p.note(sessionID, fmt.Sprintf("saved %s to %s; project %s is not trusted, so the rule applies to this session now and to other sessions once you run: tackle trust %s", rule, path, root, root))
		}
		return nil
	}
	return fmt.Errorf("saving rule %q: unknown scope %q (use session, project or user)", rule, scope)
}

// note appends a notice to a session, logging a failure.
func (p *perms) note(sessionID, text string) {
	sess, err := p.d.sessions.Get(context.Background(), sessionID)
	if err == nil {
		_, err = sess.Append(&event.Event{Type: event.Notice, Text: text})
	}
	if err != nil {
		p.d.log.Warn("appending a notice", "session", sessionID, "error", err)
	}
}

// inputDigest is the hex SHA-256 of a call's input, for the audit log.
func inputDigest(in json.RawMessage) string {
	sum := sha256.Sum256(in)
	return hex.EncodeToString(sum[:])
}

// auditRow builds the audit row of one decision, with the answering
// client's name, pid and uid when a person answered.
func (p *perms) auditRow(sessionID, callID, toolName string, input json.RawMessage, outcome, decidedBy, rule, reason, clientID, scope string) store.AuditRow {
	row := store.AuditRow{
		SessionID: sessionID, CallID: callID, Tool: toolName, InputSHA256: inputDigest(input),
		Outcome: outcome, DecidedBy: decidedBy, Rule: rule, Reason: reason, Scope: scope, Time: time.Now().UTC(),
	}
	if clientID != "" && p.d.srv != nil {
		c, _ := p.d.srv.Client(clientID)
		row.ClientName, row.ClientPID, row.ClientUID = c.Name, c.PID, c.UID
	}
	return row
}

// effectiveMode is the permission mode of a session when no batch
// overrides it: its own, else its settings' defaultMode, else default
// (bypassPermissions becomes default when the settings disable it).
func (p *perms) effectiveMode(sess *session.Session, override string) string {
	st, _ := p.d.loader.Load(sess.Root())
	mode := permission.ModeDefault
	settingsMode := ""
	if st != nil && permission.ValidMode(st.Permissions.DefaultMode) {
		settingsMode = st.Permissions.DefaultMode
	}
	for _, m := range []string{override, sess.PermissionMode(), settingsMode} {
		if m != "" {
			mode = m
			break
		}
	}
	if mode == permission.ModeBypassPermissions && st != nil && st.Permissions.DisableBypassPermissionsMode == "disable" {
		mode = permission.ModeDefault
	}
	return mode
}

// Explain implements server.Permissions: the pipeline's checks up to the
// permission decision, with no hook and no handler run.
func (p *perms) Explain(ctx context.Context, sess *session.Session, name string, input json.RawMessage, mode string) (server.Explanation, error) {
	t, ok := p.d.registry.Lookup(name)
	if !ok {
		return server.Explanation{}, &invalidInput{fmt.Sprintf("no such tool: %s (tackle tools lists them)", name)}
	}
	in, msg := p.d.disp.CheckInput(t, name, input)
	if msg != "" {
		return server.Explanation{}, &invalidInput{fmt.Sprintf("the input of %s is invalid: %s", name, msg)}
	}
	canonical := t.Spec().Name
	call := &tool.Call{ID: "explain", Name: name, Input: in, Env: sess}
	var pre []server.ExplainStep
	if err := t.Validate(ctx, call); err != nil {
		pre = append(pre, server.ExplainStep{Stage: "validation", Outcome: "invalid", Detail: "the call would end as invalid before the permission stage: " + err.Error()})
	} else {
		pre = append(pre, server.ExplainStep{Stage: "validation", Outcome: "pass", Detail: "the input is valid"})
	}
	pre = append(pre, server.ExplainStep{Stage: "PreToolUse hooks", Outcome: "not run", Detail: "explain runs no hook: a hook's decision could change the outcome (deny > ask > allow)"})
	access, err := t.CheckPermission(ctx, call)
	if err != nil {
		return server.Explanation{}, &invalidInput{fmt.Sprintf("%s refused the input: %v", canonical, err)}
	}
	rules, _ := p.rules(sess.ID(), sess.Root())
	dec := p.d.policy.Decide(ctx, permission.Request{
		Tool:        canonical,
		Mode:        p.effectiveMode(sess, mode),
		Attrs:       t.Attributes(in),
		Access:      access,
		Rules:       rules,
		Cwd:         sess.Cwd(),
		Root:        sess.Root(),
		Home:        p.d.opts.Home,
		WorkingDirs: append(sess.WorkingDirs(), rules.AdditionalDirs()...),
	})
	out := server.Explanation{
		Decision: string(dec.Verdict), Reason: dec.Reason, DecidedBy: dec.By, AlwaysRule: dec.AlwaysRule, Chain: pre,
	}
	if dec.Rule != nil {
		out.Rule = dec.Rule.Text
		if out.Rule == "" {
			out.Rule = dec.Rule.String()
		}
		out.Source = &server.RuleSource{Scope: dec.Rule.Source.Scope, Path: dec.Rule.Source.Path, Line: dec.Rule.Source.Line, Index: dec.Rule.Source.Index}
	}
	for _, s := range dec.Chain {
		out.Chain = append(out.Chain, server.ExplainStep{Stage: s.Stage, Outcome: s.Outcome, Detail: s.Detail})
	}
	return out, nil
}

// Rules implements server.Permissions.
func (p *perms) Rules(sess *session.Session) ([]server.RuleInfo, []server.RuleProblemInfo) {
	rs, problems := p.rules(sess.ID(), sess.Root())
	src := func(s permission.Source) server.RuleSource {
		return server.RuleSource{Scope: s.Scope, Path: s.Path, Line: s.Line, Index: s.Index}
	}
	var out []server.RuleInfo
	for _, r := range rs.All() {
		text := r.Text
		if text == "" {
			text = r.String()
		}
		out = append(out, server.RuleInfo{Text: text, Tool: r.Tool, Spec: r.Spec, Behavior: r.Behavior, Source: src(r.Source)})
	}
	var probs []server.RuleProblemInfo
	for _, pr := range problems {
		probs = append(probs, server.RuleProblemInfo{Source: src(pr.Source), Text: pr.Text, Message: pr.Message})
	}
	return out, probs
}

// turnRules are a session's permission rules from its settings as its
// turn read them (for its working directories): one read of the settings
// files a turn, for the pipeline and the sandbox alike.
func (d *Daemon) turnRules(s tool.Env) *permission.Rules {
	if sess, ok := s.(*session.Session); ok {
		if st := sess.Settings(); st != nil {
			rs, _ := d.perms.rulesFrom(sess.ID(), st, st.Trusted)
			return rs
		}
	}
	rs, _ := d.perms.rules(s.SessionID(), rootOf(s))
	return rs
}

// dispatchOptions are the pipeline's options: the timeout, and the
// permission stage's rules, "always" answers and audit log.
func (d *Daemon) dispatchOptions() *dispatch.Options {
	return &dispatch.Options{
		PermissionTimeout: d.opts.PermissionTimeout,
		Logger:            d.opts.Logger.Named("dispatch"),
		Rules:             func(s dispatch.Session) *permission.Rules { return d.turnRules(s) },
		SaveAlways: func(s dispatch.Session, scope, rule string) (string, error) {
			root := rootOf(s)
			if err := d.perms.saveAlways(d.rootSessionID(s.ID()), root, scope, rule); err != nil {
				return "", err
			}
			if scope == config.ScopeProject || scope == config.ScopeUser {
				return permission.SettingsFile(scope, root, d.opts.ConfigHome)
			}
			return "", nil
		},
		Lookup: func(sessionID, name string) (tool.Tool, bool) {
			if name == sandboxNetTool {
				return sandboxNetCall{}, true
			}
			return d.mcp.lookup(sessionID, name)
		},
		Unloaded: d.deferral.unloaded,
		Load:     func(sessionID, name string) { d.deferral.load(sessionID, []string{name}) },
		Audit: func(sessionID string, rec dispatch.AuditRecord) {
			row := d.perms.auditRow(sessionID, rec.CallID, rec.Tool, nil, rec.Outcome, rec.DecidedBy, rec.Rule, "", rec.ClientID, rec.Scope)
			row.InputSHA256 = rec.InputSHA256
			if !rec.Time.IsZero() {
				row.Time = rec.Time.UTC()
			}
			d.sessions.RecordAudit(row)
		},
	}
}

// rootSessionID is the session at the top of id's tree: id itself unless
// it is a sub-agent's session.
func (d *Daemon) rootSessionID(id string) string {
	if sess, err := d.sessions.Get(context.Background(), id); err == nil {
		return sess.RootSessionID()
	}
	return id
}

// rootOf is a session's root directory (the project whose settings apply).
func rootOf(s tool.Env) string {
	if r, ok := s.(interface{ Root() string }); ok {
		return r.Root()
	}
	if dirs := s.WorkingDirs(); len(dirs) > 0 {
		return dirs[0]
	}
	return s.Cwd()
}

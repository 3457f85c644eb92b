package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/session"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// This file serves the permission and trust RPCs and keeps the identity of
// every client that attached or answered (for the audit log).

// Permissions is what the server needs of the daemon's permission stage to
// explain decisions and list rules. The daemon implements it.
type Permissions interface {
	// Explain decides about a call of toolName with input in sess, as the
	// pipeline would, without running anything (hooks are not run). mode
	// overrides the session's mode when set. A bad input is an error
	// wrapping an invalid-argument error the server reports as such.
	Explain(ctx context.Context, sess *session.Session, toolName string, input json.RawMessage, mode string) (Explanation, error)
	// Rules returns the effective rules of sess (deny, then ask, then
	// allow) and the rules that do not parse.
	Rules(sess *session.Session) ([]RuleInfo, []RuleProblemInfo)
}

// Explanation is a permission decision with everything that led to it.
type Explanation struct {
	// Decision is allow, ask or deny.
	Decision string
	Reason   string
	// DecidedBy is rule, hook, mode, tool or default.
	DecidedBy string
	// Rule is the deciding rule as written ("" if none), Source where it is.
	Rule   string
	Source *RuleSource
	// AlwaysRule is the rule an "allow always" answer would save.
	AlwaysRule string
	Chain      []ExplainStep
}

// ExplainStep is one step of a decision.
type ExplainStep struct{ Stage, Outcome, Detail string }

// RuleSource is where a rule comes from.
type RuleSource struct {
	Scope, Path string
	Line, Index int
}

// RuleInfo is one effective rule.
type RuleInfo struct {
	Text, Tool, Spec, Behavior string
	Source                     RuleSource
}

// RuleProblemInfo is a rule that does not parse.
type RuleProblemInfo struct {
	Source        RuleSource
	Text, Message string
}

// ClientInfo identifies a client: the name it gave and its process (from
// SO_PEERCRED on its connection).
type ClientInfo struct {
	Name string
	PID  int32
	UID  uint32
}

// clientRegistry remembers every client id handed out in this run. Entries
// are kept (a few dozen bytes each) because a decision is recorded after
// its answer, when the client may be gone.
type clientRegistry struct {
	mu sync.Mutex
	m  map[string]ClientInfo
}

func (r *clientRegistry) put(id string, c ClientInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]ClientInfo{}
	}
	r.m[id] = c
}

// Client returns what is known of a client id of this daemon run. For an
// unknown id (an earlier run) it returns the name encoded in the id.
func (s *Server) Client(id string) (ClientInfo, bool) {
	s.clientsByID.mu.Lock()
	c, ok := s.clientsByID.m[id]
	s.clientsByID.mu.Unlock()
	if ok {
		return c, true
	}
	return ClientInfo{Name: clientName(id)}, false
}

// clientName returns the name part of a client id ("<name>-<instance>-<n>").
func clientName(id string) string {
	i := strings.LastIndexByte(id, '-')
	if i <= 0 {
		return id
	}
	j := strings.LastIndexByte(id[:i], '-')
	if j <= 0 {
		return id
	}
	return id[:j]
}

// peerClient returns the pid and uid of the peer of ctx.
func peerClient(ctx context.Context, name string) ClientInfo {
	c := ClientInfo{Name: name}
	if p, ok := peer.FromContext(ctx); ok {
		if info, ok := p.AuthInfo.(peerInfo); ok && info.err == nil {
			c.PID, c.UID = info.pid, info.uid
		}
	}
	return c
}

// trustInfo describes the workspace trust of a project directory.
func (s *Server) trustInfo(dir string) *tacklev1.TrustInfo {
	if s.opts.Trust == nil || dir == "" {
		return nil
	}
	out := &tacklev1.TrustInfo{Dir: dir, Trusted: s.opts.Trust.Trusted(dir)}
	if s.opts.Settings != nil {
		if st, _ := s.opts.Settings(dir); st != nil {
			out.Ignored = st.Ignored // a trusted project may still lose an unconsented bypassPermissions
		}
	}
	if !out.Trusted {
		out.Hint = "tackle trust " + dir
	}
	return out
}

// ListPendingPermissions implements TackleService.
func (s *Server) ListPendingPermissions(ctx context.Context, req *tacklev1.ListPendingPermissionsRequest) (*tacklev1.ListPendingPermissionsResponse, error) {
	var ids []string
	if id := req.GetSessionId(); id != "" {
		if _, err := s.session(ctx, id); err != nil {
			return nil, toStatus(err)
		}
		ids = []string{id}
	} else {
		for _, sess := range s.sessions.Loaded() {
			ids = append(ids, sess.ID())
		}
	}
	out := &tacklev1.ListPendingPermissionsResponse{Requests: []*tacklev1.PermissionRequest{}}
	seen := map[string]bool{}
	for _, id := range ids {
		for _, p := range pendingToProto(s.pending(ctx, id)) {
			if seen[p.GetRequestId()] {
				continue // a sub-agent's, listed with its root session
			}
			seen[p.GetRequestId()] = true
			if p.SessionId == "" {
				p.SessionId = id // a sub-agent's request names its own (child) session
			}
			out.Requests = append(out.Requests, p)
		}
	}
	return out, nil
}

// pending are the open permission requests of session id: its own, and
// for a sub-agent's session those it asked in its root session.
func (s *Server) pending(ctx context.Context, id string) []event.PermissionRequest {
	out := s.broker.Pending(id)
	sess, err := s.sessions.Get(ctx, id)
	if err != nil || sess.Agent() == nil {
		return out
	}
	for _, p := range s.broker.Pending(sess.RootSessionID()) {
		if p.SessionID == id {
			out = append(out, p)
		}
	}
	return out
}

// answerPermission hands an answer to the request: in the session named,
// or — for a sub-agent's session — in its root session, where the
// sub-agent's requests are open.
func (s *Server) answerPermission(ctx context.Context, sessionID, requestID string, a permission.Answer) bool {
	if s.broker.Answer(sessionID, requestID, a) {
		return true
	}
	sess, err := s.sessions.Get(ctx, sessionID)
	if err != nil || sess.Agent() == nil {
		return false
	}
	return s.broker.Answer(sess.RootSessionID(), requestID, a)
}

// explainSession finds the session of an Explain or ListRules request:
// session_id, else the default session of cwd.
func (s *Server) explainSession(ctx context.Context, id, cwd string) (*session.Session, error) {
	if id != "" {
		return s.session(ctx, id)
	}
	if cwd == "" {
		return nil, invalidf("session_id or cwd is required")
	}
	sess, created, err := s.sessions.Create(ctx, session.CreateOptions{Cwd: cwd, DefaultForCwd: true})
	if err == nil {
		s.noteLoaded(sess, created)
	}
	return sess, err
}

// Explain implements TackleService.
func (s *Server) Explain(ctx context.Context, req *tacklev1.ExplainRequest) (*tacklev1.ExplainResponse, error) {
	if s.opts.Permissions == nil {
		return nil, toStatus(codedf(codes.Unimplemented, "this daemon cannot explain permission decisions"))
	}
	if req.GetTool() == "" {
		return nil, toStatus(invalidf("tool is required"))
	}
	if err := checkMode(req.GetPermissionMode()); err != nil {
		return nil, toStatus(err)
	}
	in := req.GetInputJson()
	if in == "" {
		in = "{}"
	}
	if !json.Valid([]byte(in)) {
		return nil, toStatus(invalidf("input_json is not valid JSON"))
	}
	sess, err := s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, toStatus(err)
	}
	// Read first: it brings the session's settings up to date for the
	// explanation too.
	dirs := sess.WorkingDirSources()
	e, err := s.opts.Permissions.Explain(ctx, sess, req.GetTool(), json.RawMessage(in), req.GetPermissionMode())
	if err != nil {
		return nil, toStatus(err)
	}
	out := &tacklev1.ExplainResponse{
		Decision: e.Decision, Reason: e.Reason, Rule: e.Rule, Source: ruleSourceToProto(e.Source),
		AlwaysRule: e.AlwaysRule, DecidedBy: e.DecidedBy, SessionId: sess.ID(),
		Chain:              make([]*tacklev1.ExplainStep, 0, len(e.Chain)),
		WorkingDirectories: workingDirsToProto(dirs),
	}
	for _, st := range e.Chain {
		out.Chain = append(out.Chain, &tacklev1.ExplainStep{Stage: st.Stage, Outcome: st.Outcome, Detail: st.Detail})
	}
	return out, nil
}

func ruleSourceToProto(s *RuleSource) *tacklev1.RuleSource {
	if s == nil {
		return nil
	}
	return &tacklev1.RuleSource{Scope: s.Scope, Path: s.Path, Line: int32(s.Line), Index: int32(s.Index)}
}

// ListRules implements TackleService.
func (s *Server) ListRules(ctx context.Context, req *tacklev1.ListRulesRequest) (*tacklev1.ListRulesResponse, error) {
	if s.opts.Permissions == nil {
		return nil, toStatus(codedf(codes.Unimplemented, "this daemon cannot list permission rules"))
	}
	sess, err := s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, toStatus(err)
	}
	rules, problems := s.opts.Permissions.Rules(sess)
	out := &tacklev1.ListRulesResponse{
		Rules: make([]*tacklev1.PermissionRule, 0, len(rules)), Problems: make([]*tacklev1.RuleProblem, 0, len(problems)),
		Trust: s.trustInfo(sess.Root()), SessionId: sess.ID(), SettingsProblems: s.settingsProblems(sess.Root()),
	}
	for _, r := range rules {
		out.Rules = append(out.Rules, &tacklev1.PermissionRule{Text: r.Text, Tool: r.Tool, Spec: r.Spec, Behavior: r.Behavior, Source: ruleSourceToProto(&r.Source)})
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, &tacklev1.RuleProblem{Source: ruleSourceToProto(&p.Source), Text: p.Text, Message: p.Message})
	}
	return out, nil
}

// Audit implements TackleService.
func (s *Server) Audit(ctx context.Context, req *tacklev1.AuditRequest) (*tacklev1.AuditResponse, error) {
	rows, err := s.sessions.Audit(ctx, req.GetSessionId(), int(req.GetLimit()))
	if err != nil {
		return nil, toStatus(err)
	}
	out := &tacklev1.AuditResponse{Entries: make([]*tacklev1.AuditEntry, 0, len(rows))}
	for _, r := range rows {
		out.Entries = append(out.Entries, &tacklev1.AuditEntry{
			SessionId: r.SessionID, CallId: r.CallID, Tool: r.Tool, InputSha256: r.InputSHA256, Outcome: r.Outcome,
			DecidedBy: r.DecidedBy, Rule: r.Rule, ClientName: r.ClientName, ClientPid: r.ClientPID, ClientUid: r.ClientUID,
			Scope: r.Scope, Time: timeToProto(r.Time), Reason: r.Reason,
		})
	}
	return out, nil
}

func (s *Server) trustStore() (*config.Trust, error) {
	if s.opts.Trust == nil {
		return nil, codedf(codes.Unimplemented, "this daemon has no trust store")
	}
	return s.opts.Trust, nil
}

// Trust implements TackleService.
func (s *Server) Trust(_ context.Context, req *tacklev1.TrustRequest) (*tacklev1.TrustResponse, error) {
	t, err := s.trustStore()
	if err != nil {
		return nil, toStatus(err)
	}
	if !strings.HasPrefix(req.GetDir(), "/") {
		return nil, toStatus(invalidf("dir must be an absolute path, not %q", req.GetDir()))
	}
	dir, already, err := t.Trust(req.GetDir(), req.GetAllowBypass())
	if err != nil {
		return nil, toStatus(err)
	}
	s.log.Info("directory trusted", "dir", dir, "already", already, "allow_bypass", req.GetAllowBypass())
	if s.opts.TrustChanged != nil && !already {
		s.opts.TrustChanged()
	}
	return &tacklev1.TrustResponse{Dir: dir, Already: already}, nil
}

// Untrust implements TackleService.
func (s *Server) Untrust(_ context.Context, req *tacklev1.UntrustRequest) (*tacklev1.UntrustResponse, error) {
	t, err := s.trustStore()
	if err != nil {
		return nil, toStatus(err)
	}
	if !strings.HasPrefix(req.GetDir(), "/") {
		return nil, toStatus(invalidf("dir must be an absolute path, not %q", req.GetDir()))
	}
	dir, removed, by, err := t.Untrust(req.GetDir())
	if err != nil {
		return nil, toStatus(err)
	}
	source := ""
	if by != "" {
		source = t.Source(dir)
	}
	s.log.Info("directory untrusted", "dir", dir, "removed", removed, "still_trusted_by", by, "source", source)
	if s.opts.TrustChanged != nil && removed {
		s.opts.TrustChanged()
	}
	return &tacklev1.UntrustResponse{Dir: dir, Removed: removed, StillTrustedBy: by, StillTrustedSource: source}, nil
}

// ListTrusted implements TackleService.
func (s *Server) ListTrusted(context.Context, *tacklev1.ListTrustedRequest) (*tacklev1.ListTrustedResponse, error) {
	t, err := s.trustStore()
	if err != nil {
		return nil, toStatus(err)
	}
	out := &tacklev1.ListTrustedResponse{Dirs: []string{}}
	entries, err := t.Entries()
	if err != nil {
		// tackle's own list still shows when Claude Code's file is broken.
		dirs, lerr := t.List()
		if lerr != nil {
			return nil, toStatus(lerr)
		}
		out.ClaudeError = err.Error()
		for _, d := range dirs {
			entries = append(entries, config.TrustEntry{Dir: d, Source: config.TrustSourceTackle, AllowBypass: t.BypassAllowed(d)})
		}
	}
	for _, e := range entries {
		out.Dirs = append(out.Dirs, e.Dir)
		out.Entries = append(out.Entries, &tacklev1.TrustedDir{Dir: e.Dir, Source: e.Source, AllowBypass: e.AllowBypass})
	}
	return out, nil
}

package server

import (
	"context"
	"encoding/json"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/toolsearch"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func checkMode(mode string) error {
	if mode != "" && !permission.ValidMode(mode) {
		return invalidf("unknown permission mode %q: use one of %s", mode, strings.Join(permission.Modes, ", "))
	}
	return nil
}

// CreateSession implements TackleService.
func (s *Server) CreateSession(ctx context.Context, req *tacklev1.CreateSessionRequest) (*tacklev1.CreateSessionResponse, error) {
	if req.GetCwd() == "" {
		return nil, toStatus(invalidf("cwd is required: the session's working directory, an absolute path"))
	}
	if err := checkMode(req.GetPermissionMode()); err != nil {
		return nil, toStatus(err)
	}
	for _, kv := range req.GetEnv() {
		if !strings.Contains(kv, "=") {
			return nil, toStatus(invalidf("env entry %q is not KEY=VALUE", kv))
		}
	}
	sess, created, err := s.sessions.Create(ctx, session.CreateOptions{
		Cwd:            req.GetCwd(),
		AdditionalDirs: req.GetAdditionalDirectories(),
		PermissionMode: req.GetPermissionMode(),
		Env:            req.GetEnv(),
		DefaultForCwd:  req.GetDefaultForCwd(),
		MCPConfig:      req.GetMcpConfig(),
	})
	if err != nil {
		return nil, toStatus(err)
	}
	if created {
		s.log.Info("session created", "session", sess.ID(), "cwd", req.GetCwd())
	}
	s.noteLoaded(sess, created)
	return &tacklev1.CreateSessionResponse{Session: s.sessionProto(sess.Info()), Created: created}, nil
}

// ListSessions implements TackleService.
func (s *Server) ListSessions(ctx context.Context, _ *tacklev1.ListSessionsRequest) (*tacklev1.ListSessionsResponse, error) {
	infos, err := s.sessions.List(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	out := &tacklev1.ListSessionsResponse{Sessions: make([]*tacklev1.Session, 0, len(infos))}
	for _, in := range infos {
		out.Sessions = append(out.Sessions, s.sessionProto(in))
	}
	return out, nil
}

// GetSession implements TackleService.
func (s *Server) GetSession(ctx context.Context, req *tacklev1.GetSessionRequest) (*tacklev1.GetSessionResponse, error) {
	sess, err := s.session(ctx, req.GetId())
	if err != nil {
		return nil, toStatus(err)
	}
	return &tacklev1.GetSessionResponse{Session: s.sessionProto(sess.Info())}, nil
}

// DeleteSession implements TackleService.
func (s *Server) DeleteSession(ctx context.Context, req *tacklev1.DeleteSessionRequest) (*tacklev1.DeleteSessionResponse, error) {
	if req.GetId() == "" {
		return nil, toStatus(invalidf("session id is required"))
	}
	sess, err := s.session(ctx, req.GetId())
	if err != nil {
		return nil, toStatus(err)
	}
	// Calls still running end first (as cancelled, in the log), so that
	// every call keeps its one result until the log goes.
	if err := s.disp.CancelSession(ctx, req.GetId()); err != nil {
		return nil, toStatus(codedf(codes.DeadlineExceeded, "%v", err))
	}
	// The shells go first: they write into the outputs directory that the
	// delete removes.
	if s.opts.Shells != nil {
		s.opts.Shells.KillSession(req.GetId())
	}
	if err := s.sessions.Delete(ctx, req.GetId()); err != nil {
		return nil, toStatus(err)
	}
	s.forgetSession(req.GetId())
	s.loadedMu.Lock()
	delete(s.loaded, req.GetId())
	s.loadedMu.Unlock()
	if s.opts.SessionDeleted != nil {
		s.opts.SessionDeleted(sess)
	}
	s.log.Info("session deleted", "session", req.GetId())
	return &tacklev1.DeleteSessionResponse{}, nil
}

// ListTools implements TackleService. Every session shares the daemon's
// pool for now, so session_id is only checked to exist and cwd is ignored.
func (s *Server) ListTools(ctx context.Context, req *tacklev1.ListToolsRequest) (*tacklev1.ListToolsResponse, error) {
	tools := s.disp.Registry().Tools()
	var sess *session.Session
	if req.GetSessionId() != "" || (req.GetCwd() != "" && s.opts.SessionTools != nil) {
		var err error
		sess, err = s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
		if err != nil {
			return nil, toStatus(err)
		}
		if s.opts.SessionTools != nil {
			tools = append(tools, s.opts.SessionTools(sess.ID())...)
		}
	}
	deferred := s.deferred(sess, tools)
	out := &tacklev1.ListToolsResponse{Tools: make([]*tacklev1.ToolInfo, 0, len(tools))}
	var unloaded []string
	for _, t := range tools {
		name := t.Spec().Name
		loaded := !deferred[name] || sess != nil && sess.Loaded(name)
		info := toolToProto(t, deferred[name], loaded, req.GetAll())
		if d, ok := t.(interface{ Description(tool.Env) string }); ok && sess != nil {
			info.Description = d.Description(sess) // the Skill tool lists the session's skills
		}
		out.Tools = append(out.Tools, info)
		if !loaded {
			unloaded = append(unloaded, name)
		}
	}
	out.DeferredListing = toolsearch.Listing(unloaded, 0)
	return out, nil
}

// deferred returns which of a session's tools are deferred (nil session:
// the tools' own attribute).
func (s *Server) deferred(sess *session.Session, tools []tool.Tool) map[string]bool {
	if sess != nil && s.opts.Deferred != nil {
		return s.opts.Deferred(sess, tools)
	}
	out := map[string]bool{}
	for _, t := range tools {
		if t.Attributes(json.RawMessage(`{}`)).Deferred {
			out[t.Spec().Name] = true
		}
	}
	return out
}

// LoadTools implements TackleService.
func (s *Server) LoadTools(ctx context.Context, req *tacklev1.LoadToolsRequest) (*tacklev1.LoadToolsResponse, error) {
	sess, err := s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, toStatus(err)
	}
	tools := s.disp.Registry().Tools()
	if s.opts.SessionTools != nil {
		tools = append(tools, s.opts.SessionTools(sess.ID())...)
	}
	byName := map[string]string{}
	for _, t := range tools {
		sp := t.Spec()
		byName[sp.Name] = sp.Name
		for _, a := range sp.Aliases {
			byName[a] = sp.Name
		}
	}
	deferred := s.deferred(sess, tools)
	out := &tacklev1.LoadToolsResponse{Loaded: []string{}, NotDeferred: []string{}, Unknown: []string{}}
	var load []string
	for _, n := range req.GetNames() {
		name, ok := byName[n]
		switch {
		case !ok:
			out.Unknown = append(out.Unknown, n)
		case !deferred[name]:
			out.NotDeferred = append(out.NotDeferred, name)
		default:
			load = append(load, name)
			out.Loaded = append(out.Loaded, name)
		}
	}
	if _, err := sess.LoadTools(load); err != nil {
		return nil, toStatus(err)
	}
	return out, nil
}

// AnswerPermission implements TackleService.
func (s *Server) AnswerPermission(ctx context.Context, req *tacklev1.AnswerPermissionRequest) (*tacklev1.AnswerPermissionResponse, error) {
	name := req.GetClientName()
	if name == "" {
		name = "unary"
	}
	clientID := s.newID(name + "-")
	s.clientsByID.put(clientID, peerClient(ctx, name))
	a, err := answerFromProto(req.GetAnswer(), clientID)
	if err != nil {
		return nil, toStatus(err)
	}
	if !s.answerPermission(ctx, req.GetAnswer().GetSessionId(), req.GetAnswer().GetRequestId(), a) {
		return &tacklev1.AnswerPermissionResponse{Accepted: false, Message: "no pending request " + req.GetAnswer().GetRequestId() + " in session " + req.GetAnswer().GetSessionId() + ": it was already answered, timed out or never existed"}, nil
	}
	s.log.Info("permission answered", "session", req.GetAnswer().GetSessionId(), "request", req.GetAnswer().GetRequestId(), "decision", a.Decision, "client", clientID)
	return &tacklev1.AnswerPermissionResponse{Accepted: true}, nil
}

// Status implements TackleService.
func (s *Server) Status(_ context.Context, req *tacklev1.StatusRequest) (*tacklev1.StatusResponse, error) {
	return &tacklev1.StatusResponse{
		Version:          s.opts.Version,
		BuildId:          s.opts.BuildID,
		Pid:              int64(os.Getpid()),
		Socket:           s.opts.Socket,
		UptimeSeconds:    int64(time.Since(s.started) / time.Second),
		Sessions:         uint32(s.sessions.Count()),
		Clients:          uint32(s.clients.Load()),
		ProtocolVersion:  ProtocolVersion,
		RssBytes:         rss(),
		PreviousExit:     s.opts.PreviousExit,
		Goroutines:       int32(runtime.NumGoroutine()),
		SettingsProblems: s.settingsProblems(req.GetCwd()),
	}, nil
}

// Shutdown implements TackleService: it answers, then Run stops gracefully.
func (s *Server) Shutdown(context.Context, *tacklev1.ShutdownRequest) (*tacklev1.ShutdownResponse, error) {
	s.log.Info("shutdown requested by a client")
	s.RequestStop()
	return &tacklev1.ShutdownResponse{}, nil
}

// session finds a session by id.
func (s *Server) session(ctx context.Context, id string) (*session.Session, error) {
	if id == "" {
		return nil, invalidf("session id is required")
	}
	sess, err := s.sessions.Get(ctx, id)
	if err == nil {
		s.noteLoaded(sess, false)
	}
	return sess, err
}

// noteLoaded calls Options.SessionLoaded the first time this run serves sess.
func (s *Server) noteLoaded(sess *session.Session, created bool) {
	if s.opts.SessionLoaded == nil {
		return
	}
	s.loadedMu.Lock()
	if s.loaded == nil {
		s.loaded = map[string]bool{}
	}
	first := !s.loaded[sess.ID()]
	s.loaded[sess.ID()] = true
	s.loadedMu.Unlock()
	if first {
		s.opts.SessionLoaded(sess, created)
	}
}

// rss returns the resident set size of this process, 0 if unknown.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

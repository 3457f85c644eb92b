package server

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// MCP is the daemon's MCP layer as the server needs it. The daemon
// implements it over daemon/mcp and daemon/config.
type MCP interface {
	// Servers lists the servers of sess (sorted by name) and the problems of
	// its MCP configuration.
	Servers(sess *session.Session) ([]MCPServer, []MCPProblem)
	// AllServers lists every server the daemon holds.
	AllServers() []MCPServer
	// Add writes a server entry into tackle's file of scope for the project root.
	Add(root, scope, name string, entry json.RawMessage, replace bool) (path string, warnings []string, err error)
	// Remove removes a server entry.
	Remove(root, scope, name string) (path string, err error)
	// Approve approves servers of root's .mcp.json.
	Approve(root string, names []string, all bool) (path string, err error)
	// Reconnect reconnects sess's server name and waits for the outcome.
	Reconnect(ctx context.Context, sess *session.Session, name string) (MCPServer, error)
	// Logs returns the last tail bytes of sess's server's stderr log.
	Logs(sess *session.Session, name string, tail int64) (path string, data []byte, truncated bool, err error)
	// Prompts lists a server's prompts.
	Prompts(ctx context.Context, sess *session.Session, server string) ([]MCPPrompt, error)
	// GetPrompt renders a prompt.
	GetPrompt(ctx context.Context, sess *session.Session, server, name string, args map[string]string) (description string, msgs []MCPMessage, err error)
}

// MCPServer is one server as clients see it.
type MCPServer struct {
	Name, Scope, Source, Transport, Target, State, Error string
	PID, Tools, Resources, Prompts, Restarts             int
	Sessions, Warnings, ToolNames                        []string
	Since                                                time.Time
	LogPath, ServerInfo                                  string
	// AuthURL is set while an OAuth flow waits for a person; Authorized
	// says a token is held.
	AuthURL    string
	Authorized bool
	// RetryAt is when an unreachable remote server is tried next;
	// Attempts the failed tries since it last worked.
	RetryAt  time.Time
	Attempts int
}

// MCPProblem is a broken MCP file or entry.
type MCPProblem struct{ Path, Server, Message string }

// MCPPrompt is a server's prompt.
type MCPPrompt struct {
	Name, Title, Description, Command string
	Args                              []MCPPromptArg
}

// MCPPromptArg is one argument of a prompt.
type MCPPromptArg struct {
	Name, Description string
	Required          bool
}

// MCPMessage is one message of a rendered prompt.
type MCPMessage struct {
	Role    string
	Content tool.Content
}

// mcpErr is a status error of code.
func mcpErr(code codes.Code, format string, args ...any) error {
	return toStatus(codedf(code, format, args...))
}

func (s *Server) mcp() (MCP, error) {
	if s.opts.MCP == nil {
		return nil, mcpErr(codes.Unimplemented, "this daemon has no MCP support")
	}
	return s.opts.MCP, nil
}

// mcpSession returns the MCP layer and the session of a request (its id,
// else the default session of cwd).
func (s *Server) mcpSession(ctx context.Context, id, cwd string) (MCP, *session.Session, error) {
	m, err := s.mcp()
	if err != nil {
		return nil, nil, err
	}
	sess, err := s.explainSession(ctx, id, cwd)
	if err != nil {
		return nil, nil, toStatus(err)
	}
	return m, sess, nil
}

func mcpServerToProto(m MCPServer) *tacklev1.McpServer {
	out := &tacklev1.McpServer{
		Name: m.Name, Scope: m.Scope, Source: m.Source, Transport: m.Transport, Target: m.Target,
		State: m.State, Error: m.Error, Pid: int32(m.PID), Tools: int32(m.Tools), Resources: int32(m.Resources),
		Prompts: int32(m.Prompts), Sessions: m.Sessions, Restarts: int32(m.Restarts), LogPath: m.LogPath,
		ServerInfo: m.ServerInfo, Warnings: m.Warnings, ToolNames: m.ToolNames, AuthUrl: m.AuthURL, Authorized: m.Authorized,
	}
	if !m.Since.IsZero() {
		out.Since = timestamppb.New(m.Since)
	}
	if !m.RetryAt.IsZero() {
		out.RetryAt = timestamppb.New(m.RetryAt)
	}
	out.Attempts = int32(m.Attempts)
	return out
}

// ListMcpServers implements TackleService.
func (s *Server) ListMcpServers(ctx context.Context, req *tacklev1.ListMcpServersRequest) (*tacklev1.ListMcpServersResponse, error) {
	m, err := s.mcp()
	if err != nil {
		return nil, err
	}
	out := &tacklev1.ListMcpServersResponse{Servers: []*tacklev1.McpServer{}}
	if req.GetAll() {
		for _, srv := range m.AllServers() {
			out.Servers = append(out.Servers, mcpServerToProto(srv))
		}
		return out, nil
	}
	sess, err := s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, toStatus(err)
	}
	servers, problems := m.Servers(sess)
	for _, srv := range servers {
		out.Servers = append(out.Servers, mcpServerToProto(srv))
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, &tacklev1.McpProblem{Path: p.Path, Server: p.Server, Message: p.Message})
	}
	return out, nil
}

// AddMcpServer implements TackleService.
func (s *Server) AddMcpServer(_ context.Context, req *tacklev1.AddMcpServerRequest) (*tacklev1.AddMcpServerResponse, error) {
	m, err := s.mcp()
	if err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, mcpErr(codes.InvalidArgument, "name is required")
	}
	if req.GetCwd() == "" && req.GetScope() != "user" {
		return nil, mcpErr(codes.InvalidArgument, "cwd is required for the %s scope", scopeOr(req.GetScope()))
	}
	if !json.Valid([]byte(req.GetEntryJson())) {
		return nil, mcpErr(codes.InvalidArgument, "entry_json is not valid JSON")
	}
	path, warnings, err := m.Add(req.GetCwd(), scopeOr(req.GetScope()), req.GetName(), json.RawMessage(req.GetEntryJson()), req.GetReplace())
	if err != nil {
		return nil, mcpErr(codes.InvalidArgument, "%v", err)
	}
	s.log.Info("MCP server added", "name", req.GetName(), "scope", scopeOr(req.GetScope()), "path", path)
	return &tacklev1.AddMcpServerResponse{Path: path, Warnings: warnings}, nil
}

func scopeOr(scope string) string {
	if scope == "" {
		return "local"
	}
	return scope
}

// RemoveMcpServer implements TackleService.
func (s *Server) RemoveMcpServer(_ context.Context, req *tacklev1.RemoveMcpServerRequest) (*tacklev1.RemoveMcpServerResponse, error) {
	m, err := s.mcp()
	if err != nil {
		return nil, err
	}
	if req.GetName() == "" {
		return nil, mcpErr(codes.InvalidArgument, "name is required")
	}
	path, err := m.Remove(req.GetCwd(), req.GetScope(), req.GetName())
	if err != nil {
		return nil, mcpErr(codes.NotFound, "%v", err)
	}
	s.log.Info("MCP server removed", "name", req.GetName(), "path", path)
	return &tacklev1.RemoveMcpServerResponse{Path: path}, nil
}

// ReconnectMcpServer implements TackleService.
func (s *Server) ReconnectMcpServer(ctx context.Context, req *tacklev1.ReconnectMcpServerRequest) (*tacklev1.ReconnectMcpServerResponse, error) {
	m, sess, err := s.mcpSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, err
	}
	srv, err := m.Reconnect(ctx, sess, req.GetName())
	if err != nil {
		return nil, mcpErr(codes.NotFound, "%v", err)
	}
	return &tacklev1.ReconnectMcpServerResponse{Server: mcpServerToProto(srv)}, nil
}

// ApproveMcpServers implements TackleService.
func (s *Server) ApproveMcpServers(_ context.Context, req *tacklev1.ApproveMcpServersRequest) (*tacklev1.ApproveMcpServersResponse, error) {
	m, err := s.mcp()
	if err != nil {
		return nil, err
	}
	if req.GetCwd() == "" {
		return nil, mcpErr(codes.InvalidArgument, "cwd is required")
	}
	if req.GetAll() == (len(req.GetNames()) > 0) {
		return nil, mcpErr(codes.InvalidArgument, "give names or all")
	}
	path, err := m.Approve(req.GetCwd(), req.GetNames(), req.GetAll())
	if err != nil {
		return nil, mcpErr(codes.InvalidArgument, "%v", err)
	}
	s.log.Info("MCP servers approved", "names", req.GetNames(), "all", req.GetAll(), "path", path)
	return &tacklev1.ApproveMcpServersResponse{Path: path, Trust: s.trustInfo(req.GetCwd())}, nil
}

// ReadMcpLogs implements TackleService.
func (s *Server) ReadMcpLogs(ctx context.Context, req *tacklev1.ReadMcpLogsRequest) (*tacklev1.ReadMcpLogsResponse, error) {
	m, sess, err := s.mcpSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, err
	}
	tail := req.GetTailBytes()
	if tail <= 0 {
		tail = 64 << 10
	}
	tail = min(tail, 4<<20)
	path, data, truncated, err := m.Logs(sess, req.GetName(), tail)
	if err != nil {
		return nil, mcpErr(codes.NotFound, "%v", err)
	}
	return &tacklev1.ReadMcpLogsResponse{Path: path, Data: data, Truncated: truncated}, nil
}

// ListMcpPrompts implements TackleService.
func (s *Server) ListMcpPrompts(ctx context.Context, req *tacklev1.ListMcpPromptsRequest) (*tacklev1.ListMcpPromptsResponse, error) {
	m, sess, err := s.mcpSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, err
	}
	prompts, err := m.Prompts(ctx, sess, req.GetServer())
	if err != nil {
		return nil, mcpErr(codes.FailedPrecondition, "%v", err)
	}
	out := &tacklev1.ListMcpPromptsResponse{Prompts: []*tacklev1.McpPrompt{}}
	for _, p := range prompts {
		pp := &tacklev1.McpPrompt{Name: p.Name, Title: p.Title, Description: p.Description, Command: p.Command}
		for _, a := range p.Args {
			pp.Arguments = append(pp.Arguments, &tacklev1.McpPromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		out.Prompts = append(out.Prompts, pp)
	}
	return out, nil
}

// GetPrompt implements TackleService.
func (s *Server) GetPrompt(ctx context.Context, req *tacklev1.GetPromptRequest) (*tacklev1.GetPromptResponse, error) {
	m, sess, err := s.mcpSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, err
	}
	desc, msgs, err := m.GetPrompt(ctx, sess, req.GetServer(), req.GetName(), req.GetArguments())
	if err != nil {
		// A request the asker got wrong is InvalidArgument (an MCP client
		// of serve is told invalid params); anything else is the server's:
		// not connected, or failing (not Unavailable, which tells a client
		// that the daemon went away).
		if codeOf(err) == codes.InvalidArgument {
			return nil, toStatus(err)
		}
		return nil, mcpErr(codes.FailedPrecondition, "%v", err)
	}
	out := &tacklev1.GetPromptResponse{Description: desc, Messages: []*tacklev1.PromptMessage{}}
	for _, msg := range msgs {
		out.Messages = append(out.Messages, &tacklev1.PromptMessage{Role: msg.Role, Content: contentToProto([]tool.Content{msg.Content})[0]})
	}
	return out, nil
}

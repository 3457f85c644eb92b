package server

import (
	"context"

	"google.golang.org/grpc/codes"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/session"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// MCPAuth is the daemon's OAuth for remote MCP servers, for McpAuthService.
type MCPAuth interface {
	// Login runs (or joins) the OAuth flow of sess's server name: url gets
	// the URL to open as soon as the flow has it. It returns when the
	// server is connected (the outcome: authorized, already-authorized,
	// not-required) or fails with why not.
	Login(ctx context.Context, sess *session.Session, name string, force bool, url func(string)) (string, MCPServer, error)
	// Logout forgets the server's tokens and reconnects it; removed is the
	// token file ("" when there was none).
	Logout(ctx context.Context, sess *session.Session, name string) (removed string, srv MCPServer, err error)
	// PendingAuth lists the flows of sess's servers that wait for a person.
	PendingAuth(sess *session.Session) []event.MCPAuth
}

type mcpAuthService struct {
	tacklev1.UnimplementedMcpAuthServiceServer
	s *Server
}

func mcpAuthToProto(a *event.MCPAuth) *tacklev1.McpAuth {
	if a == nil {
		return nil
	}
	return &tacklev1.McpAuth{Server: a.Server, State: a.State, Url: a.URL, Error: a.Error}
}

func (a *mcpAuthService) McpLogin(req *tacklev1.McpLoginRequest, stream tacklev1.McpAuthService_McpLoginServer) error {
	ctx := stream.Context()
	if req.GetName() == "" {
		return mcpErr(codes.InvalidArgument, "name is required")
	}
	sess, err := a.s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return toStatus(err)
	}
	var sendErr error
	outcome, srv, err := a.s.opts.MCPAuth.Login(ctx, sess, req.GetName(), req.GetForce(), func(url string) {
		if sendErr == nil {
			sendErr = stream.Send(&tacklev1.McpLoginResponse{State: "required", Url: url})
		}
	})
	if sendErr != nil {
		return sendErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return toStatus(ctx.Err())
		}
		return mcpErr(codes.FailedPrecondition, "%v", err)
	}
	return stream.Send(&tacklev1.McpLoginResponse{State: outcome, Server: mcpServerToProto(srv)})
}

func (a *mcpAuthService) McpLogout(ctx context.Context, req *tacklev1.McpLogoutRequest) (*tacklev1.McpLogoutResponse, error) {
	if req.GetName() == "" {
		return nil, mcpErr(codes.InvalidArgument, "name is required")
	}
	sess, err := a.s.explainSession(ctx, req.GetSessionId(), req.GetCwd())
	if err != nil {
		return nil, toStatus(err)
	}
	removed, srv, err := a.s.opts.MCPAuth.Logout(ctx, sess, req.GetName())
	if err != nil {
		return nil, mcpErr(codes.FailedPrecondition, "%v", err)
	}
	a.s.log.Info("MCP server logged out", "name", req.GetName(), "removed", removed)
	return &tacklev1.McpLogoutResponse{Removed: removed, Server: mcpServerToProto(srv)}, nil
}

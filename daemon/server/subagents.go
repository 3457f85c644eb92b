package server

import (
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/store"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Subagents is the daemon's sub-agents, for SubagentService.
type Subagents interface {
	// Types lists the agent types sess may start, the losers to another
	// of the same name, and the definition files that could not be read.
	Types(sess *session.Session) (types, shadowed []AgentTypeInfo, problems []AgentTypeProblem)
	// List lists the sub-agents of sessionID's tree ("" every one).
	List(sessionID string) []event.SubagentInfo
	// Kill stops a running sub-agent; stopped is false when it had ended.
	// An unknown id is an error.
	Kill(id string) (info event.SubagentInfo, stopped bool, err error)
}

// AgentTypeInfo is one agent definition.
type AgentTypeInfo struct {
	Name, Description, Source, Path, Model, PermissionMode, Prompt string
	Tools, DisallowedTools, Skills                                 []string
	MaxTurns                                                       int
	Background                                                     bool
}

// AgentTypeProblem is a definition file (or field) that was not read.
type AgentTypeProblem struct {
	Path         string
	Line, Column int
	Message      string
}

// subagentService implements SubagentService.
type subagentService struct {
	tacklev1.UnimplementedSubagentServiceServer
	s *Server
}

func (a *subagentService) ListAgentTypes(ctx context.Context, req *tacklev1.ListAgentTypesRequest) (*tacklev1.ListAgentTypesResponse, error) {
	sess, err := a.s.session(ctx, req.GetSessionId())
	if err != nil {
		return nil, err
	}
	types, shadowed, problems := a.s.opts.Subagents.Types(sess)
	out := &tacklev1.ListAgentTypesResponse{}
	for _, t := range types {
		out.Types = append(out.Types, agentTypeToProto(t, false))
	}
	for _, t := range shadowed {
		out.Shadowed = append(out.Shadowed, agentTypeToProto(t, true))
	}
	for _, p := range problems {
		out.Problems = append(out.Problems, &tacklev1.AgentTypeProblem{Path: p.Path, Line: int32(p.Line), Column: int32(p.Column), Message: p.Message})
	}
	return out, nil
}

func (a *subagentService) ListSubagents(ctx context.Context, req *tacklev1.ListSubagentsRequest) (*tacklev1.ListSubagentsResponse, error) {
	if id := req.GetSessionId(); id != "" {
		if _, err := a.s.session(ctx, id); err != nil {
			return nil, err
		}
	}
	out := &tacklev1.ListSubagentsResponse{}
	for _, info := range a.s.opts.Subagents.List(req.GetSessionId()) {
		out.Agents = append(out.Agents, subagentToProto(&info))
	}
	return out, nil
}

func (a *subagentService) StopSubagent(ctx context.Context, req *tacklev1.StopSubagentRequest) (*tacklev1.StopSubagentResponse, error) {
	if req.GetId() == "" {
		return nil, status.Error(codes.InvalidArgument, "id is required: the agent's id (tackle agents ps lists them)")
	}
	info, stopped, err := a.s.opts.Subagents.Kill(req.GetId())
	if err != nil {
		return nil, status.Error(codes.NotFound, err.Error())
	}
	return &tacklev1.StopSubagentResponse{Stopped: stopped, Agent: subagentToProto(&info)}, nil
}

func agentTypeToProto(t AgentTypeInfo, shadowed bool) *tacklev1.AgentType {
	return &tacklev1.AgentType{
		Name: t.Name, Description: t.Description, Source: t.Source, Path: t.Path, Model: t.Model,
		Tools: t.Tools, DisallowedTools: t.DisallowedTools, PermissionMode: t.PermissionMode, MaxTurns: int32(t.MaxTurns),
		Background: t.Background, Skills: t.Skills, Prompt: t.Prompt, Shadowed: shadowed,
	}
}

func subagentToProto(in *event.SubagentInfo) *tacklev1.Subagent {
	if in == nil {
		return nil
	}
	return &tacklev1.Subagent{
		Id: in.ID, SessionId: in.ID, ParentSessionId: in.ParentSessionID, ParentCallId: in.ParentCallID,
		AgentType: in.Type, Description: in.Description, Status: in.Status, Background: in.Background,
		ToolUses: int32(in.ToolUses), Tokens: in.Tokens, DurationMs: in.DurationMS, Started: timeToProto(in.Started),
		Depth: int32(in.Depth), Model: in.Model, Error: in.Error, WorktreePath: in.WorktreePath, WorktreeBranch: in.WorktreeBranch,
	}
}

func agentLinkToProto(in *store.AgentLink) *tacklev1.AgentLink {
	if in == nil {
		return nil
	}
	return &tacklev1.AgentLink{
		ParentSessionId: in.ParentSessionID, ParentCallId: in.ParentCallID, RootSessionId: in.RootSessionID,
		AgentType: in.AgentType, Description: in.Description, Depth: int32(in.Depth), Background: in.Background,
	}
}

func agentRefToProto(in *event.AgentRef) *tacklev1.AgentRef {
	if in == nil {
		return nil
	}
	return &tacklev1.AgentRef{Id: in.ID, Type: in.Type, Description: in.Description, ParentCallId: in.ParentCallID}
}

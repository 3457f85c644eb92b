package client

import (
	"context"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// ListAgentTypes lists the agent types a session's Agent tool offers, the
// definitions other ones of the same name shadow, and the definition files
// that could not be read; ErrNotFound when the session does not exist.
func (c *Client) ListAgentTypes(ctx context.Context, sessionID string) (*tacklev1.ListAgentTypesResponse, error) {
	r, err := tacklev1.NewSubagentServiceClient(c.conn).ListAgentTypes(ctx, &tacklev1.ListAgentTypesRequest{SessionId: sessionID})
	return r, convertError(err)
}

// ListSubagents lists the sub-agents of a session's tree ("" = of every
// loaded session), running first; ErrNotFound when the session does not
// exist.
func (c *Client) ListSubagents(ctx context.Context, sessionID string) ([]*tacklev1.Subagent, error) {
	r, err := tacklev1.NewSubagentServiceClient(c.conn).ListSubagents(ctx, &tacklev1.ListSubagentsRequest{SessionId: sessionID})
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetAgents(), nil
}

// StopSubagent stops a running sub-agent and waits for its end; stopped is
// false when it had already ended. ErrNotFound when no sub-agent has the id.
func (c *Client) StopSubagent(ctx context.Context, id string) (agent *tacklev1.Subagent, stopped bool, err error) {
	r, err := tacklev1.NewSubagentServiceClient(c.conn).StopSubagent(ctx, &tacklev1.StopSubagentRequest{Id: id})
	if err != nil {
		return nil, false, convertError(err)
	}
	return r.GetAgent(), r.GetStopped(), nil
}

// SandboxStatus says what the Bash sandbox does for a session.
func (c *Client) SandboxStatus(ctx context.Context, sessionID string) (*tacklev1.SandboxStatusResponse, error) {
	r, err := tacklev1.NewSandboxServiceClient(c.conn).SandboxStatus(ctx, &tacklev1.SandboxStatusRequest{SessionId: sessionID})
	return r, convertError(err)
}

// ListHooks lists the hooks a session's settings configure.
func (c *Client) ListHooks(ctx context.Context, req *tacklev1.ListHooksRequest) (*tacklev1.ListHooksResponse, error) {
	r, err := tacklev1.NewHookServiceClient(c.conn).ListHooks(ctx, req)
	return r, convertError(err)
}

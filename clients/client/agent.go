package client

import (
	"context"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Prompt sends a prompt to a session's query loop: it starts at once or is
// queued while another prompt runs.
func (c *Client) Prompt(ctx context.Context, req *tacklev1.PromptRequest) (*tacklev1.PromptResponse, error) {
	r, err := tacklev1.NewAgentServiceClient(c.conn).Prompt(ctx, req)
	return r, convertError(err)
}

// CancelPrompt cancels a session's running prompt (promptID, if set, must
// be its id); cancelled is false when none was running.
func (c *Client) CancelPrompt(ctx context.Context, sessionID, promptID string) (cancelled bool, err error) {
	r, err := tacklev1.NewAgentServiceClient(c.conn).CancelPrompt(ctx, &tacklev1.CancelPromptRequest{SessionId: sessionID, PromptId: promptID})
	return r.GetCancelled(), convertError(err)
}

// Compact replaces a session's conversation by the model's summary of it.
func (c *Client) Compact(ctx context.Context, sessionID, instructions string) (*tacklev1.CompactResponse, error) {
	r, err := tacklev1.NewAgentServiceClient(c.conn).Compact(ctx, &tacklev1.CompactRequest{SessionId: sessionID, Instructions: instructions})
	return r, convertError(err)
}

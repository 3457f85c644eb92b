package client

import (
	"context"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// ListPendingPermissions lists the permission requests waiting for an
// answer, of one session ("" = every session), oldest first.
func (c *Client) ListPendingPermissions(ctx context.Context, sessionID string) ([]*tacklev1.PermissionRequest, error) {
	r, err := c.svc.ListPendingPermissions(ctx, &tacklev1.ListPendingPermissionsRequest{SessionId: sessionID})
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetRequests(), nil
}

// Explain asks what the permission stage would decide about a call,
// running nothing.
func (c *Client) Explain(ctx context.Context, req *tacklev1.ExplainRequest) (*tacklev1.ExplainResponse, error) {
	r, err := c.svc.Explain(ctx, req)
	return r, convertError(err)
}

// ListRules lists the effective permission rules of a session (or of the
// default session of cwd).
func (c *Client) ListRules(ctx context.Context, sessionID, cwd string) (*tacklev1.ListRulesResponse, error) {
	r, err := c.svc.ListRules(ctx, &tacklev1.ListRulesRequest{SessionId: sessionID, Cwd: cwd})
	return r, convertError(err)
}

// Audit lists recorded permission decisions of a session ("" = all), newest first.
func (c *Client) Audit(ctx context.Context, sessionID string, limit uint32) ([]*tacklev1.AuditEntry, error) {
	r, err := c.svc.Audit(ctx, &tacklev1.AuditRequest{SessionId: sessionID, Limit: limit})
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetEntries(), nil
}

// Trust marks an absolute directory as trusted.
func (c *Client) Trust(ctx context.Context, dir string, allowBypass bool) (*tacklev1.TrustResponse, error) {
	r, err := c.svc.Trust(ctx, &tacklev1.TrustRequest{Dir: dir, AllowBypass: allowBypass})
	return r, convertError(err)
}

// Untrust removes an absolute directory from the trusted ones.
func (c *Client) Untrust(ctx context.Context, dir string) (*tacklev1.UntrustResponse, error) {
	r, err := c.svc.Untrust(ctx, &tacklev1.UntrustRequest{Dir: dir})
	return r, convertError(err)
}

// ListTrusted lists the trusted directories.
func (c *Client) ListTrusted(ctx context.Context) ([]string, error) {
	r, err := c.svc.ListTrusted(ctx, &tacklev1.ListTrustedRequest{})
	if err != nil {
		return nil, convertError(err)
	}
	return r.GetDirs(), nil
}

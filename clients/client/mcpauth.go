package client

import (
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// McpAuth is the daemon's McpAuthService (OAuth of remote MCP servers).
func (c *Client) McpAuth() tacklev1.McpAuthServiceClient {
	return tacklev1.NewMcpAuthServiceClient(c.conn)
}

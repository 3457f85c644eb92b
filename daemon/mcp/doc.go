// Package mcp owns tackle's connections to MCP servers and turns their tools,
// resources and prompts into tackle's own.
//
// A [Manager] holds one [Conn] per distinct configured server (name and
// configuration digest) for the whole daemon, shared by every session whose
// configuration includes it and closed when the last of them lets go. A Conn
// starts its server (a stdio process in its own process group, or a
// Streamable HTTP or legacy SSE endpoint), keeps its tool, resource and
// prompt lists current, announces the sessions' working directories as MCP
// roots, and restarts or reconnects it when it dies. Calls go through
// [Conn.Do], which never retries a call.
//
// The package must not import the dispatcher, sessions or the gRPC server:
// it is a layer-2 package like the tool families, and it never decides
// permissions (the pipeline does).
package mcp

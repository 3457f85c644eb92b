// Package toolsearch owns deferred tool loading: which tools are deferred
// (the toolSearch setting: on, auto, auto:N, off), the listing of deferred
// names the model sees, the BM25 index over deferred tools' names and
// descriptions, and the ToolSearch tool with which the model finds and
// loads their schemas.
//
// Loading a tool changes only what the model sees, never a permission: a
// loaded tool's calls go through the same validation, hooks and permission
// as any other. The package holds no session state; which tools a session
// has loaded is the daemon's (persisted), reached through Options callbacks.
// It imports only daemon/tool and the standard library, and must not know
// about MCP connections, sessions or the pipeline.
package toolsearch

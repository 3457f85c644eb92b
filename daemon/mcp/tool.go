package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// ToolNamePrefix starts the name of every MCP tool: mcp__SERVER__TOOL.
const ToolNamePrefix = "mcp__"

// maxDescriptionBytes is where a server's tool description is cut
// (reference.md section 2: descriptions are cut at 2 KB).
const maxDescriptionBytes = 2048

// ToolName is the model-facing name of an MCP tool: "mcp__" +
// Sanitize(server) + "__" + Sanitize(tool).
func ToolName(server, tool string) string {
	return ToolNamePrefix + Sanitize(server) + "__" + Sanitize(tool)
}

// Sanitize replaces every character outside [A-Za-z0-9_-] with '_' (one '_'
// per character, not per byte).
func Sanitize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		if kept(r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// kept reports whether Sanitize keeps r: [A-Za-z0-9_-].
func kept(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-'
}

// cutSanitized reports whether s starts with Sanitize(raw) and returns
// what follows it, without building Sanitize(raw).
func cutSanitized(s, raw string) (string, bool) {
	for _, r := range raw {
		if len(s) == 0 {
			return "", false
		}
		if kept(r) {
			if s[0] != byte(r) {
				return "", false
			}
		} else if s[0] != '_' {
			return "", false
		}
		s = s[1:]
	}
	return s, true
}

// isSanitized reports whether s == Sanitize(raw), without building it.
func isSanitized(s, raw string) bool {
	rest, ok := cutSanitized(s, raw)
	return ok && rest == ""
}

// ToolOptions says how a session's MCP tools behave. The zero value (and
// nil) means the defaults.
type ToolOptions struct {
	// MaxOutputTokens is MAX_MCP_OUTPUT_TOKENS (default 25,000): the result
	// size, at 4 characters a token, over which the pipeline persists the
	// output and gives the model a preview.
	MaxOutputTokens int
	// DefaultTimeout bounds a call of a server without its own "timeout";
	// zero means no bound but the caller's context.
	DefaultTimeout time.Duration
}

func (o *ToolOptions) withDefaults() ToolOptions {
	var out ToolOptions
	if o != nil {
		out = *o
	}
	if out.MaxOutputTokens <= 0 {
		out.MaxOutputTokens = DefaultMaxOutputTokens
	}
	return out
}

// Tools returns the tools of the servers session sessionID uses, one
// tool.Tool per MCP tool, sorted by server and then in the server's order.
// Servers that failed, need approval or authentication, or are disabled
// contribute nothing; a server still connecting contributes its last
// lists. When two tools get the same name (their names differ only in
// characters that Sanitize replaces, or a server's name holds "__"), the
// first is kept and the other is left out (Collisions lists them). The
// tools hold no connection: each call finds the session's connection to
// the server by name when it runs.
func (m *Manager) Tools(sessionID string, opts *ToolOptions) []tool.Tool {
	tools, _ := m.pool(sessionID, opts, true)
	return tools
}

// Collision is a tool Tools leaves out: the model-facing Name of Server's
// Tool is KeptServer's KeptTool's already.
type Collision struct {
	Name, Server, Tool, KeptServer, KeptTool string
}

// Collisions lists the tools Tools leaves out for session sessionID.
func (m *Manager) Collisions(sessionID string) []Collision {
	_, cs := m.pool(sessionID, nil, false)
	return cs
}

// pool is Tools (the tools built only with build) and its collisions,
// each logged the first time it is seen.
func (m *Manager) pool(sessionID string, opts *ToolOptions, build bool) ([]tool.Tool, []Collision) {
	o := opts.withDefaults()
	var (
		out []tool.Tool
		cs  []Collision
	)
	type owner struct{ server, tool string }
	seen := map[string]owner{} // model-facing name → the tool that has it
	for _, c := range m.Conns(sessionID) {
		if !offersTools(c.State()) {
			continue
		}
		cfg := c.Config()
		for _, t := range c.Tools() {
			if t == nil {
				continue
			}
			name := ToolName(c.Name(), t.Name)
			if first, dup := seen[name]; dup {
				col := Collision{Name: name, Server: c.Name(), Tool: t.Name, KeptServer: first.server, KeptTool: first.tool}
				m.logCollision(col)
				cs = append(cs, col)
				continue
			}
			seen[name] = owner{c.Name(), t.Name}
			if build {
				out = append(out, newTool(m, sessionID, c.Name(), cfg.AlwaysLoad, t, o))
			}
		}
	}
	return out, cs
}

// logCollision logs a collision the first time it is seen.
func (m *Manager) logCollision(c Collision) {
	key := c.Name + "\x00" + c.Server + "\x00" + c.Tool
	m.collidedMu.Lock()
	logged := m.collided[key]
	if !logged {
		if m.collided == nil || len(m.collided) >= maxCachedSpecs {
			m.collided = map[string]bool{}
		}
		m.collided[key] = true
	}
	m.collidedMu.Unlock()
	if !logged {
		m.log.Warn("two MCP tools have the same name; the first is kept", "name", c.Name,
			"kept", c.KeptServer+"/"+c.KeptTool, "dropped", c.Server+"/"+c.Tool)
	}
}

// ServerOf names the server of t, a tool from Tools or Lookup.
func ServerOf(t tool.Tool) (string, bool) {
	mt, ok := t.(*mcpTool)
	if !ok {
		return "", false
	}
	return mt.server, true
}

// Lookup returns the tool with the model-facing name (as Tools names it) of
// session sessionID's servers. It builds only that tool; on a name
// collision it finds the one Tools keeps.
func (m *Manager) Lookup(sessionID, name string, opts *ToolOptions) (tool.Tool, bool) {
	if !strings.HasPrefix(name, ToolNamePrefix) {
		return nil, false
	}
	rest := name[len(ToolNamePrefix):]
	for _, c := range m.Conns(sessionID) {
		tname, ok := cutSanitized(rest, c.Name())
		if !ok || !strings.HasPrefix(tname, "__") {
			continue
		}
		tname = tname[2:]
		// A failed HTTP or SSE server is reconnected for the next call
		// (Conn.Do): its last tools stay callable.
		if st := c.State(); !offersTools(st) && (st != Failed || c.Config().Type == "stdio") {
			continue
		}
		for _, t := range c.Tools() {
			if t != nil && isSanitized(tname, t.Name) {
				return newTool(m, sessionID, c.Name(), c.Config().AlwaysLoad, t, opts.withDefaults()), true
			}
		}
	}
	return nil, false
}

// offersTools reports whether a server in state s contributes its tools.
func offersTools(s State) bool {
	switch s {
	case Failed, NeedsApproval, NeedsTrust, NeedsAuth, Disabled:
		return false
	}
	return true
}

// mcpTool is one MCP tool as a tool.Tool. It is immutable and safe for
// concurrent use.
type mcpTool struct {
	m         *Manager
	sessionID string
	server    string // configured server name
	name      string // the tool's name on the server
	spec      tool.Spec
	attrs     tool.Attributes
	opts      ToolOptions
}

func newTool(m *Manager, sessionID, server string, alwaysLoad bool, t *mcpsdk.Tool, o ToolOptions) *mcpTool {
	mt := &mcpTool{m: m, sessionID: sessionID, server: server, name: t.Name, opts: o}
	mt.spec = m.specOf(server, t)
	mt.attrs = tool.Attributes{
		Origin:           tool.OriginMCPPrefix + server,
		Deferred:         !alwaysLoad,
		MaxResultChars:   resultLimit(o.MaxOutputTokens, t.Meta),
		ExactResultLimit: true,
	}
	if a := t.Annotations; a != nil {
		if a.ReadOnlyHint {
			mt.attrs.ReadOnly = true
			mt.attrs.ConcurrencySafe = true
		}
		if a.DestructiveHint != nil && *a.DestructiveHint {
			mt.attrs.Destructive = true
		}
	}
	return mt
}

// inputSchema is the server's schema as JSON (the go-sdk client decodes it
// into a map: re-encoding gives the same JSON value, keys sorted). A tool
// without one takes any object.
func inputSchema(s any) json.RawMessage {
	if s == nil {
		return json.RawMessage(`{"type":"object"}`)
	}
	if raw, ok := s.(json.RawMessage); ok {
		return raw
	}
	raw, err := json.Marshal(s)
	if err != nil {
		// Cannot happen for a decoded JSON value; the pipeline reports an
		// invalid schema rather than calling the tool.
		return json.RawMessage(fmt.Sprintf(`{"type":"object","not":{},"description":%q}`, "unencodable input schema: "+err.Error()))
	}
	return raw
}

// cutDescription cuts a description to maxDescriptionBytes on a character
// boundary.
func cutDescription(s string) string {
	if len(s) <= maxDescriptionBytes {
		return s
	}
	cut := maxDescriptionBytes
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "… [description cut at 2 KB]"
}

// Spec implements tool.Tool.
func (t *mcpTool) Spec() tool.Spec { return t.spec }

// Attributes implements tool.Tool: from the tool's annotations
// (readOnlyHint → read-only and concurrency-safe, destructiveHint →
// destructive), deferred unless the server is alwaysLoad.
func (t *mcpTool) Attributes(json.RawMessage) tool.Attributes { return t.attrs }

// Validate implements tool.Tool: the pipeline's schema check is all.
func (t *mcpTool) Validate(context.Context, *tool.Call) error { return nil }

// CheckPermission implements tool.Tool: an MCP call acts where tackle cannot
// see, so a server's readOnlyHint never allows it by itself (hints are
// untrusted): rules match it by name (mcp__srv, mcp__srv__*,
// mcp__srv__tool), modes and hooks decide, else a person is asked.
func (t *mcpTool) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return tool.Access{Kind: tool.AccessExternal}, nil
}

// errTimedOut is the cause of a call's context when its timeout expires.
var errTimedOut = errors.New("mcp tool call timed out")

// tokens numbers progress tokens of calls without an ID.
var tokens atomic.Int64

// Run implements tool.Tool: it calls the tool on the session's connection
// to the server. The progress token is the call's ID, and the server's
// progress notifications go to progress. The call is bounded by the server's
// "timeout" (else ToolOptions.DefaultTimeout); when ctx ends the go-sdk
// sends notifications/cancelled. A server that dies mid-call, a timeout
// and a protocol error are error results naming the server and the tool.
func (t *mcpTool) Run(ctx context.Context, call *tool.Call, progress tool.Progress) (*tool.Result, error) {
	conn, ok := t.m.Conn(t.sessionID, t.server)
	if !ok {
		return tool.ErrorResult(fmt.Sprintf("MCP server %s is no longer configured for this session: %s cannot be called", t.server, t.spec.Name)), nil
	}
	timeout := conn.Config().Timeout
	if timeout <= 0 {
		timeout = t.opts.DefaultTimeout
	}
	parent := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, timeout, errTimedOut)
		defer cancel()
	}
	params := &mcpsdk.CallToolParams{Name: t.name, Arguments: arguments(call.Input)}
	if progress != nil {
		var token any = call.ID
		if call.ID == "" {
			token = fmt.Sprintf("tackle-%d", tokens.Add(1))
		}
		params.SetProgressToken(token)
		stop := conn.WatchProgress(token, func(p *mcpsdk.ProgressNotificationParams) { progress(ProgressText(p) + "\n") }) // a line each: call_progress events join what comes within 50 ms
		defer stop()
	}
	var res *mcpsdk.CallToolResult
	err := conn.Do(ctx, func(ctx context.Context, cs *mcpsdk.ClientSession) error {
		r, err := cs.CallTool(ctx, params)
		res = r
		return err
	})
	switch {
	case err == nil:
	case parent.Err() != nil:
		return nil, fmt.Errorf("calling %s on MCP server %s: %w", t.name, t.server, parent.Err())
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), errTimedOut):
		return tool.ErrorResult(fmt.Sprintf("MCP server %s: tool %s timed out after %s (the server's \"timeout\" setting, in ms, changes the limit)", t.server, t.name, timeout)), nil
	default:
		var se *ServerError
		var ste *StateError
		if errors.As(err, &se) || errors.As(err, &ste) {
			// These name the server and say what happened to it.
			return tool.ErrorResult(fmt.Sprintf("Calling tool %s: %v", t.name, err)), nil
		}
		return tool.ErrorResult(fmt.Sprintf("MCP server %s: tool %s failed: %v", t.server, t.name, err)), nil
	}
	out := ToolResult(res)
	out.Warning = largeWarning(t.spec.Name, out, t.opts.MaxOutputTokens)
	return out, nil
}

// arguments is the call's input as the arguments object ({} when empty).
func arguments(input json.RawMessage) json.RawMessage {
	if len(strings.TrimSpace(string(input))) == 0 {
		return json.RawMessage("{}")
	}
	return input
}

// ProgressText renders a progress notification for a progress event:
// "3/10 message", "3 message" without a total, or the message alone.
func ProgressText(p *mcpsdk.ProgressNotificationParams) string {
	if p == nil {
		return ""
	}
	var n string
	switch {
	case p.Total > 0:
		n = fmt.Sprintf("%g/%g", p.Progress, p.Total)
	case p.Progress != 0:
		n = fmt.Sprintf("%g", p.Progress)
	}
	switch {
	case n == "":
		return p.Message
	case p.Message == "":
		return n
	}
	return n + " " + p.Message
}

package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// selection is Options.Tools: which of the session's tools are served.
type selection struct {
	mcp, all bool
	patterns []string
}

// parseSelection reads Options.Tools; nothing means "mcp".
func parseSelection(values []string) (selection, error) {
	var s selection
	for _, v := range values {
		for _, p := range strings.Split(v, ",") {
			switch p = strings.TrimSpace(p); p {
			case "":
			case "mcp":
				s.mcp = true
			case "all":
				s.all = true
			default:
				if _, err := path.Match(p, ""); err != nil {
					return s, fmt.Errorf("invalid --tools pattern %q: %v (use mcp, all, or globs such as github__* or Read)", p, err)
				}
				s.patterns = append(s.patterns, p)
			}
		}
	}
	if !s.mcp && !s.all && len(s.patterns) == 0 {
		s.mcp = true
	}
	return s, nil
}

// notWithAll are built-ins "all" leaves out: ToolSearch loads deferred tools
// into the tackle session, which changes nothing for an MCP client that is
// given every schema. A pattern still picks it.
var notWithAll = map[string]bool{"ToolSearch": true}

// picks reports whether the tool is served.
func (s selection) picks(served, name string, isMCP bool) bool {
	switch {
	case s.all && (isMCP || !notWithAll[name]):
		return true
	case s.mcp && isMCP:
		return true
	}
	for _, p := range s.patterns {
		if matches(p, served, name) {
			return true
		}
	}
	return false
}

// matches reports whether pattern p picks a tool by its served name or
// tackle's.
func matches(p, served, name string) bool {
	if ok, _ := path.Match(p, served); ok {
		return true
	}
	ok, _ := path.Match(p, name)
	return ok
}

// servedTool is one tool as served, and tackle's name for it.
type servedTool struct {
	tool  *mcp.Tool
	name  string // tackle's: mcp__srv__tool, Read
	isMCP bool
	sig   string // the tool's JSON, to tell a change
}

// mcpToolPrefix starts tackle's names of MCP tools: mcp__SERVER__TOOL.
const mcpToolPrefix = "mcp__"

// isMCPTool reports whether info is an MCP server's tool.
func isMCPTool(info *tacklev1.ToolInfo) bool {
	return strings.HasPrefix(info.GetAttributes().GetOrigin(), "mcp:") && strings.HasPrefix(info.GetName(), mcpToolPrefix)
}

// servedName is the name a tool is served under: an MCP tool's without
// "mcp__" (srv__tool, the server's own tool name after its server's), a
// built-in's own.
func servedName(info *tacklev1.ToolInfo) string {
	if isMCPTool(info) {
		return strings.TrimPrefix(info.GetName(), mcpToolPrefix)
	}
	return info.GetName()
}

// toMCPTool describes a tackle tool as an MCP tool: the schema as the
// daemon has it (the server's, for an MCP tool), and for an MCP tool its
// server's own title, description (unshortened), annotations and output
// schema; a built-in gets the annotations the daemon knows (read-only,
// destructive), nothing invented.
func toMCPTool(info *tacklev1.ToolInfo, served string) (*mcp.Tool, error) {
	schema, err := objectSchema(info.GetInputSchemaJson())
	if err != nil {
		return nil, err
	}
	desc := info.GetDescription()
	if d := info.GetOriginalDescription(); d != "" {
		desc = d
	}
	t := &mcp.Tool{
		Name: served, Title: info.GetTitle(), Description: desc, InputSchema: schema,
		Meta: mcp.Meta{"tackle/tool": info.GetName(), "tackle/origin": info.GetAttributes().GetOrigin()},
	}
	if raw := info.GetOutputSchemaJson(); raw != "" && json.Valid([]byte(raw)) {
		t.OutputSchema = json.RawMessage(raw)
	}
	if raw := info.GetAnnotationsJson(); raw != "" {
		var an mcp.ToolAnnotations
		if err := json.Unmarshal([]byte(raw), &an); err == nil {
			t.Annotations = &an
			return t, nil
		}
	}
	if a := info.GetAttributes(); a.GetReadOnly() || a.GetDestructive() {
		t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: a.GetReadOnly()}
		if a.GetDestructive() {
			yes := true
			t.Annotations.DestructiveHint = &yes
		}
	}
	return t, nil
}

// objectSchema checks that raw is a JSON Schema object of type "object",
// as MCP requires of an input schema; one without a type gets it. Empty is
// any object.
func objectSchema(raw string) (json.RawMessage, error) {
	if strings.TrimSpace(raw) == "" {
		return json.RawMessage(`{"type":"object"}`), nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("its input schema is not a JSON object: %v", err)
	}
	switch m["type"] {
	case "object":
		return json.RawMessage(raw), nil
	case nil:
		m["type"] = "object"
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("encoding its input schema: %v", err)
		}
		return b, nil
	}
	return nil, fmt.Errorf("its input schema has type %v, not object", m["type"])
}

func rawJSON(s string) json.RawMessage { return json.RawMessage(s) }

// refreshTools lists the session's tools and gives the go-sdk server the
// changes (it sends notifications/tools/list_changed, debounced).
func (b *bridge) refreshTools(ctx context.Context) {
	infos, err := b.rpc().ListTools(ctx, &tacklev1.ListToolsRequest{SessionId: b.sid, All: true})
	if err != nil {
		b.logf("listing the tools of session %s: %v", b.sid, err)
		return
	}
	want := map[string]*servedTool{}
	matched := map[string]bool{}
	for _, info := range infos {
		served, mcpTool := servedName(info), isMCPTool(info)
		for _, p := range b.sel.patterns {
			if !matched[p] && matches(p, served, info.GetName()) {
				matched[p] = true
			}
		}
		if !b.sel.picks(served, info.GetName(), mcpTool) {
			continue
		}
		if _, dup := want[served]; dup {
			continue
		}
		t, err := toMCPTool(info, served)
		if err != nil {
			b.logf("not serving %s: %v", info.GetName(), err)
			continue
		}
		sig, _ := json.Marshal(t)
		want[served] = &servedTool{tool: t, name: info.GetName(), isMCP: mcpTool, sig: string(sig)}
	}
	var gone []string
	for name := range b.tools {
		if want[name] == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		b.srv.RemoveTools(gone...)
	}
	for name, st := range want {
		if old := b.tools[name]; old != nil && old.sig == st.sig {
			want[name] = old
			continue
		}
		if err := catch(func() { b.srv.AddTool(st.tool, b.toolHandler(st)) }); err != nil {
			b.logf("not serving %s: %v", st.name, err)
			delete(want, name)
		}
	}
	b.tools = want
	b.reportPatterns(matched)
}

// reportPatterns warns, once until it matches, about each --tools
// pattern that matches none of the session's tools: likely a typo, though
// serving goes on, as a server that connects later may bring its tools.
func (b *bridge) reportPatterns(matched map[string]bool) {
	var news []string
	b.mu.Lock()
	for _, p := range b.sel.patterns {
		switch {
		case matched[p]:
			delete(b.unmatched, p)
		case b.unmatched[p] == "":
			msg := fmt.Sprintf("--tools pattern %q matches none of the session's tools, so it serves nothing (yet: tools of servers that connect later are served if it matches them); `tackle tools --session %s` lists the session's tools", p, b.sid)
			b.unmatched[p] = msg
			news = append(news, msg)
		}
	}
	ss := b.ss
	b.mu.Unlock()
	for _, msg := range news {
		b.tell(ss, "warning", msg)
	}
}

// catch runs f and returns the panic it raised, if any: the go-sdk panics
// on a tool, resource or template it finds invalid, which here comes from
// a third-party server, not from this code.
func catch(f func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	f()
	return nil
}

// toolHandler runs a tools/call as a call of the session.
func (b *bridge) toolHandler(st *servedTool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		input := string(bytes.TrimSpace(req.Params.Arguments))
		if input == "" || input == "null" {
			input = "{}"
		}
		var res *mcp.CallToolResult
		var err error
		b.onCaller(func() {
			var r *tacklev1.ToolResult
			if r, err = b.runCall(ctx, req.Session, st.name, st.tool.Name, input, req.Params.GetProgressToken(), st.isMCP); err == nil {
				res = callResult(r)
			}
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return errorResult(fmt.Sprintf("tackle could not run %s: %v", st.name, err)), nil
		}
		return res, nil
	}
}

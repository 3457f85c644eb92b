package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// The prompts of the session's connected MCP servers are served as
// SERVER__PROMPT (tackle's /mcp__SERVER__PROMPT without "mcp__"), rendered
// by the daemon's GetPrompt on the shared connection. A prompt is something
// a person invokes, not a tool call: it does not go through the pipeline,
// as `tackle mcp prompt` does not.

// refreshPrompts lists the prompts of the connected servers and gives the
// go-sdk server the changes.
func (b *bridge) refreshPrompts(ctx context.Context, servers []*tacklev1.McpServer) {
	type entry struct {
		p      *mcp.Prompt
		server string
		name   string // the server's name of the prompt
		sig    string
	}
	want := map[string]*entry{}
	for _, s := range servers {
		if s.GetState() != "connected" || s.GetPrompts() == 0 {
			continue
		}
		resp, err := b.rpc().Service().ListMcpPrompts(ctx, &tacklev1.ListMcpPromptsRequest{SessionId: b.sid, Server: s.GetName()})
		if err != nil {
			b.logf("listing the prompts of MCP server %s: %v", s.GetName(), client.Err(err))
			continue
		}
		for _, p := range resp.GetPrompts() {
			served := strings.TrimPrefix(p.GetCommand(), "/"+mcpToolPrefix)
			if served == "" || served == p.GetCommand() {
				served = s.GetName() + "__" + p.GetName()
			}
			if _, dup := want[served]; dup {
				continue
			}
			mp := &mcp.Prompt{Name: served, Title: p.GetTitle(), Description: p.GetDescription()}
			for _, a := range p.GetArguments() {
				mp.Arguments = append(mp.Arguments, &mcp.PromptArgument{Name: a.GetName(), Description: a.GetDescription(), Required: a.GetRequired()})
			}
			sig, _ := json.Marshal(mp)
			want[served] = &entry{p: mp, server: s.GetName(), name: p.GetName(), sig: string(sig)}
		}
	}
	var gone []string
	for name := range b.prompts {
		if want[name] == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		b.srv.RemovePrompts(gone...)
	}
	now := map[string]string{}
	for name, e := range want {
		now[name] = e.sig
		if b.prompts[name] == e.sig {
			continue
		}
		b.srv.AddPrompt(e.p, b.promptHandler(e.p, e.server, e.name))
	}
	b.prompts = now
}

// promptHandler renders prompt p (the server's name of it) of server with
// the daemon's GetPrompt, which checks the arguments: a request it finds
// wrong (InvalidArgument: bad arguments, no such prompt or server; or
// NotFound) is invalid params (-32602) with the daemon's message, which
// says what the prompt takes; anything else (the server not connected or
// failing, which client.Err would call invalid too) is an internal error.
func (b *bridge) promptHandler(p *mcp.Prompt, server, name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		r := &tacklev1.GetPromptRequest{SessionId: b.sid, Server: server, Name: name, Arguments: req.Params.Arguments}
		resp, err := b.rpc().Service().GetPrompt(ctx, r)
		if err != nil {
			code := int64(jsonrpc.CodeInternalError)
			if c := status.Code(err); c == codes.InvalidArgument || c == codes.NotFound {
				code = jsonrpc.CodeInvalidParams
			}
			return nil, &jsonrpc.Error{Code: code, Message: fmt.Sprintf("rendering prompt %s: %s", p.Name, withoutKind(client.Err(err)))}
		}
		out := &mcp.GetPromptResult{Description: resp.GetDescription(), Messages: []*mcp.PromptMessage{}}
		for _, m := range resp.GetMessages() {
			out.Messages = append(out.Messages, &mcp.PromptMessage{Role: mcp.Role(m.GetRole()), Content: content(m.GetContent())})
		}
		return out, nil
	}
}

// withoutKind is err's text without the client's kind in front ("invalid
// argument: "), which says nothing to an MCP client.
func withoutKind(err error) string {
	msg := err.Error()
	for _, kind := range []error{client.ErrInvalidArgument, client.ErrNotFound} {
		msg = strings.TrimPrefix(msg, kind.Error()+": ")
	}
	return msg
}

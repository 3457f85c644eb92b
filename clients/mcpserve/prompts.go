package mcpserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
// the daemon's GetPrompt. Its arguments are checked here first, so that
// bad ones are invalid params (-32602) with a message that says what the
// prompt takes: the daemon reports every failure of GetPrompt with one
// code, the server's own too.
func (b *bridge) promptHandler(p *mcp.Prompt, server, name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if msg := checkPromptArgs(p, req.Params.Arguments); msg != "" {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
		}
		r := &tacklev1.GetPromptRequest{SessionId: b.sid, Server: server, Name: name, Arguments: req.Params.Arguments}
		resp, err := b.rpc().Service().GetPrompt(ctx, r)
		if err != nil {
			err = client.Err(err)
			code := int64(jsonrpc.CodeInternalError)
			if errors.Is(err, client.ErrInvalidArgument) || errors.Is(err, client.ErrNotFound) {
				code = jsonrpc.CodeInvalidParams
			}
			return nil, &jsonrpc.Error{Code: code, Message: fmt.Sprintf("rendering prompt %s: %s", p.Name, withoutKind(err))}
		}
		out := &mcp.GetPromptResult{Description: resp.GetDescription(), Messages: []*mcp.PromptMessage{}}
		for _, m := range resp.GetMessages() {
			out.Messages = append(out.Messages, &mcp.PromptMessage{Role: mcp.Role(m.GetRole()), Content: content(m.GetContent())})
		}
		return out, nil
	}
}

// checkPromptArgs says what is wrong with args for p (a missing required
// argument, one p does not take) and what p takes, or "".
func checkPromptArgs(p *mcp.Prompt, args map[string]string) string {
	declared := map[string]bool{}
	var missing, unknown, usage []string
	for _, a := range p.Arguments {
		declared[a.Name] = true
		if _, ok := args[a.Name]; a.Required && !ok {
			missing = append(missing, a.Name)
		}
		if a.Required {
			usage = append(usage, a.Name)
		} else {
			usage = append(usage, "["+a.Name+"]")
		}
	}
	for k := range args {
		if !declared[k] {
			unknown = append(unknown, k)
		}
	}
	if len(missing) == 0 && len(unknown) == 0 {
		return ""
	}
	sort.Strings(unknown)
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, "missing required arguments: "+strings.Join(missing, ", "))
	}
	if len(unknown) > 0 {
		problems = append(problems, "unknown arguments: "+strings.Join(unknown, ", "))
	}
	takes := "no arguments"
	if len(usage) > 0 {
		takes = "the arguments " + strings.Join(usage, " ")
	}
	return fmt.Sprintf("prompt %s: %s (it takes %s)", p.Name, strings.Join(problems, "; "), takes)
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

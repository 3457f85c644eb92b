package mcpserve

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// starting reports whether a server state is one a server leaves by itself.
func starting(state string) bool { return state == "pending" || state == "connecting" }

// settle waits until none of the session's MCP servers is starting, or
// SettleTimeout, re-checking at every tools_changed event of an observer
// stream on c, so the first tools/list (or the first call after the daemon
// restarted) finds their tools.
func (b *bridge) settle(ctx context.Context, c *client.Client) {
	if b.o.SettleTimeout < 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, b.o.SettleTimeout)
	defer cancel()
	st, err := c.Attach(ctx, tacklev1.Role_ROLE_OBSERVER)
	if err != nil {
		return
	}
	defer st.Close()
	if _, err := st.SubscribeTypes(b.sid, 0, true, []string{"tools_changed"}); err != nil {
		return
	}
	msgs := st.Chan(ctx)
	for {
		resp, err := c.Service().ListMcpServers(ctx, &tacklev1.ListMcpServersRequest{SessionId: b.sid})
		if err != nil {
			return
		}
		var waiting []string
		for _, s := range resp.GetServers() {
			if starting(s.GetState()) {
				waiting = append(waiting, s.GetName())
			}
		}
		if len(waiting) == 0 {
			return
		}
	wait:
		for {
			select {
			case it, ok := <-msgs:
				if !ok || it.Err != nil {
					return
				}
				if it.Msg.GetEvent().GetType() == "tools_changed" {
					break wait
				}
			case <-ctx.Done():
				b.logf("MCP servers still starting after %s: %s; their tools follow when they are connected", b.o.SettleTimeout, strings.Join(waiting, ", "))
				return
			}
		}
	}
}

// requestRefresh asks the refresher to list again.
func (b *bridge) requestRefresh() {
	select {
	case b.refresh <- struct{}{}:
	default:
	}
}

// refresher lists again at every request until the bridge ends.
func (b *bridge) refresher() {
	defer b.wg.Done()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-b.refresh:
			b.refreshAll(b.ctx)
		}
	}
}

// refreshAll lists the servers (and tells what is wrong with them), the
// tools and the prompts, and the resources if the client listed them.
func (b *bridge) refreshAll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	resp, err := b.rpc().Service().ListMcpServers(ctx, &tacklev1.ListMcpServersRequest{SessionId: b.sid})
	if err != nil {
		b.logf("listing the MCP servers of session %s: %v", b.sid, client.Err(err))
	} else {
		b.reportServers(resp)
	}
	b.refreshTools(ctx)
	if err == nil {
		b.refreshPrompts(ctx, resp.GetServers())
	}
	b.resourcesChanged(ctx)
}

// reportServers tells, once per change, about servers whose tools are
// missing and what to run about it, and about the ones that are back.
func (b *bridge) reportServers(resp *tacklev1.ListMcpServersResponse) {
	now := map[string]string{}
	for _, s := range resp.GetServers() {
		if msg := b.problemOf(s); msg != "" {
			now[s.GetName()] = msg
		}
	}
	for _, p := range resp.GetProblems() {
		key := "config:" + p.GetPath() + ":" + p.GetServer()
		now[key] = fmt.Sprintf("%s: %s (the entry is ignored until it is fixed)", where(p), p.GetMessage())
	}
	b.mu.Lock()
	var news, fixed []string
	for k, msg := range now {
		if b.problems[k] != msg {
			news = append(news, msg)
		}
	}
	for k := range b.problems {
		if _, still := now[k]; !still && !strings.HasPrefix(k, "config:") {
			fixed = append(fixed, k)
		}
	}
	b.problems = now
	ss := b.ss
	b.mu.Unlock()
	sort.Strings(news)
	sort.Strings(fixed)
	for _, msg := range news {
		b.tell(ss, "warning", msg)
	}
	for _, name := range fixed {
		b.tell(ss, "info", fmt.Sprintf("MCP server %s is usable again: its tools are served", name))
	}
}

func where(p *tacklev1.McpProblem) string {
	if p.GetServer() != "" {
		return fmt.Sprintf("%s: MCP server %q", p.GetPath(), p.GetServer())
	}
	return p.GetPath()
}

// problemOf says why a server's tools are missing and what to run, or ""
// for a server that is fine (or starting, or disabled on purpose).
func (b *bridge) problemOf(s *tacklev1.McpServer) string {
	name, why := s.GetName(), ""
	if e := s.GetError(); e != "" {
		why = ": " + e
	}
	sess := " --session " + b.sid
	switch s.GetState() {
	case "failed":
		return fmt.Sprintf("MCP server %s failed%s. Its tools are not served. Its log: `tackle mcp logs %s%s`; retry: `tackle mcp reconnect %s%s`.", name, why, name, sess, name, sess)
	case "needs-auth":
		login := fmt.Sprintf("run `tackle mcp login %s%s`", name, sess)
		if u := s.GetAuthUrl(); u != "" {
			login = "open " + u + " in a browser, or " + login
		}
		return fmt.Sprintf("MCP server %s needs authentication%s. Its tools are not served. To authorise tackle, %s; for a token in its entry's headers, fix it (`tackle mcp get %s%s`) and run `tackle mcp reconnect %s%s`.",
			name, why, login, name, sess, name, sess)
	case "needs-approval":
		return fmt.Sprintf("MCP server %s (the project's .mcp.json) is not approved%s. Its tools are not served. Approve it: `tackle mcp approve %s --cwd %s` (the project must be trusted too: `tackle trust %s`).", name, why, name, b.root, b.root)
	case "needs-trust":
		return fmt.Sprintf("MCP server %s comes from the files of a project that is not trusted%s. Its tools are not served. Trust the project: `tackle trust %s` (an .mcp.json server must be approved too: `tackle mcp approve %s --cwd %s`).", name, why, b.root, name, b.root)
	}
	return ""
}

// tell logs msg on Log and as an MCP log message (which the client gets
// once it has set a level: logging/setLevel re-sends the open problems).
func (b *bridge) tell(ss *mcp.ServerSession, level mcp.LoggingLevel, msg string) {
	b.logf("%s", msg)
	b.mcpLog(ss, level, msg)
}

// mcpLog sends msg as an MCP log message (dropped by the go-sdk until the
// client sets a level).
func (b *bridge) mcpLog(ss *mcp.ServerSession, level mcp.LoggingLevel, msg string) {
	if ss == nil {
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	_ = ss.Log(ctx, &mcp.LoggingMessageParams{Level: level, Logger: "tackle", Data: msg})
}

// middleware re-sends the open problems once a client sets its log level,
// and lists the resources before a client reads them.
func (b *bridge) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		b.requests.Add(1)
		switch method {
		case "resources/list", "resources/templates/list", "resources/read":
			b.listResourcesOnce(ctx)
		}
		res, err := next(ctx, method, req)
		if method == "logging/setLevel" && err == nil {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			b.mu.Lock()
			var msgs []string
			for _, m := range b.problems {
				msgs = append(msgs, m)
			}
			b.mu.Unlock()
			sort.Strings(msgs)
			for _, m := range msgs {
				b.mcpLog(ss, "warning", m)
			}
		}
		return res, err
	}
}

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

// problem is what is wrong with a server (or a config entry), as told.
type problem struct {
	state string // the server's state (a config entry's: its message)
	msg   string
}

// reportServers tells, once per change of state, about servers whose
// tools are missing and what to run about it, and about the ones that are
// back. Neither a change of the error alone nor a retry is told again: a
// remote server that stays unreachable goes from failed to connecting and
// back at every retry, with a new error each time ("attempt N").
func (b *bridge) reportServers(resp *tacklev1.ListMcpServersResponse) {
	b.mu.Lock()
	old := b.problems
	b.mu.Unlock()
	now := map[string]problem{}
	for _, s := range resp.GetServers() {
		if msg := b.problemOf(s); msg != "" {
			now[s.GetName()] = problem{state: s.GetState(), msg: msg}
		} else if p, ok := old[s.GetName()]; ok && starting(s.GetState()) {
			now[s.GetName()] = p // trying again: still the problem told
		}
	}
	for _, p := range resp.GetProblems() {
		key := "config:" + p.GetPath() + ":" + p.GetServer()
		msg := fmt.Sprintf("%s: %s (the entry is ignored until it is fixed)", where(p), p.GetMessage())
		now[key] = problem{state: msg, msg: msg}
	}
	b.mu.Lock()
	var news, fixed []string
	for k, p := range now {
		if old, ok := b.problems[k]; !ok || old.state != p.state {
			news = append(news, p.msg)
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
		if s.GetTransport() == "stdio" {
			return fmt.Sprintf("MCP server %s failed%s. Its tools are not served. Its log: `tackle mcp logs %s%s`; retry: `tackle mcp reconnect %s%s`.", name, why, name, sess, name, sess)
		}
		// A remote server has no log of its own; tackle retries it by
		// itself, and the list shows the attempts and the next one.
		return fmt.Sprintf("MCP server %s failed%s. Its tools are not served until it answers. Its state and next retry: `tackle mcp list%s`; retry now: `tackle mcp reconnect %s%s`.", name, why, sess, name, sess)
	case "needs-auth":
		login := fmt.Sprintf("run `tackle mcp login %s%s`", name, sess)
		if u := s.GetAuthUrl(); u != "" {
			// The error then only says to open the URL, as this does.
			why = ""
			login = "open " + u + " in a browser, or " + login
		}
		return fmt.Sprintf("MCP server %s needs authentication%s. Its tools are not served. To authorise tackle, %s; for a token in its entry's headers, fix it (`tackle mcp get %s%s`) and run `tackle mcp reconnect %s%s`.",
			name, why, login, name, sess, name, sess)
	case "needs-approval":
		// The daemon says needs-trust, not this, while the project is
		// not trusted: here it is.
		return fmt.Sprintf("MCP server %s (the project's .mcp.json) is not approved%s. Its tools are not served. Approve it: `tackle mcp approve %s --cwd %s`.", name, why, name, b.root)
	case "needs-trust":
		approve := ""
		if s.GetScope() == "project" {
			// Whether it is approved is not told before the project is trusted.
			approve = fmt.Sprintf(" (if it is not approved yet, it then needs `tackle mcp approve %s --cwd %s` too)", name, b.root)
		}
		return fmt.Sprintf("MCP server %s comes from the files of a project that is not trusted%s. Its tools are not served. Trust the project: `tackle trust %s`%s.", name, why, b.root, approve)
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

// middleware re-sends the open problems (and the --tools patterns that
// match nothing) once a client sets its log level,
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
			for _, p := range b.problems {
				msgs = append(msgs, p.msg)
			}
			for _, m := range b.unmatched {
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

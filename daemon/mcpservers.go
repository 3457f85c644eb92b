package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/mcp"
	"github.com/tackle-agent/tackle/daemon/mcp/oauth"
	"github.com/tackle-agent/tackle/daemon/server"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/tool"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpLayer connects the sessions to their MCP servers: it reads each
// session's MCP configuration, hands it to the connection manager (which
// shares one connection per server among every session), adds the servers'
// tools to the session's pool and tells attached clients when the pool
// changes. It implements server.MCP.
type mcpLayer struct {
	d    *Daemon
	mgr  *mcp.Manager
	auth *oauth.Broker

	mu       sync.Mutex
	problems map[string][]config.MCPProblem // by session id: the last configuration problems
	warned   map[string]string              // by session id: the problems last reported as a notice
	// opts caches each session's tool options (reading the settings stats
	// every settings file: too slow for every call); resync drops them,
	// and optsGen tells a toolOptions that raced with it not to store.
	opts    map[string]*mcp.ToolOptions
	optsGen uint64
	// own are the sub-agent sessions with servers of their own (a
	// definition's inline mcpServers): they use their own list; every
	// other sub-agent uses its root session's.
	own map[string]bool
	// lastAuth is the last OAuth step announced per server: every
	// connection to a server follows its one flow, announced once.
	lastAuth map[string]oauth.Event
	// announced is, by session and server, what its last tools_changed
	// announced (poolSignature): a change that leaves it so is not
	// announced again.
	announced map[string]map[string]string
}

func newMCPLayer(d *Daemon, logDir, authDir string) *mcpLayer {
	l := &mcpLayer{d: d, problems: map[string][]config.MCPProblem{}, warned: map[string]string{},
		opts: map[string]*mcp.ToolOptions{}, own: map[string]bool{}, lastAuth: map[string]oauth.Event{},
		announced: map[string]map[string]string{}}
	l.auth = oauth.New(oauth.Options{Dir: authDir, Logger: d.log.Named("mcp-oauth")})
	l.mgr = mcp.New(&mcp.Options{
		LogDir:   logDir,
		Logger:   d.log.Named("mcp"),
		OnChange: l.changed,
		Auth:     l.auth,
		OnAuth:   l.authChanged,
	})
	return l
}

// authChanged tells the sessions using server about a step of its OAuth
// flow (the URL to open, the outcome).
func (l *mcpLayer) authChanged(serverName string, ev oauth.Event) {
	l.mu.Lock()
	if l.lastAuth[serverName] == ev {
		l.mu.Unlock()
		return
	}
	l.lastAuth[serverName] = ev
	l.mu.Unlock()
	a := &event.MCPAuth{Server: serverName, State: ev.State, URL: ev.URL, Error: ev.Error}
	for _, id := range l.sessionsOf(serverName) {
		sess, err := l.d.sessions.Get(context.Background(), id)
		if err != nil {
			continue
		}
		if _, err := sess.Append(&event.Event{Type: event.MCPAuthRequired, MCPAuth: a}); err != nil {
			l.d.log.Debug("announcing an MCP authorisation", "session", id, "error", err)
		}
	}
}

// sessionsOf are the sessions using a server of that name, sorted.
func (l *mcpLayer) sessionsOf(serverName string) []string {
	var ids []string
	for _, st := range l.mgr.Status() {
		if st.Name == serverName {
			ids = append(ids, st.Sessions...)
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

// settings are the MCP settings of a session's project and environment.
func (l *mcpLayer) settings(sess *session.Session) config.MCPSettings {
	st, _ := l.d.loader.Load(sess.Root())
	return st.MCP(sess.Environ())
}

// sync reads sess's MCP configuration and gives it to the manager. It
// reports configuration problems to the session once per change.
func (l *mcpLayer) sync(sess *session.Session) {
	root := sess.Root()
	servers, problems := l.d.loader.MCPServers(root, sess.Environ(), sess.MCPConfig(), l.d.trust.Trusted(root))
	startup := l.settings(sess).StartupTimeout
	st, _ := l.d.loader.Load(root)
	env := st.Env() // settings' env (trust-filtered) under each stdio server's own, as Claude Code does
	for i := range servers {
		servers[i].StartupTimeout = startup
		if servers[i].Type == "stdio" && len(env) > 0 {
			merged := make(map[string]string, len(env)+len(servers[i].Env))
			maps.Copy(merged, env)
			maps.Copy(merged, servers[i].Env)
			servers[i].Env = merged
		}
	}
	for _, name := range l.mgr.Use(sess.ID(), servers, sess.WorkingDirs()) {
		l.announce(sess, name)
	}
	var lines []string
	for _, p := range problems {
		lines = append(lines, p.Error())
	}
	for _, s := range servers {
		for _, w := range s.Warnings {
			lines = append(lines, fmt.Sprintf("MCP server %q (%s): %s", s.Name, s.Source, w))
		}
	}
	text := strings.Join(lines, "\n")
	l.mu.Lock()
	l.problems[sess.ID()] = problems
	prev := l.warned[sess.ID()]
	l.warned[sess.ID()] = text
	l.mu.Unlock()
	if text != "" && text != prev {
		if _, err := sess.Append(&event.Event{Type: event.Notice, Text: "MCP configuration:\n" + text}); err != nil {
			l.d.log.Warn("reporting MCP configuration problems", "session", sess.ID(), "error", err)
		}
	}
}

// release drops a deleted session's servers.
func (l *mcpLayer) release(sessionID string) {
	l.mgr.Release(sessionID)
	l.mu.Lock()
	delete(l.problems, sessionID)
	delete(l.warned, sessionID)
	delete(l.opts, sessionID)
	delete(l.announced, sessionID)
	l.mu.Unlock()
}

// resync re-reads the configuration of every loaded session (a settings
// file, .mcp.json or ~/.claude.json changed, or a directory was trusted).
func (l *mcpLayer) resync() {
	l.mu.Lock()
	clear(l.opts)
	l.optsGen++
	l.mu.Unlock()
	if l.d.deferral != nil {
		l.d.deferral.reset()
	}
	if l.d.skills != nil {
		l.d.skills.reset()
	}
	for _, sess := range l.d.sessions.Loaded() {
		l.sync(sess)
	}
}

// changed tells the sessions using server that their tool pool changed,
// unless what they see of it is as last announced: a remote server that is
// tried again goes failed → connecting → failed at every attempt, for the
// daemon's life, and that is one failure to its sessions, not two events
// an attempt in each session's log.
func (l *mcpLayer) changed(serverName string) {
	for _, id := range l.sessionsOf(serverName) {
		c, ok := l.mgr.Conn(id, serverName)
		if !ok {
			continue
		}
		sig := poolSignature(c)
		l.mu.Lock()
		seen := l.announced[id]
		if seen == nil {
			seen = map[string]string{}
			l.announced[id] = seen
		}
		same := seen[serverName] == sig
		seen[serverName] = sig
		l.mu.Unlock()
		if same {
			continue
		}
		if sess, err := l.d.sessions.Get(context.Background(), id); err == nil {
			l.announce(sess, serverName)
		}
	}
}

// poolSignature is what a session sees of a server: its state (a retry
// under way counts as the failure it retries) and the lists it has (a
// refreshed list is new even with the same names: a schema may differ).
func poolSignature(c *mcp.Conn) string {
	st := c.Status()
	state := st.State
	if state == mcp.Connecting && st.Attempts > 0 {
		state = mcp.Failed
	}
	var b strings.Builder
	b.WriteString(string(state))
	fmt.Fprintf(&b, " %p %p %p %p", c.Tools(), c.Resources(), c.ResourceTemplates(), c.Prompts())
	return b.String()
}

// announce tells sess that the tools of the server of that name changed.
func (l *mcpLayer) announce(sess *session.Session, serverName string) {
	if _, err := sess.Append(&event.Event{Type: event.ToolsChanged, Text: serverName}); err != nil {
		l.d.log.Debug("announcing a changed tool pool", "session", sess.ID(), "error", err)
	}
}

// toolOptions are the MCP tool options of a session, from its settings
// (cached until the settings change) and its environment.
func (l *mcpLayer) toolOptions(sessionID string) *mcp.ToolOptions {
	l.mu.Lock()
	o, gen := l.opts[sessionID], l.optsGen
	l.mu.Unlock()
	if o != nil {
		return o
	}
	sess, err := l.d.sessions.Get(context.Background(), sessionID)
	if err != nil {
		return nil
	}
	st := l.settings(sess)
	o = &mcp.ToolOptions{MaxOutputTokens: st.MaxOutputTokens, DefaultTimeout: st.ToolTimeout}
	l.mu.Lock()
	if l.optsGen == gen {
		l.opts[sessionID] = o
	}
	l.mu.Unlock()
	return o
}

// tools lists a session's MCP tools (for ListTools).
// A sub-agent has its root session's servers: the same connections.
func (l *mcpLayer) tools(sessionID string) []tool.Tool {
	sessionID = l.serversOf(sessionID)
	return l.mgr.Tools(sessionID, l.toolOptions(sessionID))
}

// lookup finds a session's MCP tool. A name of one of the session's
// servers that is not connected (or has no such tool) becomes a tool that
// fails validation with the server's state, so the model learns why.
func (l *mcpLayer) lookup(sessionID, name string) (tool.Tool, bool) {
	if !strings.HasPrefix(name, "mcp__") {
		return nil, false
	}
	sessionID = l.serversOf(sessionID)
	if t, ok := l.mgr.Lookup(sessionID, name, l.toolOptions(sessionID)); ok {
		return t, true
	}
	for _, c := range l.mgr.Conns(sessionID) {
		prefix := mcp.ToolName(c.Name(), "")
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		st := c.Status()
		if st.State == mcp.Pending || st.State == mcp.Connecting {
			// The server is starting (a session that was just created, a
			// restart): wait for it, bounded by its startup timeout.
			_ = c.Do(context.Background(), func(context.Context, *mcpsdk.ClientSession) error { return nil })
			if t, ok := l.mgr.Lookup(sessionID, name, l.toolOptions(sessionID)); ok {
				return t, true
			}
			st = c.Status()
		}
		msg := fmt.Sprintf("Error: MCP server %q has no tool %q.", c.Name(), strings.TrimPrefix(name, prefix))
		if st.State != mcp.Connected {
			msg = "Error: " + mcp.Describe(c.Name(), st.State)
			if st.Error != "" {
				msg += ": " + st.Error
			}
			switch st.State {
			case mcp.NeedsTrust:
				msg += ": it comes from the files of a project that is not trusted, so it does not start. Its tools cannot be called until the person trusts the project (`tackle trust` in its directory) and, for an .mcp.json server, approves it (`tackle mcp approve " + c.Name() + "`)."
			case mcp.NeedsApproval:
				msg += ": the project's .mcp.json server is not approved, so it does not start. Its tools cannot be called until the person approves it (`tackle mcp approve " + c.Name() + "`)."
			default:
				msg += ". Its tools cannot be called until it is connected (tackle mcp list shows its state; tackle mcp reconnect " + c.Name() + ")."
			}
		}
		return unavailableTool{name: name, msg: msg}, true
	}
	return nil, false
}

// serversOf is the session whose servers sessionID uses: its own when it
// has some, else its root session's.
func (l *mcpLayer) serversOf(sessionID string) string {
	l.mu.Lock()
	own := l.own[sessionID]
	l.mu.Unlock()
	if own {
		return sessionID
	}
	return l.d.rootSessionID(sessionID)
}

// useInline gives a sub-agent's session its parent's servers and its
// definition's inline ones (connected now, closed when no session uses
// them); the shared ones stay the same connections.
func (l *mcpLayer) useInline(child, parent *session.Session, inline []config.MCPServer) {
	root := parent.Root()
	servers, _ := l.d.loader.MCPServers(root, parent.Environ(), parent.MCPConfig(), l.d.trust.Trusted(root))
	startup := l.settings(parent).StartupTimeout
	for i := range inline {
		inline[i].StartupTimeout = startup
	}
	// The definition's servers come first: a name of its own wins.
	all := append(append([]config.MCPServer(nil), inline...), servers...)
	l.mu.Lock()
	l.own[child.ID()] = true
	l.mu.Unlock()
	for _, name := range l.mgr.Use(child.ID(), all, child.WorkingDirs()) {
		l.announce(child, name)
	}
	// The child's first request lists their tools: wait for them to
	// connect (each bounded by its startup timeout).
	for _, c := range l.mgr.Conns(child.ID()) {
		for _, s := range inline {
			if c.Name() == s.Name {
				_ = c.Do(context.Background(), func(context.Context, *mcpsdk.ClientSession) error { return nil })
			}
		}
	}
}

// releaseInline ends a sub-agent's own use of servers.
func (l *mcpLayer) releaseInline(sessionID string) {
	l.mu.Lock()
	own := l.own[sessionID]
	delete(l.own, sessionID)
	l.mu.Unlock()
	if own {
		l.release(sessionID)
	}
}

// unavailableTool stands for a tool of a server that cannot serve it: its
// validation fails with the reason.
type unavailableTool struct{ name, msg string }

func (u unavailableTool) Spec() tool.Spec {
	return tool.Spec{Name: u.name, InputSchema: json.RawMessage(`{"type":"object"}`)}
}
func (u unavailableTool) Attributes(json.RawMessage) tool.Attributes { return tool.Attributes{} }
func (u unavailableTool) Validate(context.Context, *tool.Call) error { return errors.New(u.msg) }
func (u unavailableTool) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return tool.Access{}, errors.New(u.msg)
}
func (u unavailableTool) Run(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
	return tool.ErrorResult(u.msg), nil
}

func (l *mcpLayer) view(st mcp.Status, cfg *config.MCPServer) server.MCPServer {
	out := server.MCPServer{
		Name: st.Name, Scope: st.Scope, Source: st.Source, Transport: st.Transport, State: string(st.State),
		Error: st.Error, PID: st.PID, Tools: st.Tools, Resources: st.Resources, Prompts: st.Prompts,
		Restarts: st.Restarts, Sessions: st.Sessions, Since: st.Since, LogPath: st.LogPath, ServerInfo: st.ServerInfo,
		AuthURL: st.AuthURL, Authorized: st.Authorized, RetryAt: st.RetryAt, Attempts: st.Attempts,
	}
	if cfg != nil {
		out.Warnings = slices.Clip(cfg.Warnings) // Servers appends its own
		if cfg.Type == "stdio" {
			out.Target = strings.Join(append([]string{cfg.Command}, cfg.Args...), " ")
		} else {
			out.Target = cfg.URL
		}
	}
	return out
}

// collisionWarnings says which tools of server are left out because
// another server's tools have their names: one line per other server.
func collisionWarnings(server string, cs []mcp.Collision) []string {
	var order []string
	left := map[string][]string{} // the server whose tools are kept → server's tools left out
	for _, c := range cs {
		if c.Server != server {
			continue
		}
		if left[c.KeptServer] == nil {
			order = append(order, c.KeptServer)
		}
		left[c.KeptServer] = append(left[c.KeptServer], c.Tool)
	}
	var out []string
	for _, kept := range order {
		tools := left[kept]
		what := "tool " + tools[0] + " is"
		if len(tools) > 1 {
			what = fmt.Sprintf("%d tools (%s) are", len(tools), strings.Join(tools, ", "))
		}
		out = append(out, fmt.Sprintf("%s not offered: server %q has tools of the same names (mcp__SERVER__TOOL names differ only in characters tackle replaces by \"_\", or a server's name holds \"__\"); rename one of the two servers", what, kept))
	}
	return out
}

// Servers implements server.MCP.
func (l *mcpLayer) Servers(sess *session.Session) ([]server.MCPServer, []server.MCPProblem) {
	l.sync(sess)
	var out []server.MCPServer
	names := map[string][]string{} // server → the names of its tools offered
	for _, t := range l.mgr.Tools(sess.ID(), l.toolOptions(sess.ID())) {
		if srv, ok := mcp.ServerOf(t); ok {
			names[srv] = append(names[srv], t.Spec().Name)
		}
	}
	collisions := l.mgr.Collisions(sess.ID())
	for _, c := range l.mgr.Conns(sess.ID()) {
		cfg := c.Config()
		v := l.view(c.Status(), &cfg)
		v.ToolNames = names[c.Name()]
		v.Warnings = append(v.Warnings, collisionWarnings(c.Name(), collisions)...)
		out = append(out, v)
	}
	l.mu.Lock()
	problems := l.problems[sess.ID()]
	l.mu.Unlock()
	var ps []server.MCPProblem
	for _, p := range problems {
		ps = append(ps, server.MCPProblem{Path: p.Path, Server: p.Server, Message: p.Message})
	}
	return out, ps
}

// AllServers implements server.MCP.
func (l *mcpLayer) AllServers() []server.MCPServer {
	var out []server.MCPServer
	for _, st := range l.mgr.Status() {
		out = append(out, l.view(st, nil))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Add implements server.MCP.
func (l *mcpLayer) Add(root, scope, name string, entry json.RawMessage, replace bool) (string, []string, error) {
	path, err := l.d.loader.AddMCPServer(root, scope, name, entry, replace)
	if err != nil {
		return "", nil, err
	}
	return path, config.MCPEntryWarnings(name, entry), nil
}

// Remove implements server.MCP.
func (l *mcpLayer) Remove(root, scope, name string) (string, error) {
	return l.d.loader.RemoveMCPServer(root, scope, name)
}

// Approve implements server.MCP.
func (l *mcpLayer) Approve(root string, names []string, all bool) (string, error) {
	return l.d.loader.ApproveMCPServers(root, names, all)
}

func (l *mcpLayer) conn(sess *session.Session, name string) (*mcp.Conn, error) {
	l.sync(sess)
	if c, ok := l.mgr.Conn(sess.ID(), name); ok {
		return c, nil
	}
	var names []string
	for _, c := range l.mgr.Conns(sess.ID()) {
		names = append(names, c.Name())
	}
	if len(names) == 0 {
		return nil, &invalidInput{fmt.Sprintf("no MCP server %q: the session (root %s) has no MCP servers", name, sess.Root())}
	}
	return nil, &invalidInput{fmt.Sprintf("no MCP server %q (the session has: %s)", name, strings.Join(names, ", "))}
}

// Reconnect implements server.MCP.
func (l *mcpLayer) Reconnect(ctx context.Context, sess *session.Session, name string) (server.MCPServer, error) {
	c, err := l.conn(sess, name)
	if err != nil {
		return server.MCPServer{}, err
	}
	if err := l.mgr.Reconnect(ctx, name); err != nil {
		l.d.log.Info("MCP reconnect failed", "server", name, "error", err)
	}
	if c2, ok := l.mgr.Conn(sess.ID(), name); ok {
		c = c2
	}
	cfg := c.Config()
	return l.view(c.Status(), &cfg), nil
}

// Login implements server.MCPAuth.
func (l *mcpLayer) Login(ctx context.Context, sess *session.Session, name string, force bool, url func(string)) (string, server.MCPServer, error) {
	c, err := l.conn(sess, name)
	if err != nil {
		return "", server.MCPServer{}, err
	}
	outcome, err := l.mgr.Login(ctx, sess.ID(), name, force, url)
	if c2, ok := l.mgr.Conn(sess.ID(), name); ok {
		c = c2
	}
	cfg := c.Config()
	return outcome, l.view(c.Status(), &cfg), err
}

// Logout implements server.MCPAuth.
func (l *mcpLayer) Logout(ctx context.Context, sess *session.Session, name string) (string, server.MCPServer, error) {
	c, err := l.conn(sess, name)
	if err != nil {
		return "", server.MCPServer{}, err
	}
	cfg := c.Config()
	if c.OAuth() == nil {
		return "", server.MCPServer{}, fmt.Errorf("MCP server %q is a %s server: tackle holds OAuth tokens only for http servers", name, cfg.Type)
	}
	removed, err := l.auth.Logout(name, cfg.URL)
	if err != nil {
		return "", server.MCPServer{}, err
	}
	// Reconnect without the token: the server asks again (its flow's URL
	// goes to the sessions) or works without one.
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := l.mgr.Reconnect(rctx, name); err != nil {
		l.d.log.Debug("reconnecting after logout", "server", name, "error", err)
	}
	if c2, ok := l.mgr.Conn(sess.ID(), name); ok {
		c = c2
	}
	return removed, l.view(c.Status(), &cfg), nil
}

// PendingAuth implements server.MCPAuth.
func (l *mcpLayer) PendingAuth(sess *session.Session) []event.MCPAuth {
	var out []event.MCPAuth
	for _, c := range l.mgr.Conns(sess.ID()) {
		if h := c.OAuth(); h != nil {
			if u := h.Pending(); u != "" {
				out = append(out, event.MCPAuth{Server: c.Name(), State: oauth.Required, URL: u})
			}
		}
	}
	return out
}

// Logs implements server.MCP.
func (l *mcpLayer) Logs(sess *session.Session, name string, tail int64) (string, []byte, bool, error) {
	c, err := l.conn(sess, name)
	if err != nil {
		return "", nil, false, err
	}
	path := c.Status().LogPath
	if path == "" {
		return "", nil, false, fmt.Errorf("MCP server %q has no log (only stdio servers write one)", name)
	}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return path, nil, false, nil
	} else if err != nil {
		return "", nil, false, fmt.Errorf("opening the log of %q: %w", name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, false, fmt.Errorf("reading the log of %q: %w", name, err)
	}
	off := max(fi.Size()-tail, 0)
	data, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if err != nil {
		return "", nil, false, fmt.Errorf("reading the log of %q: %w", name, err)
	}
	return path, data, off > 0, nil
}

// Prompts implements server.MCP.
func (l *mcpLayer) Prompts(ctx context.Context, sess *session.Session, name string) ([]server.MCPPrompt, error) {
	if _, err := l.conn(sess, name); err != nil {
		return nil, err
	}
	ps, err := l.mgr.Prompts(sess.ID(), name)
	if err != nil {
		return nil, err
	}
	out := make([]server.MCPPrompt, 0, len(ps))
	for _, p := range ps {
		sp := server.MCPPrompt{Name: p.Name, Title: p.Title, Description: p.Description,
			Command: "/" + mcp.ToolName(name, p.Name)}
		for _, a := range p.Arguments {
			sp.Args = append(sp.Args, server.MCPPromptArg{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		out = append(out, sp)
	}
	return out, nil
}

// GetPrompt implements server.MCP.
func (l *mcpLayer) GetPrompt(ctx context.Context, sess *session.Session, name, prompt string, args map[string]string) (string, []server.MCPMessage, error) {
	if _, err := l.conn(sess, name); err != nil {
		return "", nil, err
	}
	res, err := l.mgr.GetPrompt(ctx, sess.ID(), name, prompt, args)
	if err != nil {
		return "", nil, err
	}
	var msgs []server.MCPMessage
	for _, m := range res.Messages {
		for _, c := range mcp.Contents([]mcpsdk.Content{m.Content}) {
			msgs = append(msgs, server.MCPMessage{Role: string(m.Role), Content: c})
		}
	}
	return res.Description, msgs, nil
}

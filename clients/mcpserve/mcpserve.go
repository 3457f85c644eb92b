// Package mcpserve is `tackle mcp serve`: an MCP server on stdio that offers
// a tackle session's tool pool to any MCP client (Claude Code, Codex, an
// editor). It is a thin client of tackled: every tools/call is a tool call
// of the session, run through the daemon's one pipeline (hooks, permission
// rules and prompts, the audit, output limits) on the bridge's own Attach
// stream, and the underlying MCP servers are the daemon's shared
// connections, so any number of serve processes share one process per
// server.
//
// It owns the translation only: tackle's tools to MCP tools (an MCP tool
// mcp__srv__tool is served as srv__tool), results to MCP content, tackle's
// permission prompts to MCP elicitation, call_progress events to progress
// notifications, tools_changed events to list_changed notifications, server
// states to log messages, and the servers' prompts and resources. It never
// runs a tool itself and keeps no state but the calls in flight and what it
// last served. It imports nothing of the daemon; stdout carries protocol
// messages only, diagnostics go to Options.Log.
package mcpserve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/mcpstdio"
	"github.com/tackle-agent/tackle/internal/workers"
)

// Options configures a Server. A nil *Options is not allowed: Dial is
// required.
type Options struct {
	// Dial connects to tackled as a client named clientName (required). Run
	// calls it once at the start ("tackle-mcp") and again for its Attach
	// stream, named after the MCP client ("mcp:" + its clientInfo name), and
	// whenever that stream must be opened again. The CLI's dials autostart
	// the daemon unless --no-autostart.
	Dial func(ctx context.Context, clientName string) (*client.Client, error)
	// SessionID is the session whose tools are served ("" = the default
	// session of Cwd).
	SessionID string
	// Cwd is the directory whose default session is served when SessionID
	// is empty (absolute; "" = the current directory).
	Cwd string
	// Environ is the environment a new default session is created with.
	Environ []string
	// Tools picks the tools: "mcp" (the MCP servers' tools, the default),
	// "all" (those and tackle's built-ins), or glob patterns matched against
	// the served name ("github__*", "Read") or tackle's ("mcp__github__*").
	// Several values add up.
	Tools []string
	// Name is the server's name in its serverInfo ("" = "tackle").
	Name string
	// Version is tackle's version, for serverInfo.
	Version string
	// PermissionMode overrides the session's permission mode for the calls
	// ("" = the session's).
	PermissionMode string
	// PermissionTimeout bounds a permission prompt of a call (0 = the
	// daemon's default); when it expires the call is denied.
	PermissionTimeout time.Duration
	// SettleTimeout bounds the wait, before the MCP client is answered, for
	// the session's MCP servers that are still starting (0 = 10 s; negative:
	// no wait). Tools of servers that connect later are announced with
	// notifications/tools/list_changed.
	SettleTimeout time.Duration
	// Log receives diagnostics (nil: discarded).
	Log io.Writer
}

// Server serves a session's tools over MCP. It is immutable once built and
// safe for concurrent use: every Run is one MCP session with its own
// connection to the daemon.
type Server struct {
	o   Options
	sel selection
}

// New checks the options and builds a Server. It starts nothing. An invalid
// Tools pattern is an error; a nil opts or Dial is a programmer error and
// panics.
func New(opts *Options) (*Server, error) {
	if opts == nil || opts.Dial == nil {
		panic("mcpserve.New: Options.Dial is required")
	}
	o := *opts
	if o.Name == "" {
		o.Name = "tackle"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	if o.SettleTimeout == 0 {
		o.SettleTimeout = 10 * time.Second
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.SessionID == "" && o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("finding the current directory: %w", err)
		}
		o.Cwd = wd
	}
	sel, err := parseSelection(o.Tools)
	if err != nil {
		return nil, err
	}
	return &Server{o: o, sel: sel}, nil
}

// Serve runs one MCP session on in and out (newline-delimited JSON-RPC, as
// on stdio) until in ends or ctx is done. A line that is not a JSON-RPC
// message (not JSON, not a request, too long) is answered with a JSON-RPC
// error and the session goes on: one bad line of a client must not end
// its session.
func (s *Server) Serve(ctx context.Context, in io.Reader, out io.Writer) error {
	return s.Run(ctx, &mcpstdio.Transport{
		Reader: io.NopCloser(in), Writer: nopWriteCloser{out}, Reply: true,
		Junk: func(line []byte) {
			fmt.Fprintf(s.o.Log, "tackle mcp serve: answered a line that is not a JSON-RPC message with an error: %.200s\n", line)
		},
	})
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// legacyVersions are the MCP protocol versions served: those before
// 2026-07-28. From that version on the protocol is stateless: a server may
// not send elicitation requests of its own (they must be returned as
// input-required results and the call retried), logging/setLevel is gone
// and list changes need a subscription, while a tackle permission prompt
// is a request the daemon holds open, which another client may answer
// first. A client of the new protocol falls back to initialize with one of
// these.
func legacyVersions() []string {
	return slices.DeleteFunc(mcp.SupportedProtocolVersions(), func(v string) bool { return v >= "2026-07-28" })
}

// Run runs one MCP session on t until the client goes away or ctx is done.
// It dials the daemon, opens the session (the default session of Cwd when
// no SessionID), waits up to SettleTimeout for its MCP servers to start,
// and lists the tools before it answers the client's initialize; its
// Attach stream is opened once the client is initialized. Errors are those
// of that start (a daemon that cannot be reached, an unknown session) and
// what else ends the session before the client leaves: a connection that
// fails, the session removed. The client closing its side, or ctx, ends it
// cleanly (nil).
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := s.o.Dial(ctx, "tackle-mcp")
	if err != nil {
		return fmt.Errorf("connecting to tackled: %w", err)
	}
	defer c.Close()
	sess, err := openSession(ctx, c, &s.o)
	if err != nil {
		return err
	}
	b := &bridge{
		o: &s.o, sel: s.sel, c: c, sid: sess.GetId(), root: sess.GetCwd(), ctx: ctx,
		calls: map[string]*call{}, refs: map[string]*call{}, asks: map[string]context.CancelFunc{},
		tools: map[string]*servedTool{}, prompts: map[string]string{},
		problems: map[string]problem{}, unmatched: map[string]string{},
		refresh: make(chan struct{}, 1), callers: workers.New(callerIdle),
	}
	defer func() { b.callers.Close(); b.callers.Wait() }()
	b.settle(ctx, c)
	b.srv = mcp.NewServer(&mcp.Implementation{Name: s.o.Name, Title: "tackle", Version: s.o.Version}, &mcp.ServerOptions{
		Instructions: instructions,
		Logger:       slog.New(slog.NewTextHandler(s.o.Log, &slog.HandlerOptions{Level: slog.LevelWarn})),
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			b.setSession(req.Session)
			b.wg.Add(1)
			go func() {
				defer b.wg.Done()
				if _, err := b.ensureLink(ctx, req.Session); err != nil && ctx.Err() == nil {
					b.logf("attaching to session %s: %v (the next tool call tries again)", b.sid, err)
				}
			}()
		},
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true},
			Logging:   &mcp.LoggingCapabilities{},
		},
		SupportedProtocolVersions: legacyVersions(),
	})
	b.srv.AddReceivingMiddleware(b.middleware)
	b.refreshAll(ctx)

	ss, err := b.srv.Connect(ctx, t, nil)
	if err != nil {
		return fmt.Errorf("starting the MCP session: %w", err)
	}
	b.setSession(ss)
	b.wg.Add(2)
	go b.refresher()
	go b.trimmer()
	waited := make(chan error, 1)
	go func() { waited <- ss.Wait() }()
	select {
	case err = <-waited:
	case <-ctx.Done():
		ss.Close()
		err = <-waited
	}
	switch gone := b.removedErr(); {
	case gone != nil:
		err = gone
	case err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) && !errors.Is(err, mcp.ErrConnectionClosed):
		err = fmt.Errorf("the MCP session ended: %w", err)
	default:
		err = nil
	}
	cancel()
	b.closeLink()
	b.wg.Wait()
	return err
}

// callerIdle is how long a goroutine of bridge.callers waits for the next
// call before it ends.
const callerIdle = 5 * time.Second

// instructions tell the client's model what it is talking to.
const instructions = `These are the tools of a tackle session: each call runs through tackle's pipeline (permission rules and prompts, hooks, the audit) in the session's directory. A tool named SERVER__TOOL is the tool TOOL of the MCP server SERVER, shared with every other tackle client. A call tackle denies returns an error result that says why.`

// openSession returns the session to serve: o.SessionID, else the default
// session of o.Cwd (created on first use).
func openSession(ctx context.Context, c *client.Client, o *Options) (*tacklev1.Session, error) {
	if o.SessionID != "" {
		sess, err := c.GetSession(ctx, o.SessionID)
		if err != nil {
			if errors.Is(err, client.ErrNotFound) {
				return nil, fmt.Errorf("opening session %s: %w (tackle sessions list shows the sessions)", o.SessionID, err)
			}
			return nil, fmt.Errorf("opening session %s: %w", o.SessionID, err)
		}
		return sess, nil
	}
	resp, err := c.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: o.Cwd, Env: o.Environ, DefaultForCwd: true})
	if err != nil {
		return nil, fmt.Errorf("opening the default session of %s: %w", o.Cwd, err)
	}
	return resp.GetSession(), nil
}

// bridge is one Run: one MCP session and its link to the session's events.
//
// Goroutines: the pump of the current link (events), the refresher (lists),
// one per open elicitation, and the go-sdk's handlers (tool calls). Lock
// order: linkMu before mu; resMu before mu. Nothing is sent on the MCP
// connection or the Attach stream with mu held.
type bridge struct {
	o    *Options
	sel  selection
	srv  *mcp.Server
	c    *client.Client // the first connection: unary RPCs until a link is up
	sid  string
	root string // the session's root directory, for hints
	ctx  context.Context
	wg   sync.WaitGroup // every goroutine the bridge starts
	// callers run the tool calls (onCaller), on goroutines whose stacks
	// have grown already.
	callers *workers.Pool

	requests atomic.Int64 // MCP requests received, for the trimmer

	// refresh asks the refresher to list again (buffered 1: requests while
	// one is pending merge).
	refresh chan struct{}

	// tools, prompts and resources are what the go-sdk server was given;
	// tools and prompts are touched only by refreshAll (Run before the
	// refresher starts, then the refresher).
	tools   map[string]*servedTool // by served name
	prompts map[string]string      // served name → signature

	// resMu serialises listing the resources; it guards res.
	resMu sync.Mutex
	res   resourceState

	// linkMu serialises opening the link; it guards linked.
	linkMu sync.Mutex
	linked bool // a link was opened before

	mu       sync.Mutex // guards the fields below
	link     *link
	ss       *mcp.ServerSession
	calls    map[string]*call              // calls in flight, by call id
	refs     map[string]*call              // calls not yet accepted (or to cancel once accepted), by ref
	asks     map[string]context.CancelFunc // open elicitations, by permission request id
	problems map[string]problem            // MCP server (or config entry) → what was told about it
	removed  error                         // set once the session was removed: every call fails with it
	// unmatched are the --tools patterns that matched no tool, and the
	// message told about each.
	unmatched map[string]string
}

// link is an Attach stream subscribed to the session, and its connection.
type link struct {
	c    *client.Client
	st   *client.Stream
	done chan struct{} // closed when its pump has ended
}

func (b *bridge) logf(format string, args ...any) {
	fmt.Fprintf(b.o.Log, "tackle mcp serve: "+format+"\n", args...)
}

func (b *bridge) setSession(ss *mcp.ServerSession) {
	b.mu.Lock()
	if b.ss == nil {
		b.ss = ss
	}
	b.mu.Unlock()
}

func (b *bridge) session() *mcp.ServerSession {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ss
}

// rpc is the connection for unary RPCs: the link's when one is up (it was
// dialled last, e.g. after a daemon restart), else the first.
func (b *bridge) rpc() *client.Client {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.link != nil {
		return b.link.c
	}
	return b.c
}

func (b *bridge) currentLink() *link {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.link
}

// clientName names the MCP client to tackle: "mcp:" and its clientInfo
// name, as the audit and other clients show it.
func clientName(ss *mcp.ServerSession) string {
	name := "client"
	if ss != nil {
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil && strings.TrimSpace(p.ClientInfo.Name) != "" {
			name = strings.TrimSpace(p.ClientInfo.Name)
		}
	}
	return "mcp:" + name
}

// ensureLink returns the link, opening it when there is none: a new
// connection named after the MCP client, a controller stream subscribed
// live to the session, and its pump.
func (b *bridge) ensureLink(ctx context.Context, ss *mcp.ServerSession) (*link, error) {
	if l := b.currentLink(); l != nil {
		return l, nil
	}
	b.linkMu.Lock()
	defer b.linkMu.Unlock()
	if l := b.currentLink(); l != nil {
		return l, nil
	}
	if ss == nil {
		ss = b.session()
	}
	c, err := b.o.Dial(ctx, clientName(ss))
	if err != nil {
		return nil, fmt.Errorf("connecting to tackled: %w", err)
	}
	// The stream lives as long as the bridge, not the request that opened it.
	st, err := c.Attach(b.ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		c.Close()
		return nil, err
	}
	if _, err := st.SubscribeTypes(b.sid, 0, true, linkEvents); err != nil {
		st.Close()
		c.Close()
		return nil, err
	}
	if b.linked {
		// A new link after the old one ended: the daemon may have restarted
		// and be starting the servers again.
		b.settle(ctx, c)
	}
	b.linked = true
	l := &link{c: c, st: st, done: make(chan struct{})}
	b.mu.Lock()
	b.link = l
	b.mu.Unlock()
	b.wg.Add(1)
	go b.pump(l)
	// The pool may have changed between the first listing and the subscription.
	b.requestRefresh()
	return l, nil
}

// closeLink ends the current link (Run's end).
func (b *bridge) closeLink() {
	b.mu.Lock()
	l := b.link
	b.link = nil
	b.mu.Unlock()
	if l != nil {
		l.st.Close()
	}
}

// pump hands the link's messages out until its stream ends. A link that
// ends (a daemon that stopped or restarted) is not replaced at once: the
// next call opens a new one, so a stopped daemon is not started again by
// a client that merely waits.
func (b *bridge) pump(l *link) {
	defer b.wg.Done()
	// The stream's messages are handled on the goroutine that receives
	// them (no hand-off: a call's result is one wake-up from its handler).
	for msg, err := range l.st.Messages() {
		if err != nil {
			if b.ctx.Err() == nil {
				b.logf("the stream of session %s ended: %v (the next call attaches again)", b.sid, err)
			}
			break
		}
		switch m := msg.GetMsg().(type) {
		case *tacklev1.ServerMessage_BatchAccepted:
			b.accepted(l, m.BatchAccepted)
		case *tacklev1.ServerMessage_Error:
			b.streamError(l, m.Error)
		case *tacklev1.ServerMessage_Event:
			b.event(l, m.Event)
		}
	}
	b.mu.Lock()
	if b.link == l {
		b.link = nil
	}
	b.mu.Unlock()
	close(l.done) // calls waiting on it end with an error result
	l.st.Close()
	l.c.Close()
}

// streamError handles a StreamError: the refusal of one of our batches, a
// subscription cut off (subscribe again where it stopped), or an answer
// that lost the race to another client's.
func (b *bridge) streamError(l *link, e *tacklev1.StreamError) {
	se := client.NewStreamError(e)
	if se.Ref != "" {
		b.mu.Lock()
		c := b.refs[se.Ref]
		delete(b.refs, se.Ref)
		b.mu.Unlock()
		if c != nil {
			// A call sent after the session was removed but before its
			// subscription's end was told is refused as unsubscribed.
			if se.Code == "FailedPrecondition" && b.checkRemoved(l) {
				b.deliver(c, errorToolResult(c, b.removedErr().Error()))
				return
			}
			b.deliver(c, errorToolResult(c, fmt.Sprintf("tackled refused the call: %s (%s)", se.Message, se.Code)))
			return
		}
	}
	if se.ResubscribeFromSeq != 0 {
		// The daemon ends the subscriptions of a session it removes (and
		// of one it closes): ask whether it is still there before
		// subscribing again.
		if se.Code != "ResourceExhausted" && b.checkRemoved(l) {
			return
		}
		sub := &tacklev1.Subscribe{SessionId: b.sid, FromSeq: se.ResubscribeFromSeq, EventTypes: linkEvents}
		if err := l.st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: sub}}); err != nil {
			b.logf("subscribing to session %s again: %v", b.sid, err)
		}
		return
	}
	b.logf("tackled: %s (%s)", se.Message, se.Code)
}

// checkRemoved reports whether the session is gone from the daemon, and
// if so ends the bridge (sessionRemoved).
func (b *bridge) checkRemoved(l *link) bool {
	if b.removedErr() != nil {
		return true
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := l.c.GetSession(ctx, b.sid); !errors.Is(err, client.ErrNotFound) {
		return false
	}
	b.sessionRemoved()
	return true
}

// sessionRemoved ends a bridge whose session was removed (`tackle sessions
// rm`): nothing it serves can run any more. The calls in flight and every
// later one fail saying so, the client and Log are told, and the MCP
// session is closed, which ends Run with that error. It runs once.
func (b *bridge) sessionRemoved() {
	gone := fmt.Errorf("session %s was removed (tackle sessions rm), so its tools cannot run; tackle mcp serve ends: start it again to serve another session", b.sid)
	b.mu.Lock()
	if b.removed != nil {
		b.mu.Unlock()
		return
	}
	b.removed = gone
	var calls []*call
	for _, c := range b.calls {
		calls = append(calls, c)
	}
	for _, c := range b.refs {
		calls = append(calls, c)
	}
	for _, cancel := range b.asks {
		cancel()
	}
	ss := b.ss
	b.mu.Unlock()
	for _, c := range calls {
		b.deliver(c, errorToolResult(c, gone.Error()))
	}
	b.tell(ss, "error", gone.Error())
	if ss != nil {
		// Close waits for the requests in flight, whose results were
		// just delivered; not on the pump, which called this.
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			ss.Close()
		}()
	}
}

// removedErr is the error of a removed session, or nil.
func (b *bridge) removedErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.removed
}

// linkEvents are the event types event handles, the only ones the link
// subscribes to: a call's queued, validating and running states, and the
// session's other traffic (a model's deltas), are not sent to serve, nor
// wake it.
var linkEvents = []string{"call_result", "call_progress", "turn_ended", "permission_requested", "permission_resolved",
	"tools_changed", "mcp_auth_required"}

// event handles one event of the session.
func (b *bridge) event(l *link, e *tacklev1.Event) {
	switch e.GetType() {
	case "call_result":
		id := e.GetResult().GetId()
		if id == "" {
			id = e.GetCallId()
		}
		b.mu.Lock()
		c := b.calls[id]
		b.mu.Unlock()
		if c != nil && e.GetResult() != nil {
			b.deliver(c, e.GetResult())
		}
	case "call_progress":
		b.mu.Lock()
		c := b.calls[e.GetCallId()]
		b.mu.Unlock()
		if c != nil {
			select {
			case c.progress <- e.GetText():
			default: // progress may be dropped for a slow client
			}
		}
	case "turn_ended":
		b.mu.Lock()
		var ended []*call
		for _, c := range b.calls {
			if c.turnID != "" && c.turnID == e.GetTurnId() {
				ended = append(ended, c)
			}
		}
		b.mu.Unlock()
		for _, c := range ended {
			b.deliver(c, errorToolResult(c, "tackle received no result for this call before its turn ended"))
		}
	case "permission_requested":
		b.permissionRequested(l, e.GetPermission())
	case "permission_resolved":
		b.permissionResolved(e.GetResolution())
	case "tools_changed", "mcp_auth_required":
		// A server connected, failed or changed its lists, or waits for a
		// person to authorise tackle: list again, tell what changed.
		b.requestRefresh()
	}
}

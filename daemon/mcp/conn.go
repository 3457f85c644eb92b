package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/mcp/oauth"
	"github.com/tackle-agent/tackle/internal/mcpstdio"
)

// State is where a server's connection stands.
type State string

// Connection states.
const (
	// Pending: configured and about to start.
	Pending State = "pending"
	// Connecting: the process is starting or initialize is under way.
	Connecting State = "connecting"
	// Connected: initialized, lists fetched, calls go through.
	Connected State = "connected"
	// Failed: it could not start or died; Status.Error says why.
	Failed State = "failed"
	// NeedsApproval: a project server not approved yet; never started.
	NeedsApproval State = "needs-approval"
	// NeedsTrust: a server from the files of a workspace that is not
	// trusted; never started.
	NeedsTrust State = "needs-trust"
	// NeedsAuth: an HTTP server answered 401 or 403.
	NeedsAuth State = "needs-auth"
	// Disabled: disabled by configuration; never started.
	Disabled State = "disabled"
)

// maxRestarts is how many times a crashed stdio server is restarted (with
// doubling delays) before it stays failed until Reconnect.
const maxRestarts = 5

// stopGrace is how long a stdio server may take to exit after its stdin is
// closed before its process group gets SIGTERM.
const stopGrace = 300 * time.Millisecond

// Status is a snapshot of one server's connection.
type Status struct {
	Name      string
	Scope     string
	Source    string
	Transport string // "stdio", "http", "sse"
	State     State
	Error     string    // the last error, "" when none
	Since     time.Time // when State was entered
	// ConnectedAt is when the current (or last) session was initialized.
	ConnectedAt time.Time
	PID         int // the stdio server's process, 0 when none
	Tools       int
	Resources   int
	Prompts     int
	Sessions    []string // the sessions using it, sorted
	Restarts    int      // restarts and reconnects after a failure
	LogPath     string   // stderr and notes of a stdio server
	Digest      string
	ServerInfo  string // "name version" from initialize
	// AuthURL is the OAuth authorisation URL while a flow waits for a
	// person; Authorized says a token is held (OAuth servers only).
	AuthURL    string
	Authorized bool
	// RetryAt is when an unreachable remote server is tried again (zero
	// when no retry is scheduled); Attempts counts the failed tries since
	// it last worked.
	RetryAt  time.Time
	Attempts int
}

// ServerError is a call that failed because the server died or the
// connection broke under it. The call was not retried; the connection is
// being restarted (stdio) or is reconnected for the next call (HTTP).
type ServerError struct {
	Server     string
	ExitStatus string // "exit status 1", "signal: killed"; "" for HTTP or when unknown
	Err        error
}

func (e *ServerError) Error() string {
	if e.ExitStatus != "" {
		return fmt.Sprintf("MCP server %q exited (%s) during the call: %v", e.Server, e.ExitStatus, e.Err)
	}
	return fmt.Sprintf("MCP server %q: connection lost during the call: %v (it is reconnected for the next call)", e.Server, e.Err)
}

// Unwrap returns the transport error.
func (e *ServerError) Unwrap() error { return e.Err }

// StateError is a call to a server that is not connected.
type StateError struct {
	Server string
	State  State
	Err    string // the last error
}

func (e *StateError) Error() string {
	msg := Describe(e.Server, e.State)
	switch e.State {
	case NeedsApproval:
		msg += fmt.Sprintf(": approve it with `tackle mcp approve %s`", e.Server)
	case NeedsTrust:
		msg += ": the workspace its configuration comes from is not trusted; trust it with `tackle trust` in that directory (and approve an .mcp.json server with `tackle mcp approve " + e.Server + "`)"
	}
	if e.Err != "" {
		msg += ": " + e.Err
	}
	return msg
}

// Describe says in words that server is in state st: "MCP server "x" has
// failed", "… needs approval", "… is disabled by configuration".
func Describe(server string, st State) string {
	name := fmt.Sprintf("MCP server %q", server)
	switch st {
	case Failed:
		return name + " has failed"
	case NeedsApproval:
		return name + " needs approval"
	case NeedsTrust:
		return name + " needs trust"
	case NeedsAuth:
		return name + " needs authorisation"
	case Disabled:
		return name + " is disabled by configuration"
	}
	return fmt.Sprintf("%s is %s", name, st) // pending, connecting, connected
}

// Conn is one server connection, shared by the sessions that use it. Its
// methods are safe for concurrent use.
type Conn struct {
	m       *Manager
	cfg     config.MCPServer
	digest  string
	logPath string
	log     hclog.Logger
	client  *mcpsdk.Client // nil for a server that is never started
	ctx     context.Context
	cancel  context.CancelFunc
	wake    chan bool     // reconnect request; true resets the restart budget
	done    chan struct{} // closed when the supervisor has finished
	wg      sync.WaitGroup

	rootsMu sync.Mutex // serialises root updates; held before mu
	roots   []string   // announced to the client, sorted

	logMu   sync.Mutex
	logFile *rotatingLog

	mu              sync.Mutex // guards the fields below
	state           State
	lastErr         string
	since           time.Time
	connectedAt     time.Time
	restarts        int
	sessions        map[string][]string // session → its working directories
	gen             *generation         // the current generation, nil when none
	changed         chan struct{}       // closed and replaced at every state change
	tools           []*mcpsdk.Tool
	resources       []*mcpsdk.Resource
	templates       []*mcpsdk.ResourceTemplate
	prompts         []*mcpsdk.Prompt
	serverInfo      string
	protocolVersion string
	progress        map[string]map[int]func(*mcpsdk.ProgressNotificationParams)
	progressSeq     int
	started, closed bool
	retryAt         time.Time
	attempts        int

	auth     auth.OAuthHandler // the http transport's, nil when none
	oauth    *oauth.Handler    // the server's own OAuth handler (Options.Auth)
	authStop func()            // stops watching oauth
}

func newConn(m *Manager, srv config.MCPServer) *Conn {
	c := &Conn{
		m:        m,
		cfg:      srv,
		digest:   srv.Digest(),
		state:    Pending,
		since:    time.Now(),
		sessions: map[string][]string{},
		changed:  make(chan struct{}),
		wake:     make(chan bool, 1),
		done:     make(chan struct{}),
		progress: map[string]map[int]func(*mcpsdk.ProgressNotificationParams){},
	}
	c.log = m.log.Named(srv.Name)
	switch srv.State {
	case config.MCPNeedsApproval:
		c.state = NeedsApproval
	case config.MCPNeedsTrust:
		c.state = NeedsTrust
	case config.MCPDisabled:
		c.state = Disabled
	case "":
	default:
		c.state = Disabled
		c.lastErr = fmt.Sprintf("unknown configuration state %q", srv.State)
	}
	if c.state != Pending {
		close(c.done)
		return c
	}
	if m.opts.LogDir != "" && c.transport() == "stdio" {
		c.logPath = filepath.Join(m.opts.LogDir, logName(srv.Name)+"-"+c.digest[:12]+".log")
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	if c.transport() == "http" {
		switch {
		case m.opts.Auth != nil:
			c.oauth = m.opts.Auth.Handler(srv)
			c.auth = c.oauth
			c.authStop = c.oauth.Watch(c.onAuth)
		case m.opts.OAuthHandler != nil:
			c.auth = m.opts.OAuthHandler
		}
	}
	c.client = mcpsdk.NewClient(&mcpsdk.Implementation{Name: "tackle", Version: Version}, c.clientOptions())
	if m.opts.Client == nil || (m.opts.Client.CreateMessageHandler == nil && m.opts.Client.CreateMessageWithToolsHandler == nil) {
		c.client.AddReceivingMiddleware(c.declineSampling)
	}
	return c
}

// Version is the client version tackle announces to MCP servers.
var Version = "dev"

// logName makes a server name safe as a file name.
func logName(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == 0 || r == os.PathSeparator {
			return '_'
		}
		return r
	}, name)
}

func (c *Conn) transport() string {
	if c.cfg.Type == "" {
		return "stdio"
	}
	return c.cfg.Type
}

// startupTimeout bounds start + initialize + first listing: the server's
// own setting, else the manager's.
func (c *Conn) startupTimeout() time.Duration {
	if c.cfg.StartupTimeout > 0 {
		return c.cfg.StartupTimeout
	}
	return c.m.opts.StartupTimeout
}

// Name returns the server's configured name.
func (c *Conn) Name() string { return c.cfg.Name }

// Config returns the server's configuration.
func (c *Conn) Config() config.MCPServer { return c.cfg }

// Status returns a snapshot of the connection.
func (c *Conn) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{
		Name: c.cfg.Name, Scope: c.cfg.Scope, Source: c.cfg.Source, Transport: c.transport(),
		State: c.state, Error: c.lastErr, Since: c.since, ConnectedAt: c.connectedAt,
		Tools: len(c.tools), Resources: len(c.resources) + len(c.templates), Prompts: len(c.prompts),
		Restarts: c.restarts, LogPath: c.logPath, Digest: c.digest, ServerInfo: c.serverInfo,
		RetryAt: c.retryAt, Attempts: c.attempts,
	}
	if c.gen != nil && c.gen.proc != nil {
		st.PID = c.gen.proc.pid
	}
	if c.oauth != nil {
		st.AuthURL = c.oauth.Pending()
		st.Authorized = c.oauth.Authorized()
	}
	for s := range c.sessions {
		st.Sessions = append(st.Sessions, s)
	}
	sort.Strings(st.Sessions)
	return st
}

// State returns the connection's state: Status().State, without the rest
// of Status (the tool pipeline asks it for every call).
func (c *Conn) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state
}

// Tools returns the server's tools from the last successful listing (a
// failed refresh keeps the previous list). The slice must not be modified.
func (c *Conn) Tools() []*mcpsdk.Tool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools
}

// Resources returns the server's resources from the last successful listing.
func (c *Conn) Resources() []*mcpsdk.Resource {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resources
}

// ResourceTemplates returns the server's resource templates from the last
// successful listing.
func (c *Conn) ResourceTemplates() []*mcpsdk.ResourceTemplate {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.templates
}

// Prompts returns the server's prompts from the last successful listing.
func (c *Conn) Prompts() []*mcpsdk.Prompt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.prompts
}

// Do runs fn with the live session. It waits while the server is starting
// or reconnecting (at most the startup timeout, and no longer than ctx);
// a server that is not connected gives a *StateError. When fn fails because
// the connection broke (the process died, EOF, connection closed, an HTTP
// server refusing, answering 5xx or forgetting its session) Do returns a
// *ServerError and restarts or reconnects the server; fn is never retried.
// Other errors of fn are returned as they are.
func (c *Conn) Do(ctx context.Context, fn func(ctx context.Context, cs *mcpsdk.ClientSession) error) error {
	g, err := c.acquire(ctx)
	if err != nil {
		return err
	}
	rec := &callRecord{}
	callCtx := context.WithValue(ctx, callKey{}, rec)
	if g.proc == nil {
		// A remote connection that breaks under the call fails it soon
		// after (the SDK would go on trying to resume its stream).
		var cancel context.CancelCauseFunc
		callCtx, cancel = context.WithCancelCause(callCtx)
		defer cancel(nil)
		grace := c.m.opts.LostCallGrace
		go func() {
			select {
			case <-g.broken:
			case <-callCtx.Done():
				return
			}
			t := time.NewTimer(grace)
			defer t.Stop()
			select {
			case <-t.C:
				cancel(errConnLost)
			case <-callCtx.Done():
			}
		}()
	}
	err = fn(callCtx, g.cs)
	if err == nil {
		return nil
	}
	if errors.Is(context.Cause(callCtx), errConnLost) && ctx.Err() == nil {
		if be := g.brokenErr(); be != nil {
			err = fmt.Errorf("%w (%v)", errConnLost, be)
		} else {
			err = errConnLost
		}
	}
	fault, auth := rec.get()
	if auth != nil {
		g.breakWith(auth)
		return auth
	}
	transport := errors.Is(err, io.EOF) || errors.Is(err, mcpsdk.ErrConnectionClosed) ||
		errors.Is(err, mcpsdk.ErrSessionMissing) || fault != nil
	if !transport && g.proc != nil {
		select {
		case <-g.proc.exited:
			transport = true
		default:
		}
	}
	if !transport {
		if g.isBroken() && ctx.Err() == nil {
			transport = true
		} else {
			return err
		}
	}
	g.breakWith(err)
	se := &ServerError{Server: c.cfg.Name, Err: err}
	if g.proc != nil {
		// The supervisor stops a process that is still running; its status
		// follows shortly.
		se.ExitStatus = g.proc.exitStatus(5 * time.Second)
	}
	return se
}

// errConnLost ends a call whose remote connection broke under it.
var errConnLost = errors.New("the connection to the server was lost")

// acquire waits for a live generation.
func (c *Conn) acquire(ctx context.Context) (*generation, error) {
	timer := time.NewTimer(c.startupTimeout())
	defer timer.Stop()
	woke := false
	for {
		c.mu.Lock()
		st, g, ch := c.state, c.gen, c.changed
		lastErr := c.lastErr
		c.mu.Unlock()
		switch st {
		case Connected:
			if g != nil && !g.isBroken() {
				return g, nil
			}
		case Pending, Connecting:
		case Failed:
			// An HTTP server is reconnected for the next call.
			if c.transport() == "stdio" || woke {
				return nil, &StateError{Server: c.cfg.Name, State: st, Err: lastErr}
			}
			woke = true
			c.requestReconnect(false)
		default:
			return nil, &StateError{Server: c.cfg.Name, State: st, Err: lastErr}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for MCP server %q to connect: %w", c.cfg.Name, ctx.Err())
		case <-timer.C:
			return nil, &StateError{Server: c.cfg.Name, State: st, Err: fmt.Sprintf("still %s after %s", st, c.startupTimeout())}
		case <-c.done:
			return nil, &StateError{Server: c.cfg.Name, State: st, Err: "the connection was closed"}
		}
	}
}

// WatchProgress routes notifications/progress carrying token (compared by
// its printed form, so 7 and 7.0 match) to f until stop is called. f runs on
// the connection's reader and must not block.
func (c *Conn) WatchProgress(token any, f func(*mcpsdk.ProgressNotificationParams)) (stop func()) {
	key := fmt.Sprint(token)
	c.mu.Lock()
	c.progressSeq++
	id := c.progressSeq
	if c.progress[key] == nil {
		c.progress[key] = map[int]func(*mcpsdk.ProgressNotificationParams){}
	}
	c.progress[key][id] = f
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			delete(c.progress[key], id)
			if len(c.progress[key]) == 0 {
				delete(c.progress, key)
			}
			c.mu.Unlock()
		})
	}
}

func (c *Conn) onProgress(p *mcpsdk.ProgressNotificationParams) {
	if p == nil {
		return
	}
	key := fmt.Sprint(p.ProgressToken)
	c.mu.Lock()
	fs := make([]func(*mcpsdk.ProgressNotificationParams), 0, len(c.progress[key]))
	for _, f := range c.progress[key] {
		fs = append(fs, f)
	}
	c.mu.Unlock()
	for _, f := range fs {
		f(p)
	}
}

// setState moves to st with err ("" clears it) and tells the listeners.
func (c *Conn) setState(st State, err string) {
	c.mu.Lock()
	changed := c.state != st || c.lastErr != err
	c.state, c.lastErr = st, err
	if changed {
		c.since = time.Now()
	}
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
	if changed {
		if err != "" {
			c.log.Warn("state", "state", st, "error", err)
		} else {
			c.log.Debug("state", "state", st)
		}
		c.m.notify(c.cfg.Name)
	}
}

// onAuth follows the server's OAuth flow: while it waits for a person a
// connecting server is needs-auth (calls fail at once, saying what to
// do); the steps go to the manager's OnAuth.
func (c *Conn) onAuth(ev oauth.Event) {
	c.mu.Lock()
	st := c.state
	c.mu.Unlock()
	switch ev.State {
	case oauth.Required:
		if st == Connecting || st == Pending || st == NeedsAuth {
			c.setState(NeedsAuth, fmt.Sprintf("waiting for authorisation in a browser: open %s (or run `tackle mcp login %s`)", ev.URL, c.cfg.Name))
		}
	case oauth.Authorized:
		if st == NeedsAuth {
			c.setState(Connecting, "")
		}
	}
	c.m.notifyAuth(c.cfg.Name, ev)
	c.m.notify(c.cfg.Name)
}

// requestReconnect wakes the supervisor; reset gives a failed server a new
// restart budget.
func (c *Conn) requestReconnect(reset bool) {
	select {
	case c.wake <- reset:
	default:
		if reset { // make sure the reset is not lost behind a plain request
			select {
			case <-c.wake:
			default:
			}
			select {
			case c.wake <- true:
			default:
			}
		}
	}
}

// start launches the supervisor (once).
func (c *Conn) start() {
	c.mu.Lock()
	if c.started || c.closed || c.client == nil {
		c.mu.Unlock()
		return
	}
	c.started = true
	c.mu.Unlock()
	go c.run()
}

// close stops the supervisor and the server and waits for them.
func (c *Conn) close() {
	c.mu.Lock()
	started := c.started
	c.closed = true
	c.mu.Unlock()
	if c.cancel == nil {
		return
	}
	c.cancel()
	if c.authStop != nil {
		c.authStop()
	}
	if started {
		<-c.done
	} else {
		c.mu.Lock()
		select {
		case <-c.done:
		default:
			close(c.done)
		}
		c.mu.Unlock()
	}
	c.wg.Wait()
	c.logMu.Lock()
	if c.logFile != nil {
		c.logFile.Close()
		c.logFile = nil
	}
	c.logMu.Unlock()
}

// run is the supervisor: it connects, watches the live generation, and
// restarts a process or reconnects to an HTTP or SSE server when the
// connection breaks: at once, then with backoff (1 s doubling, 5 tries),
// then Failed until Reconnect. A call to a failed HTTP or SSE server wakes
// a reconnect at once (Conn.acquire).
func (c *Conn) run() {
	defer close(c.done)
	tries := 0       // restart attempts since the last crash of a healthy server
	crashed := false // the last generation died (as opposed to never starting)
	for {
		if crashed {
			c.mu.Lock()
			c.restarts++
			c.mu.Unlock()
		}
		c.setState(Connecting, c.currentErr(crashed))
		g, err := c.connect()
		if c.ctx.Err() != nil {
			if g != nil {
				g.close(stopGrace)
			}
			c.finish()
			return
		}
		if err == nil {
			up := time.Now()
			c.mu.Lock()
			c.gen = g
			c.connectedAt = up
			c.attempts, c.retryAt = 0, time.Time{}
			c.mu.Unlock()
			c.setState(Connected, "")
			var reset bool
			woke := false
			select {
			case <-c.ctx.Done():
			case <-g.broken:
			case reset = <-c.wake:
				woke = true
			}
			c.mu.Lock()
			c.gen = nil
			c.mu.Unlock()
			if c.ctx.Err() == nil && !woke {
				c.setState(Connecting, "connection lost, reconnecting")
			}
			if c.ctx.Err() != nil {
				g.close(stopGrace)
				c.finish()
				return
			}
			cause := g.brokenErr()
			if !woke {
				// Give the process a moment to be reaped so the state names
				// its exit status.
				status := g.proc.exitStatus(time.Second)
				cause = c.describe(cause, status)
				c.log.Warn("connection lost", "error", cause)
			}
			c.closeGen(g)
			if woke {
				if reset {
					tries = 0
				}
				crashed = false
				continue
			}
			var ae *AuthError
			if errors.As(cause, &ae) {
				c.setState(NeedsAuth, ae.Error())
				if !c.waitWake(0) {
					c.finish()
					return
				}
				tries, crashed = 0, false
				continue
			}
			if time.Since(up) > time.Minute {
				tries = 0
			}
			c.mu.Lock()
			c.lastErr = cause.Error()
			c.mu.Unlock()
			if c.transport() != "stdio" {
				// Reconnect at once; if that fails, the next call tries again.
				crashed = true
				continue
			}
			crashed = true
			if !c.backoff(&tries, cause) {
				c.finish()
				return
			}
			continue
		}
		// The attempt failed.
		var ae *AuthError
		if errors.As(err, &ae) {
			c.setState(NeedsAuth, ae.Error())
		} else if c.transport() != "stdio" {
			// A remote server comes back by itself: try again, for as
			// long as the daemon runs.
			if !c.retryRemote(err) {
				c.finish()
				return
			}
			crashed = false
			continue
		} else if crashed && tries < maxRestarts {
			if !c.backoff(&tries, err) {
				c.finish()
				return
			}
			continue
		} else {
			msg := err.Error()
			if crashed {
				msg = fmt.Sprintf("%s (gave up after %d %s; run `tackle mcp reconnect %s`)", msg, maxRestarts, c.retryWord(), c.cfg.Name)
			}
			c.setState(Failed, msg)
		}
		if !c.waitWake(0) {
			c.finish()
			return
		}
		tries, crashed = 0, false
	}
}

// currentErr is the error shown while reconnecting after a crash.
func (c *Conn) currentErr(crashed bool) string {
	if !crashed {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastErr
}

// describe names the server, and for a process its exit status.
func (c *Conn) describe(cause error, status string) error {
	if cause == nil {
		cause = mcpsdk.ErrConnectionClosed
	}
	if status != "" {
		return fmt.Errorf("server process exited (%s): %w", status, cause)
	}
	return cause
}

// backoff waits before restart number *tries+1 (Backoff doubling), in state
// Failed with a message saying so. It returns false when the Conn closes.
func (c *Conn) backoff(tries *int, cause error) bool {
	if *tries >= maxRestarts {
		c.setState(Failed, fmt.Sprintf("%v (gave up after %d %s; run `tackle mcp reconnect %s`)", cause, maxRestarts, c.retryWord(), c.cfg.Name))
		if !c.waitWake(0) {
			return false
		}
		*tries = 0
		return true
	}
	d := c.m.opts.Backoff << *tries
	*tries++
	verb := "restarting"
	if c.transport() != "stdio" {
		verb = "reconnecting"
	}
	c.setState(Failed, fmt.Sprintf("%v; %s in %s (attempt %d of %d)", cause, verb, d, *tries, maxRestarts))
	if !c.waitWake(d) {
		return false
	}
	return true
}

// retryRemote waits before the next attempt to reach a remote server:
// Backoff doubling per failed attempt up to MaxBackoff, ±20% jitter, in
// state Failed. The message names the attempt but not the delay, which
// would be stale a second later: RetryAt says when, and what shows it
// counts down from there. A call or Reconnect wakes it early. It returns
// false when the Conn closes.
func (c *Conn) retryRemote(cause error) bool {
	c.mu.Lock()
	c.attempts++
	n := c.attempts
	d := c.m.opts.Backoff
	for i := 1; i < n && d < c.m.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, c.m.opts.MaxBackoff)
	d += time.Duration((rand.Float64()*0.4 - 0.2) * float64(d))
	c.retryAt = time.Now().Add(d)
	c.mu.Unlock()
	c.setState(Failed, fmt.Sprintf("%v (attempt %d; tried again by itself)", cause, n))
	ok := c.waitWake(d)
	c.mu.Lock()
	c.retryAt = time.Time{}
	c.mu.Unlock()
	return ok
}

// retryWord names what a retry is: a restart of a process, a reconnect
// to an HTTP or SSE server.
func (c *Conn) retryWord() string {
	if c.transport() == "stdio" {
		return "restarts"
	}
	return "reconnects"
}

// waitWake waits for a reconnect request, or d when d > 0. It returns false
// when the Conn closes.
func (c *Conn) waitWake(d time.Duration) bool {
	var tc <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		tc = t.C
	}
	select {
	case <-c.ctx.Done():
		return false
	case <-c.wake:
		return true
	case <-tc:
		return true
	}
}

// finish records the final state when the Conn closes.
func (c *Conn) finish() {
	c.mu.Lock()
	c.gen = nil
	c.state = Failed
	c.lastErr = "closed"
	c.since = time.Now()
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// closeGen closes a generation; an HTTP close (which may wait for calls in
// flight) runs in the background.
func (c *Conn) closeGen(g *generation) {
	if g.proc != nil {
		g.close(stopGrace)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		g.close(stopGrace)
	}()
}

// connect makes one attempt: start the process or open the HTTP session,
// initialize, list tools, resources and prompts.
func (c *Conn) connect() (*generation, error) {
	timeout := c.startupTimeout()
	ctx, cancel := context.WithCancelCause(c.ctx)
	defer cancel(nil)
	clock := newStartupClock(timeout, func() { cancel(context.DeadlineExceeded) })
	defer clock.stop()
	ctx = oauth.WithPause(ctx, clock.pause)
	g := newGeneration()
	var t mcpsdk.Transport
	switch c.transport() {
	case "stdio":
		lf := c.openLog()
		c.logf("starting %s %s", c.cfg.Command, strings.Join(c.cfg.Args, " "))
		p, err := startProcess(&c.cfg, lf)
		if err != nil {
			g.cancel()
			c.logf("%v", err)
			return nil, err
		}
		g.proc = p
		t = &mcpstdio.Transport{Reader: p.stdout, Writer: p.stdin, MaxLine: maxLine, Junk: c.junk}
	case "http":
		t = &mcpsdk.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: c.httpClient(g), OAuthHandler: c.auth}
	case "sse":
		t = &sseTransport{inner: &mcpsdk.SSEClientTransport{Endpoint: c.cfg.URL, HTTPClient: c.httpClient(g)}, g: g}
	default:
		g.cancel()
		return nil, fmt.Errorf("unsupported transport %q", c.cfg.Type)
	}
	c.mu.Lock()
	pv := c.protocolVersion
	c.mu.Unlock()
	cs, err := c.client.Connect(ctx, t, &mcpsdk.ClientSessionOptions{ProtocolVersion: pv})
	if err == nil {
		g.cs = cs
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			_ = cs.Wait()
			g.breakWith(mcpsdk.ErrConnectionClosed)
		}()
		if g.proc != nil {
			c.wg.Add(1)
			go func() {
				defer c.wg.Done()
				select {
				case <-g.proc.exited:
					g.breakWith(fmt.Errorf("server process exited (%s)", g.proc.status))
				case <-g.ctx.Done():
				}
			}()
		}
		err = c.refreshAll(ctx, g)
	}
	if err != nil {
		if g.cs == nil && g.proc != nil {
			g.proc.stdout.Close()
		}
		g.close(stopGrace)
		if ae := g.authErr(); ae != nil {
			if c.oauth != nil {
				ae.Cause = c.oauth.LastError()
			}
			return nil, ae
		}
		switch {
		case c.ctx.Err() != nil:
		case errors.Is(context.Cause(ctx), context.DeadlineExceeded):
			err = fmt.Errorf("did not finish initialize within %s", timeout)
		case g.proc != nil && g.proc.exitStatus(time.Second) != "":
			err = fmt.Errorf("server process exited during startup (%s): %w", g.proc.status, err)
		}
		if c.logPath != "" && g.proc != nil {
			err = fmt.Errorf("%w (log: %s)", err, c.logPath)
		}
		c.logf("startup failed: %v", err)
		return nil, err
	}
	res := cs.InitializeResult()
	c.mu.Lock()
	if res != nil {
		c.protocolVersion = res.ProtocolVersion
		if res.ServerInfo != nil {
			c.serverInfo = strings.TrimSpace(res.ServerInfo.Name + " " + res.ServerInfo.Version)
		}
	}
	c.mu.Unlock()
	g.live.Store(true)
	return g, nil
}

// startupClock is a connection attempt's startup timeout, which does not
// run while an OAuth flow waits for a person.
type startupClock struct {
	mu      sync.Mutex
	t       *time.Timer
	left    time.Duration
	started time.Time
	paused  int
}

func newStartupClock(d time.Duration, fire func()) *startupClock {
	return &startupClock{t: time.AfterFunc(d, fire), left: d, started: time.Now()}
}

func (k *startupClock) pause() (resume func()) {
	k.mu.Lock()
	if k.paused == 0 && k.t.Stop() {
		k.left -= time.Since(k.started)
	}
	k.paused++
	k.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			k.mu.Lock()
			defer k.mu.Unlock()
			if k.paused--; k.paused == 0 && k.left > 0 {
				k.started = time.Now()
				k.t.Reset(k.left)
			}
		})
	}
}

func (k *startupClock) stop() {
	k.mu.Lock()
	k.left = 0
	k.t.Stop()
	k.mu.Unlock()
}

// httpClient is the configured (or a plain) HTTP client with the server's
// headers and fault recording for generation g.
func (c *Conn) httpClient(g *generation) *http.Client {
	var hc http.Client
	if c.m.opts.HTTPClient != nil {
		hc = *c.m.opts.HTTPClient
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &httpTransport{base: base, headers: c.cfg.Headers, g: g, server: c.cfg.Name, oauth: c.auth != nil}
	return &hc
}

// refreshAll fetches every list the server offers; a failed list keeps the
// previous one (and is logged), except that the tools list must work.
func (c *Conn) refreshAll(ctx context.Context, g *generation) error {
	for _, kind := range []string{"tools", "resources", "prompts"} {
		if err := c.refresh(ctx, g.cs, kind); err != nil {
			if kind == "tools" {
				return fmt.Errorf("listing tools: %w", err)
			}
			c.log.Warn("listing failed, keeping the previous list", "list", kind, "error", err)
		}
	}
	return nil
}

// refresh lists one kind ("tools", "resources" (with templates), "prompts")
// and stores it when cs is still current or connecting. It reports whether
// something was stored.
func (c *Conn) refresh(ctx context.Context, cs *mcpsdk.ClientSession, kind string) error {
	res := cs.InitializeResult()
	var caps *mcpsdk.ServerCapabilities
	if res != nil {
		caps = res.Capabilities
	}
	if caps == nil {
		caps = &mcpsdk.ServerCapabilities{}
	}
	switch kind {
	case "tools":
		var tools []*mcpsdk.Tool
		if caps.Tools != nil {
			for t, err := range cs.Tools(ctx, nil) {
				if err != nil {
					return err
				}
				tools = append(tools, t)
			}
		}
		return c.store(cs, func() { c.tools = tools })
	case "resources":
		var rs []*mcpsdk.Resource
		var ts []*mcpsdk.ResourceTemplate
		if caps.Resources != nil {
			for r, err := range cs.Resources(ctx, nil) {
				if err != nil {
					return err
				}
				rs = append(rs, r)
			}
			for t, err := range cs.ResourceTemplates(ctx, nil) {
				if err != nil {
					// Templates are optional: many servers have none.
					var je *jsonrpc.Error
					if errors.As(err, &je) && je.Code == jsonrpc.CodeMethodNotFound {
						break
					}
					return err
				}
				ts = append(ts, t)
			}
		}
		return c.store(cs, func() { c.resources, c.templates = rs, ts })
	case "prompts":
		var ps []*mcpsdk.Prompt
		if caps.Prompts != nil {
			for p, err := range cs.Prompts(ctx, nil) {
				if err != nil {
					return err
				}
				ps = append(ps, p)
			}
		}
		return c.store(cs, func() { c.prompts = ps })
	}
	return nil
}

// errStale is a refresh whose session is no longer current.
var errStale = errors.New("session replaced")

func (c *Conn) store(cs *mcpsdk.ClientSession, set func()) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != nil && c.gen.cs != cs {
		return errStale
	}
	set()
	return nil
}

// listChanged refreshes one list in the background and tells OnChange.
func (c *Conn) listChanged(cs *mcpsdk.ClientSession, kind string) {
	if cs == nil {
		return
	}
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if closed {
		return
	}
	go func() {
		defer c.wg.Done()
		ctx, cancel := context.WithTimeout(c.ctx, c.startupTimeout())
		defer cancel()
		if err := c.refresh(ctx, cs, kind); err != nil {
			if !errors.Is(err, errStale) && c.ctx.Err() == nil {
				c.log.Warn("refresh after list_changed failed, keeping the previous list", "list", kind, "error", err)
			}
			return
		}
		c.mu.Lock()
		current := c.gen != nil && c.gen.cs == cs
		c.mu.Unlock()
		if current {
			c.m.notify(c.cfg.Name)
		}
	}()
}

// clientOptions builds the SDK client options: the Manager's base options
// with tackle's handlers chained in.
func (c *Conn) clientOptions() *mcpsdk.ClientOptions {
	var o mcpsdk.ClientOptions
	if c.m.opts.Client != nil {
		o = *c.m.opts.Client
	}
	if o.Logger == nil {
		o.Logger = c.m.slog
	}
	tl, rl, pl, pn := o.ToolListChangedHandler, o.ResourceListChangedHandler, o.PromptListChangedHandler, o.ProgressNotificationHandler
	o.ToolListChangedHandler = func(ctx context.Context, r *mcpsdk.ToolListChangedRequest) {
		c.listChanged(r.Session, "tools")
		if tl != nil {
			tl(ctx, r)
		}
	}
	o.ResourceListChangedHandler = func(ctx context.Context, r *mcpsdk.ResourceListChangedRequest) {
		c.listChanged(r.Session, "resources")
		if rl != nil {
			rl(ctx, r)
		}
	}
	o.PromptListChangedHandler = func(ctx context.Context, r *mcpsdk.PromptListChangedRequest) {
		c.listChanged(r.Session, "prompts")
		if pl != nil {
			pl(ctx, r)
		}
	}
	o.ProgressNotificationHandler = func(ctx context.Context, r *mcpsdk.ProgressNotificationClientRequest) {
		c.onProgress(r.Params)
		if pn != nil {
			pn(ctx, r)
		}
	}
	if o.LoggingMessageHandler == nil {
		o.LoggingMessageHandler = func(_ context.Context, r *mcpsdk.LoggingMessageRequest) {
			if p := r.Params; p != nil {
				c.logf("server log [%s] %s: %v", p.Level, p.Logger, p.Data)
			}
		}
	}
	if o.ElicitationHandler == nil {
		o.ElicitationHandler = func(_ context.Context, r *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
			msg := ""
			if r.Params != nil {
				msg = r.Params.Message
			}
			c.log.Warn("declined an elicitation request: tackle does not answer elicitation yet", "message", msg)
			c.logf("declined elicitation request %q: tackle does not answer elicitation yet", msg)
			return &mcpsdk.ElicitResult{Action: "decline"}, nil
		}
	}
	return &o
}

// declineSampling answers sampling/createMessage with a clear error (the
// capability is not advertised, but a server may ask anyway).
func (c *Conn) declineSampling(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
	return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
		if method == "sampling/createMessage" {
			c.log.Warn("declined a sampling request: tackle does not offer sampling yet")
			c.logf("declined a sampling request: tackle does not offer sampling yet")
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "tackle declined the sampling request: sampling is not supported by this client yet"}
		}
		return next(ctx, method, req)
	}
}

// openLog opens (once) the per-server log; nil without a LogDir.
func (c *Conn) openLog() io.Writer {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	if c.logFile != nil {
		return c.logFile
	}
	if c.logPath == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(c.logPath), 0o700); err != nil {
		c.log.Warn("making log directory", "error", err)
		return nil
	}
	f, err := openRotatingLog(c.logPath, c.m.opts.LogCap)
	if err != nil {
		c.log.Warn("opening server log", "path", c.logPath, "error", err)
		return nil
	}
	c.logFile = f
	return f
}

// logf writes a tackle note to the per-server log.
func (c *Conn) logf(format string, args ...any) {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	if c.logFile == nil {
		return
	}
	fmt.Fprintf(c.logFile, "[tackle %s] %s\n", time.Now().Format(time.RFC3339), fmt.Sprintf(format, args...))
}

// junk logs a stdout line that is not JSON.
func (c *Conn) junk(line []byte) {
	if len(line) > 1000 {
		line = append(line[:1000:1000], "…"...)
	}
	c.logf("ignored non-JSON line on stdout: %s", line)
}

// setRoots announces roots (directories) to the server, adding and
// removing the difference from what it was told before.
func (c *Conn) setRoots(dirs []string) {
	if c.client == nil {
		return
	}
	c.rootsMu.Lock()
	defer c.rootsMu.Unlock()
	var add []*mcpsdk.Root
	for _, d := range dirs {
		if !slices.Contains(c.roots, d) {
			add = append(add, &mcpsdk.Root{URI: fileURI(d), Name: filepath.Base(d)})
		}
	}
	var remove []string
	for _, d := range c.roots {
		if !slices.Contains(dirs, d) {
			remove = append(remove, fileURI(d))
		}
	}
	if len(remove) > 0 {
		c.client.RemoveRoots(remove...)
	}
	if len(add) > 0 {
		c.client.AddRoots(add...)
	}
	c.roots = dirs
}

// fileURI is the file:// URI of an absolute path.
func fileURI(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}

// rootUnion is the sorted union of the sessions' directories. Caller holds c.mu.
func (c *Conn) rootUnionLocked() []string {
	var all []string
	for _, ds := range c.sessions {
		for _, d := range ds {
			if !slices.Contains(all, d) {
				all = append(all, d)
			}
		}
	}
	sort.Strings(all)
	return all
}

package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/mcp/oauth"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// Options configures a Manager. The zero value (or nil) gives the defaults.
type Options struct {
	// LogDir holds per-server stderr logs, LogDir/<name>-<digest[:12]>.log;
	// "" keeps no logs.
	LogDir string
	// LogCap is the size at which a log is rotated to <log>.1 (default
	// DefaultLogCap, 10 MB).
	LogCap int64
	// Logger receives the manager's and the go-sdk's logs (default: none).
	Logger hclog.Logger
	// StartupTimeout bounds start + initialize + first listing (default 30 s).
	StartupTimeout time.Duration
	// OnChange is called (from background goroutines, no locks held) when a
	// server's state or its tool, resource or prompt lists change. It must
	// not block for long.
	OnChange func(server string)
	// Client is the base of every SDK client's options (handlers set here
	// win over tackle's defaults). By default elicitation is declined and
	// sampling refused, with a clear message, and logged.
	Client *mcpsdk.ClientOptions
	// HTTPClient is used for http and sse servers (default: a plain one).
	HTTPClient *http.Client
	// OAuthHandler authorises every Streamable HTTP server's requests
	// (optional; Auth wins).
	OAuthHandler auth.OAuthHandler
	// Auth authorises each Streamable HTTP server with its own OAuth
	// handler (optional): a 401 starts the server's flow.
	Auth *oauth.Broker
	// OnAuth is called at every step of a server's OAuth flow (the URL a
	// person must open, the outcome), from background goroutines.
	OnAuth func(server string, ev oauth.Event)
	// Backoff is the first delay before restarting a crashed stdio server;
	// it doubles for each of the 5 tries (default 1 s). An http or sse
	// server that cannot be reached is retried for the life of the daemon
	// from the same delay, doubling up to MaxBackoff, jittered.
	Backoff time.Duration
	// MaxBackoff caps the delay between reconnects to a remote server
	// (default 5 minutes).
	MaxBackoff time.Duration
	// LostCallGrace is how long a call in flight to a remote server may
	// still finish after its connection broke (default 2 s).
	LostCallGrace time.Duration
}

// closeBound bounds how long Close and Release wait for servers to stop.
const closeBound = 10 * time.Second

// Manager owns every MCP connection of the daemon: one Conn per distinct
// server (name and configuration digest), shared by the sessions that use
// it. Its methods are safe for concurrent use.
type Manager struct {
	opts Options
	log  hclog.Logger
	slog *slog.Logger

	closing sync.WaitGroup // conns being closed

	mu       sync.Mutex // guards the fields below; taken before a Conn's mu
	conns    map[string]*Conn
	sessions map[string]*sessionUse
	closed   bool

	// collided holds the collisions logged already (by name, server and
	// tool; at most maxCachedSpecs): each is logged once, not at every
	// listing of the tools.
	collidedMu sync.Mutex
	collided   map[string]bool

	specMu sync.Mutex // guards specs
	// specs caches each listed tool's spec (its schema re-encoded), by the
	// go-sdk's *Tool of a list: a refreshed list brings new pointers.
	specs map[specKey]tool.Spec
}

// specKey identifies a tool of a server's list.
type specKey struct {
	server string
	t      *mcpsdk.Tool
}

// maxCachedSpecs bounds Manager.specs; past it the cache starts over.
const maxCachedSpecs = 20000

// specOf returns the spec of t, a tool of server's current list.
func (m *Manager) specOf(server string, t *mcpsdk.Tool) tool.Spec {
	build := func() tool.Spec {
		sp := tool.Spec{
			Name:        ToolName(server, t.Name),
			Description: cutDescription(t.Description),
			InputSchema: inputSchema(t.InputSchema),
			Title:       t.Title,
		}
		if sp.Description != t.Description {
			sp.OriginalDescription = t.Description
		}
		if t.Annotations != nil {
			if b, err := json.Marshal(t.Annotations); err == nil {
				sp.Annotations = b
			}
		}
		if t.OutputSchema != nil {
			if b, err := json.Marshal(t.OutputSchema); err == nil && string(b) != "null" {
				sp.OutputSchema = b
			}
		}
		return sp
	}
	if m == nil {
		return build()
	}
	k := specKey{server, t}
	m.specMu.Lock()
	sp, ok := m.specs[k]
	m.specMu.Unlock()
	if ok {
		return sp
	}
	sp = build()
	m.specMu.Lock()
	if m.specs == nil || len(m.specs) >= maxCachedSpecs {
		m.specs = map[specKey]tool.Spec{}
	}
	m.specs[k] = sp
	m.specMu.Unlock()
	return sp
}

// sessionUse is what one session uses.
type sessionUse struct {
	roots []string
	conns map[string]*Conn // by name; shared conns, or private never-started ones
}

// New returns a Manager; it starts nothing until Use.
func New(opts *Options) *Manager {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.StartupTimeout <= 0 {
		o.StartupTimeout = 30 * time.Second
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	if o.LogCap <= 0 {
		o.LogCap = DefaultLogCap
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Minute
	}
	if o.LostCallGrace <= 0 {
		o.LostCallGrace = 2 * time.Second
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	m := &Manager{
		opts:     o,
		log:      o.Logger.Named("mcp"),
		conns:    map[string]*Conn{},
		sessions: map[string]*sessionUse{},
	}
	m.slog = slog.New(&slogHandler{l: m.log.Named("sdk")})
	return m
}

func (m *Manager) notify(server string) {
	if m.opts.OnChange != nil {
		m.opts.OnChange(server)
	}
}

func (m *Manager) notifyAuth(server string, ev oauth.Event) {
	if m.opts.OnAuth != nil {
		m.opts.OnAuth(server, ev)
	}
}

func connKey(s *config.MCPServer) string { return s.Name + "\x00" + s.Digest() }

// Use sets the servers session sessionID uses (from config.MCPServers) and
// the directories to announce as its roots. New servers start concurrently
// in the background; servers no session uses any more are closed. Servers
// that need approval or are disabled are listed and never started. It is
// safe to call again whenever the configuration or the roots change.
//
// It returns, sorted, the names whose connection changed for this session:
// a server it no longer uses, one replaced by another entry of that name,
// one that became disabled or needs approval, or the other way round, and a
// server it now shares with another session, already started. Their tools
// changed now, and OnChange, which follows a connection's sessions, no
// longer reaches a session that left it nor tells one that joined a
// connection that does not change: the caller tells the session. (A
// server started here is announced by OnChange once it connects.)
func (m *Manager) Use(sessionID string, servers []config.MCPServer, roots []string) (changed []string) {
	roots = append([]string(nil), roots...)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	old := m.sessions[sessionID]
	use := &sessionUse{roots: roots, conns: map[string]*Conn{}}
	var start []*Conn
	touched := map[*Conn]bool{}
	for i := range servers {
		s := servers[i]
		if _, dup := use.conns[s.Name]; dup {
			continue // the first of a name wins, as in config precedence
		}
		if s.State != "" {
			use.conns[s.Name] = newConn(m, s)
			continue
		}
		key := connKey(&s)
		c := m.conns[key]
		if c == nil {
			c = newConn(m, s)
			m.conns[key] = c
			start = append(start, c)
		}
		c.mu.Lock()
		c.sessions[sessionID] = roots
		c.mu.Unlock()
		use.conns[s.Name] = c
		touched[c] = true
	}
	var drop []*Conn
	if old != nil {
		for name, c := range old.conns {
			if !touched[c] && m.releaseLocked(sessionID, c) {
				drop = append(drop, c)
			}
			if n := use.conns[name]; n != c && (n == nil || c.cfg.State == "" || n.cfg.State != c.cfg.State) {
				changed = append(changed, name) // not the same placeholder made again either
			}
		}
	}
	if old != nil {
		for name, c := range use.conns {
			if old.conns[name] == nil && c.cfg.State == "" && !slices.Contains(start, c) {
				changed = append(changed, name)
			}
		}
	}
	m.sessions[sessionID] = use
	m.mu.Unlock()
	slices.Sort(changed)

	for c := range touched {
		c.mu.Lock()
		u := c.rootUnionLocked()
		c.mu.Unlock()
		c.setRoots(u)
	}
	for _, c := range start {
		c.start()
	}
	m.closeAll(drop, false)
	return changed
}

// releaseLocked removes sessionID from c and reports whether c is unused
// now (and so removed from the manager). Caller holds m.mu.
func (m *Manager) releaseLocked(sessionID string, c *Conn) bool {
	if c.client == nil {
		return false // private, never started
	}
	c.mu.Lock()
	delete(c.sessions, sessionID)
	n := len(c.sessions)
	c.mu.Unlock()
	if n > 0 {
		return false
	}
	key := c.cfg.Name + "\x00" + c.digest
	if m.conns[key] == c {
		delete(m.conns, key)
	}
	return true
}

// Release drops everything session sessionID uses; servers nobody uses any
// more are closed in the background.
func (m *Manager) Release(sessionID string) {
	m.mu.Lock()
	use := m.sessions[sessionID]
	delete(m.sessions, sessionID)
	var drop, keep []*Conn
	if use != nil {
		for _, c := range use.conns {
			if m.releaseLocked(sessionID, c) {
				drop = append(drop, c)
			} else if c.client != nil {
				keep = append(keep, c)
			}
		}
	}
	m.mu.Unlock()
	for _, c := range keep {
		c.mu.Lock()
		u := c.rootUnionLocked()
		c.mu.Unlock()
		c.setRoots(u)
	}
	m.closeAll(drop, false)
	for _, c := range drop {
		m.notify(c.cfg.Name)
	}
}

// closeAll closes conns concurrently; with wait it returns when they are
// closed or closeBound has passed.
func (m *Manager) closeAll(conns []*Conn, wait bool) {
	if len(conns) == 0 {
		return
	}
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		m.closing.Add(1)
		go func() {
			defer m.closing.Done()
			defer wg.Done()
			c.close()
		}()
	}
	if wait && !waitBounded(&wg, closeBound) {
		m.log.Warn("some MCP servers did not stop in time", "bound", closeBound)
	}
}

// waitBounded waits for wg at most d and reports whether it finished.
func waitBounded(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Conns returns the servers session sessionID uses, sorted by name.
func (m *Manager) Conns(sessionID string) []*Conn {
	m.mu.Lock()
	defer m.mu.Unlock()
	use := m.sessions[sessionID]
	if use == nil {
		return nil
	}
	out := make([]*Conn, 0, len(use.conns))
	for _, c := range use.conns {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].cfg.Name < out[j].cfg.Name })
	return out
}

// Conn returns the server named name that session sessionID uses.
func (m *Manager) Conn(sessionID, name string) (*Conn, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	use := m.sessions[sessionID]
	if use == nil {
		return nil, false
	}
	c, ok := use.conns[name]
	return c, ok
}

// Status returns every server of every session, each shared connection
// once, sorted by name (then digest).
func (m *Manager) Status() []Status {
	m.mu.Lock()
	seen := map[*Conn]bool{}
	var conns []*Conn
	private := map[string]*Status{} // never-started servers, merged by name+digest+state
	var privOrder []string
	for sid, use := range m.sessions {
		for _, c := range use.conns {
			if c.client == nil {
				st := c.Status()
				k := string(st.State) + "\x00" + st.Name + "\x00" + st.Digest
				if p := private[k]; p != nil {
					p.Sessions = append(p.Sessions, sid)
				} else {
					st.Sessions = []string{sid}
					private[k] = &st
					privOrder = append(privOrder, k)
				}
				continue
			}
			if !seen[c] {
				seen[c] = true
				conns = append(conns, c)
			}
		}
	}
	m.mu.Unlock()
	out := make([]Status, 0, len(conns)+len(private))
	for _, c := range conns {
		out = append(out, c.Status())
	}
	for _, k := range privOrder {
		st := private[k]
		sort.Strings(st.Sessions)
		out = append(out, *st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Digest < out[j].Digest
	})
	return out
}

// Reconnect restarts every connection of the server named name (resetting
// a failed server's restart budget) and waits until each is connected or
// has failed again, or ctx ends.
func (m *Manager) Reconnect(ctx context.Context, name string) error {
	m.mu.Lock()
	var conns []*Conn
	var inactive *Conn
	for _, c := range m.conns {
		if c.cfg.Name == name {
			conns = append(conns, c)
		}
	}
	for _, use := range m.sessions {
		if c, ok := use.conns[name]; ok && c.client == nil {
			inactive = c
		}
	}
	m.mu.Unlock()
	if len(conns) == 0 {
		if inactive != nil {
			st := inactive.Status()
			return &StateError{Server: name, State: st.State, Err: st.Error}
		}
		return fmt.Errorf("reconnecting MCP server %q: no session uses a server of that name", name)
	}
	// Note each conn's change channel before asking, so the wait below
	// sees the reconnect and not the state before it.
	chans := make([]chan struct{}, len(conns))
	for i, c := range conns {
		c.mu.Lock()
		chans[i] = c.changed
		c.mu.Unlock()
		c.requestReconnect(true)
	}
	var errs []error
	for i, c := range conns {
		if err := c.awaitSettled(ctx, chans[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("reconnecting MCP server %q: %w", name, errs[0])
	}
	return nil
}

// awaitSettled waits for a change after ch, then until the state is
// connected (nil) or a settled failure (its error).
func (c *Conn) awaitSettled(ctx context.Context, ch chan struct{}) error {
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.done:
		return &StateError{Server: c.cfg.Name, State: Failed, Err: "the connection was closed"}
	}
	for {
		c.mu.Lock()
		st, errMsg, next := c.state, c.lastErr, c.changed
		c.mu.Unlock()
		switch st {
		case Connected:
			return nil
		case Failed, NeedsAuth:
			return &StateError{Server: c.cfg.Name, State: st, Err: errMsg}
		}
		select {
		case <-next:
		case <-ctx.Done():
			return ctx.Err()
		case <-c.done:
			return &StateError{Server: c.cfg.Name, State: Failed, Err: "the connection was closed"}
		}
	}
}

// Close closes every connection concurrently and waits (bounded) for the
// servers to stop. Use does nothing afterwards.
func (m *Manager) Close() {
	m.mu.Lock()
	m.closed = true
	conns := make([]*Conn, 0, len(m.conns))
	for _, c := range m.conns {
		conns = append(conns, c)
	}
	m.conns = map[string]*Conn{}
	m.sessions = map[string]*sessionUse{}
	m.mu.Unlock()
	m.closeAll(conns, true)
	// Conns dropped by Release earlier may still be stopping.
	waitBounded(&m.closing, closeBound)
}

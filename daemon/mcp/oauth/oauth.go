// Package oauth authorises tackle with remote MCP servers by OAuth: the
// MCP authorization flow (protected-resource and authorization-server
// metadata, a pre-registered client, a client ID metadata document or
// dynamic registration, the authorization code grant with PKCE S256 and
// the resource parameter, state and iss checked) on the go-sdk's auth
// package, run once per server for the whole daemon.
//
// A Broker holds a Handler per server (name and URL), the loopback
// listener the browser comes back to, and the flows waiting for it. A
// flow's URL goes to the handler's watchers (the connections, which tell
// the sessions' clients); tokens live in one 0600 file per server and are
// refreshed before they expire.
package oauth

import (
	"context"
	"errors"
	"fmt"
	"html"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/tackle-agent/tackle/daemon/config"
	"golang.org/x/oauth2"
)

// Options configures a Broker.
type Options struct {
	// Dir holds the token files (created 0700 when needed).
	Dir string
	// HTTPClient makes the metadata, registration and token requests
	// (nil: a client with a 30 s timeout).
	HTTPClient *http.Client
	Logger     hclog.Logger
	// FlowTimeout is how long a flow waits for the browser (default 10 min).
	FlowTimeout time.Duration
	// ClientName is the client's name in dynamic registration ("tackle").
	ClientName string
}

// Flow states, as Event.State.
const (
	Required   = "required"   // a person must open URL
	Authorized = "authorized" // the flow got a token
	Failed     = "failed"     // the flow ended without one (Error)
)

// Event is a step of a server's flow, for the handler's watchers.
type Event struct {
	Server string
	State  string
	URL    string
	Error  string
}

// Broker runs the OAuth flows of every server of the daemon.
type Broker struct {
	o   Options
	log hclog.Logger

	mu        sync.Mutex
	handlers  map[string]*Handler // by server name and URL
	listeners map[int]*listener   // by the configured port (0: the shared one)
	flows     map[string]*flow    // by state
	closed    bool
}

// New makes a Broker.
func New(o Options) *Broker {
	hc := http.Client{Timeout: 30 * time.Second}
	if o.HTTPClient != nil {
		hc = *o.HTTPClient
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = &pkceCheck{base: base}
	o.HTTPClient = &hc
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	if o.FlowTimeout <= 0 {
		o.FlowTimeout = 10 * time.Minute
	}
	if o.ClientName == "" {
		o.ClientName = "tackle"
	}
	return &Broker{o: o, log: o.Logger, handlers: map[string]*Handler{}, listeners: map[int]*listener{}, flows: map[string]*flow{}}
}

// Close stops the listeners; flows waiting for a browser fail.
func (b *Broker) Close() {
	b.mu.Lock()
	b.closed = true
	ls := b.listeners
	b.listeners = map[int]*listener{}
	flows := b.flows
	b.flows = map[string]*flow{}
	b.mu.Unlock()
	for _, l := range ls {
		l.close()
	}
	for _, f := range flows {
		f.deliver(callback{err: "tackle is shutting down"})
	}
}

func handlerKey(name, serverURL string) string { return name + "\x00" + serverURL }

// Handler is the handler of server srv (an http or sse entry), shared by
// every connection to that name and URL. The first call reads its token
// file.
func (b *Broker) Handler(srv config.MCPServer) *Handler {
	key := handlerKey(srv.Name, srv.URL)
	b.mu.Lock()
	defer b.mu.Unlock()
	if h, ok := b.handlers[key]; ok {
		h.setOAuth(srv.OAuth)
		return h
	}
	h := &Handler{b: b, name: srv.Name, url: srv.URL, path: fileName(b.o.Dir, srv.Name, srv.URL), watchers: map[int]func(Event){}}
	h.setOAuth(srv.OAuth)
	h.loadToken()
	b.handlers[key] = h
	return h
}

// Logout forgets server's tokens: its file is removed and its handlers
// hold no token. It returns the removed file ("" when there was none).
func (b *Broker) Logout(name, serverURL string) (string, error) {
	b.mu.Lock()
	h := b.handlers[handlerKey(name, serverURL)]
	b.mu.Unlock()
	path := fileName(b.o.Dir, name, serverURL)
	if h != nil {
		h.forget()
	}
	switch err := os.Remove(path); {
	case err == nil:
		return path, nil
	case errors.Is(err, os.ErrNotExist):
		return "", nil
	default:
		return "", fmt.Errorf("removing the tokens of MCP server %q: %w", name, err)
	}
}

// Handler authorises one server's requests. It implements auth.OAuthHandler.
type Handler struct {
	b         *Broker
	name, url string
	path      string

	flowMu sync.Mutex // one flow at a time

	mu       sync.Mutex // guards the fields below
	oauth    config.MCPOAuth
	ts       oauth2.TokenSource // nil: no token
	inner    *auth.AuthorizationCodeHandler
	innerFor string // the redirect URL and settings inner was made for
	pending  string // the URL of the flow waiting for a browser
	answered *flow  // the flow whose browser came back, until its outcome is known
	watchers map[int]func(Event)
	watchSeq int
	lastErr  string
}

var _ auth.OAuthHandler = (*Handler)(nil)

func (h *Handler) setOAuth(o *config.MCPOAuth) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if o != nil {
		h.oauth = *o
	} else {
		h.oauth = config.MCPOAuth{}
	}
}

// loadToken reads the token file, if any.
func (h *Handler) loadToken() {
	s, err := load(h.path)
	if err != nil {
		h.b.log.Warn("ignoring an unreadable token file: the server will ask for authorisation again", "server", h.name, "error", err)
		return
	}
	if s == nil || s.URL != h.url {
		return
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, h.b.o.HTTPClient)
	h.mu.Lock()
	h.ts = newTokenSource(ctx, h.path, s, h.persisted)
	h.mu.Unlock()
}

func (h *Handler) persisted(err error) {
	if err != nil {
		h.b.log.Warn("saving a refreshed token failed: the next restart asks for authorisation again", "server", h.name, "error", err)
	}
}

func (h *Handler) forget() {
	h.mu.Lock()
	h.ts = nil
	h.inner = nil
	h.innerFor = ""
	h.mu.Unlock()
}

// Authorized reports whether the handler holds a token.
func (h *Handler) Authorized() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts != nil
}

// LastError is why the last flow failed ("" after a success or none).
func (h *Handler) LastError() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastErr
}

// Pending is the URL of the flow waiting for a browser ("" when none).
func (h *Handler) Pending() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending
}

// Watch calls f at every step of the handler's flows until stop.
func (h *Handler) Watch(f func(Event)) (stop func()) {
	h.mu.Lock()
	h.watchSeq++
	id := h.watchSeq
	h.watchers[id] = f
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.watchers, id)
		h.mu.Unlock()
	}
}

func (h *Handler) emit(ev Event) {
	ev.Server = h.name
	h.mu.Lock()
	fs := make([]func(Event), 0, len(h.watchers))
	for _, id := range slices.Sorted(maps.Keys(h.watchers)) {
		fs = append(fs, h.watchers[id])
	}
	h.mu.Unlock()
	for _, f := range fs {
		f(ev)
	}
}

// TokenSource implements auth.OAuthHandler.
func (h *Handler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts == nil {
		return nil, nil
	}
	return h.ts, nil
}

// Authorize implements auth.OAuthHandler: it runs the flow for a request
// the server refused (401, or 403 insufficient_scope). A token that
// arrived since the request was sent (another request's flow) is used
// instead of a new flow.
func (h *Handler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	if !h.flowMu.TryLock() {
		// Another request's flow waits for a person: this one (a
		// notification, a second call) fails now rather than hang behind
		// it; the flow's outcome serves the next request.
		resp.Body.Close()
		if u := h.Pending(); u != "" {
			return fmt.Errorf("MCP server %q waits for authorisation in a browser: open %s (or run `tackle mcp login %s`)", h.name, u, h.name)
		}
		h.flowMu.Lock() // a flow that is not waiting for a person: it ends soon
	}
	defer h.flowMu.Unlock()
	if resp.StatusCode == http.StatusUnauthorized {
		if tok := h.current(); tok != "" && req.Header.Get("Authorization") != "Bearer "+tok {
			resp.Body.Close()
			return nil
		}
	}
	inner, err := h.innerHandler()
	if err != nil {
		resp.Body.Close()
		h.fail(err)
		return err
	}
	err = inner.Authorize(ctx, req, resp)
	h.tellBrowser(err)
	if err != nil {
		if resp.StatusCode == http.StatusForbidden && !strings.Contains(resp.Header.Get("WWW-Authenticate"), "insufficient_scope") {
			return err // not an OAuth matter: the SDK retries once and fails
		}
		err = fmt.Errorf("authorising with MCP server %q: %w", h.name, err)
		h.fail(err)
		return err
	}
	ts, _ := inner.TokenSource(ctx)
	h.mu.Lock()
	if ts != nil {
		h.ts = ts
	}
	h.lastErr = ""
	h.mu.Unlock()
	h.b.log.Info("authorised", "server", h.name)
	h.emit(Event{State: Authorized})
	return nil
}

func (h *Handler) fail(err error) {
	h.mu.Lock()
	h.lastErr = err.Error()
	h.mu.Unlock()
	h.b.log.Warn("authorisation failed", "server", h.name, "error", err)
	h.emit(Event{State: Failed, Error: err.Error()})
}

// tellBrowser gives the outcome of the flow whose browser step came back
// to the page the browser waits for.
func (h *Handler) tellBrowser(err error) {
	h.mu.Lock()
	f := h.answered
	h.answered = nil
	h.mu.Unlock()
	if f != nil {
		f.result <- err
	}
}

// current is the access token held now ("" when none or unusable).
func (h *Handler) current() string {
	h.mu.Lock()
	ts := h.ts
	h.mu.Unlock()
	if ts == nil {
		return ""
	}
	tok, err := ts.Token()
	if err != nil || tok == nil {
		return ""
	}
	return tok.AccessToken
}

// innerHandler is the go-sdk's handler for the current settings: a
// pre-registered client (oauth.clientId) alone when one is configured,
// else a client ID metadata document (oauth.clientMetadataUrl) where the
// authorization server takes one, else dynamic registration.
func (h *Handler) innerHandler() (*auth.AuthorizationCodeHandler, error) {
	h.mu.Lock()
	o := h.oauth
	ts := h.ts
	h.mu.Unlock()
	port, err := h.b.listen(o.CallbackPort)
	if err != nil {
		return nil, err
	}
	redirect := "http://localhost:" + strconv.Itoa(port) + "/callback"
	sig := fmt.Sprintf("%s|%+v", redirect, o)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inner != nil && h.innerFor == sig {
		return h.inner, nil
	}
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: h.fetch,
		Client:                   h.b.o.HTTPClient,
		RequestRefreshToken:      true,
		InitialTokenSource:       ts,
		NewTokenSource:           h.newTokenSource,
	}
	if o.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
	} else {
		if o.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
		}
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:   h.b.o.ClientName,
				RedirectURIs: []string{redirect},
				GrantTypes:   []string{"authorization_code", "refresh_token"},
			},
		}
	}
	if scopes := strings.Fields(o.Scopes); len(scopes) > 0 {
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	inner, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring OAuth for MCP server %q: %w", h.name, err)
	}
	h.inner, h.innerFor = inner, sig
	return inner, nil
}

// newTokenSource stores a new token and makes its refreshing source.
func (h *Handler) newTokenSource(ctx context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	s := &stored{
		Server: h.name, URL: h.url, ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret,
		TokenURL: cfg.Endpoint.TokenURL, AuthStyle: cfg.Endpoint.AuthStyle, Scopes: cfg.Scopes, Token: tok,
	}
	if err := save(h.path, s); err != nil {
		// The token works for this daemon's life all the same.
		h.b.log.Warn("saving the token failed: the next restart asks for authorisation again", "server", h.name, "error", err)
	}
	return newTokenSource(ctx, h.path, s, h.persisted), nil
}

// fetch is the flow's browser step: the URL goes to the watchers and the
// code comes back on the loopback listener, matched by state. The
// connection's startup timeout does not run meanwhile (PauseStartup).
func (h *Handler) fetch(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, fmt.Errorf("the authorization URL %q: %w", args.URL, err)
	}
	state := u.Query().Get("state")
	if state == "" {
		return nil, errors.New("the authorization URL carries no state")
	}
	f := &flow{server: h.name, done: make(chan callback, 1), result: make(chan error, 1)}
	if err := h.b.addFlow(state, f); err != nil {
		return nil, err
	}
	defer h.b.removeFlow(state)
	h.mu.Lock()
	h.pending = args.URL
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.pending = ""
		h.mu.Unlock()
	}()
	h.b.log.Info("authorisation needed: waiting for the browser", "server", h.name, "url", args.URL)
	h.emit(Event{State: Required, URL: args.URL})
	resume := pause(ctx)
	defer resume()
	timer := time.NewTimer(h.b.o.FlowTimeout)
	defer timer.Stop()
	select {
	case cb := <-f.done:
		if cb.err != "" {
			f.result <- errors.New(cb.err)
			return nil, fmt.Errorf("the authorization server refused: %s", cb.err)
		}
		h.mu.Lock()
		h.answered = f
		h.mu.Unlock()
		return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("the authorisation was abandoned: %w", ctx.Err())
	case <-timer.C:
		return nil, fmt.Errorf("nobody completed the authorisation in a browser within %s (run `tackle mcp login %s`)", h.b.o.FlowTimeout, h.name)
	}
}

// flow is a browser step waiting for its callback.
type flow struct {
	server string
	once   sync.Once
	done   chan callback
	result chan error // the flow's outcome once the browser came back
}

type callback struct {
	code, state, iss string
	err              string
}

func (f *flow) deliver(cb callback) {
	f.once.Do(func() { f.done <- cb })
}

func (b *Broker) addFlow(state string, f *flow) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return errors.New("tackle is shutting down")
	}
	b.flows[state] = f
	return nil
}

func (b *Broker) removeFlow(state string) {
	b.mu.Lock()
	delete(b.flows, state)
	b.mu.Unlock()
}

// listener is a loopback HTTP listener for the browser's redirect.
type listener struct {
	port int
	srvs []*http.Server
}

func (l *listener) close() {
	for _, s := range l.srvs {
		_ = s.Close()
	}
}

// listen starts (once) the listener of a configured port, or the shared
// one on a free port (port 0), and returns its port. It listens on
// 127.0.0.1 and, where it can, ::1: "localhost" may be either.
func (b *Broker) listen(port int) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errors.New("tackle is shutting down")
	}
	if l, ok := b.listeners[port]; ok {
		return l.port, nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		if port != 0 {
			return 0, fmt.Errorf("listening for the OAuth callback on port %d (oauth.callbackPort): %w", port, err)
		}
		return 0, fmt.Errorf("listening for the OAuth callback: %w", err)
	}
	l := &listener{port: ln.Addr().(*net.TCPAddr).Port}
	lns := []net.Listener{ln}
	if ln6, err := net.Listen("tcp", net.JoinHostPort("::1", strconv.Itoa(l.port))); err == nil {
		lns = append(lns, ln6)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/callback", b.callback)
	for _, ln := range lns {
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		l.srvs = append(l.srvs, srv)
		go func() { _ = srv.Serve(ln) }()
	}
	b.listeners[port] = l
	b.log.Debug("OAuth callback listener", "port", l.port)
	return l.port, nil
}

// callback is the browser's redirect: the code (or the error) goes to the
// flow its state names; an unknown state is refused.
func (b *Broker) callback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	b.mu.Lock()
	f := b.flows[state]
	b.mu.Unlock()
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if state == "" || f == nil {
		b.log.Warn("OAuth callback with an unknown state refused", "remote", r.RemoteAddr)
		w.WriteHeader(http.StatusBadRequest)
		page(w, "Authorisation not accepted", "This answer does not belong to an authorisation tackle is waiting for (unknown or expired state). Start again with <code>tackle mcp login</code>.")
		return
	}
	if e := q.Get("error"); e != "" {
		msg := e
		if d := q.Get("error_description"); d != "" {
			msg += ": " + d
		}
		f.deliver(callback{err: msg})
		w.WriteHeader(http.StatusForbidden)
		page(w, "Authorisation refused", "The authorization server refused: "+html.EscapeString(msg))
		return
	}
	if q.Get("code") == "" {
		f.deliver(callback{err: "the redirect carries no code"})
		w.WriteHeader(http.StatusBadRequest)
		page(w, "Authorisation failed", "The redirect carries no authorization code.")
		return
	}
	f.deliver(callback{code: q.Get("code"), state: state, iss: q.Get("iss")})
	// The page says what came of it: the code is exchanged for a token first.
	select {
	case err := <-f.result:
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			page(w, "Authorisation failed", "MCP server <b>"+html.EscapeString(f.server)+"</b>: "+html.EscapeString(err.Error()))
			return
		}
		page(w, "tackle is authorised", "MCP server <b>"+html.EscapeString(f.server)+"</b>: you can close this window.")
	case <-time.After(30 * time.Second):
		page(w, "Authorisation sent to tackle", "MCP server <b>"+html.EscapeString(f.server)+"</b>: tackle is still finishing it; <code>tackle mcp list</code> shows the outcome.")
	case <-r.Context().Done():
	}
}

func page(w http.ResponseWriter, title, body string) {
	fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>%s</title><h1>%s</h1><p>%s</p>\n", html.EscapeString(title), html.EscapeString(title), body)
}

// pauseKey carries a connection's startup clock to the flow.
type pauseKey struct{}

// WithPause returns ctx carrying p: a flow that waits for a browser calls
// p and the returned func when the wait ends, so a connection's startup
// timeout counts only tackle's own work.
func WithPause(ctx context.Context, p func() (resume func())) context.Context {
	return context.WithValue(ctx, pauseKey{}, p)
}

func pause(ctx context.Context) (resume func()) {
	if p, ok := ctx.Value(pauseKey{}).(func() (resume func())); ok {
		return p()
	}
	return func() {}
}

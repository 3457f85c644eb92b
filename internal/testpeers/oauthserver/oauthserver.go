// Package oauthserver is an OAuth-protected MCP server for tests, in the
// test's process: a Streamable HTTP MCP endpoint (the go-sdk's server
// behind auth.RequireBearerToken) with its protected-resource metadata, and
// the authorization server it names — metadata, /register (dynamic client
// registration), /authorize (no person: it redirects at once with the code,
// the state and iss, as the conformance suite's servers do) and /token
// (authorization_code and refresh_token grants).
//
// It enforces the rules a client must follow and refuses a request that
// breaks one, recording it (Violations): PKCE with S256 (the verifier is
// checked against the challenge), the resource parameter in the
// authorization and code-grant requests and equal to the MCP endpoint, a
// redirect_uri registered by the client and the same in both requests, a
// code used once, refresh tokens rotated (an old one is refused). Access
// tokens live Options.TokenTTL; a request with an expired one is a 401
// and is counted (Stats.ExpiredUses).
//
// It must not be used outside tests: tokens are random strings held in
// memory and anybody who asks is authorised.
package oauthserver

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// Options configures a Server. A nil *Options means defaults.
type Options struct {
	// TokenTTL is the lifetime of an access token (default 1 h).
	TokenTTL time.Duration
	// Scopes are the scopes offered in both metadata documents and granted
	// to every token (default ["mcp"]).
	Scopes []string
}

// Stats counts what the server saw.
type Stats struct {
	Registrations  int // successful dynamic registrations
	Authorizations int // authorization requests answered with a code
	CodeGrants     int // access tokens issued for a code
	RefreshGrants  int // access tokens issued for a refresh token
	ToolCalls      int // calls of the echo tool
	ExpiredUses    int // MCP requests with an expired access token
}

// Server is a running OAuth-protected MCP server. Its methods are safe for
// concurrent use.
type Server struct {
	// URL is the MCP endpoint (http://127.0.0.1:PORT/mcp), the resource.
	URL string
	// Issuer is the authorization server's issuer (http://127.0.0.1:PORT).
	Issuer string

	o   Options
	hs  *httptest.Server
	mcp *mcp.Server // the MCP endpoint's server, whose sessions Close ends

	mu         sync.Mutex // guards the fields below
	down       bool
	clients    map[string]*client
	codes      map[string]*grant
	access     map[string]time.Time // access token → expiry
	refresh    map[string]string    // refresh token → client id
	lastAccess string
	stats      Stats
	violations []string
}

type client struct {
	id           string
	redirectURIs []string
}

type grant struct {
	clientID, redirectURI, challenge, resource string
	expires                                    time.Time
}

// ToolName is the name of the server's one tool: it echoes its "text"
// argument.
const ToolName = "echo"

// Start starts a server on a loopback port; it stops when t's test ends.
func Start(t testing.TB, o *Options) *Server {
	t.Helper()
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.TokenTTL <= 0 {
		opts.TokenTTL = time.Hour
	}
	if len(opts.Scopes) == 0 {
		opts.Scopes = []string{"mcp"}
	}
	s := &Server{
		o:       opts,
		clients: map[string]*client{},
		codes:   map[string]*grant{},
		access:  map[string]time.Time{},
		refresh: map[string]string{},
	}
	s.hs = httptest.NewUnstartedServer(nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("oauthserver: listening: %v", err)
	}
	s.hs.Listener = ln
	s.Issuer = "http://" + ln.Addr().String()
	s.URL = s.Issuer + "/mcp"
	s.hs.Config.Handler = s.routes()
	s.hs.Start()
	t.Cleanup(s.close)
	return s
}

// close stops the HTTP server, then ends the MCP sessions clients left
// open (closing their connections does not: a session outlives them).
func (s *Server) close() {
	s.hs.Close()
	for ss := range s.mcp.Sessions() {
		ss.Close()
	}
}

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Violations lists the requests refused for breaking a rule, oldest first.
func (s *Server) Violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.violations)
}

// SetDown makes the MCP endpoint answer 503 Service Unavailable (down) or
// serve again; the metadata and the authorization server stay up.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// LastAccessToken is the access token issued last ("" before the first).
func (s *Server) LastAccessToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastAccess
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.asMetadata)
	mux.Handle("GET /.well-known/oauth-protected-resource/mcp", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               s.URL,
		AuthorizationServers:   []string{s.Issuer},
		ScopesSupported:        s.o.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "oauthserver test peer",
	}))
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)

	srv := mcp.NewServer(&mcp.Implementation{Name: "oauthserver", Version: "1"}, nil)
	s.mcp = srv
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: ToolName, Description: "Echoes text."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		s.mu.Lock()
		s.stats.ToolCalls++
		s.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, nil, nil
	})
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	protected := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{
		ResourceMetadataURL: s.Issuer + "/.well-known/oauth-protected-resource/mcp",
	})(mcpHandler)
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		down := s.down
		s.mu.Unlock()
		if down {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		protected.ServeHTTP(w, r)
	})
	return mux
}

func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	exp, ok := s.access[token]
	if !ok {
		return nil, fmt.Errorf("%w: unknown access token", auth.ErrInvalidToken)
	}
	if time.Now().After(exp) {
		s.stats.ExpiredUses++
		return nil, fmt.Errorf("%w: the access token expired", auth.ErrInvalidToken)
	}
	// One user: the MCP session survives a refreshed token.
	return &auth.TokenInfo{Scopes: s.o.Scopes, Expiration: exp, UserID: "test-user"}, nil
}

func (s *Server) asMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                         s.Issuer,
		"authorization_endpoint":                         s.Issuer + "/authorize",
		"token_endpoint":                                 s.Issuer + "/token",
		"registration_endpoint":                          s.Issuer + "/register",
		"scopes_supported":                               s.o.Scopes,
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
	})
}

// violation records a broken rule and answers with an OAuth error.
func (s *Server) violation(w http.ResponseWriter, endpoint, code, msg string) {
	s.mu.Lock()
	s.violations = append(s.violations, endpoint+": "+code+": "+msg)
	s.mu.Unlock()
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": msg})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
		GrantTypes   []string `json:"grant_types"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		s.violation(w, "register", "invalid_client_metadata", "the body is not a JSON object: "+err.Error())
		return
	}
	if len(req.RedirectURIs) == 0 {
		s.violation(w, "register", "invalid_redirect_uri", "redirect_uris is empty")
		return
	}
	for _, u := range req.RedirectURIs {
		pu, err := url.Parse(u)
		if err != nil || pu.Scheme != "http" || (pu.Hostname() != "localhost" && pu.Hostname() != "127.0.0.1" && pu.Hostname() != "::1") {
			s.violation(w, "register", "invalid_redirect_uri", fmt.Sprintf("%q is not a loopback http URI", u))
			return
		}
	}
	c := &client{id: "client-" + randomString(), redirectURIs: req.RedirectURIs}
	s.mu.Lock()
	s.clients[c.id] = c
	s.stats.Registrations++
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"client_id":                  c.id,
		"client_id_issued_at":        time.Now().Unix(),
		"client_name":                req.ClientName,
		"redirect_uris":              req.RedirectURIs,
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": "none",
	})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	c := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	redirect := q.Get("redirect_uri")
	// Without a known client and one of its redirect URIs there is nowhere
	// to send an error: the person would see it.
	if c == nil {
		s.violation(w, "authorize", "invalid_client", fmt.Sprintf("unknown client_id %q", q.Get("client_id")))
		return
	}
	if !slices.Contains(c.redirectURIs, redirect) {
		s.violation(w, "authorize", "invalid_request", fmt.Sprintf("redirect_uri %q is not one the client registered (%s)", redirect, strings.Join(c.redirectURIs, ", ")))
		return
	}
	back := func(params url.Values) {
		u, _ := url.Parse(redirect)
		v := u.Query()
		for k, vs := range params {
			v[k] = vs
		}
		if st := q.Get("state"); st != "" {
			v.Set("state", st)
		}
		v.Set("iss", s.Issuer)
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	refuse := func(code, msg string) {
		s.mu.Lock()
		s.violations = append(s.violations, "authorize: "+code+": "+msg)
		s.mu.Unlock()
		back(url.Values{"error": {code}, "error_description": {msg}})
	}
	switch {
	case q.Get("response_type") != "code":
		refuse("unsupported_response_type", fmt.Sprintf("response_type %q, want code", q.Get("response_type")))
		return
	case q.Get("code_challenge") == "":
		refuse("invalid_request", "no code_challenge: PKCE is required")
		return
	case q.Get("code_challenge_method") != "S256":
		refuse("invalid_request", fmt.Sprintf("code_challenge_method %q, want S256", q.Get("code_challenge_method")))
		return
	case q.Get("resource") != s.URL:
		refuse("invalid_target", fmt.Sprintf("resource %q, want %q", q.Get("resource"), s.URL))
		return
	case q.Get("state") == "":
		refuse("invalid_request", "no state")
		return
	}
	code := "code-" + randomString()
	s.mu.Lock()
	s.codes[code] = &grant{clientID: c.id, redirectURI: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource"), expires: time.Now().Add(time.Minute)}
	s.stats.Authorizations++
	s.mu.Unlock()
	back(url.Values{"code": {code}})
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		s.violation(w, "token", "invalid_request", "the body is not a form: "+err.Error())
		return
	}
	f := r.PostForm
	clientID := f.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok {
		clientID, _ = url.QueryUnescape(id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(code, msg string) {
		s.violations = append(s.violations, "token: "+code+": "+msg)
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": msg})
	}
	if s.clients[clientID] == nil {
		fail("invalid_client", fmt.Sprintf("unknown client_id %q", clientID))
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		g := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		switch {
		case g == nil:
			fail("invalid_grant", "unknown or used code")
			return
		case time.Now().After(g.expires):
			fail("invalid_grant", "the code expired")
			return
		case g.clientID != clientID:
			fail("invalid_grant", "the code was issued to another client")
			return
		case f.Get("redirect_uri") != g.redirectURI:
			fail("invalid_grant", fmt.Sprintf("redirect_uri %q differs from the authorization request's %q", f.Get("redirect_uri"), g.redirectURI))
			return
		case f.Get("code_verifier") == "":
			fail("invalid_grant", "no code_verifier: PKCE is required")
			return
		case challengeOf(f.Get("code_verifier")) != g.challenge:
			fail("invalid_grant", "code_verifier does not match the S256 code_challenge")
			return
		case f.Get("resource") == "":
			fail("invalid_target", "no resource parameter")
			return
		case f.Get("resource") != g.resource:
			fail("invalid_target", fmt.Sprintf("resource %q differs from the authorization request's %q", f.Get("resource"), g.resource))
			return
		}
		s.stats.CodeGrants++
	case "refresh_token":
		owner, ok := s.refresh[f.Get("refresh_token")]
		switch {
		case !ok:
			fail("invalid_grant", "unknown or rotated refresh token")
			return
		case owner != clientID:
			fail("invalid_grant", "the refresh token was issued to another client")
			return
		case f.Get("resource") != "" && f.Get("resource") != s.URL:
			fail("invalid_target", fmt.Sprintf("resource %q, want %q", f.Get("resource"), s.URL))
			return
		}
		delete(s.refresh, f.Get("refresh_token")) // rotated
		s.stats.RefreshGrants++
	default:
		fail("unsupported_grant_type", fmt.Sprintf("grant_type %q", f.Get("grant_type")))
		return
	}
	access, refresh := "at-"+randomString(), "rt-"+randomString()
	s.access[access] = time.Now().Add(s.o.TokenTTL)
	s.refresh[refresh] = clientID
	s.lastAccess = access
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token":  access,
		"token_type":    "Bearer",
		"expires_in":    int(s.o.TokenTTL.Round(time.Second) / time.Second),
		"refresh_token": refresh,
		"scope":         strings.Join(s.o.Scopes, " "),
	})
}

// challengeOf is the S256 code challenge of verifier (RFC 7636 §4.2).
func challengeOf(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func randomString() string { return rand.Text() }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // a client that went away reads nothing
}

// Command mcp-conformance-client is the client program the MCP conformance
// suite runs (npx @modelcontextprotocol/conformance client --command
// mcp-conformance-client): it connects to the suite's server through tackle's
// connection manager (daemon/mcp) and calls the scenario's tool through
// tackle's MCP tool adapter, the way tackled does for a session.
//
// Usage:
//
//	mcp-conformance-client SERVER_URL
//
// The suite names the scenario in MCP_CONFORMANCE_SCENARIO and passes its
// parameters (e.g. a pre-registered OAuth client) as a JSON object in
// MCP_CONFORMANCE_CONTEXT. When the scenario's calls succeeded the program
// prints "mcp-conformance-client: scenario NAME done" and exits 0; otherwise
// it exits 1 with the error on stderr. The suite judges the traffic, not the
// exit status, so tests look for that line (the suite keeps each client's
// stdout).
//
// It is a test harness, not part of tackled: it answers elicitation requests
// by accepting the form as is (so the SDK fills in the schema's defaults) and
// plays the browser in the OAuth authorization code flow by following the
// authorization server's redirect without a person.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/mcp"
	"github.com/tackle-agent/tackle/daemon/tool"
)

const (
	// serverName is the configured name of the suite's server.
	serverName = "conformance"
	// sessionID is the one session using it.
	sessionID = "conformance"

	// redirectURL is the OAuth redirect URI the client registers. Nothing
	// listens on it: the headless fetcher stops at the redirect to it and
	// reads the code from its query.
	redirectURL = "http://127.0.0.1:33418/callback"
	// clientMetadataURL is the Client ID Metadata Document URL the suite's
	// authorization servers expect as client_id (auth/basic-cimd).
	clientMetadataURL = "https://conformance-test.local/client-metadata.json"

	// deadline bounds a whole scenario; the suite gives a client 30 s.
	deadline = 25 * time.Second
)

// scenario is what the program does in one of the suite's scenarios: connect
// (and so initialize and list tools), then call Tool with Args when set.
type scenario struct {
	Tool  string
	Args  map[string]any
	OAuth bool
}

// scenarios are the suite's client scenarios this program knows. Every auth/*
// scenario is an OAuth-protected server with a tool named test-tool.
var scenarios = map[string]scenario{
	"initialize":                          {},
	"tools_call":                          {Tool: "add_numbers", Args: map[string]any{"a": 5, "b": 3}},
	"elicitation-sep1034-client-defaults": {Tool: "test_client_elicitation_defaults", Args: map[string]any{}},
	"sse-retry":                           {Tool: "test_reconnection", Args: map[string]any{}},
}

// authScenario is the scenario of every auth/* name.
var authScenario = scenario{Tool: "test-tool", Args: map[string]any{}, OAuth: true}

func lookupScenario(name string) (scenario, error) {
	if sc, ok := scenarios[name]; ok {
		return sc, nil
	}
	if strings.HasPrefix(name, "auth/") {
		return authScenario, nil
	}
	known := make([]string, 0, len(scenarios)+1)
	for n := range scenarios {
		known = append(known, n)
	}
	sort.Strings(known)
	known = append(known, "auth/*")
	return scenario{}, fmt.Errorf("unknown scenario %q in MCP_CONFORMANCE_SCENARIO (known: %s)", name, strings.Join(known, ", "))
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mcp-conformance-client SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	err := run(ctx, os.Args[1], name, os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-conformance-client: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("mcp-conformance-client: scenario %s done\n", name)
}

// run plays scenario name against the server at serverURL.
func run(ctx context.Context, serverURL, name, contextJSON string) error {
	if name == "" {
		return errors.New("MCP_CONFORMANCE_SCENARIO is not set")
	}
	sc, err := lookupScenario(name)
	if err != nil {
		return err
	}
	var suiteCtx map[string]any
	if contextJSON != "" {
		if err := json.Unmarshal([]byte(contextJSON), &suiteCtx); err != nil {
			return fmt.Errorf("parsing MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	if _, err := url.Parse(serverURL); err != nil {
		return fmt.Errorf("parsing server URL: %w", err)
	}

	logger := hclog.New(&hclog.LoggerOptions{Name: "mcp-conformance-client", Output: os.Stderr, Level: hclog.Debug})
	httpClient := &http.Client{Timeout: 10 * time.Second}
	opts := &mcp.Options{
		Logger:         logger,
		StartupTimeout: deadline,
		HTTPClient:     httpClient,
		Client: &mcpsdk.ClientOptions{
			ElicitationHandler: acceptElicitation(logger),
		},
	}
	if sc.OAuth {
		h, err := newOAuthHandler(httpClient, suiteCtx)
		if err != nil {
			return err
		}
		opts.OAuthHandler = h
	}

	m := mcp.New(opts)
	defer m.Close()
	wd, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("getting working directory: %w", err)
	}
	m.Use(sessionID, []config.MCPServer{{
		Name:   serverName,
		Scope:  "session",
		Source: "MCP_CONFORMANCE_SCENARIO " + name,
		Type:   "http",
		URL:    serverURL,
	}}, []string{wd})
	defer m.Release(sessionID)

	conn, ok := m.Conn(sessionID, serverName)
	if !ok {
		return fmt.Errorf("connecting to %s: the manager does not list server %q", serverURL, serverName)
	}
	// A Do with nothing to do waits until the connection is up (initialize
	// done, lists fetched) or reports why it is not.
	if err := conn.Do(ctx, func(context.Context, *mcpsdk.ClientSession) error { return nil }); err != nil {
		return fmt.Errorf("connecting to %s: %w", serverURL, err)
	}
	st := conn.Status()
	logger.Info("connected", "server", st.ServerInfo, "tools", st.Tools, "resources", st.Resources, "prompts", st.Prompts)

	if sc.Tool == "" {
		return nil
	}
	return callTool(ctx, m, logger, sc.Tool, sc.Args)
}

// callTool runs the server's tool through tackle's MCP tool adapter, as the
// pipeline would after validation and permission.
func callTool(ctx context.Context, m *mcp.Manager, logger hclog.Logger, name string, args map[string]any) error {
	toolName := mcp.ToolName(serverName, name)
	t, ok := m.Lookup(sessionID, toolName, nil)
	if !ok {
		var have []string
		for _, t := range m.Tools(sessionID, nil) {
			have = append(have, t.Spec().Name)
		}
		return fmt.Errorf("looking up tool %s: not in the session's pool (have %s)", toolName, strings.Join(have, ", "))
	}
	input, err := json.Marshal(args)
	if err != nil {
		return fmt.Errorf("encoding input of %s: %w", toolName, err)
	}
	call := &tool.Call{ID: "conformance-1", Name: toolName, Input: input, Env: newEnv()}
	progress := func(text string) { logger.Info("progress", "tool", toolName, "text", text) }
	res, err := t.Run(ctx, call, progress)
	if err != nil {
		return fmt.Errorf("calling %s: %w", toolName, err)
	}
	var text []string
	for _, c := range res.Content {
		text = append(text, c.Text)
	}
	fmt.Printf("%s: %s\n", toolName, strings.Join(text, "\n"))
	if res.IsError {
		return fmt.Errorf("calling %s: the tool reported an error: %s", toolName, strings.Join(text, "\n"))
	}
	return nil
}

// acceptElicitation answers every form elicitation like a person who submits
// the form untouched: accept with no values, so the SDK fills in the
// requested schema's defaults (SEP-1034).
func acceptElicitation(logger hclog.Logger) func(context.Context, *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
	return func(_ context.Context, req *mcpsdk.ElicitRequest) (*mcpsdk.ElicitResult, error) {
		logger.Info("elicitation accepted with the schema's defaults", "message", req.Params.Message)
		return &mcpsdk.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
	}
}

// newOAuthHandler builds the go-sdk's authorization code handler. It tries a
// Client ID Metadata Document, then the client the suite pre-registered
// (client_id and client_secret in its context), then dynamic registration.
func newOAuthHandler(client *http.Client, suiteCtx map[string]any) (auth.OAuthHandler, error) {
	cfg := &auth.AuthorizationCodeHandlerConfig{
		ClientIDMetadataDocumentConfig: &auth.ClientIDMetadataDocumentConfig{URL: clientMetadataURL},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:   "tackle MCP conformance client",
				RedirectURIs: []string{redirectURL},
			},
		},
		RedirectURL:              redirectURL,
		AuthorizationCodeFetcher: headlessAuthorization(client, redirectURL),
		Client:                   client,
	}
	id, _ := suiteCtx["client_id"].(string)
	secret, _ := suiteCtx["client_secret"].(string)
	if id != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: id}
		if secret != "" {
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return nil, fmt.Errorf("configuring OAuth: %w", err)
	}
	return h, nil
}

// headlessAuthorization plays the user's browser: it opens the authorization
// URL and follows the authorization server's redirects until one leads to
// redirect, whose query carries the code, state and issuer. It fails when
// the server shows a page instead (a person would be needed) or denies.
func headlessAuthorization(client *http.Client, redirect string) auth.AuthorizationCodeFetcher {
	target, _ := url.Parse(redirect)
	isRedirect := func(u *url.URL) bool {
		return u.Scheme == target.Scheme && u.Host == target.Host && u.Path == target.Path
	}
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		browser := *client
		browser.CheckRedirect = func(req *http.Request, via []*http.Request) error {
			if isRedirect(req.URL) {
				return http.ErrUseLastResponse
			}
			if len(via) >= 10 {
				return errors.New("more than 10 redirects")
			}
			return nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
		if err != nil {
			return nil, fmt.Errorf("opening authorization URL: %w", err)
		}
		resp, err := browser.Do(req)
		if err != nil {
			return nil, fmt.Errorf("opening authorization URL: %w", err)
		}
		resp.Body.Close()
		loc, err := resp.Location()
		if err != nil {
			return nil, fmt.Errorf("authorizing: the authorization server answered %s without redirecting to %s (it wants a person)", resp.Status, redirect)
		}
		if !isRedirect(loc) {
			return nil, fmt.Errorf("authorizing: the authorization server redirected to %s, not to %s", loc, redirect)
		}
		q := loc.Query()
		if e := q.Get("error"); e != "" {
			return nil, fmt.Errorf("authorizing: the authorization server refused: %s %s", e, q.Get("error_description"))
		}
		if q.Get("code") == "" {
			return nil, fmt.Errorf("authorizing: the redirect to %s carries no code", redirect)
		}
		return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
	}
}

// env is the session as the MCP tools see it: the working directory and the
// process environment.
type env struct {
	cwd string
}

func newEnv() *env {
	wd, err := os.Getwd()
	if err != nil {
		wd = os.TempDir()
	}
	return &env{cwd: wd}
}

func (e *env) SessionID() string                       { return sessionID }
func (e *env) Cwd() string                             { return e.cwd }
func (e *env) WorkingDirs() []string                   { return []string{e.cwd} }
func (e *env) Environ() []string                       { return os.Environ() }
func (e *env) FileState(string) (tool.FileState, bool) { return tool.FileState{}, false }
func (e *env) OutputDir() string                       { return filepath.Join(os.TempDir(), "tackle-mcp-conformance") }

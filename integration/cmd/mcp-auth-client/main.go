// Command mcp-auth-client is the client program the MCP conformance suite's
// auth scenarios run (conformance client --command mcp-auth-client) to test
// tackle's OAuth through the daemon: it makes an isolated user in a temp
// dir, configures the suite's server there as a user-scope MCP server
// ("conformance", type http, with an oauth block), starts a tackled of its
// own on a socket in that dir, opens a session for a project dir, completes
// every browser step the daemon announces (mcp_auth_required events and
// McpLogin's URL) headlessly, checks McpLogin's outcome and calls the
// scenario's tool through the daemon's pipeline (a RunBatch on the Attach
// stream). It kills its daemon when it ends.
//
// Usage:
//
//	mcp-auth-client [--tackled PATH] SERVER_URL
//
// The suite names the scenario in MCP_CONFORMANCE_SCENARIO and passes its
// parameters (a pre-registered client: client_id, client_secret) as a JSON
// object in MCP_CONFORMANCE_CONTEXT. --tackled defaults to
// $TACKLE_TEST_TACKLED, then tackled next to this program, then $PATH.
// When the tool call succeeded the program prints "mcp-auth-client:
// scenario NAME done" and exits 0; otherwise it exits 1 with the error on
// stderr (the daemon's log lines come before it there).
//
// The headless browser opens the authorization URL and follows every
// redirect for real, so the daemon's loopback listener
// (http://localhost:PORT/callback) gets the authorization server's answer
// as it would from a person's browser; it fails when a page, not a
// redirect, ends the walk short of the callback, or the callback refuses.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/sibling"
)

const (
	// serverName is the configured name of the suite's server.
	serverName = "conformance"
	// clientMetadataURL is the Client ID Metadata Document URL the suite's
	// authorization server expects as client_id (auth/basic-cimd).
	clientMetadataURL = "https://conformance-test.local/client-metadata.json"
	// deadline bounds a whole scenario; the suite gives a client 30 s.
	deadline = 25 * time.Second
)

// scenario is what the program does in one of the suite's auth scenarios.
type scenario struct {
	Tool string
	Args map[string]any
	// CIMD configures oauth.clientMetadataUrl.
	CIMD bool
}

// lookupScenario returns the scenario of name: every auth/* scenario is an
// OAuth-protected server with a tool named test-tool.
func lookupScenario(name string) (scenario, error) {
	if !strings.HasPrefix(name, "auth/") {
		return scenario{}, fmt.Errorf("unknown scenario %q in MCP_CONFORMANCE_SCENARIO (this program plays auth/* scenarios only)", name)
	}
	return scenario{Tool: "test-tool", Args: map[string]any{}, CIMD: name == "auth/basic-cimd"}, nil
}

func main() {
	fl := flag.NewFlagSet("mcp-auth-client", flag.ContinueOnError)
	tackled := fl.String("tackled", os.Getenv("TACKLE_TEST_TACKLED"), "the tackled binary (default $TACKLE_TEST_TACKLED, then next to this program, then $PATH)")
	if err := fl.Parse(os.Args[1:]); err != nil || fl.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: mcp-auth-client [--tackled PATH] SERVER_URL (with MCP_CONFORMANCE_SCENARIO set)")
		os.Exit(2)
	}
	// The suite kills a client that runs too long: the daemon goes too.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ctx, cancel := context.WithTimeoutCause(context.Background(), deadline, fmt.Errorf("the scenario took more than %v", deadline))
	go func() {
		if s, ok := <-sigs; ok {
			fmt.Fprintf(os.Stderr, "mcp-auth-client: got %v: stopping\n", s)
			cancel()
		}
	}()
	name := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	err := run(ctx, *tackled, fl.Arg(0), name, os.Getenv("MCP_CONFORMANCE_CONTEXT"))
	cancel()
	signal.Stop(sigs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mcp-auth-client: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("mcp-auth-client: scenario %s done\n", name)
}

// run plays scenario name against the server at serverURL through a
// tackled of its own.
func run(ctx context.Context, tackled, serverURL, name, contextJSON string) error {
	if name == "" {
		return errors.New("MCP_CONFORMANCE_SCENARIO is not set")
	}
	sc, err := lookupScenario(name)
	if err != nil {
		return err
	}
	var suiteCtx struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	if contextJSON != "" {
		if err := json.Unmarshal([]byte(contextJSON), &suiteCtx); err != nil {
			return fmt.Errorf("parsing MCP_CONFORMANCE_CONTEXT: %w", err)
		}
	}
	if u, err := url.Parse(serverURL); err != nil || u.Host == "" {
		return fmt.Errorf("parsing the server URL %q: not an absolute URL", serverURL)
	}
	if tackled, err = findTackled(tackled); err != nil {
		return err
	}

	u, err := newUser()
	if err != nil {
		return err
	}
	defer os.RemoveAll(u.root)
	oauth := map[string]any{}
	if suiteCtx.ClientID != "" {
		oauth["clientId"] = suiteCtx.ClientID
		if suiteCtx.ClientSecret != "" {
			oauth["clientSecret"] = suiteCtx.ClientSecret
		}
	}
	if sc.CIMD {
		oauth["clientMetadataUrl"] = clientMetadataURL
	}
	if err := u.configure(serverURL, oauth); err != nil {
		return err
	}
	d, err := startDaemon(ctx, tackled, u)
	if err != nil {
		return err
	}
	defer d.stop()

	c, err := client.Dial(ctx, &client.Options{Socket: u.socket, NoAutostart: true, NoVersionCheck: true, Env: u.env, ClientName: "mcp-auth-client"})
	if err != nil {
		return fmt.Errorf("connecting to tackled: %w", err)
	}
	defer c.Close()
	resp, err := c.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: u.project, Env: u.env, DefaultForCwd: true})
	if err != nil {
		return fmt.Errorf("creating a session for %s: %w", u.project, err)
	}
	sid := resp.GetSession().GetId()
	s, err := c.Attach(ctx, tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		return err
	}
	defer s.Close()
	// From sequence 0: an announcement made before the subscription is
	// replayed (and a pending flow is in the snapshot too).
	snap, err := s.Subscribe(sid, 0, false)
	if err != nil {
		return err
	}
	b := newBrowser()
	for _, a := range snap.GetMcpAuth() {
		b.open(ctx, "snapshot", a.GetUrl())
	}
	w := watch(ctx, s, b)

	if err := login(ctx, c, sid, b); err != nil {
		return errors.Join(err, b.err())
	}
	res, err := w.call(ctx, sid, mcpToolName(serverName, sc.Tool), sc.Args)
	if err != nil {
		return errors.Join(err, b.err())
	}
	text := resultText(res)
	fmt.Printf("%s: %s\n", res.GetName(), text)
	if res.GetIsError() {
		return errors.Join(fmt.Errorf("calling %s: the result is an error (%s): %s", res.GetName(), res.GetStatus(), text), b.err())
	}
	if n := b.count(); n == 0 {
		return errors.New("the scenario's server let the call through without any authorisation: nothing was tested")
	}
	return b.err()
}

// login runs McpLogin for the server: it joins (or starts) the flow,
// completes the URL it sends, and checks the outcome.
func login(ctx context.Context, c *client.Client, sid string, b *browser) error {
	st, err := c.McpAuth().McpLogin(ctx, &tacklev1.McpLoginRequest{SessionId: sid, Name: serverName})
	if err != nil {
		return fmt.Errorf("McpLogin: %w", client.Err(err))
	}
	outcome := ""
	for {
		m, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("McpLogin: %w", client.Err(err))
		}
		switch m.GetState() {
		case "required":
			if m.GetUrl() == "" {
				return errors.New("McpLogin: a required message without a URL")
			}
			b.open(ctx, "McpLogin", m.GetUrl())
		default:
			if outcome != "" {
				return fmt.Errorf("McpLogin: a second outcome %q after %q", m.GetState(), outcome)
			}
			outcome = m.GetState()
			if srv := m.GetServer(); srv.GetState() != "connected" {
				return fmt.Errorf("McpLogin: outcome %q but the server is %s (%s)", outcome, srv.GetState(), srv.GetError())
			}
		}
	}
	switch outcome {
	case "authorized", "already-authorized":
		fmt.Fprintf(os.Stderr, "mcp-auth-client: McpLogin: %s\n", outcome)
		return nil
	case "":
		return errors.New("McpLogin: the stream ended without an outcome")
	default:
		return fmt.Errorf("McpLogin: outcome %q, want authorized or already-authorized (the server asks for OAuth)", outcome)
	}
}

// watcher reads the Attach stream: it completes every flow an
// mcp_auth_required event announces and hands call results to call.
type watcher struct {
	s *client.Stream

	mu      sync.Mutex // guards the fields below
	results map[string]chan *tacklev1.ToolResult
	refs    map[string]chan error // a RunBatch's refusal, by ref
	ended   error                 // why the stream ended
	done    chan struct{}         // closed when the stream ends
}

func watch(ctx context.Context, s *client.Stream, b *browser) *watcher {
	w := &watcher{s: s, results: map[string]chan *tacklev1.ToolResult{}, refs: map[string]chan error{}, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for m, err := range s.Messages() {
			if err != nil {
				w.mu.Lock()
				w.ended = err
				w.mu.Unlock()
				return
			}
			switch m := m.GetMsg().(type) {
			case *tacklev1.ServerMessage_Error:
				w.mu.Lock()
				ch := w.refs[m.Error.GetRef()]
				w.mu.Unlock()
				if ch != nil {
					ch <- client.NewStreamError(m.Error)
				} else {
					fmt.Fprintf(os.Stderr, "mcp-auth-client: stream error: %v\n", client.NewStreamError(m.Error))
				}
			case *tacklev1.ServerMessage_Event:
				e := m.Event
				switch e.GetType() {
				case "mcp_auth_required":
					a := e.GetMcpAuth()
					fmt.Fprintf(os.Stderr, "mcp-auth-client: event mcp_auth_required: server %s, state %s %s%s\n", a.GetServer(), a.GetState(), a.GetUrl(), a.GetError())
					if a.GetState() == "required" {
						b.open(ctx, "event", a.GetUrl())
					}
				case "call_result":
					r := e.GetResult()
					id := r.GetId()
					if id == "" {
						id = e.GetCallId()
					}
					w.mu.Lock()
					ch := w.results[id]
					w.mu.Unlock()
					if ch != nil {
						ch <- r
					}
				}
			}
		}
	}()
	return w
}

// call runs one tool call through the pipeline and returns its result.
func (w *watcher) call(ctx context.Context, sid, name string, args map[string]any) (*tacklev1.ToolResult, error) {
	input, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	id, ref := "call-1", "ref-1"
	results, refused := make(chan *tacklev1.ToolResult, 1), make(chan error, 1)
	w.mu.Lock()
	w.results[id], w.refs[ref] = results, refused
	w.mu.Unlock()
	if err := w.s.RunBatch(&tacklev1.RunBatch{SessionId: sid, Ref: ref, Calls: []*tacklev1.ToolCall{{Id: id, Name: name, InputJson: string(input)}}}); err != nil {
		return nil, fmt.Errorf("calling %s: %w", name, err)
	}
	select {
	case r := <-results:
		return r, nil
	case err := <-refused:
		return nil, fmt.Errorf("calling %s: the daemon refused the batch: %w", name, err)
	case <-w.done:
		w.mu.Lock()
		err := w.ended
		w.mu.Unlock()
		return nil, fmt.Errorf("calling %s: the stream ended before the result: %v", name, err)
	case <-ctx.Done():
		return nil, fmt.Errorf("calling %s: no result: %w", name, ctx.Err())
	}
}

// mcpToolName is the model-facing name of an MCP server's tool.
func mcpToolName(server, tool string) string { return "mcp__" + server + "__" + tool }

func resultText(r *tacklev1.ToolResult) string {
	var text []string
	for _, b := range r.GetContent() {
		text = append(text, b.GetText())
	}
	return strings.Join(text, "\n")
}

// browser plays a person's browser: each authorization URL is opened once.
type browser struct {
	hc *http.Client
	wg sync.WaitGroup

	mu     sync.Mutex // guards the fields below
	opened map[string]bool
	errs   []error
}

func newBrowser() *browser {
	return &browser{hc: &http.Client{Timeout: 10 * time.Second}, opened: map[string]bool{}}
}

// open opens authURL in the background unless it was opened before; from
// says who announced it.
func (b *browser) open(ctx context.Context, from, authURL string) {
	b.mu.Lock()
	seen := b.opened[authURL]
	b.opened[authURL] = true
	b.mu.Unlock()
	if seen {
		return
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		err := b.visit(ctx, authURL)
		if err != nil {
			b.mu.Lock()
			b.errs = append(b.errs, err)
			b.mu.Unlock()
			fmt.Fprintf(os.Stderr, "mcp-auth-client: browser (%s): %v\n", from, err)
			return
		}
		fmt.Fprintf(os.Stderr, "mcp-auth-client: browser (%s): the daemon accepted the callback\n", from)
	}()
}

// visit opens authURL, follows the redirects to the daemon's callback and
// checks that the daemon accepted it.
func (b *browser) visit(ctx context.Context, authURL string) error {
	au, err := url.Parse(authURL)
	if err != nil {
		return fmt.Errorf("the authorization URL %q: %w", authURL, err)
	}
	redirect, err := url.Parse(au.Query().Get("redirect_uri"))
	if err != nil || redirect.Host == "" {
		return fmt.Errorf("the authorization URL %s has no redirect_uri", authURL)
	}
	if redirect.Scheme != "http" || redirect.Hostname() != "localhost" || redirect.Path != "/callback" {
		return fmt.Errorf("the redirect_uri %s is not the daemon's loopback callback http://localhost:PORT/callback", redirect)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return fmt.Errorf("opening the authorization URL: %w", err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	final := resp.Request.URL
	if final.Host != redirect.Host || final.Path != redirect.Path {
		return fmt.Errorf("the walk from the authorization URL ended at %s (%s), not at the daemon's callback %s: a person would be needed", final, resp.Status, redirect)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the daemon's callback answered %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// count is the number of URLs opened.
func (b *browser) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.opened)
}

// err waits for the visits under way and joins their errors.
func (b *browser) err() error {
	b.wg.Wait()
	b.mu.Lock()
	defer b.mu.Unlock()
	return errors.Join(b.errs...)
}

// user is an isolated user: HOME, XDG dirs, a project and the socket in
// one temp dir.
type user struct {
	root, home, config, state, project, socket string
	env                                        []string
}

func newUser() (*user, error) {
	// Short: the socket path must fit a sockaddr_un.
	root, err := os.MkdirTemp("", "tkauth")
	if err != nil {
		return nil, fmt.Errorf("making the temp dir: %w", err)
	}
	u := &user{root: root, home: filepath.Join(root, "home"), config: filepath.Join(root, "config"),
		state: filepath.Join(root, "state"), project: filepath.Join(root, "proj")}
	run := filepath.Join(root, "run")
	for _, d := range []string{u.home, u.config, u.state, u.project, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			os.RemoveAll(root)
			return nil, err
		}
	}
	u.socket = filepath.Join(run, "tackle", "tackled.sock")
	u.env = []string{
		"HOME=" + u.home,
		"XDG_CONFIG_HOME=" + u.config,
		"XDG_STATE_HOME=" + u.state,
		"XDG_RUNTIME_DIR=" + run,
		"PATH=" + os.Getenv("PATH"),
	}
	return u, nil
}

// configure writes the server into the user's tackle settings (where
// `tackle mcp add --scope user` writes: $XDG_CONFIG_HOME/tackle/
// settings.json), with a rule that allows its tools.
func (u *user) configure(serverURL string, oauth map[string]any) error {
	settings := map[string]any{
		"mcpServers": map[string]any{
			serverName: map[string]any{"type": "http", "url": serverURL, "oauth": oauth},
		},
		"permissions": map[string]any{"allow": []string{"mcp__" + serverName}},
	}
	b, err := json.MarshalIndent(settings, "", "  ")
	if err != nil {
		return err
	}
	path := filepath.Join(u.config, "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing the user's settings: %w", err)
	}
	return nil
}

// findTackled resolves the daemon binary.
func findTackled(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	p := sibling.Find("tackled", os.Getenv("PATH"))
	if p == "" {
		return "", errors.New("finding tackled: set --tackled or TACKLE_TEST_TACKLED, or put it next to this program or in $PATH")
	}
	return p, nil
}

// daemon is the tackled this program started.
type daemon struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

// startDaemon starts tackled for u and waits until it answers health
// checks. The daemon dies with this program (Pdeathsig).
func startDaemon(ctx context.Context, tackled string, u *user) (*daemon, error) {
	cmd := exec.Command(tackled, "--socket", u.socket, "--state-dir", filepath.Join(u.state, "tackle"), "--log-level", "info")
	cmd.Env = u.env
	cmd.Dir = u.home
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", tackled, err)
	}
	d := &daemon{cmd: cmd, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(d.exited)
	}()
	// The socket appears within milliseconds: retry sooner than gRPC's
	// default 1 s backoff.
	conn, err := grpc.NewClient("unix://"+u.socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.5, MaxDelay: 500 * time.Millisecond}}))
	if err != nil {
		d.stop()
		return nil, err
	}
	defer conn.Close()
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	go func() {
		select {
		case <-d.exited:
			cancel() // it will never answer
		case <-hctx.Done():
		}
	}()
	if _, err := healthpb.NewHealthClient(conn).Check(hctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		d.stop()
		return nil, fmt.Errorf("waiting for tackled to answer on %s: %w", u.socket, err)
	}
	return d, nil
}

// stop ends the daemon: SIGTERM, then SIGKILL after 5 s.
func (d *daemon) stop() {
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
	}
}

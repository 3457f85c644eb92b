package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tackle-agent/tackle/clients/client"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
	"github.com/tackle-agent/tackle/internal/testpeers/oauthserver"
)

// authSuites are the conformance suites (@modelcontextprotocol/conformance
// 0.1.16) TestMCPAuthConformance runs through the daemon, with their
// scenarios: "auth" (the scored 2025-11-25 auth scenarios), "backcompat"
// (2025-03-26) and "draft". A suite that runs fewer or others fails the
// test, so a new suite version is looked at, not trusted. The "extensions"
// suite is not run: its scenarios are the client_credentials grant and
// enterprise token exchange, which tackle does not do (a person authorises
// tackle in a browser).
var authSuites = map[string][]string{
	"auth": {
		"auth/metadata-default",
		"auth/metadata-var1",
		"auth/metadata-var2",
		"auth/metadata-var3",
		"auth/basic-cimd",
		"auth/scope-from-www-authenticate",
		"auth/scope-from-scopes-supported",
		"auth/scope-omitted-when-undefined",
		"auth/scope-step-up",
		"auth/scope-retry-limit",
		"auth/token-endpoint-auth-basic",
		"auth/token-endpoint-auth-post",
		"auth/token-endpoint-auth-none",
		"auth/pre-registration",
	},
	"backcompat": {
		"auth/2025-03-26-oauth-metadata-backcompat",
		"auth/2025-03-26-oauth-endpoint-fallback",
	},
	"draft": {
		"auth/resource-mismatch",
		"auth/offline-access-scope",
		"auth/offline-access-not-supported",
	},
}

// authExpectedFailures are scenarios known to fail, and why. One that
// passes fails the test, so the list does not go stale.
var authExpectedFailures = map[string]string{
	// Its authorization server metadata sits at the root well-known URL
	// but names the issuer http://HOST/oauth; the go-sdk (RFC 8414 §3.3)
	// refuses metadata whose issuer is not the URL it was fetched for. The
	// go-sdk client alone (daemon/cmd/mcp-conformance-client) fails it the
	// same way.
	"auth/2025-03-26-oauth-metadata-backcompat": "the go-sdk refuses the issuer mismatch of the metadata",
}

// authClientGivesUp are the scenarios whose server never lets the client
// through: the client must stop trying and fail. In every other scenario
// the tool call must succeed (the suite does not check that).
var authClientGivesUp = []string{"auth/scope-retry-limit", "auth/resource-mismatch"}

// TestMCPAuthConformance runs the conformance suite's OAuth scenarios
// through tackled: cmd/mcp-auth-client turns each scenario's server into a
// configured server of an isolated user, starts a tackled of its own,
// completes the browser steps the daemon announces and calls the
// scenario's tool through the pipeline. Every scenario must pass every
// check with no warnings (but authExpectedFailures), and the tool call
// must succeed where the scenario lets it.
func TestMCPAuthConformance(t *testing.T) {
	suite := testpeers.Bin(t, "conformance")
	nodeDir := testpeers.NodeBinDir(t)
	dir := t.TempDir()

	prog := filepath.Join(dir, "mcp-auth-client")
	build := exec.Command("go", "build", "-o", prog, "./cmd/mcp-auth-client")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/mcp-auth-client: %v\n%s", err, out)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	type run struct {
		suite    string
		out      bytes.Buffer
		err      error
		results  string
		duration time.Duration
	}
	// The suites run side by side, each its scenarios in parallel.
	runs := make([]*run, 0, len(authSuites))
	for _, name := range slices.Sorted(maps.Keys(authSuites)) {
		runs = append(runs, &run{suite: name, results: filepath.Join(dir, "results-"+name)})
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Go(func() {
			began := time.Now()
			cmd := exec.CommandContext(ctx, suite, "client", "--command", prog, "--suite", r.suite, "-o", r.results)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(),
				"PATH="+nodeDir+string(os.PathListSeparator)+os.Getenv("PATH"),
				"TACKLE_TEST_TACKLED="+filepath.Join(binDir, "tackled"))
			// The suite starts servers and client processes: kill them all.
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
			cmd.WaitDelay = 10 * time.Second
			cmd.Stdout, cmd.Stderr = &r.out, &r.out
			r.err = cmd.Run()
			if cmd.Process != nil {
				// A client the suite gave up on may outlive it.
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			}
			r.duration = time.Since(began)
		})
	}
	wg.Wait()
	t.Logf("conformance suites took %v", time.Since(start).Round(time.Millisecond))

	for _, r := range runs {
		summary, problems := judgeAuthSuite(r.out.String(), authSuites[r.suite])
		found, err := testpeers.ConformanceProblems(r.results, testpeers.ConformanceClient{Name: "mcp-auth-client", GivesUp: authClientGivesUp, Skip: authExpectedFailures})
		if err != nil {
			t.Error(err)
		}
		problems = append(problems, found...)
		expectFail := false
		for _, s := range authSuites[r.suite] {
			if _, ok := authExpectedFailures[s]; ok {
				expectFail = true
			}
		}
		if r.err != nil && !expectFail {
			problems = append(problems, fmt.Sprintf("the suite exited with %v", r.err))
		}
		if m := authTotalLineIn(summary); m != "" {
			t.Logf("conformance (%s, %v): %s", r.suite, r.duration.Round(time.Millisecond), m)
		}
		if len(problems) > 0 {
			t.Errorf("MCP conformance suite %q through tackled failed:\n  %s\n\n%s", r.suite, strings.Join(problems, "\n  "), summary)
			if summary == "" {
				t.Logf("suite output:\n%s", r.out.String())
			}
		}
	}
}

var (
	authScenarioLine = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed`)
	authTotalLine    = regexp.MustCompile(`^Total: (\d+) passed, (\d+) failed, (\d+) warnings`)
)

// authTotalLineIn returns the suite's "Total: ..." line, or "".
func authTotalLineIn(summary string) string {
	for line := range strings.Lines(summary) {
		if line = strings.TrimSpace(line); authTotalLine.MatchString(line) {
			return line
		}
	}
	return ""
}

// judgeAuthSuite finds the suite summary in its output and lists what is
// wrong with it: a missing or unexpected scenario, a failed check (but in
// an expected failure), an expected failure that passed, a scenario with
// no passed check (the suite marks a client that exited before any check
// as passed), warnings.
func judgeAuthSuite(output string, want []string) (summary string, problems []string) {
	i := strings.Index(output, "=== SUITE SUMMARY ===")
	if i < 0 {
		return "", []string{"the suite printed no summary"}
	}
	summary = strings.TrimSpace(output[i:])
	seen := map[string]bool{}
	sawTotal := false
	warnings := 0
	for line := range strings.Lines(summary) {
		line = strings.TrimSpace(line)
		if m := authScenarioLine.FindStringSubmatch(line); m != nil {
			name := m[1]
			seen[name] = true
			passed, _ := strconv.Atoi(m[2])
			failed, _ := strconv.Atoi(m[3])
			_, expected := authExpectedFailures[name]
			switch {
			case !slices.Contains(want, name):
				problems = append(problems, fmt.Sprintf("%s: not a known scenario of the suite (update authSuites after checking it)", name))
			case expected && failed == 0:
				problems = append(problems, fmt.Sprintf("%s: passes now: remove it from authExpectedFailures", name))
			case failed > 0 && !expected:
				problems = append(problems, fmt.Sprintf("%s: %d checks failed", name, failed))
			case passed == 0:
				problems = append(problems, fmt.Sprintf("%s: no check passed", name))
			}
			if strings.Contains(line, "warnings") {
				warnings++
			}
		}
		if authTotalLine.MatchString(line) {
			sawTotal = true
		}
	}
	if warnings > 0 {
		problems = append(problems, fmt.Sprintf("%d scenarios with warnings", warnings))
	}
	for _, name := range want {
		if !seen[name] {
			problems = append(problems, fmt.Sprintf("%s: missing from the summary", name))
		}
	}
	if !sawTotal {
		problems = append(problems, "the summary has no Total line")
	}
	return summary, problems
}

// The tests below use oauthserver, an OAuth-protected MCP server in this
// process, configured as the user-scope server "remote".

const (
	authServerName = "remote"
	authToolName   = "mcp__remote__echo"
)

// configureAuthServer writes srv into e's user settings (where `tackle mcp
// add --scope user` writes) with a rule that allows its tools.
func configureAuthServer(t *testing.T, e *env, srv *oauthserver.Server) {
	t.Helper()
	settings := filepath.Join(e.root, "config", "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(settings), 0o700); err != nil {
		t.Fatal(err)
	}
	body := mustJSON(map[string]any{
		"mcpServers":  map[string]any{authServerName: map[string]any{"type": "http", "url": srv.URL}},
		"permissions": map[string]any{"allow": []string{"mcp__" + authServerName}},
	})
	if err := os.WriteFile(settings, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// tokenDir is the daemon's token directory of e.
func tokenDir(e *env) string { return filepath.Join(e.root, "state", "tackle", "mcp-oauth") }

// authDaemon is a tackled the test started for e, and a client of it.
type authDaemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	exited chan struct{}
	log    *syncBuffer
	c      *client.Client
}

// startAuthDaemon starts tackled for e and waits until it answers.
func startAuthDaemon(t *testing.T, e *env) *authDaemon {
	t.Helper()
	d := &authDaemon{t: t, exited: make(chan struct{}), log: &syncBuffer{}}
	d.cmd = exec.Command(filepath.Join(binDir, "tackled"), "--socket", e.socket, "--log-level", "debug")
	d.cmd.Env = e.vars
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		_ = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("tackled (pid %d) log:\n%s", d.cmd.Process.Pid, testpeers.LastLines(d.log.String(), 60))
		}
	})
	conn, err := grpc.NewClient("unix://"+e.socket, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.5, MaxDelay: 500 * time.Millisecond}}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	go func() {
		select {
		case <-d.exited:
			cancel() // it will never answer
		case <-ctx.Done():
		}
	}()
	if _, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatalf("waiting for tackled: %v\n%s", err, d.log.String())
	}
	d.c, err = client.Dial(t.Context(), &client.Options{Socket: e.socket, NoAutostart: true, NoVersionCheck: true, Env: e.vars})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// stop stops the daemon gracefully (SIGTERM), or kills it after 10 s. It
// is idempotent.
func (d *authDaemon) stop() {
	if d.c != nil {
		d.c.Close()
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.exited
		d.t.Errorf("tackled did not stop within 10 s of SIGTERM")
	}
}

// server returns the daemon's view of the session's server "remote".
func (d *authDaemon) server(sid string) *tacklev1.McpServer {
	d.t.Helper()
	resp, err := d.c.Service().ListMcpServers(d.t.Context(), &tacklev1.ListMcpServersRequest{SessionId: sid})
	if err != nil {
		d.t.Fatalf("ListMcpServers: %v", err)
	}
	for _, s := range resp.GetServers() {
		if s.GetName() == authServerName {
			return s
		}
	}
	d.t.Fatalf("ListMcpServers: no server %q in %v", authServerName, resp.GetServers())
	return nil
}

// authSession is a session of the daemon, subscribed on an Attach stream
// from its first event (a session an earlier daemon made: from its first
// event after the opening); every event it receives is kept.
type authSession struct {
	t    *testing.T
	d    *authDaemon
	id   string
	s    *client.Stream
	snap *tacklev1.Snapshot

	mu      sync.Mutex // guards the fields below
	events  []*tacklev1.Event
	ended   error
	changed chan struct{} // closed (and replaced) at every new event
	calls   int
}

// openSession opens the default session of dir.
func (d *authDaemon) openSession(e *env, dir string) *authSession {
	t := d.t
	t.Helper()
	resp, err := d.c.CreateSession(t.Context(), &tacklev1.CreateSessionRequest{Cwd: dir, Env: e.vars, DefaultForCwd: true})
	if err != nil {
		t.Fatalf("creating a session for %s: %v", dir, err)
	}
	a := &authSession{t: t, d: d, id: resp.GetSession().GetId(), changed: make(chan struct{})}
	a.s, err = d.c.Attach(t.Context(), tacklev1.Role_ROLE_CONTROLLER)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.s.Close() })
	// A new session from its first event; a session of an earlier daemon
	// from its first event after this opening (its old ones would be
	// taken for new).
	from := uint64(0)
	if !resp.GetCreated() {
		from = resp.GetSession().GetLastSeq() + 1
	}
	if a.snap, err = a.s.Subscribe(a.id, from, false); err != nil {
		t.Fatal(err)
	}
	go func() {
		for m, err := range a.s.Messages() {
			a.mu.Lock()
			if err != nil {
				a.ended = err
			} else if ev := m.GetEvent(); ev != nil {
				a.events = append(a.events, ev)
			} else if se := m.GetError(); se != nil {
				a.ended = client.NewStreamError(se)
			}
			close(a.changed)
			a.changed = make(chan struct{})
			stop := a.ended != nil
			a.mu.Unlock()
			if stop {
				return
			}
		}
	}()
	return a
}

// wait returns the first event (in order) that ok accepts, waiting up to
// 30 s for it.
func (a *authSession) wait(what string, ok func(*tacklev1.Event) bool) *tacklev1.Event {
	a.t.Helper()
	return a.waitIn(what, func(events []*tacklev1.Event) *tacklev1.Event {
		for _, ev := range events {
			if ok(ev) {
				return ev
			}
		}
		return nil
	})
}

// waitIn waits up to 30 s until find finds an event among the session's
// events (in order) and returns it.
func (a *authSession) waitIn(what string, find func([]*tacklev1.Event) *tacklev1.Event) *tacklev1.Event {
	a.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		a.mu.Lock()
		ev := find(a.events)
		ended, changed := a.ended, a.changed
		a.mu.Unlock()
		if ev != nil {
			return ev
		}
		if ended != nil {
			a.t.Fatalf("session %s: waiting for %s: the stream ended: %v", a.id, what, ended)
		}
		select {
		case <-changed:
		case <-timeout:
			a.t.Fatalf("session %s: no %s within 30 s; events: %s", a.id, what, a.describe())
		}
	}
}

// describe lists the session's event types, for failure messages.
func (a *authSession) describe() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for _, ev := range a.events {
		s := ev.GetType()
		if m := ev.GetMcpAuth(); m != nil {
			s += "(" + m.GetState() + " " + m.GetError() + ")"
		}
		out = append(out, s)
	}
	return strings.Join(out, ", ")
}

// authEvents are the session's mcp_auth_required events of state.
func (a *authSession) authEvents(state string) []*tacklev1.McpAuth {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*tacklev1.McpAuth
	for _, ev := range a.events {
		if m := ev.GetMcpAuth(); ev.GetType() == "mcp_auth_required" && m.GetState() == state {
			out = append(out, m)
		}
	}
	return out
}

// waitAuth waits for an mcp_auth_required event of state whose URL is not
// in not (a new flow), and returns it.
func (a *authSession) waitAuth(state string, not ...string) *tacklev1.McpAuth {
	a.t.Helper()
	ev := a.wait("mcp_auth_required "+state, func(ev *tacklev1.Event) bool {
		m := ev.GetMcpAuth()
		return ev.GetType() == "mcp_auth_required" && m.GetState() == state && m.GetServer() == authServerName && !slices.Contains(not, m.GetUrl())
	})
	return ev.GetMcpAuth()
}

// waitAuthAfter waits for an mcp_auth_required event of state that comes
// after the announcement of flow.
func (a *authSession) waitAuthAfter(state string, flow *tacklev1.McpAuth) *tacklev1.McpAuth {
	a.t.Helper()
	ev := a.waitIn("mcp_auth_required "+state+" after the flow "+flow.GetUrl(), func(events []*tacklev1.Event) *tacklev1.Event {
		seen := false
		for _, ev := range events {
			m := ev.GetMcpAuth()
			switch {
			case ev.GetType() != "mcp_auth_required":
			case m.GetState() == "required" && m.GetUrl() == flow.GetUrl():
				seen = true
			case seen && m.GetState() == state:
				return ev
			}
		}
		return nil
	})
	return ev.GetMcpAuth()
}

// call runs the server's echo tool through the pipeline and returns its
// result.
func (a *authSession) call(text string) *tacklev1.ToolResult {
	a.t.Helper()
	a.mu.Lock()
	a.calls++
	// Unique across daemons: a restarted daemon's session has the old calls.
	id := fmt.Sprintf("call-%d-%d", time.Now().UnixNano(), a.calls)
	a.mu.Unlock()
	err := a.s.RunBatch(&tacklev1.RunBatch{SessionId: a.id, Ref: "ref-" + id,
		Calls: []*tacklev1.ToolCall{{Id: id, Name: authToolName, InputJson: mustJSON(map[string]string{"text": text})}}})
	if err != nil {
		a.t.Fatalf("RunBatch: %v", err)
	}
	ev := a.wait("the result of "+id, func(ev *tacklev1.Event) bool {
		return ev.GetType() == "call_result" && (ev.GetResult().GetId() == id || ev.GetCallId() == id)
	})
	return ev.GetResult()
}

// mustEcho calls the echo tool and fails unless it answers.
func (a *authSession) mustEcho(text string) {
	a.t.Helper()
	r := a.call(text)
	if got := resultTextOf(r); r.GetIsError() || got != "echo: "+text {
		a.t.Fatalf("session %s: %s: %s, is_error %v: %q; want %q", a.id, authToolName, r.GetStatus(), r.GetIsError(), got, "echo: "+text)
	}
}

func resultTextOf(r *tacklev1.ToolResult) string {
	var text []string
	for _, b := range r.GetContent() {
		text = append(text, b.GetText())
	}
	return strings.Join(text, "\n")
}

// browse plays a person's browser: it opens authURL and follows every
// redirect, to the daemon's callback. It returns the last response's
// status and URL.
func browse(t *testing.T, authURL string) (int, *url.URL) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, authURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("opening %s: %v", authURL, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Request.URL
}

// authorize completes the flow of authURL and checks that the daemon's
// callback accepted it.
func authorize(t *testing.T, authURL string) {
	t.Helper()
	code, last := browse(t, authURL)
	if code != http.StatusOK || last.Path != "/callback" || last.Hostname() != "localhost" {
		t.Fatalf("completing the authorisation: the walk ended at %s with %d; want 200 from the daemon's http://localhost:PORT/callback", last, code)
	}
}

// authorize completes the session's flow and waits until the daemon
// announces its outcome, authorized (the callback's answer comes first).
func (a *authSession) authorize(flow *tacklev1.McpAuth) {
	a.t.Helper()
	authorize(a.t, flow.GetUrl())
	a.waitAuthAfter("authorized", flow)
}

// redirectOf returns the redirect_uri and state of an authorization URL.
func redirectOf(t *testing.T, authURL string) (*url.URL, string) {
	t.Helper()
	u, err := url.Parse(authURL)
	if err != nil {
		t.Fatal(err)
	}
	r, err := url.Parse(u.Query().Get("redirect_uri"))
	if err != nil || r.Host == "" {
		t.Fatalf("the authorization URL %s has no redirect_uri", authURL)
	}
	return r, u.Query().Get("state")
}

// tokenFiles lists the files of the token directory, failing unless the
// directory is 0700 and each file 0600.
func tokenFiles(t *testing.T, e *env) []string {
	t.Helper()
	dir := tokenDir(e)
	st, err := os.Stat(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want 0700", dir, st.Mode().Perm())
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, ent := range ents {
		p := filepath.Join(dir, ent.Name())
		info, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if !info.Mode().IsRegular() || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want a regular file, 0600", p, info.Mode())
		}
		files = append(files, p)
	}
	return files
}

// storedToken is what a token file holds that the tests look at.
type storedToken struct {
	Server string `json:"server"`
	URL    string `json:"url"`
	Token  struct {
		AccessToken  string    `json:"access_token"`
		RefreshToken string    `json:"refresh_token"`
		Expiry       time.Time `json:"expiry"`
	} `json:"token"`
}

// oneTokenFile checks that the token directory holds exactly one file, for
// srv, and returns it and its content.
func oneTokenFile(t *testing.T, e *env, srv *oauthserver.Server) (string, storedToken) {
	t.Helper()
	files := tokenFiles(t, e)
	if len(files) != 1 {
		t.Fatalf("token files under %s: %v; want exactly one", tokenDir(e), files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var st storedToken
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("%s: %v", files[0], err)
	}
	if st.Server != authServerName || st.URL != srv.URL || st.Token.AccessToken == "" {
		t.Fatalf("%s: server %q, url %q, access token %q; want %q, %q and a token", files[0], st.Server, st.URL, st.Token.AccessToken, authServerName, srv.URL)
	}
	return files[0], st
}

// checkRules fails the test for every request the authorization server
// refused for breaking a rule.
func checkRules(t *testing.T, srv *oauthserver.Server) {
	t.Helper()
	if v := srv.Violations(); len(v) > 0 {
		t.Errorf("the authorization server refused requests that broke its rules:\n  %s", strings.Join(v, "\n  "))
	}
}

// TestMCPAuthSharedFlow: two sessions (two projects) using the same server
// share one flow: both are told the one URL (an mcp_auth_required event in
// each, and McpLogin of the second joins it), one authorization completes
// it for both, and one token file (0600) holds the token. The server is
// down until both sessions use it, so the flow starts when both are there
// (TestMCPAuthSessionOpensDuringFlow has a session that comes later).
func TestMCPAuthSharedFlow(t *testing.T) {
	srv := oauthserver.Start(t, nil)
	srv.SetDown(true)
	e := newEnv(t)
	configureAuthServer(t, e, srv)
	other := filepath.Join(e.root, "proj2")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	d := startAuthDaemon(t, e)
	a := d.openSession(e, e.project)
	b := d.openSession(e, other)
	srv.SetDown(false)
	// Reconnect now rather than at the next retry: the server asks for
	// authorisation, and both sessions are told the one flow's URL.
	if _, err := d.c.Service().ReconnectMcpServer(t.Context(), &tacklev1.ReconnectMcpServerRequest{SessionId: a.id, Name: authServerName}); err != nil {
		t.Fatalf("ReconnectMcpServer: %v", client.Err(err))
	}
	flow := a.waitAuth("required").GetUrl()
	if got := b.waitAuth("required").GetUrl(); got != flow {
		t.Fatalf("the second session was told %s, the first %s: want one flow", got, flow)
	}

	// McpLogin from the second session joins the flow: it sends its URL.
	login, err := d.c.McpAuth().McpLogin(t.Context(), &tacklev1.McpLoginRequest{SessionId: b.id, Name: authServerName})
	if err != nil {
		t.Fatal(err)
	}
	m, err := login.Recv()
	if err != nil {
		t.Fatalf("McpLogin: %v", client.Err(err))
	}
	if m.GetState() != "required" || m.GetUrl() != flow {
		t.Fatalf("McpLogin's first message: state %q url %q; want required and the flow's URL %s", m.GetState(), m.GetUrl(), flow)
	}
	for _, sess := range []*authSession{a, b} {
		if s := d.server(sess.id); s.GetState() != "needs-auth" || s.GetAuthUrl() != flow || s.GetAuthorized() {
			t.Fatalf("session %s: server state %s, auth_url %q, authorized %v; want needs-auth with the flow's URL", sess.id, s.GetState(), s.GetAuthUrl(), s.GetAuthorized())
		}
	}

	authorize(t, flow)
	m, err = login.Recv()
	if err != nil {
		t.Fatalf("McpLogin: %v", client.Err(err))
	}
	if m.GetState() != "authorized" || m.GetServer().GetState() != "connected" || !m.GetServer().GetAuthorized() {
		t.Fatalf("McpLogin's outcome: state %q, server %s, authorized %v; want authorized, connected", m.GetState(), m.GetServer().GetState(), m.GetServer().GetAuthorized())
	}
	if _, err := login.Recv(); err != io.EOF {
		t.Fatalf("McpLogin after the outcome: %v; want the end of the stream", err)
	}

	// Both sessions are told, and both can call.
	a.waitAuth("authorized")
	b.waitAuth("authorized")
	a.mustEcho("from a")
	b.mustEcho("from b")

	for _, sess := range []*authSession{a, b} {
		if n := len(sess.authEvents("required")); n != 1 {
			t.Errorf("session %s: %d mcp_auth_required events of state required; want 1", sess.id, n)
		}
	}
	st := srv.Stats()
	if st.Registrations != 1 || st.Authorizations != 1 || st.CodeGrants != 1 {
		t.Errorf("the authorization server saw %d registrations, %d authorizations, %d code grants; want one each", st.Registrations, st.Authorizations, st.CodeGrants)
	}
	if st.ToolCalls != 2 {
		t.Errorf("the server saw %d tool calls; want 2", st.ToolCalls)
	}
	_, tok := oneTokenFile(t, e, srv)
	if tok.Token.AccessToken != srv.LastAccessToken() {
		t.Errorf("the token file holds access token %q; the authorization server issued %q last", tok.Token.AccessToken, srv.LastAccessToken())
	}
	checkRules(t, srv)
}

// TestMCPAuthSessionOpensDuringFlow: a session of another project opened
// while the server's flow waits for a person opens at once, finds the flow
// in its snapshot, and shares it. (It hung once: the new session's roots
// notification waited behind the flow in Authorize.)
func TestMCPAuthSessionOpensDuringFlow(t *testing.T) {
	srv := oauthserver.Start(t, nil)
	e := newEnv(t)
	configureAuthServer(t, e, srv)
	other := filepath.Join(e.root, "proj2")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}
	d := startAuthDaemon(t, e)
	a := d.openSession(e, e.project)
	flow := a.waitAuth("required")

	created := make(chan error, 1)
	go func() {
		_, err := d.c.CreateSession(t.Context(), &tacklev1.CreateSessionRequest{Cwd: other, Env: e.vars, DefaultForCwd: true})
		created <- err
	}()
	select {
	case err := <-created:
		if err != nil {
			t.Fatalf("creating a session for %s: %v", other, err)
		}
	case <-time.After(5 * time.Second):
		// Let the hung CreateSession end, so the test can.
		authorize(t, flow.GetUrl())
		<-created
		t.Fatalf("CreateSession for a second project did not return within 5 s while the server's flow waited for a browser")
	}
	b := d.openSession(e, other) // its default session, made above
	var inSnap []string
	for _, m := range b.snap.GetMcpAuth() {
		if m.GetServer() == authServerName && m.GetState() == "required" {
			inSnap = append(inSnap, m.GetUrl())
		}
	}
	if !slices.Equal(inSnap, []string{flow.GetUrl()}) {
		t.Fatalf("the late session's snapshot lists flows %v; want the pending one, %s", inSnap, flow.GetUrl())
	}
	a.authorize(flow)
	b.waitAuth("authorized") // b was told of the flow in its snapshot
	a.mustEcho("from a")
	b.mustEcho("from b")
	if st := srv.Stats(); st.Authorizations != 1 {
		t.Errorf("the authorization server saw %d authorizations; want 1", st.Authorizations)
	}
	oneTokenFile(t, e, srv)
	checkRules(t, srv)
}

// TestMCPAuthCallbackWrongState: the daemon's callback refuses an answer
// whose state belongs to no flow (a forged or stale redirect) and the flow
// waits on; the right answer completes it, and cannot be replayed.
func TestMCPAuthCallbackWrongState(t *testing.T) {
	srv := oauthserver.Start(t, nil)
	e := newEnv(t)
	configureAuthServer(t, e, srv)
	d := startAuthDaemon(t, e)
	a := d.openSession(e, e.project)
	flow := a.waitAuth("required")
	callback, state := redirectOf(t, flow.GetUrl())
	if state == "" {
		t.Fatalf("the authorization URL %s carries no state", flow.GetUrl())
	}

	for _, q := range []url.Values{
		{"code": {"forged"}, "state": {"wrong-" + state}},
		{"code": {"forged"}},
		{"error": {"access_denied"}, "state": {state + "x"}},
	} {
		forged := *callback
		forged.RawQuery = q.Encode()
		if code, _ := browse(t, forged.String()); code != http.StatusBadRequest {
			t.Errorf("GET %s: %d; want 400", forged.String(), code)
		}
	}
	if s := d.server(a.id); s.GetState() != "needs-auth" || s.GetAuthUrl() != flow.GetUrl() {
		t.Fatalf("after the forged callbacks: state %s, auth_url %q; want needs-auth, the flow still waiting for %s", s.GetState(), s.GetAuthUrl(), flow.GetUrl())
	}
	if f := a.authEvents("failed"); len(f) > 0 {
		t.Fatalf("a forged callback failed the flow: %v", f[0].GetError())
	}

	// The authorization server's real redirect completes the flow.
	code, last := browse(t, flow.GetUrl())
	if code != http.StatusOK || last.Path != "/callback" {
		t.Fatalf("completing the authorisation: %d at %s; want 200 from the daemon's callback", code, last)
	}
	a.waitAuthAfter("authorized", flow)
	a.mustEcho("after a forged callback")
	// The same answer again belongs to no flow any more.
	if code, _ := browse(t, last.String()); code != http.StatusBadRequest {
		t.Errorf("replaying the callback %s: %d; want 400", last, code)
	}
	if st := srv.Stats(); st.Authorizations != 1 || st.CodeGrants != 1 {
		t.Errorf("the authorization server saw %d authorizations, %d code grants; want 1 and 1", st.Authorizations, st.CodeGrants)
	}
	checkRules(t, srv)
}

// TestMCPAuthTokenAfterRestart: a token survives a daemon restart (no new
// authorization), as is while it is valid, and refreshed (a refresh_token
// grant, the new token written to the file) when it expired meanwhile.
func TestMCPAuthTokenAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttl  time.Duration
	}{
		{"valid token reused", time.Hour},
		{"expired token refreshed", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := oauthserver.Start(t, &oauthserver.Options{TokenTTL: tc.ttl})
			e := newEnv(t)
			configureAuthServer(t, e, srv)

			d := startAuthDaemon(t, e)
			a := d.openSession(e, e.project)
			a.authorize(a.waitAuth("required"))
			a.mustEcho("before the restart")
			d.stop()
			path, before := oneTokenFile(t, e, srv)
			st1 := srv.Stats()
			if st1.Authorizations != 1 {
				t.Fatalf("%d authorizations before the restart; want 1", st1.Authorizations)
			}
			if tc.ttl < time.Minute {
				// The token must have expired by the time the next daemon
				// needs it: this waits for the clock, not for an event.
				time.Sleep(time.Until(before.Token.Expiry) + 100*time.Millisecond)
			}

			d = startAuthDaemon(t, e)
			a = d.openSession(e, e.project)
			if len(a.snap.GetMcpAuth()) > 0 {
				t.Fatalf("after the restart the snapshot lists a flow: %v", a.snap.GetMcpAuth())
			}
			a.mustEcho("after the restart")
			if r := a.authEvents("required"); len(r) > 0 {
				t.Fatalf("after the restart the daemon asked for authorisation again: %s", r[0].GetUrl())
			}
			if s := d.server(a.id); s.GetState() != "connected" || !s.GetAuthorized() {
				t.Errorf("after the restart: state %s, authorized %v; want connected, authorized", s.GetState(), s.GetAuthorized())
			}
			st2 := srv.Stats()
			if st2.Authorizations != 1 || st2.Registrations != 1 || st2.CodeGrants != 1 {
				t.Errorf("after the restart the authorization server saw %d authorizations, %d registrations, %d code grants in all; want 1 each", st2.Authorizations, st2.Registrations, st2.CodeGrants)
			}
			if st2.ExpiredUses > 0 {
				t.Errorf("the daemon sent an expired access token %d times; it must refresh it first", st2.ExpiredUses)
			}
			t.Logf("the authorization server saw, before the restart: %+v; in all: %+v", st1, st2)
			_, after := oneTokenFile(t, e, srv)
			if tc.ttl >= time.Minute {
				if st2.RefreshGrants != st1.RefreshGrants {
					t.Errorf("refresh grants %d → %d across the restart; a valid token must be used as is", st1.RefreshGrants, st2.RefreshGrants)
				}
				if after.Token.AccessToken != before.Token.AccessToken {
					t.Errorf("%s: the access token changed across the restart with no refresh", path)
				}
				return
			}
			if st2.RefreshGrants <= st1.RefreshGrants {
				t.Errorf("refresh grants %d → %d across the restart; the expired token must be refreshed", st1.RefreshGrants, st2.RefreshGrants)
			}
			d.stop() // the last refresh is on disk
			_, after = oneTokenFile(t, e, srv)
			if after.Token.AccessToken == before.Token.AccessToken || after.Token.AccessToken != srv.LastAccessToken() {
				t.Errorf("%s holds access token %q (before the restart %q); want the one issued last, %q", path, after.Token.AccessToken, before.Token.AccessToken, srv.LastAccessToken())
			}
			if after.Token.RefreshToken == before.Token.RefreshToken {
				t.Errorf("%s still holds the rotated refresh token", path)
			}
			checkRules(t, srv)
		})
	}
}

// TestMCPAuthLogout: McpLogout removes the token file and the server asks
// for authorisation again (a new flow, announced to the session); a new
// authorization makes it work again.
func TestMCPAuthLogout(t *testing.T) {
	srv := oauthserver.Start(t, nil)
	e := newEnv(t)
	configureAuthServer(t, e, srv)
	d := startAuthDaemon(t, e)
	a := d.openSession(e, e.project)
	first := a.waitAuth("required")
	a.authorize(first)
	a.mustEcho("logged in")
	path, _ := oneTokenFile(t, e, srv)

	resp, err := d.c.McpAuth().McpLogout(t.Context(), &tacklev1.McpLogoutRequest{SessionId: a.id, Name: authServerName})
	if err != nil {
		t.Fatalf("McpLogout: %v", client.Err(err))
	}
	if resp.GetRemoved() != path {
		t.Errorf("McpLogout removed %q; want %q", resp.GetRemoved(), path)
	}
	if files := tokenFiles(t, e); len(files) > 0 {
		t.Fatalf("token files after logout: %v", files)
	}
	second := a.waitAuth("required", first.GetUrl())
	if s := d.server(a.id); s.GetState() != "needs-auth" || s.GetAuthorized() || s.GetAuthUrl() != second.GetUrl() {
		t.Fatalf("after logout: state %s, authorized %v, auth_url %q; want needs-auth, not authorized, the new flow's URL", s.GetState(), s.GetAuthorized(), s.GetAuthUrl())
	}
	if r := a.call("logged out"); !r.GetIsError() {
		t.Fatalf("a call after logout, before a new authorisation: %s %q; want an error", r.GetStatus(), resultTextOf(r))
	}

	a.authorize(second)
	a.mustEcho("logged in again")
	oneTokenFile(t, e, srv)
	if st := srv.Stats(); st.Authorizations != 2 {
		t.Errorf("the authorization server saw %d authorizations; want 2 (before and after the logout)", st.Authorizations)
	}
	checkRules(t, srv)
}

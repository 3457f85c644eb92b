package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
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

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/internal/testpeers"
)

// The tests of `tackle mcp serve` run the real binary as MCP clients do:
// a process on stdio, its daemon auto-started by the CLI, real MCP
// servers behind it (server-everything; the go-sdk's conformance server).

// writeUserSettings writes the user's tackle settings of e.
func (e *env) writeUserSettings(settings map[string]any) {
	e.t.Helper()
	path := filepath.Join(e.root, "config", "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(mustJSON(settings)), 0o600); err != nil {
		e.t.Fatal(err)
	}
}

// serveCmd is `tackle mcp serve ARGS` in e's project directory, its stderr
// kept in stderr.
func (e *env) serveCmd(stderr *syncBuffer, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "tackle"), append([]string{"mcp", "serve"}, args...)...)
	cmd.Dir, cmd.Env = e.project, e.vars
	if stderr != nil {
		cmd.Stderr = stderr
	}
	return cmd
}

// buildConformanceServer builds the go-sdk's conformance server (the
// reference tools, resources and prompts the suite's server scenarios
// call: test_simple_text, test://static-text, …), of the go-sdk version
// tackle is built with, into a temp dir.
func buildConformanceServer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "conformance-server")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the go-sdk conformance server: %v\n%s", err, out)
	}
	return bin
}

// serveAuditJSON is an entry of `tackle permissions audit --json`.
type serveAuditJSON struct {
	Tool       string `json:"tool"`
	CallID     string `json:"call_id"`
	Outcome    string `json:"outcome"`
	DecidedBy  string `json:"decided_by"`
	Rule       string `json:"rule"`
	ClientName string `json:"client_name"`
}

// serveAudit returns the audit of e's daemon, newest first.
func (e *env) serveAudit() []serveAuditJSON {
	e.t.Helper()
	var out []serveAuditJSON
	e.json(&out, "", "permissions", "audit")
	return out
}

// stdioBridge offers stdio MCP server processes on Streamable HTTP, for
// the conformance suite, whose server mode only takes a URL. It is a
// transport and nothing more: each MCP session opened on it (an initialize
// POST without Mcp-Session-Id) starts one process, and the JSON-RPC
// messages are copied both ways unchanged (the go-sdk's streamable server
// transport, which holds no MCP server, on one side; its command
// transport on the other) except for rename, which may rewrite names.
// Messages of the process that answer no request (notifications, its own
// requests) go on the session's standalone GET stream, kept in an event
// store until the client opens it: on stdio nothing says which request
// they belong to. A session ends with a DELETE, or when its client drops
// the standalone stream (the TypeScript SDK's client closes without a
// DELETE).
type stdioBridge struct {
	command func() *exec.Cmd
	// rename rewrites a message, toServer for the client's (nil: none).
	rename func(msg jsonrpc.Message, toServer bool)
	url    string

	mu       sync.Mutex // guards sessions
	sessions map[string]*bridgeSession
}

type bridgeSession struct {
	http  *mcpsdk.StreamableServerTransport
	httpc mcpsdk.Connection // the client's side
	stdio mcpsdk.Connection // the process's side
}

// startStdioBridge serves the bridge on a loopback port until the test
// ends, when it closes every session (ending their processes).
func startStdioBridge(t *testing.T, command func() *exec.Cmd, rename func(jsonrpc.Message, bool)) *stdioBridge {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &stdioBridge{command: command, rename: rename, sessions: map[string]*bridgeSession{},
		url: "http://" + ln.Addr().String() + "/mcp"}
	srv := &http.Server{Handler: b}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		b.mu.Lock()
		all := b.sessions
		b.sessions = map[string]*bridgeSession{}
		b.mu.Unlock()
		for _, s := range all {
			s.close()
		}
	})
	return b
}

func (s *bridgeSession) close() {
	s.httpc.Close()
	s.stdio.Close()
}

func (b *stdioBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		if r.Method != http.MethodPost {
			http.Error(w, "an MCP session starts with a POST", http.StatusBadRequest)
			return
		}
		s, err := b.open()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s.http.ServeHTTP(w, r)
		return
	}
	b.mu.Lock()
	s := b.sessions[id]
	b.mu.Unlock()
	switch {
	case s == nil:
		http.Error(w, "session not found", http.StatusNotFound)
	case r.Method == http.MethodDelete:
		b.drop(id)
		w.WriteHeader(http.StatusNoContent)
	default:
		s.http.ServeHTTP(w, r)
		if r.Method == http.MethodGet && r.Context().Err() != nil {
			b.drop(id) // the client went away
		}
	}
}

// drop ends the session id, if it is still open.
func (b *stdioBridge) drop(id string) {
	b.mu.Lock()
	s := b.sessions[id]
	delete(b.sessions, id)
	b.mu.Unlock()
	if s != nil {
		s.close()
	}
}

// open starts a session: a process and the copying between it and the
// session's streams.
func (b *stdioBridge) open() (*bridgeSession, error) {
	ctx := context.Background()
	s := &bridgeSession{http: &mcpsdk.StreamableServerTransport{SessionID: rand.Text(), EventStore: mcpsdk.NewMemoryEventStore(nil)}}
	var err error
	if s.httpc, err = s.http.Connect(ctx); err != nil {
		return nil, err
	}
	if s.stdio, err = (&mcpsdk.CommandTransport{Command: b.command()}).Connect(ctx); err != nil {
		s.httpc.Close()
		return nil, fmt.Errorf("starting the stdio server: %w", err)
	}
	copyMsgs := func(from, to mcpsdk.Connection, toServer bool) {
		defer from.Close()
		defer to.Close()
		for {
			msg, err := from.Read(ctx)
			if err != nil {
				return
			}
			if b.rename != nil {
				b.rename(msg, toServer)
			}
			// A message the HTTP side cannot deliver (its stream is gone)
			// is dropped, as a server's transport would; the session stays.
			_ = to.Write(ctx, msg)
		}
	}
	go copyMsgs(s.httpc, s.stdio, true)
	go copyMsgs(s.stdio, s.httpc, false)
	b.mu.Lock()
	b.sessions[s.http.SessionID] = s
	b.mu.Unlock()
	return s, nil
}

// confServer is the name the go-sdk conformance server is configured
// under; `tackle mcp serve` serves its tool test_simple_text as
// conf__test_simple_text.
const confServer = "conf"

// renameConformance maps the names the suite's scenarios use (the
// reference server's own: test_simple_text, test_simple_prompt) to the
// names tackle serves that server's tools and prompts under
// (conf__test_simple_text), and back in tools/list and prompts/list
// results. A name with "__" is left alone: it is already tackle's (every
// served name has its server's before "__"). Nothing else is touched.
func renameConformance(msg jsonrpc.Message, toServer bool) {
	const prefix = confServer + "__"
	edit := func(raw *json.RawMessage, f func(map[string]any) bool) {
		var m map[string]any
		if len(*raw) == 0 || json.Unmarshal(*raw, &m) != nil || !f(m) {
			return
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		*raw = b
	}
	if toServer {
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return
		}
		edit(&req.Params, func(p map[string]any) bool {
			target := p
			switch req.Method {
			case "tools/call", "prompts/get":
			case "completion/complete":
				target, _ = p["ref"].(map[string]any)
				if target == nil || target["type"] != "ref/prompt" {
					return false
				}
			default:
				return false
			}
			name, _ := target["name"].(string)
			if name == "" || strings.Contains(name, "__") {
				return false
			}
			target["name"] = prefix + name
			return true
		})
		return
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return
	}
	edit(&resp.Result, func(r map[string]any) bool {
		changed := false
		for _, key := range []string{"tools", "prompts"} {
			list, _ := r[key].([]any)
			for _, it := range list {
				if m, ok := it.(map[string]any); ok {
					if name, _ := m["name"].(string); strings.HasPrefix(name, prefix) {
						m["name"] = strings.TrimPrefix(name, prefix)
						changed = true
					}
				}
			}
		}
		return changed
	})
}

// mcpServeScenarios are the server scenarios of the conformance suite
// (@modelcontextprotocol/conformance 0.1.16, suite "all": the active ones
// and the pending json-schema-2020-12 and server-sse-polling) that
// apply to `tackle mcp serve`, and pass: every check must succeed. The
// scenarios that name the suite's reference tools, resources and prompts
// (test_*, test://…) call those of the go-sdk's conformance server,
// configured beside server-everything (renameConformance maps the tool
// and prompt names); the others see both servers. Backed by
// server-everything alone, only server-initialize, logging-set-level,
// ping, tools-list, resources-list and prompts-list could apply.
var mcpServeScenarios = []string{
	"server-initialize",
	"logging-set-level",
	"ping",
	"tools-list",
	"tools-call-simple-text",
	"tools-call-image",
	"tools-call-audio",
	"tools-call-embedded-resource",
	"tools-call-mixed-content",
	"tools-call-error",
	"tools-call-with-progress",
	"json-schema-2020-12",
	"resources-list",
	"resources-read-text",
	"resources-read-binary",
	"resources-templates-read",
	"prompts-list",
	"prompts-get-simple",
	"prompts-get-with-args",
	"prompts-get-embedded-resource",
	"prompts-get-with-image",
}

// mcpServeNotApplicable are the suite's other server scenarios, and why
// they do not apply. They run (the suite runs them all) but their results
// are only logged.
var mcpServeNotApplicable = map[string]string{
	// What tackle does not offer the servers it connects to. (With the
	// go-sdk's conformance server the daemon's connection is on protocol
	// 2026-07-28, where a server cannot even send its own requests during a
	// call: it returns input requests, which tackle does not answer either.)
	"tools-call-with-logging":      "an underlying server's log messages go to its log file (tackle mcp logs), not to MCP clients; tackle mcp serve's log messages are its own (server states)",
	"tools-call-sampling":          "tackle offers MCP servers no sampling (it declines their sampling requests)",
	"tools-call-elicitation":       "tackle offers MCP servers no elicitation (it declines their requests; it elicits only its own permission prompts)",
	"elicitation-sep1034-defaults": "tackle offers MCP servers no elicitation",
	"elicitation-sep1330-enums":    "tackle offers MCP servers no elicitation",
	// What tackle mcp serve does not serve.
	"completion-complete":   "tackle mcp serve offers no completion/complete (the daemon has no completion of the servers' prompt or template arguments)",
	"resources-subscribe":   "tackle mcp serve offers no resource subscriptions (resources/subscribe)",
	"resources-unsubscribe": "tackle mcp serve offers no resource subscriptions (resources/unsubscribe)",
	// Streamable HTTP: tackle mcp serve speaks stdio; these would test the test's bridge.
	"server-sse-polling":          "Streamable HTTP only (SSE priming events, retry, resumption); tackle mcp serve speaks stdio",
	"server-sse-multiple-streams": "Streamable HTTP only (concurrent POST streams); tackle mcp serve speaks stdio",
	"dns-rebinding-protection":    "Streamable HTTP only (Host and Origin checks); tackle mcp serve speaks stdio",
}

var (
	confScenarioLine = regexp.MustCompile(`^[✓✗] (\S+): (\d+) passed, (\d+) failed`)
	confRunStamp     = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
)

// TestMcpServeConformance runs the conformance suite's server scenarios
// against `tackle mcp serve` (one process per MCP session, offered on
// Streamable HTTP by stdioBridge: the suite's server mode takes only a
// URL) backed by server-everything and the go-sdk's conformance server:
// every scenario of mcpServeScenarios passes every check, and the calls
// are in tackle's audit, allowed by the user's rules.
func TestMcpServeConformance(t *testing.T) {
	suite := testpeers.Bin(t, "conformance")
	nodeDir := testpeers.NodeBinDir(t)
	conf := buildConformanceServer(t)
	e := newEnv(t)
	e.writeUserSettings(map[string]any{
		"permissions": map[string]any{"allow": []string{"mcp__everything", "mcp__" + confServer}},
		"mcpServers": map[string]any{
			"everything": map[string]any{"command": testpeers.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}},
			confServer:   map[string]any{"command": conf},
		},
	})
	e.waitMCP("everything", connected)
	e.waitMCP(confServer, connected)

	var stderr syncBuffer
	br := startStdioBridge(t, func() *exec.Cmd { return e.serveCmd(&stderr, "--no-autostart") }, renameConformance)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	cmd := exec.CommandContext(ctx, suite, "server", "--url", br.url, "--suite", "all", "-o", results)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+nodeDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	runErr := cmd.Run() // non-zero when a scenario that does not apply fails: judged below
	t.Logf("conformance suite (server) took %v", time.Since(start).Round(time.Millisecond))

	seen := map[string]bool{}
	var problems []string
	for line := range strings.Lines(out.String()) {
		m := confScenarioLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		name, passed, failed := m[1], m[2], m[3]
		seen[name] = true
		switch why, na := mcpServeNotApplicable[name]; {
		case na:
			t.Logf("not applicable: %s (%s passed, %s failed): %s", name, passed, failed, why)
		case !slices.Contains(mcpServeScenarios, name):
			problems = append(problems, fmt.Sprintf("%s: not a known server scenario (add it to mcpServeScenarios or mcpServeNotApplicable after checking it)", name))
		case failed != "0":
			problems = append(problems, fmt.Sprintf("%s: %s checks failed", name, failed))
		case passed == "0":
			problems = append(problems, fmt.Sprintf("%s: no check passed", name))
		}
	}
	for _, name := range mcpServeScenarios {
		if !seen[name] {
			problems = append(problems, name+": missing from the suite's output")
		}
	}
	problems = append(problems, confFailedChecks(t, results)...)
	// The calls went through tackle's pipeline: the rule that allowed them
	// is in the audit.
	if !slices.ContainsFunc(e.serveAudit(), func(a serveAuditJSON) bool {
		return a.Tool == "mcp__conf__test_simple_text" && a.Outcome == "allow" && a.DecidedBy == "rule" && a.Rule == "mcp__conf"
	}) {
		problems = append(problems, "no audit entry of mcp__conf__test_simple_text allowed by the rule mcp__conf")
	}
	if len(problems) > 0 {
		t.Errorf("conformance suite (server) against tackle mcp serve (exit: %v):\n  %s\n\nsuite output:\n%s\ntackle mcp serve stderr:\n%s",
			runErr, strings.Join(problems, "\n  "), out.String(), stderr.String())
	}
}

// confFailedChecks describes each failed or warning check in the
// checks.json files under dir, of the scenarios that apply.
func confFailedChecks(t *testing.T, dir string) []string {
	t.Helper()
	var problems []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		scenario := strings.TrimPrefix(confRunStamp.ReplaceAllString(filepath.Base(filepath.Dir(path)), ""), "server-")
		if _, na := mcpServeNotApplicable[scenario]; na {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []struct {
			ID           string          `json:"id"`
			Status       string          `json:"status"`
			ErrorMessage string          `json:"errorMessage"`
			Details      json.RawMessage `json:"details"`
		}
		if err := json.Unmarshal(data, &checks); err != nil {
			return fmt.Errorf("parsing %s: %w", path, err)
		}
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				problems = append(problems, fmt.Sprintf("%s: %s %s: %s %.500s", scenario, c.Status, c.ID, c.ErrorMessage, c.Details))
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("reading the suite's results: %v", err)
	}
	return problems
}

// serveTap is a server entry that runs bin with args behind tee: every
// line the daemon sends the server is appended to tap, as the server
// received it.
func serveTap(tap, bin string, args ...string) map[string]any {
	return map[string]any{"command": "/bin/sh", "args": append([]string{"-c", `tap=$1; shift; tee -a "$tap" | exec "$@"`, "sh", tap, bin}, args...)}
}

// tapMessages decodes the JSON-RPC messages of a tap file.
func tapMessages(t *testing.T, tap string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(tap)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []map[string]any
	for line := range strings.Lines(string(data)) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// tsClientFacts is what testpeers/mcpserve-client/client.mjs prints.
type tsClientFacts struct {
	Error      string `json:"error"`
	Step       string `json:"step"`
	ServerInfo struct {
		Name string `json:"name"`
	} `json:"serverInfo"`
	Tools []string `json:"tools"`
	Echo  struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"echo"`
	Resources []string `json:"resources"`
	Read      struct {
		URI        string `json:"uri"`
		Text       string `json:"text"`
		BlobLength int    `json:"blobLength"`
	} `json:"read"`
	Prompts       []string `json:"prompts"`
	Prompt        string   `json:"prompt"`
	ListChanged   int      `json:"listChanged"`
	LateTools     []string `json:"lateTools"`
	ListChangedMs int      `json:"listChangedMs"`
	Cancel        struct {
		Progress int    `json:"progress"`
		Error    string `json:"error"`
		Result   string `json:"result"`
	} `json:"cancel"`
	Sum struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"sum"`
	Env struct {
		IsError bool   `json:"isError"`
		Text    string `json:"text"`
	} `json:"env"`
	Elicitations []struct {
		Policy      string         `json:"policy"`
		Message     string         `json:"message"`
		Schema      map[string]any `json:"schema"`
		Aborted     bool           `json:"aborted"`
		AbortReason string         `json:"abortReason"`
		RequestID   string         `json:"requestId"`
		CLIAnswer   string         `json:"cliAnswer"`
	} `json:"elicitations"`
}

// TestMcpServeTypeScriptClient drives `tackle mcp serve` with the
// TypeScript SDK's client (testpeers/mcpserve-client/client.mjs, on Node
// 22): tools, a resource, a prompt, list_changed after `tackle mcp add`, a
// cancelled call whose server gets notifications/cancelled, and two
// permission prompts, one answered through elicitation and one with
// `tackle permissions answer`, which withdraws the elicitation.
func TestMcpServeTypeScriptClient(t *testing.T) {
	node := filepath.Join(testpeers.NodeBinDir(t), "node")
	if _, err := os.Stat(filepath.Join(testpeers.Root(), "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		t.Fatalf("the TypeScript MCP SDK is not installed (%v): run `make deps` (scripts/npm-peers.sh)", err)
	}
	script := filepath.Join(testpeers.Root(), "mcpserve-client", "client.mjs")
	bin := testpeers.Bin(t, "mcp-server-everything")
	tackle := filepath.Join(binDir, "tackle")
	e := newEnv(t)
	tap := filepath.Join(e.root, "ev-received.jsonl")
	e.writeUserSettings(map[string]any{
		"permissions": map[string]any{"allow": []string{"mcp__ev__echo", "mcp__ev__trigger-long-running-operation", "mcp__late"}},
		"mcpServers":  map[string]any{"ev": serveTap(tap, bin, "stdio")},
	})
	e.waitMCP("ev", connected)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, "--", tackle, "mcp", "serve", "--no-autostart", "--permission-timeout", "60")
	cmd.Dir = e.project
	cmd.Env = append(slices.Clone(e.vars), "TACKLE_CLI="+tackle, "TACKLE_LATE_SERVER="+bin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var f tsClientFacts
	if err := json.Unmarshal(stdout.Bytes(), &f); err != nil || runErr != nil || f.Error != "" {
		t.Fatalf("client.mjs: %v, %v, %s\nstdout %s\nstderr %s", runErr, err, f.Error, stdout.String(), stderr.String())
	}
	t.Logf("list_changed %d ms after tackle mcp add", f.ListChangedMs)

	if f.ServerInfo.Name != "tackle" {
		t.Errorf("serverInfo.name = %q; want tackle", f.ServerInfo.Name)
	}
	for _, name := range []string{"ev__echo", "ev__get-sum", "ev__get-env", "ev__trigger-long-running-operation"} {
		if !slices.Contains(f.Tools, name) {
			t.Errorf("tools/list lacks %s: %v", name, f.Tools)
		}
	}
	if f.Echo.IsError || !strings.Contains(f.Echo.Text, "hello from the TypeScript SDK") {
		t.Errorf("ev__echo = %+v", f.Echo)
	}
	if len(f.Resources) == 0 || f.Read.URI != f.Resources[0] || f.Read.Text == "" && f.Read.BlobLength == 0 {
		t.Errorf("resources %v, read %+v; want the first one's contents", f.Resources, f.Read)
	}
	if !slices.Contains(f.Prompts, "ev__args-prompt") || !strings.Contains(f.Prompt, "Lyon") {
		t.Errorf("prompts %v, ev__args-prompt rendered %q; want Lyon in it", f.Prompts, f.Prompt)
	}
	if f.ListChanged == 0 || !slices.Contains(f.LateTools, "late__echo") {
		t.Errorf("after tackle mcp add: %d list_changed, late's tools %v", f.ListChanged, f.LateTools)
	}

	// The cancelled call: the client gave up after a progress notification;
	// the server received notifications/cancelled for the daemon's request,
	// and the session's log has the call cancelled.
	if f.Cancel.Progress == 0 || f.Cancel.Error == "" || f.Cancel.Result != "" {
		t.Errorf("the aborted call: %+v; want progress, then the abort's error", f.Cancel)
	}
	var callID any
	cancelled := false
	for i, deadline := 0, time.Now().Add(10*time.Second); !cancelled && time.Now().Before(deadline); i++ {
		if i > 0 {
			time.Sleep(50 * time.Millisecond) // the daemon sends it on its own time: poll the tap
		}
		for _, m := range tapMessages(t, tap) {
			params, _ := m["params"].(map[string]any)
			switch m["method"] {
			case "tools/call":
				if params["name"] == "trigger-long-running-operation" {
					callID = m["id"]
				}
			case "notifications/cancelled":
				cancelled = cancelled || callID != nil && params["requestId"] == callID
			}
		}
	}
	if callID == nil || !cancelled {
		t.Errorf("server-everything received tools/call %v of the long operation, notifications/cancelled for it: %v", callID, cancelled)
	}
	attachUntil(t, e, "", func(ev map[string]any) bool {
		res, _ := ev["result"].(map[string]any)
		return ev["type"] == "call_result" && ev["tool"] == "mcp__ev__trigger-long-running-operation" && res["status"] == "cancelled"
	})

	// The two prompts.
	if len(f.Elicitations) != 2 {
		t.Fatalf("elicitations: %+v; want get-sum's and get-env's", f.Elicitations)
	}
	first, second := f.Elicitations[0], f.Elicitations[1]
	if !strings.Contains(first.Message, "ev__get-sum") || !strings.Contains(mustJSON(first.Schema), "allow_once") || !strings.Contains(mustJSON(first.Schema), "deny") {
		t.Errorf("get-sum's elicitation: %q %v; want the tool and the choices", first.Message, first.Schema)
	}
	if f.Sum.IsError || !strings.Contains(f.Sum.Text, "42") {
		t.Errorf("ev__get-sum allowed through elicitation = %+v", f.Sum)
	}
	if !strings.Contains(second.Message, "ev__get-env") || second.RequestID == "" || !strings.Contains(second.CLIAnswer, "answered") || !second.Aborted || second.AbortReason != "context canceled" {
		// (The reason is the go-sdk's for a request it cancels; the
		// TypeScript SDK aborts with its own when the connection closes.)
		t.Errorf("get-env's elicitation: %+v; want it answered with the CLI, then withdrawn", second)
	}
	if f.Env.IsError || !strings.Contains(f.Env.Text, "PATH") {
		t.Errorf("ev__get-env allowed with tackle permissions answer = %+v", f.Env)
	}
	// The audit says who answered: the MCP client (its clientInfo), the CLI.
	var sum, env *serveAuditJSON
	audit := e.serveAudit()
	for i := range audit {
		switch a := &audit[i]; a.Tool {
		case "mcp__ev__get-sum":
			sum = a
		case "mcp__ev__get-env":
			env = a
		}
	}
	if sum == nil || sum.Outcome != "allow_once" || sum.ClientName != "mcp:ts-sdk-client" {
		t.Errorf("audit of get-sum: %+v; want allow_once by mcp:ts-sdk-client", sum)
	}
	if env == nil || env.Outcome != "allow_once" || env.ClientName == "" || env.ClientName == "mcp:ts-sdk-client" {
		t.Errorf("audit of get-env: %+v; want allow_once by the CLI", env)
	}
}

// serverDescendants returns the live processes under pid (its children,
// theirs, …) whose first arguments include bin.
func serverDescendants(t *testing.T, pid int, bin string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	parent := map[int]int{}
	for _, ent := range ents {
		p, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", ent.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		parent[p], _ = strconv.Atoi(f[1])
	}
	var out []int
	for p := range parent {
		under := false
		for q := parent[p]; q > 1 && !under; q = parent[q] {
			under = q == pid
		}
		if !under {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "cmdline"))
		if args := strings.Split(string(b), "\x00"); err == nil && slices.Contains(args[:min(len(args), 3)], bin) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// servedClient is one `tackle mcp serve` process and the go-sdk client
// connected to it.
type servedClient struct {
	name   string
	cmd    *exec.Cmd
	cs     *mcpsdk.ClientSession
	stderr *syncBuffer
}

// startServe runs `tackle mcp serve ARGS` and connects a client named name
// to it; the client is closed at the end of the test.
func (e *env) startServe(name string, args ...string) *servedClient {
	e.t.Helper()
	s := &servedClient{name: name, stderr: &syncBuffer{}}
	s.cmd = e.serveCmd(s.stderr, append([]string{"--no-autostart"}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: name, Version: "1.0"}, nil).Connect(ctx, &mcpsdk.CommandTransport{Command: s.cmd}, nil)
	if err != nil {
		e.t.Fatalf("connecting %s to tackle mcp serve: %v\n%s", name, err, s.stderr)
	}
	s.cs = cs
	e.t.Cleanup(func() { cs.Close() })
	return s
}

// echo calls ev__echo with message through s.
func (s *servedClient) echo(ctx context.Context, message string) error {
	res, err := s.cs.CallTool(ctx, &mcpsdk.CallToolParams{Name: "ev__echo", Arguments: map[string]any{"message": message}})
	if err != nil {
		return fmt.Errorf("%s: ev__echo: %w\n%s", s.name, err, s.stderr)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcpsdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError || !strings.Contains(text.String(), message) {
		return fmt.Errorf("%s: ev__echo = %q (isError %v)\n%s", s.name, text.String(), res.IsError, s.stderr)
	}
	return nil
}

// TestMcpServeThreeProcessesOneServer runs three `tackle mcp serve`
// processes at once (two on the project's session, one on another
// directory's): the daemon runs one server-everything for all three. One
// of them is killed (SIGKILL) during a slow call: the others keep working,
// and the call it left behind ends with a result in the session's log.
func TestMcpServeThreeProcessesOneServer(t *testing.T) {
	bin := testpeers.Bin(t, "mcp-server-everything")
	e := newEnv(t)
	e.writeUserSettings(map[string]any{
		"permissions": map[string]any{"allow": []string{"mcp__ev"}},
		"mcpServers":  map[string]any{"ev": map[string]any{"command": bin, "args": []string{"stdio"}}},
	})
	var st statusJSON
	e.json(&st, "", "status") // starts the daemon
	other := filepath.Join(e.root, "other")
	if err := os.MkdirAll(other, 0o700); err != nil {
		t.Fatal(err)
	}

	args := [][]string{nil, nil, {"--cwd", other}}
	serves := make([]*servedClient, len(args))
	var wg sync.WaitGroup
	for i := range serves {
		wg.Go(func() { serves[i] = e.startServe(fmt.Sprintf("window-%d", i+1), args[i]...) })
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	errs := make(chan error, len(serves))
	for _, s := range serves {
		go func() { errs <- s.echo(ctx, "hello from "+s.name) }()
	}
	for range serves {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	pids := serverDescendants(t, st.PID, bin)
	if len(pids) != 1 {
		t.Fatalf("three serves: server-everything processes under the daemon %v; want exactly one", pids)
	}

	// A slow call on window-2, which is killed while it runs.
	killed := serves[1]
	callErr := make(chan error, 1)
	go func() {
		params := &mcpsdk.CallToolParams{Name: "ev__trigger-long-running-operation", Arguments: map[string]any{"duration": 2, "steps": 4}}
		params.SetProgressToken("slow")
		_, err := killed.cs.CallTool(ctx, params)
		callErr <- err
	}()
	attachUntil(t, e, "", func(ev map[string]any) bool {
		return ev["tool"] == "mcp__ev__trigger-long-running-operation" && (ev["type"] == "call_progress" || ev["type"] == "call_state" && ev["state"] == "running")
	})
	if err := killed.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-callErr; err == nil {
		t.Error("the call of the killed serve returned no error to its client")
	}
	for _, s := range []*servedClient{serves[0], serves[2]} {
		if err := s.echo(ctx, "still here: "+s.name); err != nil {
			t.Errorf("after window-2 was killed: %v", err)
		}
	}
	// The call the killed serve left behind has its result in the log.
	events := attachUntil(t, e, "", func(ev map[string]any) bool {
		return ev["type"] == "call_result" && ev["tool"] == "mcp__ev__trigger-long-running-operation"
	})
	res, _ := events[len(events)-1]["result"].(map[string]any)
	t.Logf("the killed serve's call ended %v", res["status"])
	if status := res["status"]; status != "completed" && status != "cancelled" {
		t.Errorf("the killed serve's call ended %v; want completed or cancelled", res)
	}
	if got := serverDescendants(t, st.PID, bin); !slices.Equal(got, pids) {
		t.Errorf("server-everything processes under the daemon after the kill: %v; want still %v", got, pids)
	}
}

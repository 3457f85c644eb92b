package mcpserve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/clients/cli"
	"github.com/tackle-agent/tackle/clients/client"
	"github.com/tackle-agent/tackle/clients/mcpserve"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// testTimeout bounds every wait of a test.
const testTimeout = 60 * time.Second

// fixture is a daemon whose user settings configure server-everything as
// "ev", a project directory, and a tackle client of the daemon's.
type fixture struct {
	t   *testing.T
	d   *daemontest.Daemon
	bin string
	dir string
	tc  *client.Client // another tackle client: answers, audits
}

// start starts a daemon with settings (mcpServers gets "ev" added).
func start(t *testing.T, settings map[string]any, opts ...daemontest.Option) *fixture {
	t.Helper()
	bin := testpeers.Bin(t, "mcp-server-everything")
	d := daemontest.Start(t, opts...)
	if settings == nil {
		settings = map[string]any{}
	}
	servers, _ := settings["mcpServers"].(map[string]any)
	if servers == nil {
		servers = map[string]any{}
	}
	servers["ev"] = map[string]any{"command": bin, "args": []string{"stdio"}}
	settings["mcpServers"] = servers
	f := &fixture{t: t, d: d, bin: bin, dir: t.TempDir()}
	f.writeSettings(settings)
	tc, err := client.Dial(context.Background(), &client.Options{Socket: d.Socket(), NoAutostart: true, ClientName: "other-client"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tc.Close() })
	f.tc = tc
	return f
}

func (f *fixture) writeSettings(settings map[string]any) {
	f.t.Helper()
	b, err := json.Marshal(settings)
	if err != nil {
		f.t.Fatal(err)
	}
	path := filepath.Join(f.d.Options().ConfigHome, "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
}

// dial is Options.Dial for the test daemon (never autostarting).
func (f *fixture) dial(ctx context.Context, name string) (*client.Client, error) {
	return client.Dial(ctx, &client.Options{Socket: f.d.Socket(), NoAutostart: true, ClientName: name})
}

// logBuf is a goroutine-safe log writer.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// served is one `tackle mcp serve` (Serve, in this process, on pipes) and
// the go-sdk client session connected to it.
type served struct {
	cs  *mcp.ClientSession
	log *logBuf
	// endOK is set by a test that expects Serve to end with an error.
	endOK atomic.Bool

	done    chan error
	endOnce sync.Once
	endErr  error
	ended   bool
}

// end waits up to testTimeout for Serve to return, and returns its error;
// ended is false when it did not return.
func (s *served) end() (err error, ended bool) {
	s.endOnce.Do(func() {
		select {
		case s.endErr = <-s.done:
			s.ended = true
		case <-time.After(testTimeout):
		}
	})
	return s.endErr, s.ended
}

// serve runs Serve with opts (Dial and Cwd filled in) on pipes and
// connects a go-sdk client named name with copts to it.
func (f *fixture) serve(opts mcpserve.Options, name string, copts *mcp.ClientOptions) *served {
	f.t.Helper()
	return f.serveVersion(opts, name, copts, "")
}

// serveVersion is serve with a client that asks for protocol version
// ("" = the go-sdk's latest).
func (f *fixture) serveVersion(opts mcpserve.Options, name string, copts *mcp.ClientOptions, version string) *served {
	f.t.Helper()
	if opts.Dial == nil {
		opts.Dial = f.dial
	}
	if opts.Cwd == "" && opts.SessionID == "" {
		opts.Cwd = f.dir
	}
	lb := &logBuf{}
	opts.Log = lb
	srv, err := mcpserve.New(&opts)
	if err != nil {
		f.t.Fatal(err)
	}
	toServerR, toServerW := io.Pipe()
	fromServerR, fromServerW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ctx, toServerR, fromServerW)
		fromServerW.Close()
		done <- err
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, copts)
	cctx, ccancel := context.WithTimeout(context.Background(), testTimeout)
	defer ccancel()
	cs, err := c.Connect(cctx, &mcp.IOTransport{Reader: fromServerR, Writer: toServerW}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		f.t.Fatalf("connecting to mcp serve: %v\n%s", err, lb)
	}
	s := &served{cs: cs, log: lb, done: done}
	f.t.Cleanup(func() {
		cs.Close()
		toServerW.Close()
		err, ended := s.end()
		switch {
		case !ended:
			f.t.Errorf("Serve did not return after the client closed\n%s", lb)
		case err != nil && !s.endOK.Load():
			f.t.Errorf("Serve: %v", err)
		}
		cancel()
	})
	return s
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// tools lists the served tools by name.
func (s *served) tools(t *testing.T) map[string]*mcp.Tool {
	t.Helper()
	out := map[string]*mcp.Tool{}
	for tool, err := range s.cs.Tools(ctxT(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out[tool.Name] = tool
	}
	return out
}

func (s *served) call(t *testing.T, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v\n%s", name, err, s.log)
	}
	return res
}

func text(r *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

func names(m map[string]*mcp.Tool) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// sessionOf is the default session of dir.
func (f *fixture) sessionOf(dir string) string {
	f.t.Helper()
	resp, err := f.tc.CreateSession(ctxT(f.t), &tacklev1.CreateSessionRequest{Cwd: dir, DefaultForCwd: true})
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.GetSession().GetId()
}

// audit is the audit of session sid for tool.
func (f *fixture) audit(sid, tool string) []*tacklev1.AuditEntry {
	f.t.Helper()
	entries, err := f.tc.Audit(ctxT(f.t), sid, 0)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []*tacklev1.AuditEntry
	for _, e := range entries {
		if e.GetTool() == tool {
			out = append(out, e)
		}
	}
	return out
}

// tools/list shows the ev tools under srv__tool with the server's schemas
// and the annotations tackle keeps; a tools/call runs through the pipeline
// (allowed by a rule) and returns the echo.
func TestListAndCallMCPTools(t *testing.T) {
	f := start(t, map[string]any{"permissions": map[string]any{"allow": []string{
		"mcp__ev__echo", "mcp__ev__get-tiny-image", "mcp__ev__get-structured-content", "mcp__ev__get-resource-links",
	}}})
	s := f.serve(mcpserve.Options{}, "test-client", nil)

	tools := s.tools(t)
	for _, want := range []string{"ev__echo", "ev__get-sum", "ev__trigger-long-running-operation", "ev__get-structured-content"} {
		if tools[want] == nil {
			t.Fatalf("tools/list lacks %s: %v", want, names(tools))
		}
	}
	for n := range tools {
		if !strings.HasPrefix(n, "ev__") {
			t.Errorf("tools/list has %s; the default (--tools mcp) serves the MCP tools only", n)
		}
	}
	echo := tools["ev__echo"]
	schema, _ := json.Marshal(echo.InputSchema)
	var sch struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(schema, &sch); err != nil || sch.Type != "object" || sch.Properties["message"] == nil {
		t.Errorf("ev__echo's input schema = %s; want the server's, with a message property", schema)
	}
	if echo.Description == "" {
		t.Errorf("ev__echo has no description")
	}
	if a := tools["ev__trigger-long-running-operation"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("ev__trigger-long-running-operation's annotations = %+v; want readOnlyHint (the server's)", a)
	}

	// Input the schema refuses is a tool error that says so; the client
	// listed the schema, so nothing tells it to load the tool first (with
	// a ToolSearch serve does not serve) as a model of tackle's is told
	// (before any good call, which would load it for the session's model).
	bad := s.call(t, "ev__echo", map[string]any{"message": 5})
	if !bad.IsError || !strings.Contains(text(bad), "InputValidationError") || strings.Contains(text(bad), "ToolSearch") {
		t.Errorf("ev__echo with a number = %+v (%q); want the schema's error alone", bad, text(bad))
	}
	res := s.call(t, "ev__echo", map[string]any{"message": "hello from mcp"})
	if res.IsError || !strings.Contains(text(res), "hello from mcp") {
		t.Fatalf("ev__echo = %+v (%q); want the echo", res, text(res))
	}
	// The call went through tackle's pipeline: the session's audit has it.
	if got := f.audit(f.sessionOf(f.dir), "mcp__ev__echo"); len(got) != 1 || got[0].GetOutcome() != "allow" {
		t.Errorf("audit of mcp__ev__echo = %v; want one allow by the rule", got)
	}

	// Content blocks keep their kinds; structured content passes through.
	res = s.call(t, "ev__get-tiny-image", map[string]any{})
	if !slices.ContainsFunc(res.Content, func(c mcp.Content) bool {
		img, ok := c.(*mcp.ImageContent)
		return ok && img.MIMEType == "image/png" && len(img.Data) > 0
	}) {
		t.Errorf("ev__get-tiny-image content = %#v; want a PNG image block", res.Content)
	}
	res = s.call(t, "ev__get-structured-content", map[string]any{"location": "Chicago"})
	sc, _ := json.Marshal(res.StructuredContent)
	if res.IsError || !strings.Contains(string(sc), `"humidity"`) {
		t.Errorf("ev__get-structured-content structuredContent = %s; want the server's", sc)
	}
	res = s.call(t, "ev__get-resource-links", map[string]any{"count": 2})
	var links []*mcp.ResourceLink
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l)
		}
	}
	if len(links) != 2 || !strings.HasPrefix(links[0].URI, "demo://") || links[0].Name == "" || links[0].Description == "" {
		t.Errorf("ev__get-resource-links links = %+v; want 2 with URI, name and description", links)
	}
}

// An MCP client with elicitation is asked; its answer applies, and the
// audit names it.
func TestPermissionByElicitation(t *testing.T) {
	f := start(t, nil)
	var mu sync.Mutex
	answer := "allow_once"
	var asked []*mcp.ElicitParams
	s := f.serve(mcpserve.Options{}, "elicit-client", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req.Params)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": answer}}, nil
		},
	})
	res := s.call(t, "ev__get-sum", map[string]any{"a": 2, "b": 3})
	if res.IsError || !strings.Contains(text(res), "5") {
		t.Fatalf("ev__get-sum allowed by elicitation = %+v (%q); want the sum", res, text(res))
	}
	mu.Lock()
	if len(asked) != 1 {
		t.Fatalf("elicitations = %d; want 1", len(asked))
	}
	msg := asked[0].Message
	schema, _ := json.Marshal(asked[0].RequestedSchema)
	mu.Unlock()
	if !strings.Contains(msg, "ev__get-sum") {
		t.Errorf("elicitation message %q does not name the tool", msg)
	}
	for _, v := range []string{"allow_once", "allow_always", "deny"} {
		if !strings.Contains(string(schema), `"`+v+`"`) {
			t.Errorf("elicitation schema %s lacks %s", schema, v)
		}
	}
	sid := f.sessionOf(f.dir)
	got := f.audit(sid, "mcp__ev__get-sum")
	if len(got) != 1 || got[0].GetOutcome() != "allow_once" || got[0].GetClientName() != "mcp:elicit-client" {
		t.Errorf("audit = %v; want one allow_once by mcp:elicit-client", got)
	}

	mu.Lock()
	answer = "deny"
	mu.Unlock()
	res = s.call(t, "ev__get-sum", map[string]any{"a": 4, "b": 5})
	if !res.IsError || !strings.Contains(text(res), "doesn't want to proceed") {
		t.Fatalf("ev__get-sum denied by elicitation = %+v (%q); want isError with tackle's denial", res, text(res))
	}
	if got := f.audit(sid, "mcp__ev__get-sum"); len(got) != 2 || got[0].GetOutcome() != "deny" {
		t.Errorf("audit after the denial = %v; want a deny on top", got)
	}

	// Always: the rule is saved, and the next call is not asked about.
	mu.Lock()
	answer = "allow_always"
	mu.Unlock()
	if res := s.call(t, "ev__get-sum", map[string]any{"a": 1, "b": 6}); res.IsError || !strings.Contains(text(res), "7") {
		t.Fatalf("ev__get-sum allowed always = %q", text(res))
	}
	if res := s.call(t, "ev__get-sum", map[string]any{"a": 1, "b": 7}); res.IsError || !strings.Contains(text(res), "8") {
		t.Fatalf("ev__get-sum after allow_always = %q", text(res))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 3 {
		t.Errorf("elicitations = %d; want 3 (none after allow_always)", len(asked))
	}
}

// A client of protocol 2025-06-18 gets the choices as enum and enumNames,
// and its answer applies.
func TestPermissionByElicitationOlderProtocol(t *testing.T) {
	f := start(t, nil)
	schemas := make(chan []byte, 1)
	s := f.serveVersion(mcpserve.Options{}, "older-client", &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			b, _ := json.Marshal(req.Params.RequestedSchema)
			schemas <- b
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "allow_once"}}, nil
		},
	}, "2025-06-18")
	if v := s.cs.InitializeResult().ProtocolVersion; v != "2025-06-18" {
		t.Fatalf("protocol version %s; want 2025-06-18", v)
	}
	res := s.call(t, "ev__get-sum", map[string]any{"a": 3, "b": 4})
	if res.IsError || !strings.Contains(text(res), "7") {
		t.Fatalf("ev__get-sum = %q", text(res))
	}
	if schema := <-schemas; !strings.Contains(string(schema), `"enumNames"`) {
		t.Errorf("elicitation schema for 2025-06-18 = %s; want enum and enumNames", schema)
	}
}

// An elicitation still open when another tackle client answers is
// withdrawn (the client's request is cancelled), and the call runs once,
// as the other client decided.
func TestPermissionAnsweredElsewhere(t *testing.T) {
	f := start(t, nil)
	opened := make(chan struct{}, 1)
	withdrawn := make(chan struct{}, 1)
	s := f.serve(mcpserve.Options{}, "slow-person", &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			opened <- struct{}{}
			select {
			case <-ctx.Done():
				withdrawn <- struct{}{}
			case <-time.After(testTimeout):
			}
			// A late answer: it must change nothing.
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "deny"}}, nil
		},
	})
	sid := f.sessionOf(f.dir)
	results := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := s.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "ev__get-sum", Arguments: map[string]any{"a": 20, "b": 22}})
		if err != nil {
			t.Errorf("calling ev__get-sum: %v", err)
		}
		results <- res
	}()
	select {
	case <-opened:
	case <-time.After(testTimeout):
		t.Fatalf("no elicitation\n%s", s.log)
	}
	pending, err := f.tc.ListPendingPermissions(ctxT(t), sid)
	if err != nil || len(pending) != 1 {
		t.Fatalf("pending permissions = %v, %v; want the call's", pending, err)
	}
	ans, err := f.tc.AnswerPermission(ctxT(t), &tacklev1.PermissionAnswer{SessionId: sid, RequestId: pending[0].GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE})
	if err != nil || !ans.GetAccepted() {
		t.Fatalf("answering from another client: %v, %v", ans, err)
	}
	select {
	case <-withdrawn:
	case <-time.After(testTimeout):
		t.Fatal("the elicitation was not withdrawn after another client answered")
	}
	res := <-results
	if res == nil || res.IsError || !strings.Contains(text(res), "42") {
		t.Fatalf("ev__get-sum answered elsewhere = %+v; want the sum", res)
	}
	got := f.audit(sid, "mcp__ev__get-sum")
	if len(got) != 1 || got[0].GetOutcome() != "allow_once" || got[0].GetClientName() != "other-client" {
		t.Errorf("audit = %v; want one allow_once by other-client", got)
	}
	if n := countResults(t, f, sid, "mcp__ev__get-sum"); n != 1 {
		t.Errorf("the session has %d results of mcp__ev__get-sum; want 1", n)
	}
}

// countResults counts the call_result events of tool in the session's log.
func countResults(t *testing.T, f *fixture, sid, tool string) int {
	t.Helper()
	st, err := f.tc.Attach(ctxT(t), tacklev1.Role_ROLE_OBSERVER)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snap, err := st.Subscribe(sid, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	last := snap.GetSession().GetLastSeq()
	n := 0
	for m, err := range st.Messages() {
		if err != nil {
			t.Fatal(err)
		}
		e := m.GetEvent()
		if e.GetType() == "call_result" && e.GetResult().GetName() == tool {
			n++
		}
		if e.GetSeq() >= last {
			break
		}
	}
	return n
}

// Without elicitation the prompt is left to other clients and the
// timeout: a denial with tackle's text; the client is told how to answer.
func TestPermissionWithoutElicitation(t *testing.T) {
	f := start(t, nil)
	logs := make(chan string, 16)
	s := f.serve(mcpserve.Options{PermissionTimeout: time.Second}, "plain-client", &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			msg, _ := req.Params.Data.(string)
			logs <- msg
		},
	})
	if err := s.cs.SetLoggingLevel(ctxT(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	res := s.call(t, "ev__get-sum", map[string]any{"a": 1, "b": 1})
	if !res.IsError || !strings.Contains(text(res), "nobody answered the permission request") {
		t.Fatalf("ev__get-sum unanswered = %+v (%q); want isError with tackle's text", res, text(res))
	}
	for {
		select {
		case msg := <-logs:
			if strings.Contains(msg, "waits for approval") && strings.Contains(msg, "tackle permissions answer") {
				return
			}
		case <-time.After(testTimeout):
			t.Fatal("no log message told how to answer the prompt")
		}
	}
}

// --tools all adds tackle's built-ins under their own names; a Read works.
func TestToolsAll(t *testing.T) {
	f := start(t, nil)
	path := filepath.Join(f.dir, "notes.txt")
	if err := os.WriteFile(path, []byte("first line\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := f.serve(mcpserve.Options{Tools: []string{"all"}}, "all-client", nil)
	tools := s.tools(t)
	for _, want := range []string{"Read", "Grep", "Bash", "Glob", "ev__echo"} {
		if tools[want] == nil {
			t.Errorf("--tools all lacks %s: %v", want, names(tools))
		}
	}
	if tools["ToolSearch"] != nil {
		t.Errorf("--tools all serves ToolSearch")
	}
	if a := tools["Read"].Annotations; a == nil || !a.ReadOnlyHint {
		t.Errorf("Read's annotations = %+v; want readOnlyHint", a)
	}
	res := s.call(t, "Read", map[string]any{"file_path": path})
	if res.IsError || !strings.Contains(text(res), "second line") {
		t.Fatalf("Read = %+v (%q); want the file", res, text(res))
	}
}

// Patterns pick tools by served or tackle name.
func TestToolsPatterns(t *testing.T) {
	f := start(t, nil)
	s := f.serve(mcpserve.Options{Tools: []string{"ev__get-*", "Glob"}}, "pattern-client", nil)
	got := names(s.tools(t))
	for _, n := range got {
		if n != "Glob" && !strings.HasPrefix(n, "ev__get-") {
			t.Errorf("pattern ev__get-*,Glob served %s", n)
		}
	}
	if !slices.Contains(got, "Glob") || !slices.Contains(got, "ev__get-sum") {
		t.Errorf("pattern ev__get-*,Glob served %v", got)
	}
	if _, err := mcpserve.New(&mcpserve.Options{Dial: f.dial, Tools: []string{"ev__[x"}}); err == nil {
		t.Errorf("New accepted the pattern ev__[x")
	}
}

// mcpChildren counts this process's children whose command line runs bin
// (the daemon is in this process: its stdio servers are its children).
func mcpChildren(t *testing.T, bin string) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	me := strconv.Itoa(os.Getpid())
	n := 0
	for _, e := range entries {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 2 || fields[1] != me || fields[0] == "Z" {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if slices.Contains(args[:min(len(args), 3)], bin) {
			n++
		}
	}
	return n
}

// Two serve processes, of two sessions (two directories), on one daemon:
// still one server-everything process, and both reach it. The second is
// the real command, `tackle mcp serve`, run through the CLI.
func TestTwoServesShareOneServerProcess(t *testing.T) {
	f := start(t, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__ev"}}})
	a := f.serve(mcpserve.Options{}, "window-1", nil)
	if res := a.call(t, "ev__echo", map[string]any{"message": "one"}); res.IsError {
		t.Fatalf("first serve's echo: %q", text(res))
	}

	other := t.TempDir()
	toR, toW := io.Pipe()
	fromR, fromW := io.Pipe()
	stderr := &logBuf{}
	ctx, cancel := context.WithCancel(context.Background())
	exited := make(chan int, 1)
	go func() {
		code := cli.Main(ctx, []string{"--socket", f.d.Socket(), "--no-autostart", "mcp", "serve", "--cwd", other, "--name", "tackle-two"},
			toR, fromW, stderr, []string{"HOME=" + f.d.Home(), "PATH=" + os.Getenv("PATH")})
		fromW.Close()
		exited <- code
	}()
	c := mcp.NewClient(&mcp.Implementation{Name: "window-2", Version: "1.0"}, nil)
	cs, err := c.Connect(ctxT(t), &mcp.IOTransport{Reader: fromR, Writer: toW}, nil)
	if err != nil {
		cancel()
		t.Fatalf("connecting to `tackle mcp serve`: %v\n%s", err, stderr)
	}
	t.Cleanup(func() {
		cs.Close()
		toW.Close()
		select {
		case code := <-exited:
			if code != 0 {
				t.Errorf("tackle mcp serve exited %d\n%s", code, stderr)
			}
		case <-time.After(testTimeout):
			t.Errorf("tackle mcp serve did not exit after its client closed")
		}
		cancel()
	})
	if info := cs.InitializeResult().ServerInfo; info == nil || info.Name != "tackle-two" {
		t.Errorf("serverInfo = %+v; want --name's tackle-two", info)
	}
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "ev__echo", Arguments: map[string]any{"message": "two"}})
	if err != nil || res.IsError || !strings.Contains(text(res), "two") {
		t.Fatalf("second serve's echo = %+v, %v\n%s", res, err, stderr)
	}
	if f.sessionOf(other) == f.sessionOf(f.dir) {
		t.Fatal("the two serves use one session")
	}
	if n := mcpChildren(t, f.bin); n != 1 {
		t.Errorf("%d mcp-server-everything processes for two serves; want 1", n)
	}
	servers, err := f.tc.Service().ListMcpServers(ctxT(t), &tacklev1.ListMcpServersRequest{All: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(servers.GetServers()) != 1 || len(servers.GetServers()[0].GetSessions()) != 2 {
		t.Errorf("servers = %v; want one ev used by both sessions", servers.GetServers())
	}
}

// Progress notifications of the underlying server reach the client's
// progressToken; cancelling the request cancels the call in tackle.
func TestProgressAndCancel(t *testing.T) {
	f := start(t, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__ev"}}})
	progress := make(chan *mcp.ProgressNotificationParams, 256)
	s := f.serve(mcpserve.Options{}, "progress-client", &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params
		},
	})
	params := &mcp.CallToolParams{Name: "ev__trigger-long-running-operation", Arguments: map[string]any{"duration": 0.4, "steps": 4}}
	params.SetProgressToken("tok-1")
	res, err := s.cs.CallTool(ctxT(t), params)
	if err != nil || res.IsError {
		t.Fatalf("long-running operation = %+v, %v", res, err)
	}
	// The first three at least: the daemon sometimes loses an MCP tool's
	// last progress notification, the one that comes just before its
	// result (it is missing from the session's log too).
	for i := range 3 {
		select {
		case p := <-progress:
			if p.ProgressToken != "tok-1" || p.Progress != float64(i+1) || p.Total != 4 {
				t.Errorf("progress %d = %+v; want %d/4 for tok-1", i, p, i+1)
			}
		case <-time.After(testTimeout):
			t.Fatalf("%d progress notifications; want 3 or 4", i)
		}
	}
	select {
	case p := <-progress:
		if p.ProgressToken != "tok-1" || p.Progress != 4 {
			t.Errorf("progress 3 = %+v; want 4/4 for tok-1", p)
		}
	default:
	}

	// Cancel a long one after its first progress.
	ctx, cancel := context.WithCancel(ctxT(t))
	params = &mcp.CallToolParams{Name: "ev__trigger-long-running-operation", Arguments: map[string]any{"duration": 30, "steps": 30}}
	params.SetProgressToken("tok-2")
	errs := make(chan error, 1)
	go func() {
		_, err := s.cs.CallTool(ctx, params)
		errs <- err
	}()
	for first := false; !first; {
		select {
		case p := <-progress:
			first = p.ProgressToken == "tok-2" // a late one of tok-1 is skipped
		case <-time.After(testTimeout):
			t.Fatal("no progress of the long call")
		}
	}
	cancel()
	if err := <-errs; err == nil {
		t.Fatal("a cancelled call returned no error")
	}
	sid := f.sessionOf(f.dir)
	if !waitCancelled(t, f, sid, "mcp__ev__trigger-long-running-operation") {
		t.Fatal("the call was not cancelled in tackle")
	}
}

// waitCancelled waits for a cancelled result of tool in the session.
func waitCancelled(t *testing.T, f *fixture, sid, tool string) bool {
	t.Helper()
	st, err := f.tc.Attach(ctxT(t), tacklev1.Role_ROLE_OBSERVER)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Subscribe(sid, 1, false); err != nil {
		t.Fatal(err)
	}
	for m, err := range st.Messages() {
		if err != nil {
			return false
		}
		if e := m.GetEvent(); e.GetType() == "call_result" && e.GetResult().GetName() == tool && e.GetResult().GetStatus() == "cancelled" {
			return true
		}
	}
	return false
}

// A server added to the settings while serving: notifications/tools/
// list_changed, and its tools are listed.
func TestToolListChanged(t *testing.T) {
	allow := map[string]any{"allow": []string{"mcp__ev"}}
	f := start(t, map[string]any{"permissions": allow})
	changed := make(chan struct{}, 16)
	s := f.serve(mcpserve.Options{}, "watching-client", &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	if s.tools(t)["ev2__echo"] != nil {
		t.Fatal("ev2 is served before it is configured")
	}
	// Give the serve its stream (it attaches once initialized) before the change.
	s.call(t, "ev__get-sum", map[string]any{"a": 1, "b": 2})
	f.writeSettings(map[string]any{"permissions": allow, "mcpServers": map[string]any{
		"ev":  map[string]any{"command": f.bin, "args": []string{"stdio"}},
		"ev2": map[string]any{"command": f.bin, "args": []string{"stdio"}, "env": map[string]string{"EV": "2"}},
	}})
	deadline := time.After(testTimeout)
	for {
		select {
		case <-changed:
			if s.tools(t)["ev2__echo"] != nil {
				return
			}
		case <-deadline:
			t.Fatalf("no list_changed with ev2's tools: %v\n%s", names(s.tools(t)), s.log)
		}
	}
}

// A server that failed, and one that needs approval, are told as such,
// with what to run; their tools are absent.
func TestFailedServerIsTold(t *testing.T) {
	f := start(t, map[string]any{"mcpServers": map[string]any{
		"broken": map[string]any{"command": filepath.Join(t.TempDir(), "no-such-server")},
	}})
	mcpJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"proj": map[string]any{"command": f.bin, "args": []string{"stdio"}}}})
	if err := os.WriteFile(filepath.Join(f.dir, ".mcp.json"), mcpJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := make(chan string, 16)
	s := f.serve(mcpserve.Options{}, "log-client", &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			msg, _ := req.Params.Data.(string)
			logs <- msg
		},
	})
	tools := s.tools(t)
	if tools["ev__echo"] == nil {
		t.Errorf("ev's tools are missing: %v", names(tools))
	}
	for n := range tools {
		if strings.HasPrefix(n, "broken__") || strings.HasPrefix(n, "proj__") {
			t.Errorf("%s is served; its server is not usable", n)
		}
	}
	if err := s.cs.SetLoggingLevel(ctxT(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	failed, approval := false, false
	for !failed || !approval {
		select {
		case msg := <-logs:
			switch {
			case strings.Contains(msg, "MCP server broken failed") && strings.Contains(msg, "tackle mcp reconnect broken"):
				failed = true
			case strings.Contains(msg, "MCP server proj") && strings.Contains(msg, "tackle mcp approve proj --cwd "+f.dir):
				approval = true
			}
		case <-time.After(testTimeout):
			t.Fatalf("log messages: failed server told %v, server needing approval told %v\n%s", failed, approval, s.log)
		}
	}
	if !strings.Contains(s.log.String(), "MCP server broken failed") {
		t.Errorf("stderr does not tell about the failed server:\n%s", s.log)
	}
}

// The servers' prompts are served as srv__prompt and rendered by the
// daemon; their resources are listed and read through the pipeline.
func TestPromptsAndResources(t *testing.T) {
	f := start(t, nil)
	s := f.serve(mcpserve.Options{}, "prompt-client", nil)
	var prompts []string
	for p, err := range s.cs.Prompts(ctxT(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	if !slices.Contains(prompts, "ev__simple-prompt") || !slices.Contains(prompts, "ev__args-prompt") {
		t.Fatalf("prompts = %v; want ev__simple-prompt and ev__args-prompt", prompts)
	}
	pr, err := s.cs.GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: "ev__args-prompt", Arguments: map[string]string{"city": "Lisbon"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(pr.Messages) == 0 {
		t.Fatal("the prompt has no messages")
	}
	if tc, ok := pr.Messages[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "Lisbon") {
		t.Errorf("ev__args-prompt = %+v; want the city in its text", pr.Messages[0].Content)
	}

	var uris []string
	for r, err := range s.cs.Resources(ctxT(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if len(uris) == 0 {
		t.Fatalf("no resources\n%s", s.log)
	}
	rr, err := s.cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: uris[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) == 0 || rr.Contents[0].Text == "" && len(rr.Contents[0].Blob) == 0 {
		t.Errorf("resource %s = %+v; want its contents", uris[0], rr.Contents)
	}
	var templates []string
	for rt, err := range s.cs.ResourceTemplates(ctxT(t), nil) {
		if err != nil {
			t.Fatal(err)
		}
		templates = append(templates, rt.URITemplate)
	}
	if !slices.ContainsFunc(templates, func(s string) bool { return strings.Contains(s, "{resourceId}") }) {
		t.Errorf("resource templates = %v; want the server's", templates)
	}
	if got := f.audit(f.sessionOf(f.dir), "ReadMcpResource"); len(got) != 1 {
		t.Errorf("audit of ReadMcpResource = %v; want the read, through the pipeline", got)
	}
}

// A daemon that restarts while the client stays: the call in flight ends
// with an error result, the next call attaches again (to the new daemon,
// once its servers are up) and runs.
func TestDaemonRestart(t *testing.T) {
	allow := map[string]any{"permissions": map[string]any{"allow": []string{"mcp__ev"}}}
	f := start(t, allow)
	var mu sync.Mutex
	socket := f.d.Socket()
	dial := func(ctx context.Context, name string) (*client.Client, error) {
		mu.Lock()
		sock := socket
		mu.Unlock()
		return client.Dial(ctx, &client.Options{Socket: sock, NoAutostart: true, ClientName: name})
	}
	s := f.serve(mcpserve.Options{Dial: dial}, "patient-client", nil)
	if res := s.call(t, "ev__echo", map[string]any{"message": "before"}); res.IsError {
		t.Fatalf("echo before the restart: %q", text(res))
	}
	// A call in flight when the daemon goes.
	inflight := make(chan *mcp.CallToolResult, 1)
	go func() {
		params := &mcp.CallToolParams{Name: "ev__trigger-long-running-operation", Arguments: map[string]any{"duration": 30, "steps": 30}}
		params.SetProgressToken("t")
		res, err := s.cs.CallTool(ctxT(t), params)
		if err != nil {
			t.Errorf("the call in flight: %v", err)
		}
		inflight <- res
	}()
	waitRunning(t, f, f.sessionOf(f.dir), "mcp__ev__trigger-long-running-operation")
	if err := f.d.Stop(); err != nil {
		t.Fatal(err)
	}
	if res := <-inflight; res == nil || !res.IsError {
		t.Errorf("the call in flight when the daemon stopped = %+v; want an error result", res)
	}

	d2 := daemontest.Start(t, daemontest.WithStateDir(f.d.StateDir()))
	f.d = d2
	f.writeSettings(map[string]any{
		"permissions": map[string]any{"allow": []string{"mcp__ev"}},
		"mcpServers":  map[string]any{"ev": map[string]any{"command": f.bin, "args": []string{"stdio"}}},
	})
	mu.Lock()
	socket = d2.Socket()
	mu.Unlock()
	res := s.call(t, "ev__echo", map[string]any{"message": "after"})
	if res.IsError || !strings.Contains(text(res), "after") {
		t.Fatalf("echo after the restart = %q\n%s", text(res), s.log)
	}
}

// waitRunning waits until a call of tool runs in the session.
func waitRunning(t *testing.T, f *fixture, sid, tool string) {
	t.Helper()
	st, err := f.tc.Attach(ctxT(t), tacklev1.Role_ROLE_OBSERVER)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	snap, err := st.Subscribe(sid, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, rc := range snap.GetRunningCalls() {
		if rc.GetTool() == tool && rc.GetState() == "running" {
			return
		}
	}
	for m, err := range st.Messages() {
		if err != nil {
			t.Fatal(err)
		}
		if e := m.GetEvent(); e.GetType() == "call_progress" && e.GetTool() == tool {
			return
		}
	}
}

// Every served MCP tool has its server's own title, description,
// annotations and output schema, as a client connected to the server
// itself sees them.
func TestToolMetadataUnchanged(t *testing.T) {
	f := start(t, nil)
	s := f.serve(mcpserve.Options{}, "test-client", nil)
	served := s.tools(t)

	ctx := t.Context()
	direct := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil)
	cs, err := direct.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(testpeers.Bin(t, "mcp-server-everything"), "stdio")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	withMeta := 0
	for _, want := range res.Tools {
		got := served["ev__"+want.Name]
		if got == nil {
			t.Errorf("%s is not served", want.Name)
			continue
		}
		if got.Title != want.Title || got.Description != want.Description {
			t.Errorf("%s: title %q, description %q; the server's: %q, %q", want.Name, got.Title, got.Description, want.Title, want.Description)
		}
		wa, _ := json.Marshal(want.Annotations)
		ga, _ := json.Marshal(got.Annotations)
		if string(wa) != string(ga) {
			t.Errorf("%s: annotations %s; the server's %s", want.Name, ga, wa)
		}
		wo, _ := json.Marshal(want.OutputSchema)
		gout, _ := json.Marshal(got.OutputSchema)
		if string(wo) != string(gout) {
			t.Errorf("%s: output schema %s; the server's %s", want.Name, gout, wo)
		}
		if want.Annotations != nil || want.OutputSchema != nil || want.Title != "" {
			withMeta++
		}
	}
	if withMeta == 0 {
		t.Fatal("server-everything sent no titles, annotations or output schemas: the test proves nothing")
	}
}

// rawServe runs Serve on pipes the test writes raw lines to and reads
// lines from, as a client that is not the go-sdk's would.
type rawServe struct {
	t    *testing.T
	in   *io.PipeWriter
	out  *bufio.Reader
	log  *logBuf
	done chan error
}

func (f *fixture) rawServe(opts mcpserve.Options) *rawServe {
	f.t.Helper()
	if opts.Dial == nil {
		opts.Dial = f.dial
	}
	if opts.Cwd == "" && opts.SessionID == "" {
		opts.Cwd = f.dir
	}
	r := &rawServe{t: f.t, log: &logBuf{}, done: make(chan error, 1)}
	opts.Log = r.log
	srv, err := mcpserve.New(&opts)
	if err != nil {
		f.t.Fatal(err)
	}
	toR, toW := io.Pipe()
	fromR, fromW := io.Pipe()
	r.in, r.out = toW, bufio.NewReader(fromR)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		err := srv.Serve(ctx, toR, fromW)
		fromW.Close()
		toR.Close()
		r.done <- err
	}()
	f.t.Cleanup(func() {
		toW.Close()
		go io.Copy(io.Discard, fromR) //nolint:errcheck // draining until Serve ends
		select {
		case <-r.done:
		case <-time.After(testTimeout):
			f.t.Errorf("Serve did not return after stdin closed\n%s", r.log)
		}
		cancel()
	})
	return r
}

func (r *rawServe) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("writing to serve: %v\n%s", err, r.log)
	}
}

// recv reads serve's next message that is not a notification.
func (r *rawServe) recv() map[string]any {
	r.t.Helper()
	type line struct {
		s   string
		err error
	}
	for {
		got := make(chan line, 1)
		go func() {
			s, err := r.out.ReadString('\n')
			got <- line{s, err}
		}()
		var l line
		select {
		case l = <-got:
		case <-time.After(testTimeout):
			r.t.Fatalf("serve answered nothing\n%s", r.log)
		}
		if l.err != nil {
			r.t.Fatalf("reading from serve: %v\n%s", l.err, r.log)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l.s), &m); err != nil {
			r.t.Fatalf("serve wrote %q: %v", l.s, err)
		}
		if _, ok := m["method"]; !ok || m["id"] != nil {
			return m
		}
	}
}

// initialize runs the MCP handshake on r.
func (r *rawServe) initialize() {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := r.recv(); m["result"] == nil {
		r.t.Fatalf("initialize answered %v", m)
	}
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// A line that is not JSON, a JSON value that is not a request, and a line
// over the maximum length are each answered with a JSON-RPC error (Parse
// error, Invalid Request), and the session goes on.
func TestInvalidLinesAreAnswered(t *testing.T) {
	f := start(t, nil)
	r := f.rawServe(mcpserve.Options{})
	r.initialize()
	big := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"x":"` + strings.Repeat("a", mcp.DefaultMaxLineLength) + `"}}`
	for _, tc := range []struct {
		line string
		code float64
		id   any
	}{
		{`{not json`, -32700, nil},
		{`42`, -32600, nil},
		{`{"jsonrpc":"2.0","id":7,"method":3}`, -32600, float64(7)},
		{big, -32600, float64(9)},
	} {
		r.send(tc.line)
		m := r.recv()
		e, _ := m["error"].(map[string]any)
		if id, ok := m["id"]; !ok || id != tc.id || e == nil || e["code"] != tc.code {
			t.Errorf("%.40s answered %.300v; want error %v with id %v", tc.line, m, tc.code, tc.id)
		}
	}
	r.send(`{"jsonrpc":"2.0","id":10,"method":"tools/list"}`)
	if m := r.recv(); m["id"] != float64(10) || m["result"] == nil {
		t.Fatalf("tools/list after the bad lines answered %.300v; want its result\n%s", m, r.log)
	}
	if !strings.Contains(r.log.String(), "{not json") {
		t.Errorf("stderr does not show the line that was answered with an error:\n%s", r.log)
	}
}

// failingWriter fails every write, as a stdout whose reader went away.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

// A session that ends because of an error, not the client closing stdin,
// makes `tackle mcp serve` exit non-zero with the error on stderr.
func TestServeExitsNonZeroOnError(t *testing.T) {
	f := start(t, nil)
	toR, toW := io.Pipe()
	stderr := &logBuf{}
	exited := make(chan int, 1)
	go func() {
		exited <- cli.Main(context.Background(), []string{"--socket", f.d.Socket(), "--no-autostart", "mcp", "serve", "--cwd", f.dir},
			toR, failingWriter{}, stderr, []string{"HOME=" + f.d.Home(), "PATH=" + os.Getenv("PATH")})
	}()
	io.WriteString(toW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`+"\n")
	defer toW.Close()
	select {
	case code := <-exited:
		if code == 0 || !strings.Contains(stderr.String(), "the MCP session ended") {
			t.Errorf("tackle mcp serve exited %d; want non-zero with the error on stderr:\n%s", code, stderr)
		}
	case <-time.After(testTimeout):
		t.Fatalf("tackle mcp serve did not exit after its stdout failed\n%s", stderr)
	}
}

// A session removed while it is served: serve notices at once (the daemon
// ends the subscription), tells the client and stderr, and ends with an
// error that says so.
func TestSessionRemoved(t *testing.T) {
	f := start(t, map[string]any{"permissions": map[string]any{"allow": []string{"mcp__ev"}}})
	logs := make(chan string, 16)
	s := f.serve(mcpserve.Options{}, "log-client", &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			msg, _ := req.Params.Data.(string)
			logs <- msg
		},
	})
	s.endOK.Store(true)
	if err := s.cs.SetLoggingLevel(ctxT(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	if res := s.call(t, "ev__echo", map[string]any{"message": "before"}); res.IsError {
		t.Fatalf("echo before the removal: %q", text(res))
	}
	sid := f.sessionOf(f.dir)
	if err := f.tc.DeleteSession(ctxT(t), sid); err != nil {
		t.Fatal(err)
	}
	for told := false; !told; {
		select {
		case msg := <-logs:
			told = strings.Contains(msg, "session "+sid+" was removed")
		case <-time.After(testTimeout):
			t.Fatalf("the client was not told that the session was removed\n%s", s.log)
		}
	}
	err, ended := s.end()
	if !ended || err == nil || !strings.Contains(err.Error(), "was removed") {
		t.Fatalf("Serve after the session was removed = %v (returned: %v); want an error saying so\n%s", err, ended, s.log)
	}
	if !strings.Contains(s.log.String(), "session "+sid+" was removed") {
		t.Errorf("stderr does not say the session was removed:\n%s", s.log)
	}
}

// An elicitation answer that fails the form's schema is a denial, at once
// (not after the permission timeout), whose result says why.
func TestPermissionAnswerNotUnderstood(t *testing.T) {
	f := start(t, nil)
	s := f.serve(mcpserve.Options{PermissionTimeout: 2 * testTimeout}, "confused-client", &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "maybe"}}, nil
		},
	})
	res := s.call(t, "ev__get-sum", map[string]any{"a": 2, "b": 3})
	if !res.IsError || !strings.Contains(text(res), "could not be understood") {
		t.Fatalf("ev__get-sum with an answer that fails the schema = %+v (%q); want a denial saying why", res, text(res))
	}
	if got := f.audit(f.sessionOf(f.dir), "mcp__ev__get-sum"); len(got) != 1 || got[0].GetOutcome() != "deny" {
		t.Errorf("audit = %v; want one deny", got)
	}
}

// prompts/get with bad arguments, or of an unknown prompt, is invalid
// params (-32602) with a message that says what the prompt takes.
func TestPromptErrors(t *testing.T) {
	f := start(t, nil)
	s := f.serve(mcpserve.Options{}, "prompt-client", nil)
	for _, tc := range []struct {
		name string
		args map[string]string
		want string
	}{
		{"ev__args-prompt", map[string]string{}, "missing required argument city; usage: args-prompt city=… [state=…]"},
		{"ev__simple-prompt", map[string]string{"bogus": "1"}, "unknown argument bogus; usage: simple-prompt (no arguments)"},
		{"ev__no-such-prompt", nil, "unknown prompt"},
	} {
		_, err := s.cs.GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: tc.name, Arguments: tc.args})
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, tc.want) || strings.Contains(we.Message, "invalid argument") {
			t.Errorf("prompts/get %s %v: %v; want invalid params (-32602) saying %q", tc.name, tc.args, err, tc.want)
		}
	}
}

// A --tools pattern that matches no tool is told to the client and on
// stderr, naming it; the rest is served.
func TestPatternMatchingNothingIsTold(t *testing.T) {
	f := start(t, nil)
	logs := make(chan string, 16)
	s := f.serve(mcpserve.Options{Tools: []string{"nomatch*", "ev__echo"}}, "pattern-client", &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			msg, _ := req.Params.Data.(string)
			logs <- msg
		},
	})
	if got := names(s.tools(t)); !slices.Equal(got, []string{"ev__echo"}) {
		t.Errorf("--tools nomatch*,ev__echo served %v; want ev__echo", got)
	}
	if err := s.cs.SetLoggingLevel(ctxT(t), &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	for told := false; !told; {
		select {
		case msg := <-logs:
			if strings.Contains(msg, `"ev__echo"`) {
				t.Errorf("told about a pattern that matches: %q", msg)
			}
			told = strings.Contains(msg, `--tools pattern "nomatch*" matches none`)
		case <-time.After(testTimeout):
			t.Fatalf("the client was not told that nomatch* matches nothing\n%s", s.log)
		}
	}
	if log := s.log.String(); !strings.Contains(log, `"nomatch*"`) || strings.Contains(log, `"ev__echo"`) {
		t.Errorf("stderr should name nomatch* only:\n%s", log)
	}
}

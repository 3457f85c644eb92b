package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestToolName(t *testing.T) {
	tests := []struct{ server, tool, want string }{
		{"everything", "echo", "mcp__everything__echo"},
		{"my.server", "get-sum", "mcp__my_server__get-sum"},
		{"a b", "x/y:z", "mcp__a_b__x_y_z"},
		{"srv", "résumé", "mcp__srv__r_sum_"},
		{"srv", "日本", "mcp__srv____"},
		{"", "", "mcp____"},
	}
	for _, tc := range tests {
		if got := ToolName(tc.server, tc.tool); got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestNewToolSpecAndAttributes(t *testing.T) {
	schema := map[string]any{
		"$schema":    "http://json-schema.org/draft-07/schema#",
		"type":       "object",
		"properties": map[string]any{"message": map[string]any{"type": "string"}},
		"required":   []any{"message"},
	}
	tests := []struct {
		name       string
		tool       *mcpsdk.Tool
		alwaysLoad bool
		opts       ToolOptions
		want       tool.Attributes
	}{
		{
			name: "no annotations",
			tool: &mcpsdk.Tool{Name: "echo", InputSchema: schema},
			opts: ToolOptions{MaxOutputTokens: 25000},
			want: tool.Attributes{Origin: "mcp:srv", Deferred: true, MaxResultChars: 100000, ExactResultLimit: true},
		},
		{
			name:       "read-only, always loaded",
			tool:       &mcpsdk.Tool{Name: "echo", InputSchema: schema, Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true}},
			alwaysLoad: true,
			opts:       ToolOptions{MaxOutputTokens: 1000},
			want:       tool.Attributes{ReadOnly: true, ConcurrencySafe: true, Origin: "mcp:srv", MaxResultChars: 4000, ExactResultLimit: true},
		},
		{
			name: "destructive, with a size hint",
			tool: &mcpsdk.Tool{Name: "echo", InputSchema: schema,
				Annotations: &mcpsdk.ToolAnnotations{DestructiveHint: ptr(true)},
				Meta:        mcpsdk.Meta{MetaMaxResultSize: float64(200000)}},
			opts: ToolOptions{MaxOutputTokens: 25000},
			want: tool.Attributes{Destructive: true, Origin: "mcp:srv", Deferred: true, MaxResultChars: 200000, ExactResultLimit: true},
		},
		{
			name: "destructiveHint false",
			tool: &mcpsdk.Tool{Name: "echo", InputSchema: schema, Annotations: &mcpsdk.ToolAnnotations{DestructiveHint: ptr(false)}},
			opts: ToolOptions{MaxOutputTokens: 25000},
			want: tool.Attributes{Origin: "mcp:srv", Deferred: true, MaxResultChars: 100000, ExactResultLimit: true},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mt := newTool(nil, "s1", "srv", tc.alwaysLoad, tc.tool, tc.opts)
			if diff := cmp.Diff(tc.want, mt.Attributes(nil)); diff != "" {
				t.Errorf("Attributes (-want +got):\n%s", diff)
			}
			acc, err := mt.CheckPermission(t.Context(), &tool.Call{})
			if err != nil {
				t.Fatal(err)
			}
			// Hints are untrusted: every MCP tool is external, read-only or not.
			want := tool.AccessExternal
			if acc.Kind != want || acc.InsideWorkingDirs || acc.Specifier != "" {
				t.Errorf("CheckPermission = %+v, want Kind %s and nothing else", acc, want)
			}
			spec := mt.Spec()
			if spec.Name != "mcp__srv__echo" {
				t.Errorf("Name = %q", spec.Name)
			}
			var got map[string]any
			if err := json.Unmarshal(spec.InputSchema, &got); err != nil {
				t.Fatalf("InputSchema %s: %v", spec.InputSchema, err)
			}
			if diff := cmp.Diff(schema, got); diff != "" {
				t.Errorf("InputSchema is not the server's (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInputSchema(t *testing.T) {
	if got := string(inputSchema(nil)); got != `{"type":"object"}` {
		t.Errorf("inputSchema(nil) = %s", got)
	}
	raw := json.RawMessage(`{"type": "object", "properties": {}}`)
	if got := inputSchema(raw); !bytes.Equal(got, raw) {
		t.Errorf("inputSchema(raw) = %s, want it verbatim", got)
	}
}

// compile compiles a schema the way the pipeline does (daemon/dispatch:
// jsonschema/v6, no loader for external references).
func compile(t *testing.T, name string, schema json.RawMessage) (*jsonschema.Schema, error) {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refuseLoader{})
	loc := "tackle:///tools/" + name + ".json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) { return nil, fmt.Errorf("refusing to load %s", u) }

// TestDraft07Schema checks that a zod-style draft-07 schema, as a server
// sends it and as the MCP tool hands it on, compiles and validates with
// draft-07 semantics in the pipeline's validator without loading anything.
func TestDraft07Schema(t *testing.T) {
	var wire any
	if err := json.Unmarshal([]byte(`{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type": "object",
		"properties": {"a": {"type": "number"}, "b": {"type": "number"}, "t": {"type": "array", "items": [{"type": "string"}]}},
		"required": ["a", "b"],
		"additionalProperties": false
	}`), &wire); err != nil {
		t.Fatal(err)
	}
	mt := newTool(nil, "s", "everything", false, &mcpsdk.Tool{Name: "get-sum", InputSchema: wire}, ToolOptions{MaxOutputTokens: 1})
	sch, err := compile(t, mt.Spec().Name, mt.Spec().InputSchema)
	if err != nil {
		t.Fatalf("compiling a draft-07 schema: %v", err)
	}
	for in, ok := range map[string]bool{
		`{"a": 1, "b": 2}`:                true,
		`{"a": 1}`:                        false,
		`{"a": 1, "b": "2"}`:              false,
		`{"a": 1, "b": 2, "c": 3}`:        false,
		`{"a": 1, "b": 2, "t": ["x", 5]}`: true, // draft-07 tuple items: only the first is checked
		`{"a": 1, "b": 2, "t": [5, "x"]}`: false,
	} {
		doc, _ := jsonschema.UnmarshalJSON(strings.NewReader(in))
		if err := sch.Validate(doc); (err == nil) != ok {
			t.Errorf("validating %s: %v, want ok=%v", in, err, ok)
		}
	}
}

func TestCutDescription(t *testing.T) {
	short := "Echoes back the input"
	if got := cutDescription(short); got != short {
		t.Errorf("cutDescription(short) = %q", got)
	}
	long := strings.Repeat("é", 3000) // 6000 bytes
	got := cutDescription(long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, "[description cut at 2 KB]") || len(got) > maxDescriptionBytes+40 {
		t.Errorf("cutDescription(long) = %d bytes, valid UTF-8 %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-30:])
	}
}

func TestProgressText(t *testing.T) {
	tests := []struct {
		p    *mcpsdk.ProgressNotificationParams
		want string
	}{
		{&mcpsdk.ProgressNotificationParams{Progress: 2, Total: 5}, "2/5"},
		{&mcpsdk.ProgressNotificationParams{Progress: 2, Total: 5, Message: "step two"}, "2/5 step two"},
		{&mcpsdk.ProgressNotificationParams{Progress: 0.5}, "0.5"},
		{&mcpsdk.ProgressNotificationParams{Message: "starting"}, "starting"},
		{nil, ""},
	}
	for _, tc := range tests {
		if got := ProgressText(tc.p); got != tc.want {
			t.Errorf("ProgressText(%+v) = %q, want %q", tc.p, got, tc.want)
		}
	}
}

func TestArguments(t *testing.T) {
	for in, want := range map[string]string{"": "{}", "  ": "{}", `{"a":1}`: `{"a":1}`} {
		if got := string(arguments(json.RawMessage(in))); got != want {
			t.Errorf("arguments(%q) = %s, want %s", in, got, want)
		}
	}
}

// testEnv is the session a test call runs in.
type testEnv struct{ id, dir, out string }

func (e *testEnv) SessionID() string                       { return e.id }
func (e *testEnv) Cwd() string                             { return e.dir }
func (e *testEnv) WorkingDirs() []string                   { return []string{e.dir} }
func (e *testEnv) Environ() []string                       { return nil }
func (e *testEnv) FileState(string) (tool.FileState, bool) { return tool.FileState{}, false }
func (e *testEnv) OutputDir() string                       { return e.out }

// session makes session id use servers and waits until each is connected
// with its tools listed.
func (h *harness) session(id string, servers ...config.MCPServer) *testEnv {
	h.t.Helper()
	env := &testEnv{id: id, dir: h.t.TempDir(), out: filepath.Join(h.t.TempDir(), "out")}
	h.m.Use(id, servers, []string{env.dir})
	for _, s := range servers {
		c, ok := h.m.Conn(id, s.Name)
		if !ok {
			h.t.Fatalf("Conn(%s, %s) not found after Use", id, s.Name)
		}
		h.wait(s.Name+" connected with tools", func() bool {
			return c.Status().State == Connected && len(c.Tools()) > 0
		})
	}
	return env
}

// run looks a tool up by name in env's session and runs it with input.
func (h *harness) run(ctx context.Context, env *testEnv, name, input string, progress tool.Progress) (*tool.Result, error) {
	h.t.Helper()
	tl, ok := h.m.Lookup(env.id, name, nil)
	if !ok {
		h.t.Fatalf("Lookup(%s, %s) found nothing", env.id, name)
	}
	return tl.Run(ctx, &tool.Call{ID: "toolu_" + strings.ReplaceAll(name, "-", "_"), Name: name, Input: json.RawMessage(input), Env: env}, progress)
}

func textOf(r *tool.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// goServer is an in-process Streamable HTTP MCP server built on the go-sdk,
// for what server-everything cannot show: blocking until cancelled,
// recording notifications/cancelled, progress in lock-step, colliding names.
type goServer struct {
	url       string
	started   chan string                  // a "block" call started (its argument)
	cancelled chan *mcpsdk.CancelledParams // notifications/cancelled received
	stepSeen  chan struct{}                // the test saw the first progress step
}

func newGoServer(t *testing.T) *goServer {
	t.Helper()
	g := &goServer{started: make(chan string, 4), cancelled: make(chan *mcpsdk.CancelledParams, 4), stepSeen: make(chan struct{})}
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "goserver", Version: "1"}, nil)
	s.AddReceivingMiddleware(func(next mcpsdk.MethodHandler) mcpsdk.MethodHandler {
		return func(ctx context.Context, method string, req mcpsdk.Request) (mcpsdk.Result, error) {
			if method == "notifications/cancelled" {
				if p, ok := req.GetParams().(*mcpsdk.CancelledParams); ok {
					g.cancelled <- p
				}
			}
			return next(ctx, method, req)
		}
	})
	obj := json.RawMessage(`{"type":"object"}`)
	s.AddTool(&mcpsdk.Tool{Name: "block", Description: "Blocks until cancelled.", InputSchema: obj},
		func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			g.started <- string(req.Params.Arguments)
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.AddTool(&mcpsdk.Tool{Name: "progress", Description: "Reports two steps.", InputSchema: obj},
		func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			tok := req.Params.GetProgressToken()
			if tok == nil {
				return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "no progress token"}}}, nil
			}
			if err := req.Session.NotifyProgress(ctx, &mcpsdk.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Total: 2, Message: "step one"}); err != nil {
				return nil, err
			}
			select { // lock-step: the client has seen step one
			case <-g.stepSeen:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: fmt.Sprintf("done, token %v", tok)}}}, nil
		})
	s.AddTool(&mcpsdk.Tool{Name: "big", Description: "Returns 60,000 characters.", InputSchema: obj},
		func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: strings.Repeat("x", 60000)}}}, nil
		})
	for _, n := range []string{"a.b", "a_b", "a:b"} {
		s.AddTool(&mcpsdk.Tool{Name: n, Description: "Tool " + n, InputSchema: obj},
			func(context.Context, *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
				return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "I am " + n}}}, nil
			})
	}
	ts := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return s }, nil))
	t.Cleanup(func() {
		// After the manager closed: sessions a client left without a
		// DELETE stay open on the server; close them, then the listener.
		for ss := range s.Sessions() {
			ss.Close()
		}
		ts.Close()
	})
	g.url = ts.URL
	return g
}

func (g *goServer) config(name string, timeout time.Duration) config.MCPServer {
	return config.MCPServer{Name: name, Scope: "user", Source: "test", Type: "http", URL: g.url, Timeout: timeout}
}

func TestEverythingToolsInThePool(t *testing.T) {
	h := newHarness(t, nil)
	srv := everything(t, "everything")
	srv.AlwaysLoad = true
	env := h.session("s1", srv)
	names := map[string]tool.Tool{}
	for _, tl := range h.m.Tools(env.id, nil) {
		names[tl.Spec().Name] = tl
	}
	for _, want := range []string{"mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__get-tiny-image",
		"mcp__everything__trigger-long-running-operation", "mcp__everything__toggle-simulated-logging"} {
		if names[want] == nil {
			t.Errorf("Tools has no %s; it has %v", want, slices.Sorted(maps.Keys(names)))
		}
	}
	echo := names["mcp__everything__echo"]
	if echo == nil {
		t.FailNow()
	}
	a := echo.Attributes(nil)
	if !a.ReadOnly || !a.ConcurrencySafe || a.Destructive || a.Deferred || a.Origin != "mcp:everything" || a.MaxResultChars != 100000 || !a.ExactResultLimit {
		t.Errorf("echo attributes = %+v", a)
	}
	if a := names["mcp__everything__toggle-simulated-logging"].Attributes(nil); a.ReadOnly || a.ConcurrencySafe {
		t.Errorf("toggle-simulated-logging attributes = %+v, want not read-only", a)
	}
	if d := echo.Spec().Description; !strings.Contains(strings.ToLower(d), "echo") {
		t.Errorf("echo description = %q", d)
	}
	// Every schema the server sends compiles in the pipeline's validator.
	for n, tl := range names {
		if _, err := compile(t, n, tl.Spec().InputSchema); err != nil {
			t.Errorf("schema of %s does not compile: %v\n%s", n, err, tl.Spec().InputSchema)
		}
	}
	if _, ok := h.m.Lookup(env.id, "mcp__everything__nope", nil); ok {
		t.Error("Lookup found a tool the server does not have")
	}
	if _, ok := h.m.Lookup("other-session", "mcp__everything__echo", nil); ok {
		t.Error("Lookup found a tool of a server the session does not use")
	}
	if got := h.m.Tools("other-session", nil); len(got) != 0 {
		t.Errorf("Tools of a session without servers = %d tools", len(got))
	}
}

func TestEverythingCalls(t *testing.T) {
	h := newHarness(t, nil)
	env := h.session("s1", everything(t, "everything"))
	tests := []struct {
		tool, input string
		check       func(t *testing.T, r *tool.Result)
	}{
		{"echo", `{"message":"hello MCP"}`, func(t *testing.T, r *tool.Result) {
			if r.IsError || textOf(r) != "Echo: hello MCP" {
				t.Errorf("echo = %+v", r)
			}
		}},
		{"get-sum", `{"a": 2, "b": 40}`, func(t *testing.T, r *tool.Result) {
			if r.IsError || !strings.Contains(textOf(r), "42") {
				t.Errorf("get-sum = %+v", r)
			}
		}},
		{"get-tiny-image", `{}`, func(t *testing.T, r *tool.Result) {
			var img *tool.Content
			for i, c := range r.Content {
				if c.Type == "image" {
					img = &r.Content[i]
				}
			}
			if img == nil || img.MimeType != "image/png" || !bytes.HasPrefix(img.Data, []byte("\x89PNG")) {
				t.Errorf("get-tiny-image = %+v, want a PNG image block", r.Content)
			}
		}},
		{"get-resource-links", `{"count": 2}`, func(t *testing.T, r *tool.Result) {
			n := 0
			for _, c := range r.Content {
				if c.Type == "resource_link" {
					n++
					if c.URI == "" || c.Text == "" {
						t.Errorf("resource link without URI or text: %+v", c)
					}
				}
			}
			if n != 2 {
				t.Errorf("get-resource-links gave %d links, want 2: %+v", n, r.Content)
			}
		}},
		{"get-resource-reference", `{"resourceType": "Blob", "resourceId": 3}`, func(t *testing.T, r *tool.Result) {
			for _, c := range r.Content {
				if c.Type == "resource" && c.URI != "" && len(c.Data) > 0 && c.Text == "" {
					return
				}
			}
			t.Errorf("get-resource-reference Blob = %+v, want a resource block with bytes", r.Content)
		}},
		{"get-resource-reference", `{"resourceType": "Text", "resourceId": 2}`, func(t *testing.T, r *tool.Result) {
			for _, c := range r.Content {
				if c.Type == "resource" && c.URI != "" && c.Text != "" {
					return
				}
			}
			t.Errorf("get-resource-reference Text = %+v, want a resource block with text", r.Content)
		}},
		{"get-structured-content", `{"location": "Chicago"}`, func(t *testing.T, r *tool.Result) {
			var v map[string]any
			if err := json.Unmarshal(r.Structured, &v); err != nil || v["temperature"] == nil {
				t.Errorf("get-structured-content Structured = %s (%v), want an object with temperature", r.Structured, err)
			}
			if len(r.Content) == 0 {
				t.Error("get-structured-content has no content")
			}
		}},
		{"get-annotated-message", `{"messageType": "error", "includeImage": true}`, func(t *testing.T, r *tool.Result) {
			types := map[string]bool{}
			for _, c := range r.Content {
				types[c.Type] = true
			}
			if !types["text"] || !types["image"] {
				t.Errorf("get-annotated-message = %+v, want text and image", r.Content)
			}
		}},
		{"get-sum", `{"a": "two", "b": 1}`, func(t *testing.T, r *tool.Result) {
			// The pipeline validates first; called directly, the server's own
			// validation answers, as an error result naming the problem.
			if !r.IsError || textOf(r) == "" {
				t.Errorf("get-sum with a string = %+v, want an error result", r)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.tool, func(t *testing.T) {
			r, err := h.run(testCtx(t), env, "mcp__everything__"+tc.tool, tc.input, nil)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			tc.check(t, r)
		})
	}
}

func TestToolOfGoneServer(t *testing.T) {
	h := newHarness(t, nil)
	env := h.session("s1", everything(t, "everything"))
	tl, ok := h.m.Lookup(env.id, "mcp__everything__echo", nil)
	if !ok {
		t.Fatal("no echo")
	}
	h.m.Use(env.id, nil, []string{env.dir}) // the session drops the server
	r, err := tl.Run(testCtx(t), &tool.Call{ID: "x", Input: json.RawMessage(`{"message":"hi"}`), Env: env}, nil)
	if err != nil || !r.IsError || !strings.Contains(textOf(r), "no longer configured") {
		t.Errorf("Run after the server left = %+v, %v", r, err)
	}
}

// TestUnknownToolOnServer calls a tool the server does not have (as after
// a tools/list_changed that removed it): the go-sdk server answers with a
// protocol error, which becomes an error result naming server and tool.
func TestUnknownToolOnServer(t *testing.T) {
	g := newGoServer(t)
	h := newHarness(t, nil)
	env := h.session("s1", g.config("go", 0))
	c, _ := h.m.Conn(env.id, "go")
	mt := newTool(h.m, env.id, "go", false, &mcpsdk.Tool{Name: "no-such-tool"}, ToolOptions{MaxOutputTokens: 100})
	r, err := mt.Run(testCtx(t), &tool.Call{ID: "x", Input: json.RawMessage(`{}`), Env: env}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(textOf(r), "MCP server go: tool no-such-tool failed") {
		t.Errorf("unknown tool = %+v", r)
	}
	if st := c.Status(); st.State != Connected {
		t.Errorf("after an unknown tool the server is %s", st.State)
	}
}

func TestEverythingProgress(t *testing.T) {
	h := newHarness(t, nil)
	env := h.session("s1", everything(t, "everything"))
	var mu sync.Mutex
	var got []string
	r, err := h.run(testCtx(t), env, "mcp__everything__trigger-long-running-operation", `{"duration": 0.3, "steps": 3}`, func(s string) {
		mu.Lock()
		got = append(got, s)
		mu.Unlock()
	})
	if err != nil || r.IsError {
		t.Fatalf("Run = %+v, %v", r, err)
	}
	mu.Lock()
	defer mu.Unlock()
	// The last notification may arrive after the result (notifications and
	// the response travel separately in the client): steps 1 and 2 cannot.
	// Each is a line, so that progress joined into one event stays apart.
	if len(got) < 2 || got[0] != "1/3\n" || got[1] != "2/3\n" {
		t.Errorf("progress = %q, want 1/3, 2/3[, 3/3]", got)
	}
}

func TestProgressTokenIsCallID(t *testing.T) {
	g := newGoServer(t)
	h := newHarness(t, nil)
	env := h.session("s1", g.config("go", 0))
	var once sync.Once
	var got []string
	r, err := h.run(testCtx(t), env, "mcp__go__progress", `{}`, func(s string) {
		got = append(got, s) // one step only: no other goroutine writes
		once.Do(func() { close(g.stepSeen) })
	})
	if err != nil || r.IsError {
		t.Fatalf("Run = %+v, %v", r, err)
	}
	if want := []string{"1/2 step one\n"}; !slices.Equal(got, want) {
		t.Errorf("progress = %q, want %q", got, want)
	}
	if !strings.Contains(textOf(r), "token toolu_mcp__go__progress") {
		t.Errorf("result %q: the server did not get the call ID as progress token", textOf(r))
	}
}

func TestTimeoutSendsCancelled(t *testing.T) {
	g := newGoServer(t)
	h := newHarness(t, nil)
	env := h.session("s1", g.config("slow", 50*time.Millisecond))
	r, err := h.run(testCtx(t), env, "mcp__slow__block", `{"n": 1}`, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := "MCP server slow: tool block timed out after 50ms"; !r.IsError || !strings.Contains(textOf(r), want) {
		t.Errorf("timed-out call = %+v, want an error result with %q", r, want)
	}
	waitCancelled(t, g)

	// ToolOptions.DefaultTimeout applies to a server without its own.
	env2 := h.session("s2", g.config("slow2", 0))
	tl, _ := h.m.Lookup(env2.id, "mcp__slow2__block", &ToolOptions{DefaultTimeout: 20 * time.Millisecond})
	r, err = tl.Run(testCtx(t), &tool.Call{ID: "y", Input: json.RawMessage(`{}`), Env: env2}, nil)
	if err != nil || !strings.Contains(textOf(r), "timed out after 20ms") {
		t.Errorf("default timeout: %+v, %v", r, err)
	}
	waitCancelled(t, g)
}

func waitCancelled(t *testing.T, g *goServer) *mcpsdk.CancelledParams {
	t.Helper()
	select {
	case p := <-g.cancelled:
		if p.RequestID == nil {
			t.Errorf("notifications/cancelled without a request ID: %+v", p)
		}
		return p
	case <-testCtx(t).Done():
		t.Fatal("the server never got notifications/cancelled")
	}
	return nil
}

func TestCancelSendsCancelled(t *testing.T) {
	g := newGoServer(t)
	h := newHarness(t, nil)
	env := h.session("s1", g.config("go", 0))
	ctx, cancel := context.WithCancel(testCtx(t))
	type out struct {
		r   *tool.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := h.run(ctx, env, "mcp__go__block", `{"n": 2}`, nil)
		done <- out{r, err}
	}()
	select {
	case <-g.started:
	case <-testCtx(t).Done():
		t.Fatal("the call never reached the server")
	}
	cancel()
	o := <-done
	if !errors.Is(o.err, context.Canceled) {
		t.Errorf("cancelled Run = %+v, %v; want context.Canceled", o.r, o.err)
	}
	p := waitCancelled(t, g)
	if !strings.Contains(p.Reason, "canceled") {
		t.Errorf("cancel reason = %q", p.Reason)
	}
	// The connection is still good.
	c, _ := h.m.Conn(env.id, "go")
	if st := c.Status(); st.State != Connected {
		t.Errorf("after a cancel the server is %s", st.State)
	}
}

func TestLargeResultWarning(t *testing.T) {
	g := newGoServer(t)
	h := newHarness(t, nil)
	env := h.session("s1", g.config("go", 0))
	r, err := h.run(testCtx(t), env, "mcp__go__big", `{}`, nil)
	if err != nil || r.IsError || len(textOf(r)) != 60000 {
		t.Fatalf("big = %d chars, %v", len(textOf(r)), err)
	}
	if !strings.Contains(r.Warning, "~15,000 tokens") {
		t.Errorf("Warning = %q", r.Warning)
	}
	r, _ = h.run(testCtx(t), env, "mcp__go__a_b", `{}`, nil)
	if r.Warning != "" {
		t.Errorf("small result has a warning: %q", r.Warning)
	}
}

func TestNameCollisionKeepsFirst(t *testing.T) {
	g := newGoServer(t)
	h := newHarness(t, nil)
	env := h.session("s1", g.config("go", 0))
	var names []string
	for _, tl := range h.m.Tools(env.id, nil) {
		names = append(names, tl.Spec().Name)
	}
	n := 0
	for _, name := range names {
		if name == "mcp__go__a_b" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("mcp__go__a_b appears %d times in %v", n, names)
	}
	// The first of the server's list is kept, and calls reach it.
	c, _ := h.m.Conn(env.id, "go")
	var first string
	for _, tl := range c.Tools() {
		if Sanitize(tl.Name) == "a_b" {
			first = tl.Name
			break
		}
	}
	r, err := h.run(testCtx(t), env, "mcp__go__a_b", `{}`, nil)
	if err != nil || textOf(r) != "I am "+first {
		t.Errorf("mcp__go__a_b ran %q (%v), want the first listed, %s", textOf(r), err, first)
	}
}

// TestServerDiesMidCall kills server-everything while its tool runs: the
// call ends with an error result naming the server and the exit status.
func TestServerDiesMidCall(t *testing.T) {
	h := newHarness(t, &Options{Backoff: 20 * time.Millisecond})
	env := h.session("s1", everything(t, "victim"))
	c, _ := h.m.Conn(env.id, "victim")
	pid := c.Status().PID
	started := make(chan struct{})
	var once sync.Once
	done := make(chan *tool.Result, 1)
	go func() {
		r, err := h.run(testCtx(t), env, "mcp__victim__trigger-long-running-operation", `{"duration": 60, "steps": 600}`,
			func(string) { once.Do(func() { close(started) }) })
		if err != nil {
			r = tool.ErrorResult("returned error: " + err.Error())
		}
		done <- r
	}()
	select {
	case <-started:
	case <-testCtx(t).Done():
		t.Fatal("no progress from the slow tool")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if want := `MCP server "victim" exited (signal: killed)`; !r.IsError || !strings.Contains(textOf(r), want) || !strings.Contains(textOf(r), "trigger-long-running-operation") {
		t.Errorf("call of a killed server = %q, want an error result with %q and the tool", textOf(r), want)
	}
}

// TestServerNameCollision: two servers whose names sanitise alike ("g.x"
// and "g_x" both give mcp__g_x__…): the first by name keeps the tools.
func TestServerNameCollision(t *testing.T) {
	g := newGoServer(t)
	h := newHarness(t, nil)
	env := h.session("s1", g.config("g.x", 0), g.config("g_x", 0))
	n := 0
	for _, tl := range h.m.Tools(env.id, nil) {
		if tl.Spec().Name == "mcp__g_x__big" {
			n++
			if o := tl.Attributes(nil).Origin; o != "mcp:g.x" {
				t.Errorf("kept tool is from %s, want mcp:g.x", o)
			}
		}
	}
	if n != 1 {
		t.Errorf("mcp__g_x__big appears %d times", n)
	}
	tl, ok := h.m.Lookup(env.id, "mcp__g_x__big", nil)
	if !ok || tl.Attributes(nil).Origin != "mcp:g.x" {
		t.Errorf("Lookup = %v, %v; want the tool of g.x", tl, ok)
	}
}

// TestCutSanitized: the name matching of Lookup agrees with Sanitize for
// names with every kind of character (ASCII kept and replaced, multi-byte
// runes, invalid UTF-8), as prefixes and whole.
func TestCutSanitized(t *testing.T) {
	names := []string{"", "a", "echo", "get-file_v2", "a.b", "a b", "ü", "日本", "x\xffy", "\xe6\x97", "srv__tool", "_-_"}
	for _, raw := range names {
		san := Sanitize(raw)
		for _, s := range []string{san, san + "__x", san[:max(0, len(san)-1)], "q" + san, san + "ü"} {
			rest, ok := cutSanitized(s, raw)
			wantRest, wantOK := strings.CutPrefix(s, san)
			if ok != wantOK || ok && rest != wantRest {
				t.Errorf("cutSanitized(%q, %q) = %q, %v; Sanitize gives %q: want %q, %v", s, raw, rest, ok, san, wantRest, wantOK)
			}
			if got, want := isSanitized(s, raw), s == san; got != want {
				t.Errorf("isSanitized(%q, %q) = %v, want %v", s, raw, got, want)
			}
		}
	}
}

package toolsearch_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/toolsearch"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// daemonSide is what the daemon gives the tool: each session's deferred
// tools, the loaded names it records, and server states.
type daemonSide struct {
	mu      sync.Mutex
	tools   map[string][]tool.Tool // by session
	loaded  map[string][]string    // by session, in Load order
	loads   [][]string             // every Load call's names
	pending []string
	failed  []string
}

func (d *daemonSide) options() *toolsearch.Options {
	return &toolsearch.Options{
		Deferred: func(env tool.Env) []tool.Tool {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.tools[env.SessionID()]
		},
		Load: func(env tool.Env, names []string) {
			d.mu.Lock()
			defer d.mu.Unlock()
			d.loads = append(d.loads, slices.Clone(names))
			for _, n := range names {
				if !slices.Contains(d.loaded[env.SessionID()], n) {
					d.loaded[env.SessionID()] = append(d.loaded[env.SessionID()], n)
				}
			}
		},
		Servers: func(tool.Env) ([]string, []string) { return d.pending, d.failed },
	}
}

func newSide(sessions map[string][]tool.Tool) *daemonSide {
	return &daemonSide{tools: sessions, loaded: map[string][]string{}}
}

func call(t *testing.T, ts tool.Tool, session string, input any) tooltest.Outcome {
	t.Helper()
	env := &tooltest.Env{ID: session}
	return tooltest.Call(context.Background(), t, map[string]tool.Tool{toolsearch.Name: ts}, env, toolsearch.Name, input, nil)
}

func decodeResult(t *testing.T, o tooltest.Outcome) toolsearch.Result {
	t.Helper()
	if o.Failed() {
		t.Fatalf("call failed: %s", o.Text())
	}
	var r toolsearch.Result
	if err := json.Unmarshal([]byte(o.Text()), &r); err != nil {
		t.Fatalf("result is not JSON: %v\n%s", err, o.Text())
	}
	if !json.Valid(o.Res.Structured) || string(o.Res.Structured) != o.Text() {
		t.Errorf("Structured differs from the text:\n%s\n%s", o.Res.Structured, o.Text())
	}
	return r
}

func TestToolSelectLoadsAndReturnsSchemas(t *testing.T) {
	tools := corpus(1)
	side := newSide(map[string][]tool.Tool{"s1": tools})
	ts := toolsearch.NewTool(side.options())
	o := call(t, ts, "s1", map[string]any{"query": "select:mcp__github__create_issue,nope,mcp__postgres__query"})
	r := decodeResult(t, o)

	want := []string{"mcp__github__create_issue", "mcp__postgres__query"}
	if diff := cmp.Diff(want, r.Matches); diff != "" {
		t.Errorf("matches (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]string{want}, side.loads); diff != "" {
		t.Errorf("Load calls (-want +got):\n%s", diff)
	}
	if r.TotalDeferredTools != len(tools) || r.Query != "select:mcp__github__create_issue,nope,mcp__postgres__query" {
		t.Errorf("total %d query %q", r.TotalDeferredTools, r.Query)
	}
	if r.PendingMCPServers != nil || r.FailedMCPServers != nil || strings.Contains(o.Text(), "pending_mcp_servers") {
		t.Errorf("server lists should be left out when empty: %s", o.Text())
	}
	byName := map[string]tool.Spec{}
	for _, tl := range tools {
		byName[tl.Spec().Name] = tl.Spec()
	}
	if len(r.Tools) != 2 {
		t.Fatalf("tools: %+v", r.Tools)
	}
	for i, e := range r.Tools {
		s := byName[want[i]]
		if e.Name != s.Name || e.Description != s.Description {
			t.Errorf("tools[%d] = %s %q, want %s %q", i, e.Name, e.Description, s.Name, s.Description)
		}
		var got, wantSchema any
		if err := json.Unmarshal(e.InputSchema, &got); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(s.InputSchema, &wantSchema); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantSchema, got); diff != "" {
			t.Errorf("tools[%d] schema (-want +got):\n%s", i, diff)
		}
	}
	if !strings.Contains(o.Res.Display, "loaded 2 tools") {
		t.Errorf("Display = %q", o.Res.Display)
	}
	if o.Access.Kind != tool.AccessOther || !o.Access.InsideWorkingDirs {
		t.Errorf("Access = %+v", o.Access)
	}
	if a := ts.Attributes(nil); !a.ReadOnly || !a.ConcurrencySafe || a.Deferred || a.Origin != tool.OriginBuiltin {
		t.Errorf("Attributes = %+v", a)
	}
}

func TestToolKeywordsAndMaxResults(t *testing.T) {
	side := newSide(map[string][]tool.Tool{"s1": corpus(1)})
	ts := toolsearch.NewTool(side.options())
	r := decodeResult(t, call(t, ts, "s1", map[string]any{"query": "slack message"}))
	if len(r.Matches) != toolsearch.DefaultMaxResults {
		t.Errorf("default max: %d matches", len(r.Matches))
	}
	r = decodeResult(t, call(t, ts, "s1", map[string]any{"query": "+slack channel", "max_results": 2}))
	if len(r.Matches) != 2 || len(r.Tools) != 2 {
		t.Fatalf("max_results 2: %v", r.Matches)
	}
	for _, m := range r.Matches {
		if !strings.HasPrefix(m, "mcp__slack__") {
			t.Errorf("+slack gave %s", m)
		}
	}
	r = decodeResult(t, call(t, ts, "s1", map[string]any{"query": "mcp__time__", "max_results": 50}))
	if diff := cmp.Diff([]string{"mcp__time__get_current_time", "mcp__time__convert_time"}, r.Matches); diff != "" {
		t.Errorf("mcp__time__ (-want +got):\n%s", diff)
	}
	// Every call loaded exactly what it returned; the session remembers all.
	side.mu.Lock()
	defer side.mu.Unlock()
	if len(side.loads) != 3 || len(side.loads[0]) != 5 || len(side.loads[1]) != 2 || len(side.loads[2]) != 2 {
		t.Errorf("loads = %v", side.loads)
	}
	if diff := cmp.Diff(r.Matches, side.loads[2]); diff != "" {
		t.Errorf("last Load (-matches +loaded):\n%s", diff)
	}
	if n := len(side.loaded["s1"]); n != 9 {
		t.Errorf("session has %d loaded tools, want 9: %v", n, side.loaded["s1"])
	}
}

func TestToolNoMatch(t *testing.T) {
	side := newSide(map[string][]tool.Tool{"s1": corpus(1)})
	side.pending = []string{"linear"}
	side.failed = []string{"sentry", "notion"}
	ts := toolsearch.NewTool(side.options())
	for _, q := range []string{"xylophone quantum", "select:Nope", "+zzz", "mcp__nosuch__"} {
		o := call(t, ts, "s1", map[string]any{"query": q})
		if o.Failed() {
			t.Fatalf("%q: no match must not be an error: %s", q, o.Text())
		}
		text := o.Text()
		for _, want := range []string{
			toolsearch.NoMatchText, fmt.Sprintf("%q", q), fmt.Sprintf("%d deferred tools", len(corpus(1))),
			"1 MCP server is still connecting (linear)", "2 MCP servers failed (sentry, notion)",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%q: text lacks %q:\n%s", q, want, text)
			}
		}
		var r toolsearch.Result
		if err := json.Unmarshal(o.Res.Structured, &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Matches) != 0 || r.Matches == nil || r.TotalDeferredTools != len(corpus(1)) ||
			!slices.Equal(r.PendingMCPServers, side.pending) || !slices.Equal(r.FailedMCPServers, side.failed) {
			t.Errorf("%q: structured = %s", q, o.Res.Structured)
		}
	}
	if len(side.loads) != 0 {
		t.Errorf("Load called without matches: %v", side.loads)
	}
	// Without servers pending or failed the text says nothing of them.
	side.pending, side.failed = nil, nil
	o := call(t, ts, "s1", map[string]any{"query": "xylophone"})
	if strings.Contains(o.Text(), "MCP server") {
		t.Errorf("text mentions servers: %s", o.Text())
	}
}

func TestToolInputErrors(t *testing.T) {
	ts := toolsearch.NewTool(nil) // nil options: no deferred tools
	tests := []struct {
		name  string
		input any
		want  string // in the schema or Validate error
	}{
		{"missing query", map[string]any{}, "query"},
		{"empty query", map[string]any{"query": ""}, "query"},
		{"blank query", map[string]any{"query": "   "}, "query is blank"},
		{"zero max", map[string]any{"query": "x", "max_results": 0}, "max_results"},
		{"fractional max", map[string]any{"query": "x", "max_results": 1.5}, "max_results"},
		{"unknown field", map[string]any{"query": "x", "limit": 3}, "limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := call(t, ts, "s1", tt.input)
			if o.SchemaErr == nil && o.ValidateErr == nil {
				t.Fatalf("input %v passed: %s", tt.input, o.Text())
			}
			if !strings.Contains(o.Text(), tt.want) {
				t.Errorf("error %q lacks %q", o.Text(), tt.want)
			}
		})
	}
	o := call(t, ts, "s1", map[string]any{"query": "anything"})
	if o.Failed() || !strings.Contains(o.Text(), "0 deferred tools") {
		t.Errorf("nil options: %s", o.Text())
	}
	// Run on input the pipeline would never pass still answers.
	res, err := ts.Run(context.Background(), &tool.Call{Input: json.RawMessage(`[1]`), Env: &tooltest.Env{ID: "s1"}}, nil)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].Text, "not valid JSON for ToolSearch") {
		t.Errorf("Run on bad input = %+v, %v", res, err)
	}
}

// TestToolFreshSchemas checks that a cached index never hands out stale
// definitions: the daemon may rebuild its tool objects (same names and
// descriptions, a changed schema) between calls, or change the set.
func TestToolFreshSchemas(t *testing.T) {
	mk := func(schema, desc string) []tool.Tool {
		return []tool.Tool{
			&fakeTool{spec: tool.Spec{Name: "mcp__a__one", Description: desc, InputSchema: json.RawMessage(schema)}, attrs: tool.Attributes{Deferred: true}},
			&fakeTool{spec: tool.Spec{Name: "mcp__a__two", Description: "something else", InputSchema: json.RawMessage(`{}`)}, attrs: tool.Attributes{Deferred: true}},
		}
	}
	side := newSide(map[string][]tool.Tool{"s1": mk(`{"type":"object","title":"v1"}`, "first widget")})
	ts := toolsearch.NewTool(side.options())
	r := decodeResult(t, call(t, ts, "s1", map[string]any{"query": "widget"}))
	if len(r.Tools) != 1 || !strings.Contains(string(r.Tools[0].InputSchema), "v1") {
		t.Fatalf("first: %+v", r.Tools)
	}
	side.mu.Lock()
	side.tools["s1"] = mk(`{"type":"object","title":"v2"}`, "first widget")
	side.mu.Unlock()
	r = decodeResult(t, call(t, ts, "s1", map[string]any{"query": "widget"}))
	if len(r.Tools) != 1 || !strings.Contains(string(r.Tools[0].InputSchema), "v2") {
		t.Errorf("after a schema change: %+v", r.Tools)
	}
	side.mu.Lock()
	side.tools["s1"] = mk(`{"type":"object"}`, "first gadget")
	side.mu.Unlock()
	o := call(t, ts, "s1", map[string]any{"query": "widget"})
	if !strings.Contains(o.Text(), toolsearch.NoMatchText) {
		t.Errorf("after a description change the old words still match: %s", o.Text())
	}
	r = decodeResult(t, call(t, ts, "s1", map[string]any{"query": "gadget"}))
	if diff := cmp.Diff([]string{"mcp__a__one"}, r.Matches); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// An empty schema goes out as one accepting any object.
	r = decodeResult(t, call(t, ts, "s1", map[string]any{"query": "select:mcp__a__two"}))
	if string(r.Tools[0].InputSchema) != `{}` {
		t.Errorf("schema %s", r.Tools[0].InputSchema)
	}
}

// TestToolConcurrentSessions runs many calls at once on sessions with
// different tool sets (run with -race).
func TestToolConcurrentSessions(t *testing.T) {
	sessions := map[string][]tool.Tool{}
	for i := range 12 { // more tool sets than the cache holds
		sessions[fmt.Sprintf("s%d", i)] = corpus(1 + i%3)[i:]
	}
	side := newSide(sessions)
	ts := toolsearch.NewTool(side.options())
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for i := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := fmt.Sprintf("s%d", i%12)
			raw, _ := json.Marshal(map[string]any{"query": "+github pull request", "max_results": 3})
			res, err := ts.Run(context.Background(), &tool.Call{Input: raw, Env: &tooltest.Env{ID: s}}, nil)
			if err != nil || res.IsError {
				errs <- fmt.Sprintf("%s: %v %+v", s, err, res)
				return
			}
			var r toolsearch.Result
			if err := json.Unmarshal(res.Structured, &r); err != nil {
				errs <- err.Error()
				return
			}
			if len(r.Matches) != 3 || r.TotalDeferredTools != len(sessions[s]) {
				errs <- fmt.Sprintf("%s: %d matches of %d tools", s, len(r.Matches), r.TotalDeferredTools)
			}
			for _, m := range r.Matches {
				if !strings.Contains(m, "github") || !strings.Contains(m, "pull_request") {
					errs <- fmt.Sprintf("%s: match %s", s, m)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

package integration

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

type toolInfoJSON struct {
	Name       string `json:"name"`
	Loaded     bool   `json:"loaded"`
	Schema     any    `json:"input_schema"`
	Attributes struct {
		Deferred bool   `json:"deferred"`
		Origin   string `json:"origin"`
	} `json:"attributes"`
}

func (e *env) toolsOf(session string) map[string]toolInfoJSON {
	e.t.Helper()
	var tools []toolInfoJSON
	e.json(&tools, "", "tools", "--session", session)
	out := map[string]toolInfoJSON{}
	for _, t := range tools {
		out[t.Name] = t
	}
	return out
}

// searchResult is ToolSearch's JSON result.
type searchResult struct {
	Matches []string `json:"matches"`
	Query   string   `json:"query"`
	Total   int      `json:"total_deferred_tools"`
	Tools   []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

func (e *env) toolSearch(session, query string, max int) (searchResult, resultJSON) {
	e.t.Helper()
	in := map[string]any{"query": query}
	if max > 0 {
		in["max_results"] = max
	}
	res, r := e.callJSON("ToolSearch", in, "--session", session)
	var sr searchResult
	if r.code == 0 && strings.HasPrefix(res.text(), "{") {
		if err := json.Unmarshal([]byte(res.text()), &sr); err != nil {
			e.t.Fatalf("ToolSearch %q: result is not JSON: %v\n%.500s", query, err, res.text())
		}
	}
	return sr, res
}

func TestToolSearchOverAGeneratedMCPServer(t *testing.T) {
	e := newEnv(t)
	gen := testpeers.BuildGenMCP(t)
	e.write("mcp.json", mustJSON(map[string]any{"mcpServers": map[string]any{
		"gen": map[string]any{"command": gen, "args": []string{"-tools", "250"}},
	}}))
	var sess struct {
		ID string `json:"id"`
	}
	e.json(&sess, "", "sessions", "new", "--mcp-config", filepath.Join(e.project, "mcp.json"))
	e.waitMCP("gen", connected, "--session", sess.ID)

	// The model sees the built-ins in full and the 251 MCP tools by name
	// only, collapsed to one line for the server.
	tools := e.toolsOf(sess.ID)
	if len(tools) < 251+10 {
		t.Fatalf("only %d tools", len(tools))
	}
	for _, name := range []string{"Read", "Bash", "ToolSearch"} {
		if tl := tools[name]; !tl.Loaded || tl.Attributes.Deferred || tl.Schema == nil {
			t.Errorf("%s: %+v; want loaded with its schema", name, tl)
		}
	}
	if tl := tools["mcp__gen__send_message"]; !tl.Attributes.Deferred || tl.Loaded || tl.Schema != nil {
		t.Fatalf("mcp__gen__send_message: %+v; want deferred, not loaded, no schema", tl)
	}
	r := e.tackle("", "tools", "--session", sess.ID)
	if !strings.Contains(r.stdout, "mcp__gen__* (251 tools)") {
		t.Errorf("tools listing lacks the collapsed server line:\n%s", r.stdout[max(0, len(r.stdout)-600):])
	}

	// Keywords: the obvious tool ranks in the top 3, and comes with its schema.
	for _, q := range testpeers.GenMCPQueries {
		sr, res := e.toolSearch(sess.ID, q.Query, 3)
		want := "mcp__gen__" + q.Want
		if !slices.Contains(sr.Matches, want) {
			t.Errorf("ToolSearch %q: %v, want %s in the top 3 (%s)", q.Query, sr.Matches, want, res.Status)
		}
		if sr.Total != 251 || len(sr.Tools) != len(sr.Matches) || len(sr.Tools) > 0 && len(sr.Tools[0].InputSchema) == 0 {
			t.Errorf("ToolSearch %q: total %d, %d schemas for %d matches", q.Query, sr.Total, len(sr.Tools), len(sr.Matches))
		}
	}
	// select: loads exact names; +term requires the term in the name; a server prefix lists its tools.
	sr, _ := e.toolSearch(sess.ID, "select:mcp__gen__run_query,mcp__gen__merge_pull_request", 0)
	if !slices.Equal(sr.Matches, []string{"mcp__gen__run_query", "mcp__gen__merge_pull_request"}) {
		t.Errorf("select: %v", sr.Matches)
	}
	sr, _ = e.toolSearch(sess.ID, "+secret rotate", 5)
	if len(sr.Matches) == 0 || sr.Matches[0] != "mcp__gen__rotate_secret" {
		t.Errorf("+secret rotate: %v", sr.Matches)
	}
	for _, m := range sr.Matches {
		if !strings.Contains(m, "secret") {
			t.Errorf("+secret matched %s", m)
		}
	}
	sr, _ = e.toolSearch(sess.ID, "mcp__gen__", 7)
	if len(sr.Matches) != 7 {
		t.Errorf("mcp__gen__ with max 7: %v", sr.Matches)
	}
	_, res := e.toolSearch(sess.ID, "zzyzx quantum teleporter", 5)
	if !strings.Contains(res.text(), "No matching deferred tools found") {
		t.Errorf("no-match text: %q", res.text())
	}

	// Found tools are loaded for the session.
	tools = e.toolsOf(sess.ID)
	for _, name := range []string{"mcp__gen__run_query", "mcp__gen__merge_pull_request", "mcp__gen__send_message"} {
		if tl := tools[name]; !tl.Loaded || tl.Schema == nil {
			t.Errorf("%s after ToolSearch: %+v; want loaded", name, tl)
		}
	}

	// An unloaded deferred tool: bad input is refused with how to load it,
	// good input runs (through the same permission stage) and loads it.
	var all []struct {
		toolInfoJSON
		Schema struct {
			Required []string `json:"required"`
		} `json:"input_schema"`
	}
	e.json(&all, "", "tools", "--session", sess.ID, "--all")
	unloaded, never := "", ""
	for _, tl := range all {
		if !tl.Attributes.Deferred || tl.Loaded || tl.Name == "mcp__gen__slow_wait" {
			continue
		}
		if unloaded == "" && len(tl.Schema.Required) == 0 {
			unloaded = tl.Name
		} else if never == "" && tl.Name != "mcp__gen__get_forecast" && tl.Name != "mcp__gen__geocode_address" {
			never = tl.Name
		}
	}
	if unloaded == "" || never == "" {
		t.Fatal("no unloaded tool without required arguments")
	}
	bare := strings.TrimPrefix(unloaded, "mcp__gen__")
	// A person's call (tackle call: a direct batch) of it runs on its
	// input alone and loads nothing.
	res, r2 := e.callJSON(unloaded, map[string]any{"bogus": true}, "--session", sess.ID, "--permission-mode", "bypassPermissions")
	if r2.code != 1 || res.Status != "invalid" || strings.Contains(res.text(), "ToolSearch") {
		t.Fatalf("bad input from a person to an unloaded tool: %d %+v", r2.code, res)
	}
	res, r2 = e.callJSON(unloaded, map[string]any{}, "--session", sess.ID, "--permission-mode", "bypassPermissions")
	if r2.code != 0 || !strings.Contains(res.text(), "called "+bare) || e.toolsOf(sess.ID)[unloaded].Loaded {
		t.Fatalf("good input from a person to an unloaded tool: %d %+v (loaded %v)", r2.code, res, e.toolsOf(sess.ID)[unloaded].Loaded)
	}
	// A model's batch (not direct): bad input is refused with how to load
	// the tool, good input runs (through the same permission stage) and
	// loads it.
	model := func(id, input, mode string, answer tacklev1.Decision) *tacklev1.ToolResult {
		t.Helper()
		s := attachSession(t, e, sess.ID, tacklev1.Role_ROLE_CONTROLLER)
		if err := s.RunBatch(&tacklev1.RunBatch{SessionId: sess.ID, Ref: id, PermissionMode: mode,
			Calls: []*tacklev1.ToolCall{{Id: id, Name: unloaded, InputJson: input}}}); err != nil {
			t.Fatal(err)
		}
		for {
			m, err := s.Recv()
			if err != nil {
				t.Fatalf("call %s: %v", id, err)
			}
			switch ev := m.GetEvent(); {
			case ev.GetType() == "permission_requested" && ev.GetCallId() == id:
				if err := s.Answer(&tacklev1.PermissionAnswer{SessionId: sess.ID, RequestId: ev.GetPermission().GetRequestId(), Decision: answer}); err != nil {
					t.Fatal(err)
				}
			case ev.GetType() == "call_result" && ev.GetCallId() == id:
				return ev.GetResult()
			}
		}
	}
	resultText := func(r *tacklev1.ToolResult) string {
		var b strings.Builder
		for _, c := range r.GetContent() {
			b.WriteString(c.GetText())
		}
		return b.String()
	}
	if r := model("m1", `{"bogus":true}`, "bypassPermissions", tacklev1.Decision_DECISION_DENY); r.GetStatus() != "invalid" || !strings.Contains(resultText(r), `select:`+unloaded) {
		t.Fatalf("bad input from a model to an unloaded tool: %+v", r)
	}
	if r := model("m2", `{}`, "default", tacklev1.Decision_DECISION_DENY); r.GetStatus() != "denied" {
		t.Fatalf("an unloaded tool skipped the permission stage: %+v", r)
	}
	if r := model("m3", `{}`, "bypassPermissions", tacklev1.Decision_DECISION_DENY); r.GetStatus() != "completed" || !strings.Contains(resultText(r), "called "+bare) {
		t.Fatalf("good input from a model to an unloaded tool: %+v", r)
	}
	// Names seen in earlier history load in one request.
	r = e.tackle("", "tools", "load", "--session", sess.ID, "mcp__gen__get_forecast", "mcp__gen__geocode_address", "Read", "NoSuchTool")
	if r.code != 1 || !strings.Contains(r.stdout, "loaded: mcp__gen__get_forecast, mcp__gen__geocode_address") || !strings.Contains(r.stderr, "NoSuchTool") {
		t.Errorf("tools load: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Loads survive a daemon restart.
	if r := e.tackle("", "daemon", "stop"); r.code != 0 {
		t.Fatalf("daemon stop: %s", r.stderr)
	}
	e.waitMCP("gen", connected, "--session", sess.ID)
	tools = e.toolsOf(sess.ID)
	for _, name := range []string{"mcp__gen__run_query", unloaded, "mcp__gen__get_forecast"} {
		if !tools[name].Loaded {
			t.Errorf("%s not loaded after a daemon restart", name)
		}
	}
	if tools[never].Loaded {
		t.Error("a tool never searched is loaded")
	}

	// toolSearch off: nothing is deferred.
	e.write(".tackle/settings.json", `{"toolSearch": "off"}`)
	if r := e.tackle("", "trust"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	e.write(".tackle/settings.json", `{"toolSearch": "off"}`) // a change the watcher sees after trust
	deadline := 100
	for ; deadline > 0; deadline-- {
		if tl := e.toolsOf(sess.ID)[never]; tl.Loaded && !tl.Attributes.Deferred {
			break
		}
	}
	if deadline == 0 {
		t.Error("toolSearch off: MCP tools are still deferred")
	}
}

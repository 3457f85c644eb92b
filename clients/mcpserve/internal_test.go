package mcpserve

import (
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

func TestSelection(t *testing.T) {
	tests := []struct {
		tools  []string
		served string
		name   string
		isMCP  bool
		want   bool
	}{
		{nil, "ev__echo", "mcp__ev__echo", true, true},
		{nil, "Read", "Read", false, false},
		{[]string{"mcp"}, "Read", "Read", false, false},
		{[]string{"all"}, "Read", "Read", false, true},
		{[]string{"all"}, "ev__echo", "mcp__ev__echo", true, true},
		{[]string{"all"}, "ToolSearch", "ToolSearch", false, false},
		{[]string{"ToolSearch"}, "ToolSearch", "ToolSearch", false, true},
		{[]string{"github__*"}, "github__create_issue", "mcp__github__create_issue", true, true},
		{[]string{"github__*"}, "ev__echo", "mcp__ev__echo", true, false},
		{[]string{"mcp__ev__*"}, "ev__echo", "mcp__ev__echo", true, true},
		{[]string{"Read,Grep"}, "Grep", "Grep", false, true},
		{[]string{"mcp", "Read"}, "Read", "Read", false, true},
	}
	for _, tt := range tests {
		s, err := parseSelection(tt.tools)
		if err != nil {
			t.Fatalf("parseSelection(%q): %v", tt.tools, err)
		}
		if got := s.picks(tt.served, tt.name, tt.isMCP); got != tt.want {
			t.Errorf("--tools %q picks %s = %v; want %v", tt.tools, tt.served, got, tt.want)
		}
	}
	if _, err := parseSelection([]string{"[x"}); err == nil {
		t.Error("parseSelection accepted [x")
	}
}

func TestServedName(t *testing.T) {
	mcpTool := &tacklev1.ToolInfo{Name: "mcp__ev__echo", Attributes: &tacklev1.ToolAttributes{Origin: "mcp:ev"}}
	builtin := &tacklev1.ToolInfo{Name: "Read", Attributes: &tacklev1.ToolAttributes{Origin: "builtin"}}
	if got := servedName(mcpTool); got != "ev__echo" {
		t.Errorf("servedName(mcp__ev__echo) = %q", got)
	}
	if got := servedName(builtin); got != "Read" {
		t.Errorf("servedName(Read) = %q", got)
	}
}

func TestObjectSchema(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", `{"type":"object"}`},
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{`{"properties":{}}`, `{"properties":{},"type":"object"}`},
	}
	for _, tt := range tests {
		got, err := objectSchema(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("objectSchema(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{`{"type":"string"}`, `[1]`, `{`} {
		if _, err := objectSchema(bad); err == nil {
			t.Errorf("objectSchema(%s) accepted it", bad)
		}
	}
}

func TestProgressOf(t *testing.T) {
	tests := []struct {
		text    string
		last    float64
		mcpTool bool
		want    mcp.ProgressNotificationParams
	}{
		{"3/10 copying", 2, true, mcp.ProgressNotificationParams{Progress: 3, Total: 10, Message: "copying"}},
		{"3", 2, true, mcp.ProgressNotificationParams{Progress: 3}},
		{"2.5/4", 0, true, mcp.ProgressNotificationParams{Progress: 2.5, Total: 4}},
		{"just a message", 4, true, mcp.ProgressNotificationParams{Progress: 5, Message: "just a message"}},
		{"2/10 going back", 3, true, mcp.ProgressNotificationParams{Progress: 4, Message: "2/10 going back"}},
		{"42 files", 0, false, mcp.ProgressNotificationParams{Progress: 1, Message: "42 files"}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(&tt.want, progressOf(tt.text, tt.last, tt.mcpTool)); diff != "" {
			t.Errorf("progressOf(%q, %v, %v) (-want +got):\n%s", tt.text, tt.last, tt.mcpTool, diff)
		}
	}
}

func TestCallResult(t *testing.T) {
	r := &tacklev1.ToolResult{IsError: true, StructuredContentJson: `{"a":1}`, Content: []*tacklev1.ContentBlock{
		{Type: "text", Text: "hi"},
		{Type: "image", MimeType: "image/png", Data: []byte{1}},
		{Type: "audio", MimeType: "audio/wav", Data: []byte{2}},
		{Type: "resource", Uri: "file:///a", MimeType: "text/plain", Text: "body"},
		{Type: "resource", Uri: "file:///b", MimeType: "application/zip", Data: []byte{3}},
		{Type: "resource_link", Uri: "demo://x", MimeType: "text/plain", Text: "X: the x"},
	}}
	got, err := json.Marshal(callResult(r))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","data":"AQ=="},` +
		`{"type":"audio","mimeType":"audio/wav","data":"Ag=="},{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"body"}},` +
		`{"type":"resource","resource":{"uri":"file:///b","mimeType":"application/zip","blob":"Aw=="}},` +
		`{"type":"resource_link","mimeType":"text/plain","uri":"demo://x","name":"X","description":"the x"}],"structuredContent":{"a":1},"isError":true}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("callResult (-want +got):\n%s", diff)
	}
}

func TestChoices(t *testing.T) {
	p := &tacklev1.PermissionRequest{Options: []*tacklev1.PermissionOption{
		{Option: "allow_once"},
		{Option: "allow_always", Scope: tacklev1.Scope_SCOPE_PROJECT, Rule: "mcp__ev__get-sum"},
		{Option: "allow_always", Scope: tacklev1.Scope_SCOPE_USER, Rule: "mcp__ev__get-sum"},
		{Option: "deny"},
	}}
	var got []string
	for _, c := range choices(p) {
		got = append(got, c.value+" "+c.title)
	}
	want := []string{"allow_once Allow once", "allow_always Always allow mcp__ev__get-sum (this project)", "deny Deny"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("choices (-want +got):\n%s", diff)
	}
	if got := choices(&tacklev1.PermissionRequest{}); len(got) != 2 {
		t.Errorf("choices without allow_always = %v; want allow once and deny", got)
	}
}

func TestChoiceSchema(t *testing.T) {
	cs := choices(&tacklev1.PermissionRequest{})
	got, _ := json.Marshal(choiceSchema("2025-11-25", cs))
	want := `{"properties":{"decision":{"description":"What tackle should do with this call","oneOf":[{"const":"allow_once","title":"Allow once"},{"const":"deny","title":"Deny"}],"title":"Decision","type":"string"}},"required":["decision"],"type":"object"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("choiceSchema 2025-11-25 (-want +got):\n%s", diff)
	}
	got, _ = json.Marshal(choiceSchema("2025-06-18", cs))
	want = `{"properties":{"decision":{"description":"What tackle should do with this call","enum":["allow_once","deny"],"enumNames":["Allow once","Deny"],"title":"Decision","type":"string"}},"required":["decision"],"type":"object"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("choiceSchema 2025-06-18 (-want +got):\n%s", diff)
	}
}

// TestLinkEventsAreTheHandledOnes: the link subscribes to exactly the event
// types (*bridge).event has a case for, so none it handles is filtered out.
func TestLinkEventsAreTheHandledOnes(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "mcpserve.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var handled []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "event" || fd.Recv == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if cc, ok := n.(*ast.CaseClause); ok {
				for _, e := range cc.List {
					if lit, ok := e.(*ast.BasicLit); ok {
						s, _ := strconv.Unquote(lit.Value)
						handled = append(handled, s)
					}
				}
			}
			return true
		})
	}
	if len(handled) == 0 {
		t.Fatal("found no case of (*bridge).event")
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(handled)), slices.Sorted(slices.Values(linkEvents))); diff != "" {
		t.Errorf("handled (-) vs subscribed (+):\n%s", diff)
	}
}

// A server's problem is told once per change of its state: not again at
// each retry of a remote server (failed, connecting, failed again with a
// new attempt number), again once it failed after being connected.
func TestReportServersOncePerState(t *testing.T) {
	var log strings.Builder
	b := &bridge{o: &Options{Log: &log}, sid: "s_1", root: "/p", ctx: context.Background(), problems: map[string]problem{}}
	remote := func(state, err string) *tacklev1.ListMcpServersResponse {
		return &tacklev1.ListMcpServersResponse{Servers: []*tacklev1.McpServer{{Name: "remote", Transport: "http", State: state, Error: err}}}
	}
	steps := []struct {
		resp *tacklev1.ListMcpServersResponse
		told string // "" = nothing
	}{
		{remote("failed", "connection refused (attempt 1; tried again by itself)"), "MCP server remote failed"},
		{remote("connecting", ""), ""},
		{remote("failed", "connection refused (attempt 2; tried again by itself)"), ""},
		{remote("failed", "connection reset (attempt 3; tried again by itself)"), ""},
		{remote("connected", ""), "MCP server remote is usable again"},
		{remote("connecting", ""), ""},
		{remote("failed", "connection refused (attempt 1; tried again by itself)"), "MCP server remote failed"},
	}
	for i, st := range steps {
		log.Reset()
		b.reportServers(st.resp)
		got := log.String()
		if st.told == "" && got != "" || st.told != "" && (strings.Count(got, "\n") != 1 || !strings.Contains(got, st.told)) {
			t.Errorf("step %d (%s): told %q; want %q", i, st.resp.GetServers()[0].GetState(), got, st.told)
		}
	}
}

// What a server's problem says to run works for it, and says things once.
func TestProblemOf(t *testing.T) {
	b := &bridge{sid: "s_1", root: "/p"}
	url := "https://auth.example/authorize?client_id=tackle&state=xyz"
	for _, tc := range []struct {
		s          *tacklev1.McpServer
		want, not  []string
		urlAtMost1 bool
	}{
		{s: &tacklev1.McpServer{Name: "remote", Transport: "http", State: "failed", Error: "connection refused (attempt 2; tried again by itself)"},
			want: []string{"connection refused", "`tackle mcp list --session s_1`", "`tackle mcp reconnect remote --session s_1`"}, not: []string{"tackle mcp logs"}},
		{s: &tacklev1.McpServer{Name: "local", Transport: "stdio", State: "failed", Error: "exit status 1"},
			want: []string{"`tackle mcp logs local --session s_1`", "`tackle mcp reconnect local --session s_1`"}},
		{s: &tacklev1.McpServer{Name: "gh", Transport: "http", State: "needs-auth", AuthUrl: url,
			Error: "waiting for authorisation in a browser: open " + url + " (or run `tackle mcp login gh`)"},
			want: []string{url, "`tackle mcp login gh --session s_1`"}, urlAtMost1: true},
		{s: &tacklev1.McpServer{Name: "gh", Transport: "http", State: "needs-auth", Error: "the server answered 401"},
			want: []string{"the server answered 401", "`tackle mcp login gh --session s_1`"}},
		{s: &tacklev1.McpServer{Name: "proj", Scope: "project", Transport: "stdio", State: "needs-approval"},
			want: []string{"`tackle mcp approve proj --cwd /p`"}, not: []string{"trust"}},
		{s: &tacklev1.McpServer{Name: "proj", Scope: "project", Transport: "stdio", State: "needs-trust"},
			want: []string{"`tackle trust /p`", "if it is not approved yet", "`tackle mcp approve proj --cwd /p`"}},
		{s: &tacklev1.McpServer{Name: "loc", Scope: "local", Transport: "stdio", State: "needs-trust"},
			want: []string{"`tackle trust /p`"}, not: []string{"approve"}},
	} {
		msg := b.problemOf(tc.s)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s %s: %q lacks %q", tc.s.GetName(), tc.s.GetState(), msg, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(msg, n) {
				t.Errorf("%s %s: %q says %q", tc.s.GetName(), tc.s.GetState(), msg, n)
			}
		}
		if tc.urlAtMost1 && strings.Count(msg, url) != 1 {
			t.Errorf("%s %s: %q has the URL %d times", tc.s.GetName(), tc.s.GetState(), msg, strings.Count(msg, url))
		}
	}
}

package mcp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestResourceContents(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out") // created on demand
	blob := []byte{0, 1, 2, 3, 255}
	got := ResourceContents([]*mcpsdk.ResourceContents{
		{URI: "test://text", MIMEType: "text/plain", Text: "hello"},
		{URI: "test://empty"},
		{URI: "test://img", MIMEType: "image/png", Blob: []byte("\x89PNG")},
		nil,
		{URI: "test://bin", MIMEType: "application/pdf", Blob: blob},
	}, dir)
	want := []tool.Content{
		{Type: "resource", URI: "test://text", MimeType: "text/plain", Text: "hello"},
		{Type: "resource", URI: "test://empty"},
		{Type: "image", URI: "test://img", MimeType: "image/png", Data: []byte("\x89PNG")},
	}
	if len(got) != 4 {
		t.Fatalf("ResourceContents gave %d blocks, want 4: %+v", len(got), got)
	}
	if diff := cmp.Diff(want, got[:3]); diff != "" {
		t.Errorf("ResourceContents (-want +got):\n%s", diff)
	}
	m := regexp.MustCompile(`^Binary resource test://bin \(application/pdf, 5 bytes\) saved to (\S+\.pdf)$`).FindStringSubmatch(got[3].Text)
	if m == nil {
		t.Fatalf("binary block = %+v, want it saved to a .pdf file", got[3])
	}
	if filepath.Dir(m[1]) != dir {
		t.Errorf("saved to %s, want a file in %s", m[1], dir)
	}
	data, err := os.ReadFile(m[1])
	if err != nil || !bytes.Equal(data, blob) {
		t.Errorf("saved file holds %v (%v), want %v", data, err, blob)
	}

	noDir := ResourceContents([]*mcpsdk.ResourceContents{{URI: "test://bin", Blob: blob}}, "")
	if len(noDir) != 1 || !strings.Contains(noDir[0].Text, "unknown type, 5 bytes): not shown") {
		t.Errorf("without a directory: %+v", noDir)
	}

	// A directory that cannot be created: the block says why, nothing is lost silently.
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	bad := ResourceContents([]*mcpsdk.ResourceContents{{URI: "test://bin", Blob: blob}}, filepath.Join(file, "sub"))
	if len(bad) != 1 || !strings.Contains(bad[0].Text, "saving it failed") {
		t.Errorf("unwritable directory: %+v", bad)
	}
}

func TestResourceEntries(t *testing.T) {
	got := ResourceEntries("everything",
		[]*mcpsdk.Resource{{URI: "test://static/resource/1", Name: "Resource 1", MIMEType: "text/plain", Description: "d"}, nil},
		[]*mcpsdk.ResourceTemplate{{URITemplate: "test://static/resource/{id}", Name: "Static Resource"}})
	want := []ResourceEntry{
		{URI: "test://static/resource/1", Name: "Resource 1", MimeType: "text/plain", Description: "d", Server: "everything"},
		{URITemplate: "test://static/resource/{id}", Name: "Static Resource", Server: "everything"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ResourceEntries (-want +got):\n%s", diff)
	}
}

func findTool(t *testing.T, ts []tool.Tool, name string) tool.Tool {
	t.Helper()
	for _, tl := range ts {
		if tl.Spec().Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return nil
}

func TestResourceToolsSpecs(t *testing.T) {
	m := New(nil)
	defer m.Close()
	ts := m.ResourceTools()
	for _, tc := range []struct{ name, alias string }{{ListResourcesName, ListResourcesAlias}, {ReadResourceName, ReadResourceAlias}} {
		tl := findTool(t, ts, tc.name)
		if s := tl.Spec(); !slices.Equal(s.Aliases, []string{tc.alias}) || s.Description == "" {
			t.Errorf("%s spec = %+v", tc.name, s)
		}
		if _, err := compile(t, tc.name, tl.Spec().InputSchema); err != nil {
			t.Errorf("%s schema: %v", tc.name, err)
		}
		if a := tl.Attributes(nil); !a.ReadOnly || !a.ConcurrencySafe || a.Origin != tool.OriginBuiltin {
			t.Errorf("%s attributes = %+v", tc.name, a)
		}
		if acc, _ := tl.CheckPermission(t.Context(), &tool.Call{}); !acc.InsideWorkingDirs || acc.Kind != tool.AccessOther {
			t.Errorf("%s access = %+v, want nothing to ask about", tc.name, acc)
		}
	}
	read := findTool(t, ts, ReadResourceName)
	for in, want := range map[string]string{
		`{"server": "", "uri": "x"}`:  "server is empty",
		`{"server": "a", "uri": " "}`: "uri is empty",
		`{"server": 1}`:               "not valid JSON",
		`{"server": "a", "uri": "x"}`: "",
	} {
		err := read.Validate(t.Context(), &tool.Call{Input: json.RawMessage(in)})
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("Validate(%s) = %v, want %q", in, err, want)
		}
	}
}

func TestResourceToolsEverything(t *testing.T) {
	h := newHarness(t, nil)
	g := newGoServer(t) // connected, without resources
	env := h.session("s1", everything(t, "everything"), g.config("go", 0))
	ts := h.m.ResourceTools()
	list, read := findTool(t, ts, ListResourcesName), findTool(t, ts, ReadResourceName)
	call := func(tl tool.Tool, input string) *tool.Result {
		t.Helper()
		r, err := tl.Run(testCtx(t), &tool.Call{ID: "x", Input: json.RawMessage(input), Env: env}, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", tl.Spec().Name, input, err)
		}
		return r
	}

	for _, in := range []string{`{}`, `{"server": "everything"}`, ``} {
		r := call(list, in)
		var entries []ResourceEntry
		if r.IsError || json.Unmarshal([]byte(textOf(r)), &entries) != nil {
			t.Fatalf("ListMcpResources %s = %+v", in, r)
		}
		var doc, tmpl bool
		for _, e := range entries {
			if e.Server != "everything" {
				t.Errorf("entry of server %q", e.Server)
			}
			doc = doc || e.URI == "demo://resource/static/document/architecture.md" && e.MimeType == "text/markdown" && e.Name == "architecture.md"
			tmpl = tmpl || e.URITemplate == "demo://resource/dynamic/text/{resourceId}"
		}
		if !doc || !tmpl {
			t.Errorf("ListMcpResources %s lacks the architecture document or the text template:\n%s", in, textOf(r))
		}
	}
	if r := call(list, `{"server": "go"}`); r.IsError || !strings.Contains(textOf(r), "no resources") {
		t.Errorf("resources of a server without any = %+v", r)
	}
	if r := call(list, `{"server": "nope"}`); !r.IsError || !strings.Contains(textOf(r), `no MCP server named "nope"`) || !strings.Contains(textOf(r), "everything, go") {
		t.Errorf("unknown server = %+v", r)
	}

	r := call(read, `{"server": "everything", "uri": "demo://resource/static/document/architecture.md"}`)
	if r.IsError || len(r.Content) != 1 || r.Content[0].Type != "resource" || r.Content[0].URI != "demo://resource/static/document/architecture.md" || len(r.Content[0].Text) < 100 {
		t.Errorf("ReadMcpResource text = %+v", r)
	}
	r = call(read, `{"server": "everything", "uri": "demo://resource/dynamic/blob/7"}`)
	if r.IsError || len(r.Content) != 1 || !strings.Contains(r.Content[0].Text, "saved to "+env.out) {
		t.Errorf("ReadMcpResource blob = %+v", r)
	}
	r = call(read, `{"server": "everything", "uri": "demo://no/such/thing"}`)
	if !r.IsError || !strings.Contains(textOf(r), "MCP server everything: reading resource demo://no/such/thing") {
		t.Errorf("ReadMcpResource of a missing resource = %+v", r)
	}
	r = call(read, `{"server": "nope", "uri": "demo://x"}`)
	if !r.IsError || !strings.Contains(textOf(r), `no MCP server named "nope"`) {
		t.Errorf("ReadMcpResource of an unknown server = %+v", r)
	}
}

func TestListResourcesSkipsServersNotConnected(t *testing.T) {
	h := newHarness(t, nil)
	env := h.session("s1", everything(t, "everything"))
	blocked := config.MCPServer{Name: "blocked", Scope: "project", Type: "stdio", Command: "/nonexistent", State: config.MCPNeedsApproval}
	h.m.Use(env.id, []config.MCPServer{everything(t, "everything"), blocked}, []string{env.dir})
	list := findTool(t, h.m.ResourceTools(), ListResourcesName)
	r, err := list.Run(testCtx(t), &tool.Call{Input: json.RawMessage(`{}`), Env: env}, nil)
	if err != nil || r.IsError || strings.Contains(textOf(r), "blocked") || !strings.Contains(textOf(r), "everything") {
		t.Errorf("list with a needs-approval server = %+v, %v", r, err)
	}
	r, _ = list.Run(testCtx(t), &tool.Call{Input: json.RawMessage(`{"server":"blocked"}`), Env: env}, nil)
	if !r.IsError || !strings.Contains(textOf(r), "MCP server blocked is not connected (state needs-approval") {
		t.Errorf("list of a needs-approval server = %+v", r)
	}
}

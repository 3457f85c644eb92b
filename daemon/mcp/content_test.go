package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// decodeResult decodes a tools/call result as the go-sdk client does.
func decodeResult(t *testing.T, wire string) *mcpsdk.CallToolResult {
	t.Helper()
	var res mcpsdk.CallToolResult
	if err := json.Unmarshal([]byte(wire), &res); err != nil {
		t.Fatalf("decoding %s: %v", wire, err)
	}
	return &res
}

func TestToolResultMapsContent(t *testing.T) {
	tests := []struct {
		name string
		wire string
		want *tool.Result
	}{
		{
			name: "text",
			wire: `{"content":[{"type":"text","text":"Echo: hi"}]}`,
			want: &tool.Result{Content: []tool.Content{tool.Text("Echo: hi")}},
		},
		{
			name: "image and audio carry decoded bytes",
			wire: `{"content":[{"type":"image","mimeType":"image/png","data":"iVBORw=="},{"type":"audio","mimeType":"audio/wav","data":"UklGRg=="}]}`,
			want: &tool.Result{Content: []tool.Content{
				{Type: "image", MimeType: "image/png", Data: []byte("\x89PNG")},
				{Type: "audio", MimeType: "audio/wav", Data: []byte("RIFF")},
			}},
		},
		{
			name: "embedded text and blob resources",
			wire: `{"content":[
				{"type":"resource","resource":{"uri":"test://static/resource/1","mimeType":"text/plain","text":"Resource 1"}},
				{"type":"resource","resource":{"uri":"test://static/resource/2","mimeType":"application/octet-stream","blob":"AAEC"}}]}`,
			want: &tool.Result{Content: []tool.Content{
				{Type: "resource", URI: "test://static/resource/1", MimeType: "text/plain", Text: "Resource 1"},
				{Type: "resource", URI: "test://static/resource/2", MimeType: "application/octet-stream", Data: []byte{0, 1, 2}},
			}},
		},
		{
			name: "resource links",
			wire: `{"content":[
				{"type":"resource_link","uri":"file:///a.txt","name":"a.txt","description":"the first file","mimeType":"text/plain"},
				{"type":"resource_link","uri":"file:///b.txt","name":"b","title":"File B"},
				{"type":"resource_link","uri":"file:///c.txt"}]}`,
			want: &tool.Result{Content: []tool.Content{
				{Type: "resource_link", URI: "file:///a.txt", MimeType: "text/plain", Text: "a.txt: the first file"},
				{Type: "resource_link", URI: "file:///b.txt", Text: "File B (b)"},
				{Type: "resource_link", URI: "file:///c.txt", Text: "file:///c.txt"},
			}},
		},
		{
			name: "isError",
			wire: `{"content":[{"type":"text","text":"no such city"}],"isError":true}`,
			want: &tool.Result{Content: []tool.Content{tool.Text("no such city")}, IsError: true},
		},
		{
			name: "structured content with content",
			wire: `{"content":[{"type":"text","text":"22 degrees"}],"structuredContent":{"temperature":22,"conditions":"sunny"}}`,
			want: &tool.Result{
				Content:    []tool.Content{tool.Text("22 degrees")},
				Structured: json.RawMessage(`{"conditions":"sunny","temperature":22}`),
			},
		},
		{
			name: "structured content alone is also text",
			wire: `{"content":[],"structuredContent":[1,2,3]}`,
			want: &tool.Result{
				Content:    []tool.Content{tool.Text("[1,2,3]")},
				Structured: json.RawMessage(`[1,2,3]`),
			},
		},
		{
			name: "nothing at all",
			wire: `{"content":[]}`,
			want: &tool.Result{Content: []tool.Content{tool.Text("(no content)")}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ToolResult(decodeResult(t, tc.wire))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ToolResult(%s) (-want +got):\n%s", tc.wire, diff)
			}
		})
	}
}

func TestContentsKeepsOddBlocks(t *testing.T) {
	got := Contents([]mcpsdk.Content{
		&mcpsdk.EmbeddedResource{},
		&mcpsdk.ToolUseContent{ID: "t1", Name: "x"},
	})
	if len(got) != 2 || got[0].Type != "text" || got[1].Type != "text" {
		t.Fatalf("Contents = %+v, want two text blocks", got)
	}
	if !strings.Contains(got[1].Text, `"tool_use"`) {
		t.Errorf("tool_use block rendered as %q, want its JSON", got[1].Text)
	}
}

func TestTextTokensAndWarning(t *testing.T) {
	small := &tool.Result{Content: []tool.Content{tool.Text(strings.Repeat("a", 40000))}}
	if n := TextTokens(small.Content); n != 10000 {
		t.Errorf("TextTokens(40,000 chars) = %d, want 10000", n)
	}
	if w := largeWarning("mcp__s__t", small, DefaultMaxOutputTokens); w != "" {
		t.Errorf("warning at exactly 10,000 tokens: %q, want none", w)
	}
	big := &tool.Result{Content: []tool.Content{
		tool.Text(strings.Repeat("a", 40000)),
		{Type: "image", Data: make([]byte, 1<<20)},
		{Type: "resource", Text: "é"},
	}}
	w := largeWarning("mcp__s__t", big, DefaultMaxOutputTokens)
	for _, s := range []string{"mcp__s__t", "~10,001 tokens", "10,000", "25,000"} {
		if !strings.Contains(w, s) {
			t.Errorf("warning %q does not contain %q", w, s)
		}
	}
}

func TestResultLimit(t *testing.T) {
	tests := []struct {
		tokens int
		meta   mcpsdk.Meta
		want   int
	}{
		{25000, nil, 100000},
		{1000, nil, 4000},
		{25000, mcpsdk.Meta{MetaMaxResultSize: float64(300000)}, 300000},
		{25000, mcpsdk.Meta{MetaMaxResultSize: float64(5000)}, 100000}, // raises, never lowers
		{25000, mcpsdk.Meta{MetaMaxResultSize: float64(9e9)}, MaxResultSizeChars},
		{25000, mcpsdk.Meta{MetaMaxResultSize: "lots"}, 100000},
		{200000, nil, MaxResultSizeChars},
	}
	for _, tc := range tests {
		if got := resultLimit(tc.tokens, tc.meta); got != tc.want {
			t.Errorf("resultLimit(%d, %v) = %d, want %d", tc.tokens, tc.meta, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 25000: "25,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

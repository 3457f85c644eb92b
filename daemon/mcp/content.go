package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// MCP output limits (reference.md section 2, "MCP limits").
const (
	// DefaultMaxOutputTokens is MAX_MCP_OUTPUT_TOKENS when nothing sets it.
	DefaultMaxOutputTokens = 25000
	// WarnOutputTokens is the size above which a result gets a Warning.
	WarnOutputTokens = 10000
	// MaxResultSizeChars is the ceiling of a tool's result limit, whatever
	// MAX_MCP_OUTPUT_TOKENS or the server's _meta says.
	MaxResultSizeChars = 500000
	// MetaMaxResultSize is the _meta key with which a server raises one
	// tool's result limit (in characters).
	MetaMaxResultSize = "anthropic/maxResultSizeChars"
	// charsPerToken is the estimate used for token counts of text.
	charsPerToken = 4
)

// Contents maps MCP content blocks to tool content blocks: text, image and
// audio as they are, an embedded resource to a "resource" block (its text or
// its bytes, with URI and MIME type), a resource link to a "resource_link"
// block whose Text is the link's name and description. Blocks that are not
// valid in a tool result (sampling's tool_use and tool_result) become a text
// block saying so, so that nothing is dropped silently.
func Contents(blocks []mcpsdk.Content) []tool.Content {
	out := make([]tool.Content, 0, len(blocks))
	for _, b := range blocks {
		out = append(out, content(b))
	}
	return out
}

func content(b mcpsdk.Content) tool.Content {
	switch c := b.(type) {
	case *mcpsdk.TextContent:
		return tool.Text(c.Text)
	case *mcpsdk.ImageContent:
		return tool.Content{Type: "image", MimeType: c.MIMEType, Data: c.Data}
	case *mcpsdk.AudioContent:
		return tool.Content{Type: "audio", MimeType: c.MIMEType, Data: c.Data}
	case *mcpsdk.EmbeddedResource:
		if c.Resource == nil {
			return tool.Text("[embedded resource without contents]")
		}
		return embedded(c.Resource)
	case *mcpsdk.ResourceLink:
		return tool.Content{Type: "resource_link", URI: c.URI, MimeType: c.MIMEType, Text: linkText(c)}
	case nil:
		return tool.Text("[empty content block]")
	default:
		raw, err := b.MarshalJSON()
		if err != nil {
			return tool.Text(fmt.Sprintf("[content block of type %T that tackle cannot show]", b))
		}
		return tool.Text(fmt.Sprintf("[content block not valid in a tool result: %s]", raw))
	}
}

// embedded maps the contents of an embedded resource.
func embedded(r *mcpsdk.ResourceContents) tool.Content {
	c := tool.Content{Type: "resource", URI: r.URI, MimeType: r.MIMEType}
	if r.Blob != nil {
		c.Data = r.Blob
	} else {
		c.Text = r.Text
	}
	return c
}

// linkText is what the model reads of a resource link: its name (or
// title), then its description.
func linkText(l *mcpsdk.ResourceLink) string {
	name := l.Name
	if l.Title != "" && l.Title != l.Name {
		name = l.Title + " (" + l.Name + ")"
	}
	if name == "" {
		name = l.URI
	}
	if l.Description == "" {
		return name
	}
	return name + ": " + l.Description
}

// ToolResult maps an MCP tool result: content as Contents, isError as
// IsError, structuredContent as Structured (re-encoded, the same JSON value).
// When the server sent structured content and no content blocks, the
// structured content is also given as one text block, so the model sees it.
// A result with neither gets a text block saying there was no output.
func ToolResult(res *mcpsdk.CallToolResult) *tool.Result {
	if res == nil {
		return tool.TextResult("(no content)")
	}
	out := &tool.Result{Content: Contents(res.Content), IsError: res.IsError}
	if res.StructuredContent != nil {
		raw, err := json.Marshal(res.StructuredContent)
		if err != nil {
			out.Content = append(out.Content, tool.Text(fmt.Sprintf("[structured content that cannot be encoded: %v]", err)))
		} else {
			out.Structured = raw
			if len(out.Content) == 0 {
				out.Content = []tool.Content{tool.Text(string(raw))}
			}
		}
	}
	if len(out.Content) == 0 {
		out.Content = []tool.Content{tool.Text("(no content)")}
	}
	return out
}

// TextTokens estimates the tokens of the text in blocks (characters / 4,
// rounded up). Binary blocks (images, audio, blobs) are not counted: the
// pipeline does not persist them by size either.
func TextTokens(blocks []tool.Content) int {
	n := 0
	for _, c := range blocks {
		n += len([]rune(c.Text))
	}
	return (n + charsPerToken - 1) / charsPerToken
}

// largeWarning is the Warning of a result above WarnOutputTokens, or "".
func largeWarning(name string, res *tool.Result, maxTokens int) string {
	n := TextTokens(res.Content)
	if n <= WarnOutputTokens {
		return ""
	}
	return fmt.Sprintf("%s returned a large result (~%s tokens; the warning starts at %s, output over %s tokens is saved to a file): it can fill up the context quickly",
		name, thousands(n), thousands(WarnOutputTokens), thousands(maxTokens))
}

// resultLimit is the MaxResultChars of a tool: maxTokens*4, raised (never
// lowered) by the tool's _meta["anthropic/maxResultSizeChars"], capped at
// MaxResultSizeChars.
func resultLimit(maxTokens int, meta mcpsdk.Meta) int {
	n := maxTokens * charsPerToken
	if v, ok := meta[MetaMaxResultSize]; ok {
		var m float64
		switch x := v.(type) {
		case float64:
			m = x
		case int:
			m = float64(x)
		case int64:
			m = float64(x)
		case json.Number:
			m, _ = x.Float64()
		}
		if int(m) > n {
			n = int(m)
		}
	}
	return min(n, MaxResultSizeChars)
}

// thousands formats n with commas: 25000 → "25,000".
func thousands(n int) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

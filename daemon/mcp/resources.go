package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"sort"
	"strings"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Names of the resource tools, and the names Claude Code also accepts.
const (
	ListResourcesName  = "ListMcpResources"
	ListResourcesAlias = "ListMcpResourcesTool"
	ReadResourceName   = "ReadMcpResource"
	ReadResourceAlias  = "ReadMcpResourceTool"
)

// ResourceTools returns ListMcpResources and ReadMcpResource. They reach
// the servers of the calling session (call.Env.SessionID()), are read-only
// and concurrency-safe, and need no permission.
func (m *Manager) ResourceTools() []tool.Tool {
	return []tool.Tool{&listResources{m: m}, &readResource{m: m}}
}

// ResourceEntry is one element of ListMcpResources' output: a resource
// (URI) or a resource template (URITemplate) of a server.
type ResourceEntry struct {
	URI         string `json:"uri,omitempty"`
	URITemplate string `json:"uriTemplate,omitempty"`
	Name        string `json:"name"`
	MimeType    string `json:"mimeType,omitempty"`
	Description string `json:"description,omitempty"`
	Server      string `json:"server"`
}

var listSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "server": {"type": "string", "description": "Only list the resources of this MCP server (default: every connected server)"}
  },
  "additionalProperties": false
}`)

var readSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "server": {"type": "string", "description": "The MCP server that has the resource"},
    "uri": {"type": "string", "description": "The URI of the resource to read"}
  },
  "required": ["server", "uri"],
  "additionalProperties": false
}`)

const listDescription = `Lists the resources (files, records, documents…) that the connected MCP servers offer, as a JSON array of {uri, name, mimeType, description, server}. Entries with "uriTemplate" instead of "uri" are templates: fill in the {placeholders} to get a URI. Read one with ReadMcpResource.

- server: optional; only that server's resources.`

const readDescription = `Reads one resource of an MCP server by its URI (as ListMcpResources gives it). Text comes back as text, images as images; other binary contents are saved to a file whose path is given.

- server: the server's name, as ListMcpResources gives it
- uri: the resource's URI`

type serverInput struct {
	Server string `json:"server"`
	URI    string `json:"uri"`
}

func decodeServerInput(name string, raw json.RawMessage) (serverInput, error) {
	var in serverInput
	if len(strings.TrimSpace(string(raw))) == 0 {
		return in, nil
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("the input is not valid JSON for %s (%v)", name, err)
	}
	return in, nil
}

// resourceAttrs are the attributes of both resource tools.
var resourceAttrs = tool.Attributes{ReadOnly: true, ConcurrencySafe: true, Origin: tool.OriginBuiltin}

// resourceAccess is what both resource tools touch: nothing to ask about.
var resourceAccess = tool.Access{Kind: tool.AccessOther, InsideWorkingDirs: true}

// sessionConn finds server among the session's servers, or returns the
// model-facing error naming the servers there are.
func (m *Manager) sessionConn(sessionID, server string) (*Conn, error) {
	if c, ok := m.Conn(sessionID, server); ok {
		return c, nil
	}
	var names []string
	for _, c := range m.Conns(sessionID) {
		names = append(names, c.Name())
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no MCP server named %q: this session has no MCP servers", server)
	}
	return nil, fmt.Errorf("no MCP server named %q: this session's servers are %s", server, strings.Join(names, ", "))
}

func envSession(call *tool.Call) (string, error) {
	if call.Env == nil {
		return "", fmt.Errorf("the call has no session")
	}
	return call.Env.SessionID(), nil
}

// listResources is ListMcpResources.
type listResources struct{ m *Manager }

func (*listResources) Spec() tool.Spec {
	return tool.Spec{Name: ListResourcesName, Aliases: []string{ListResourcesAlias}, Description: listDescription, InputSchema: listSchema}
}
func (*listResources) Attributes(json.RawMessage) tool.Attributes { return resourceAttrs }
func (*listResources) Validate(context.Context, *tool.Call) error { return nil }
func (*listResources) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return resourceAccess, nil
}

// Run lists the last known resources and templates of the session's
// connected servers (the lists are refreshed on list_changed).
func (t *listResources) Run(_ context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	in, err := decodeServerInput(ListResourcesName, call.Input)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	sid, err := envSession(call)
	if err != nil {
		return nil, err
	}
	var conns []*Conn
	if in.Server != "" {
		c, err := t.m.sessionConn(sid, in.Server)
		if err != nil {
			return tool.ErrorResult(err.Error()), nil
		}
		if st := c.Status(); st.State != Connected {
			return tool.ErrorResult(notConnected(st)), nil
		}
		conns = []*Conn{c}
	} else {
		for _, c := range t.m.Conns(sid) {
			if c.State() == Connected {
				conns = append(conns, c)
			}
		}
	}
	entries := []ResourceEntry{}
	for _, c := range conns {
		entries = append(entries, ResourceEntries(c.Name(), c.Resources(), c.ResourceTemplates())...)
	}
	if len(entries) == 0 {
		msg := "No resources found. MCP servers may still provide tools even if they have no resources."
		if in.Server != "" {
			msg = fmt.Sprintf("MCP server %s has no resources. It may still provide tools.", in.Server)
		}
		return tool.TextResult(msg), nil
	}
	raw, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the resource list: %w", err)
	}
	res := tool.TextResult(string(raw))
	res.Display = fmt.Sprintf("%d resources", len(entries))
	return res, nil
}

// ResourceEntries lists one server's resources, then its templates.
func ResourceEntries(server string, rs []*mcpsdk.Resource, ts []*mcpsdk.ResourceTemplate) []ResourceEntry {
	out := make([]ResourceEntry, 0, len(rs)+len(ts))
	for _, r := range rs {
		if r != nil {
			out = append(out, ResourceEntry{URI: r.URI, Name: r.Name, MimeType: r.MIMEType, Description: r.Description, Server: server})
		}
	}
	for _, r := range ts {
		if r != nil {
			out = append(out, ResourceEntry{URITemplate: r.URITemplate, Name: r.Name, MimeType: r.MIMEType, Description: r.Description, Server: server})
		}
	}
	return out
}

// notConnected says that a server is not connected, why, and what to do.
func notConnected(st Status) string {
	msg := fmt.Sprintf("MCP server %s is not connected (state %s", st.Name, st.State)
	if st.Error != "" {
		msg += ": " + st.Error
	}
	return msg + "); `tackle mcp list` shows the servers, `tackle mcp reconnect " + st.Name + "` retries"
}

// readResource is ReadMcpResource.
type readResource struct{ m *Manager }

func (*readResource) Spec() tool.Spec {
	return tool.Spec{Name: ReadResourceName, Aliases: []string{ReadResourceAlias}, Description: readDescription, InputSchema: readSchema}
}
func (*readResource) Attributes(json.RawMessage) tool.Attributes { return resourceAttrs }

// Validate checks that both fields say something.
func (*readResource) Validate(_ context.Context, call *tool.Call) error {
	in, err := decodeServerInput(ReadResourceName, call.Input)
	if err != nil {
		return err
	}
	if strings.TrimSpace(in.Server) == "" {
		return fmt.Errorf("server is empty: give the MCP server's name, as ListMcpResources lists it")
	}
	if strings.TrimSpace(in.URI) == "" {
		return fmt.Errorf("uri is empty: give the resource's URI, as ListMcpResources lists it")
	}
	return nil
}

func (*readResource) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return resourceAccess, nil
}

// Run reads the resource through the session's connection to the server.
func (t *readResource) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	in, err := decodeServerInput(ReadResourceName, call.Input)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	sid, err := envSession(call)
	if err != nil {
		return nil, err
	}
	c, err := t.m.sessionConn(sid, in.Server)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	var res *mcpsdk.ReadResourceResult
	err = c.Do(ctx, func(ctx context.Context, cs *mcpsdk.ClientSession) error {
		r, err := cs.ReadResource(ctx, &mcpsdk.ReadResourceParams{URI: in.URI})
		res = r
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reading %s from MCP server %s: %w", in.URI, in.Server, ctx.Err())
		}
		return tool.ErrorResult(fmt.Sprintf("MCP server %s: reading resource %s: %v", in.Server, in.URI, err)), nil
	}
	dir := ""
	if call.Env != nil {
		dir = call.Env.OutputDir()
	}
	out := &tool.Result{Content: ResourceContents(res.Contents, dir)}
	if len(out.Content) == 0 {
		out.Content = []tool.Content{tool.Text(fmt.Sprintf("Resource %s of MCP server %s is empty.", in.URI, in.Server))}
	}
	out.Display = fmt.Sprintf("%s from %s", in.URI, in.Server)
	return out, nil
}

// ResourceContents maps the contents of a resources/read result: text as a
// "resource" block (URI, MIME type, text); an image blob as an "image"
// block; any other blob is written to a new file in dir and given as a text
// block naming the file (or saying it was not shown when dir is "" or the
// write fails).
func ResourceContents(cs []*mcpsdk.ResourceContents, dir string) []tool.Content {
	out := make([]tool.Content, 0, len(cs))
	for _, c := range cs {
		if c == nil {
			continue
		}
		switch {
		case c.Blob == nil:
			out = append(out, tool.Content{Type: "resource", URI: c.URI, MimeType: c.MIMEType, Text: c.Text})
		case strings.HasPrefix(c.MIMEType, "image/"):
			out = append(out, tool.Content{Type: "image", URI: c.URI, MimeType: c.MIMEType, Data: c.Blob})
		default:
			out = append(out, tool.Text(saveBlob(c, dir)))
		}
	}
	return out
}

// saveBlob writes a binary resource to a new file in dir and says where.
func saveBlob(c *mcpsdk.ResourceContents, dir string) string {
	mt := c.MIMEType
	if mt == "" {
		mt = "unknown type"
	}
	what := fmt.Sprintf("Binary resource %s (%s, %d bytes)", c.URI, mt, len(c.Blob))
	if dir == "" {
		return what + ": not shown (binary)"
	}
	ext := ""
	if exts, _ := mime.ExtensionsByType(c.MIMEType); len(exts) > 0 {
		sort.Strings(exts)
		ext = exts[0]
	}
	path, err := writeNew(dir, "mcp-resource-*"+ext, c.Blob)
	if err != nil {
		return fmt.Sprintf("%s: not shown (binary), and saving it failed: %v", what, err)
	}
	return what + " saved to " + path
}

func writeNew(dir, pattern string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", fmt.Errorf("creating a file in %s: %w", dir, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return filepath.Clean(f.Name()), nil
}

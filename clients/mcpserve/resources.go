package mcpserve

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The resources and resource templates of the session's servers are
// served with their own URIs (the first server's, when two offer one).
// They are listed with tackle's ListMcpResources and read with
// ReadMcpResource, tool calls of the session through the pipeline; the
// listing is made only once the client asks for resources, and kept
// current from then on.

// resourceState is what the go-sdk server was given of the resources.
type resourceState struct {
	listed    bool              // the client asked: keep the lists current
	stale     bool              // the pool changed since the last listing
	resources map[string]string // URI → signature
	templates map[string]string // URI template → signature
}

// resourceEntry is one element of ListMcpResources' output.
type resourceEntry struct {
	URI         string `json:"uri"`
	URITemplate string `json:"uriTemplate"`
	Name        string `json:"name"`
	MimeType    string `json:"mimeType"`
	Description string `json:"description"`
	Server      string `json:"server"`
}

// listResourcesOnce lists the resources unless the lists are current.
func (b *bridge) listResourcesOnce(ctx context.Context) {
	b.resMu.Lock()
	defer b.resMu.Unlock()
	if b.res.listed && !b.res.stale {
		return
	}
	b.listResourcesLocked(ctx)
}

// resourcesChanged marks the lists stale, and lists again at once when the
// client has listed them (so it gets list_changed).
func (b *bridge) resourcesChanged(ctx context.Context) {
	b.resMu.Lock()
	defer b.resMu.Unlock()
	b.res.stale = true
	if b.res.listed {
		b.listResourcesLocked(ctx)
	}
}

// listResourcesLocked runs ListMcpResources and gives the go-sdk server
// the changes. b.resMu is held.
func (b *bridge) listResourcesLocked(ctx context.Context) {
	r, err := b.runCall(ctx, nil, "ListMcpResources", "ListMcpResources", "{}", nil, false)
	if err != nil {
		b.logf("listing the resources of session %s: %v", b.sid, err)
		return
	}
	b.res.listed, b.res.stale = true, false
	var entries []resourceEntry
	if !r.GetIsError() {
		// Text that is not a JSON array says there are none.
		_ = json.Unmarshal([]byte(resultText(r)), &entries)
	} else {
		b.logf("listing the resources of session %s: %s", b.sid, resultText(r))
	}
	resources, templates := map[string]string{}, map[string]string{}
	for _, e := range entries {
		switch {
		case e.URI != "":
			if _, dup := resources[e.URI]; dup {
				continue
			}
			res := &mcp.Resource{URI: e.URI, Name: e.Name, MIMEType: e.MimeType, Description: e.Description}
			sig := sigOf(res, e.Server)
			if b.res.resources[e.URI] != sig {
				if err := catch(func() { b.srv.AddResource(res, b.readHandler(e.Server)) }); err != nil {
					b.logf("not serving resource %s of MCP server %s: %v", e.URI, e.Server, err)
					continue
				}
			}
			resources[e.URI] = sig
		case e.URITemplate != "":
			if _, dup := templates[e.URITemplate]; dup {
				continue
			}
			t := &mcp.ResourceTemplate{URITemplate: e.URITemplate, Name: e.Name, MIMEType: e.MimeType, Description: e.Description}
			sig := sigOf(t, e.Server)
			if b.res.templates[e.URITemplate] != sig {
				if err := catch(func() { b.srv.AddResourceTemplate(t, b.readHandler(e.Server)) }); err != nil {
					b.logf("not serving resource template %s of MCP server %s: %v", e.URITemplate, e.Server, err)
					continue
				}
			}
			templates[e.URITemplate] = sig
		}
	}
	var gone []string
	for uri := range b.res.resources {
		if _, ok := resources[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		b.srv.RemoveResources(gone...)
	}
	gone = nil
	for uri := range b.res.templates {
		if _, ok := templates[uri]; !ok {
			gone = append(gone, uri)
		}
	}
	if len(gone) > 0 {
		b.srv.RemoveResourceTemplates(gone...)
	}
	b.res.resources, b.res.templates = resources, templates
}

func sigOf(v any, server string) string {
	b, _ := json.Marshal(v)
	return server + " " + string(b)
}

// readHandler reads a resource of server with ReadMcpResource.
func (b *bridge) readHandler(server string) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		input, _ := json.Marshal(map[string]string{"server": server, "uri": uri})
		r, err := b.runCall(ctx, req.Session, "ReadMcpResource", "ReadMcpResource", string(input), nil, false)
		if err != nil {
			return nil, fmt.Errorf("reading %s from MCP server %s: %w", uri, server, err)
		}
		if r.GetIsError() {
			return nil, fmt.Errorf("reading %s from MCP server %s: %s", uri, server, resultText(r))
		}
		out := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{}}
		for _, blk := range r.GetContent() {
			rc := &mcp.ResourceContents{URI: blk.GetUri(), MIMEType: blk.GetMimeType()}
			if rc.URI == "" {
				rc.URI = uri
			}
			switch blk.GetType() {
			case "resource":
				rc.Text = blk.GetText()
				if rc.Text == "" && len(blk.GetData()) > 0 {
					rc.Blob = blk.GetData()
				}
			case "image", "audio":
				rc.Blob = blk.GetData()
			default: // tackle's own text, e.g. where it saved a binary resource
				rc.Text = blk.GetText()
				if rc.MIMEType == "" {
					rc.MIMEType = "text/plain"
				}
			}
			out.Contents = append(out.Contents, rc)
		}
		return out, nil
	}
}

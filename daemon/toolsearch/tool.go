package toolsearch

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"strings"
	"sync"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Name is the ToolSearch tool's model-facing name.
const Name = "ToolSearch"

// NoMatchText starts the result of a query that matches no deferred tool.
const NoMatchText = "No matching deferred tools found"

//go:embed toolsearch.md
var description string

var schema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "description": "\"select:NAME[,NAME...]\" for exact names, keywords to rank, \"+term\" to require term in the name, or \"mcp__server__\" for one server's tools"},
    "max_results": {"type": "integer", "minimum": 1, "default": 5, "description": "How many tools to return at most (default 5); select: returns every name it finds"}
  },
  "required": ["query"],
  "additionalProperties": false
}`)

// Options connects the ToolSearch tool to the daemon. Nil functions mean:
// no deferred tools, nothing to load, no servers pending or failed.
type Options struct {
	// Deferred returns the session's deferred tools, loaded or not.
	Deferred func(env tool.Env) []tool.Tool
	// Load marks tools loaded for the session (the daemon persists it).
	Load func(env tool.Env, names []string)
	// Servers returns the session's MCP servers still connecting and failed.
	Servers func(env tool.Env) (pending, failed []string)
}

// NewTool returns the ToolSearch tool. It keeps the indexes of the last few
// distinct tool sets it searched (a set is identified by its tools' names
// and descriptions), so an index is built once per tool set. It is safe for
// concurrent use.
func NewTool(o *Options) tool.Tool {
	t := &searchTool{seed: maphash.MakeSeed()}
	if o != nil {
		t.opts = *o
	}
	return t
}

// searchTool is the ToolSearch tool.
type searchTool struct {
	opts Options
	seed maphash.Seed

	mu    sync.Mutex // guards cache
	cache []cached   // most recently used first, at most cacheSize
}

// cacheSize is how many tool sets' indexes a ToolSearch tool keeps.
const cacheSize = 8

type cached struct {
	key uint64
	n   int
	ix  *Index
}

type input struct {
	Query      string `json:"query"`
	MaxResults *int   `json:"max_results"`
}

// Result is the JSON a ToolSearch call returns (as text and as Structured).
type Result struct {
	Matches            []string    `json:"matches"`
	Query              string      `json:"query"`
	TotalDeferredTools int         `json:"total_deferred_tools"`
	PendingMCPServers  []string    `json:"pending_mcp_servers,omitempty"`
	FailedMCPServers   []string    `json:"failed_mcp_servers,omitempty"`
	Tools              []ToolEntry `json:"tools"`
}

// ToolEntry is one matched tool's full definition.
type ToolEntry struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Spec implements tool.Tool.
func (*searchTool) Spec() tool.Spec {
	return tool.Spec{Name: Name, Description: description, InputSchema: schema}
}

// Attributes implements tool.Tool: read-only and concurrency-safe; loading
// changes what the model sees, never what it may do.
func (*searchTool) Attributes(json.RawMessage) tool.Attributes {
	return tool.Attributes{ReadOnly: true, ConcurrencySafe: true, Origin: tool.OriginBuiltin}
}

// Validate implements tool.Tool: the query must say something.
func (*searchTool) Validate(_ context.Context, call *tool.Call) error {
	in, err := decode(call.Input)
	if err != nil {
		return err
	}
	if strings.TrimSpace(in.Query) == "" {
		return fmt.Errorf("query is blank: give keywords (\"send slack message\"), \"select:NAME\" or \"mcp__server__\"")
	}
	return nil
}

// CheckPermission implements tool.Tool: the call touches no file, command
// or network.
func (*searchTool) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return tool.Access{Kind: tool.AccessOther, InsideWorkingDirs: true}, nil
}

// Run implements tool.Tool: it searches the session's deferred tools, has
// the matches loaded and returns their definitions.
func (t *searchTool) Run(_ context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	in, err := decode(call.Input)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	max := DefaultMaxResults
	if in.MaxResults != nil && *in.MaxResults > 0 {
		max = *in.MaxResults
	}
	var tools []tool.Tool
	if t.opts.Deferred != nil {
		tools = t.opts.Deferred(call.Env)
	}
	var pending, failed []string
	if t.opts.Servers != nil {
		pending, failed = t.opts.Servers(call.Env)
	}
	ix := t.index(tools)
	found := ix.Search(in.Query, max)

	res := Result{
		Matches:            make([]string, 0, len(found)),
		Query:              in.Query,
		TotalDeferredTools: ix.Len(),
		PendingMCPServers:  pending,
		FailedMCPServers:   failed,
		Tools:              make([]ToolEntry, 0, len(found)),
	}
	// The index may come from an earlier, equal set of tools: take the
	// definitions from this call's tools.
	current := make(map[string]tool.Tool, len(found))
	for _, f := range found {
		current[f.Spec().Name] = nil
	}
	for _, tl := range tools {
		if n := tl.Spec().Name; current[n] == nil {
			if _, want := current[n]; want {
				current[n] = tl
			}
		}
	}
	for _, f := range found {
		s := f.Spec()
		if c := current[s.Name]; c != nil {
			s = c.Spec()
		}
		res.Matches = append(res.Matches, s.Name)
		res.Tools = append(res.Tools, ToolEntry{Name: s.Name, Description: s.Description, InputSchema: schemaJSON(s.InputSchema)})
	}
	js, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("encoding the ToolSearch result: %w", err)
	}
	if len(found) == 0 {
		out := tool.TextResult(noMatch(in.Query, ix.Len(), pending, failed))
		out.Structured = js
		out.Display = "no matching deferred tools"
		return out, nil
	}
	if t.opts.Load != nil {
		t.opts.Load(call.Env, res.Matches)
	}
	out := tool.TextResult(string(js))
	out.Structured = js
	out.Display = fmt.Sprintf("loaded %d %s: %s", len(res.Matches), plural(len(res.Matches), "tool", "tools"), strings.Join(res.Matches, ", "))
	return out, nil
}

// noMatch is the text of a query without matches: what was searched and
// which servers may still bring tools.
func noMatch(query string, total int, pending, failed []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s for query %q (%d deferred %s searched).", NoMatchText, query, total, plural(total, "tool", "tools"))
	if len(pending) > 0 {
		fmt.Fprintf(&b, " %d MCP %s still connecting (%s): %s not searchable yet, try again shortly.",
			len(pending), plural(len(pending), "server is", "servers are"), strings.Join(pending, ", "), plural(len(pending), "its tools are", "their tools are"))
	}
	if len(failed) > 0 {
		fmt.Fprintf(&b, " %d MCP %s failed (%s).", len(failed), plural(len(failed), "server", "servers"), strings.Join(failed, ", "))
	}
	b.WriteString(" Try other keywords, \"+term\" to require a word in the name, \"mcp__server__\" to list a server's tools, or \"select:NAME\" for an exact name.")
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// schemaJSON returns a schema that is valid JSON: an empty one accepts any
// object, an invalid one is passed as a JSON string.
func schemaJSON(s json.RawMessage) json.RawMessage {
	if len(s) == 0 {
		return json.RawMessage(`{"type":"object"}`)
	}
	if !json.Valid(s) {
		b, _ := json.Marshal(string(s))
		return b
	}
	return s
}

// index returns the index of tools, built once per distinct set.
func (t *searchTool) index(tools []tool.Tool) *Index {
	key := Fingerprint(t.seed, tools)
	t.mu.Lock()
	for i, c := range t.cache {
		if c.key == key && c.n == len(tools) {
			copy(t.cache[1:i+1], t.cache[:i])
			t.cache[0] = c
			t.mu.Unlock()
			return c.ix
		}
	}
	t.mu.Unlock()
	ix := NewIndex(tools)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cache = append([]cached{{key: key, n: len(tools), ix: ix}}, t.cache...)
	if len(t.cache) > cacheSize {
		t.cache = t.cache[:cacheSize]
	}
	return ix
}

// Fingerprint identifies a tool set for an index: a hash of the tools'
// names and descriptions, in order.
func Fingerprint(seed maphash.Seed, tools []tool.Tool) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	for _, tl := range tools {
		s := tl.Spec()
		h.WriteString(s.Name)
		h.WriteByte(0)
		h.WriteString(s.Description)
		h.WriteByte(0)
	}
	return h.Sum64()
}

func decode(raw json.RawMessage) (input, error) {
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("the input is not valid JSON for ToolSearch (%v); send {\"query\": \"...\", \"max_results\": 5}", err)
	}
	return in, nil
}

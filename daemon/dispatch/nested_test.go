package dispatch

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// A nested call runs through the whole pipeline in the parent turn's mode:
// in plan mode an edit inside it is denied, a read runs.
func TestNestedCallGoesThroughThePipeline(t *testing.T) {
	edit := &funcTool{name: "Change", schema: `{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}`,
		access: func(*tool.Call) tool.Access { return tool.Access{Kind: tool.AccessEdit} },
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return tool.TextResult("changed"), nil
		}}
	look := &funcTool{name: "Look", schema: `{"type":"object"}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return tool.TextResult("looked"), nil
		}}
	outer := &funcTool{name: "Outer", schema: `{"type":"object"}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(ctx context.Context, c *tool.Call, _ tool.Progress) (*tool.Result, error) {
			if c.Nested == nil {
				return tool.ErrorResult("no Nested"), nil
			}
			var parts []string
			for _, n := range []struct{ name, input string }{{"Look", `{}`}, {"Change", `{"x":"y"}`}, {"Change", `{}`}} {
				r, err := c.Nested(ctx, n.name, json.RawMessage(n.input))
				if err != nil {
					return nil, err
				}
				parts = append(parts, n.name+"="+r.Display)
			}
			return tool.TextResult(strings.Join(parts, " ")), nil
		}}
	e := newEnv(t, "plan", nil, nil, outer, edit, look)
	res := e.run(Turn{Calls: []event.CallInfo{call("o", "Outer", `{}`)}})
	if got := text(res[0]); got != "Look=completed Change=denied Change=invalid" {
		t.Fatalf("nested results: %q", got)
	}
	// Each nested call is a turn of its own in the session log.
	evs, err := e.s.Events(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	turns := 0
	for _, ev := range evs {
		if ev.Type == event.TurnStarted {
			turns++
		}
	}
	if turns != 4 {
		t.Errorf("want 4 turns (the outer one and 3 nested), got %d", turns)
	}
}

// A deferred tool the session has not loaded runs when its input passes
// the schema (and is loaded); otherwise the model is told to load it. A
// call that is not the model's (a person's, an MCP client's through serve)
// gets the plain schema error and loads nothing.
func TestUnloadedDeferredTool(t *testing.T) {
	deferred := &funcTool{name: "mcp__srv__thing", schema: `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`,
		attrs: tool.Attributes{ReadOnly: true, Deferred: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return tool.TextResult("ran"), nil
		}}
	var mu sync.Mutex
	loaded := map[string]bool{}
	opts := &Options{
		Unloaded: func(_ string, t tool.Tool) bool {
			mu.Lock()
			defer mu.Unlock()
			return t.Attributes(nil).Deferred && !loaded[t.Spec().Name]
		},
		Load: func(_ string, name string) {
			mu.Lock()
			loaded[name] = true
			mu.Unlock()
		},
	}
	e := newEnv(t, "bypassPermissions", nil, opts, deferred)
	res := e.run(Turn{Calls: []event.CallInfo{call("p", "mcp__srv__thing", `{"n":"one"}`)}})
	if res[0].Status != event.StatusInvalid || strings.Contains(text(res[0]), "ToolSearch") {
		t.Fatalf("bad input from a client to an unloaded tool: %s %q", res[0].Status, text(res[0]))
	}
	res = e.run(Turn{Calls: []event.CallInfo{call("q", "mcp__srv__thing", `{"n":1}`)}})
	if res[0].Status != event.StatusCompleted || loaded["mcp__srv__thing"] {
		t.Fatalf("good input from a client to an unloaded tool: %s %q, loaded %v", res[0].Status, text(res[0]), loaded)
	}
	res = e.run(Turn{FromModel: true, Calls: []event.CallInfo{call("a", "mcp__srv__thing", `{"n":"one"}`)}})
	if res[0].Status != event.StatusInvalid || !strings.Contains(text(res[0]), `ToolSearch, query "select:mcp__srv__thing"`) {
		t.Fatalf("bad input to an unloaded tool: %s %q", res[0].Status, text(res[0]))
	}
	if loaded["mcp__srv__thing"] {
		t.Fatal("a failed call loaded the tool")
	}
	res = e.run(Turn{FromModel: true, Calls: []event.CallInfo{call("b", "mcp__srv__thing", `{"n":1}`)}})
	if res[0].Status != event.StatusCompleted || text(res[0]) != "ran" || !loaded["mcp__srv__thing"] {
		t.Fatalf("good input to an unloaded tool: %s %q, loaded %v", res[0].Status, text(res[0]), loaded)
	}
	// Loaded now: a schema error is a plain schema error.
	res = e.run(Turn{FromModel: true, Calls: []event.CallInfo{call("c", "mcp__srv__thing", `{}`)}})
	if res[0].Status != event.StatusInvalid || strings.Contains(text(res[0]), "ToolSearch") {
		t.Fatalf("bad input to a loaded tool: %q", text(res[0]))
	}
}

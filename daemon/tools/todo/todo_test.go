package todo_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/dispatch"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tools/todo"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pipeline is a real session on a real store and the real pipeline with
// TodoWrite registered.
type pipeline struct {
	t    *testing.T
	m    *session.Manager
	s    *session.Session
	d    *dispatch.Dispatcher
	turn int
}

func newPipeline(t *testing.T) *pipeline {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := session.NewManager(st, &session.Options{StateDir: dir})
	t.Cleanup(func() { m.Close() })
	wd := filepath.Join(dir, "wd")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	s, _, err := m.Create(context.Background(), session.CreateOptions{Cwd: wd})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := reg.Register(todo.Tools()...); err != nil {
		t.Fatal(err)
	}
	d := dispatch.New(reg, nil, nil, nil, nil)
	t.Cleanup(func() { d.Shutdown(context.Background()) })
	return &pipeline{t: t, m: m, s: s, d: d}
}

// run runs TodoWrite calls with these inputs as one turn.
func (p *pipeline) run(inputs ...string) []*event.Result {
	p.t.Helper()
	p.turn++
	calls := make([]event.CallInfo, len(inputs))
	for i, in := range inputs {
		calls[i] = event.CallInfo{ID: "c" + string(rune('a'+i)), Name: "TodoWrite", Input: json.RawMessage(in)}
	}
	return p.d.RunTurn(context.Background(), p.s, dispatch.Turn{Calls: calls})
}

func (p *pipeline) todos() []todo.Item {
	p.t.Helper()
	raw := p.s.Info().Todos
	if len(raw) == 0 {
		return nil
	}
	var out []todo.Item
	if err := json.Unmarshal(raw, &out); err != nil {
		p.t.Fatalf("session todos %s: %v", raw, err)
	}
	return out
}

func text(r *event.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

const threeTodos = `{"todos":[
  {"content":"Write the parser","status":"completed","activeForm":"Writing the parser"},
  {"content":"Run the tests","status":"in_progress","activeForm":"Running the tests"},
  {"content":"Update the docs","status":"pending","activeForm":"Updating the docs"}]}`

func TestTodoWriteReplacesTheList(t *testing.T) {
	p := newPipeline(t)
	res := p.run(threeTodos)
	if res[0].Status != event.StatusCompleted || res[0].IsError {
		t.Fatalf("result = %+v: %s", res[0], text(res[0]))
	}
	if text(res[0]) != todo.ResultText {
		t.Errorf("result text = %q, want %q", text(res[0]), todo.ResultText)
	}
	want := []todo.Item{
		{"Write the parser", "completed", "Writing the parser"},
		{"Run the tests", "in_progress", "Running the tests"},
		{"Update the docs", "pending", "Updating the docs"},
	}
	if diff := cmp.Diff(want, p.todos()); diff != "" {
		t.Errorf("session todos (-want +got):\n%s", diff)
	}
	if got, wantD := res[0].Display, "3 todos: 1 completed, 1 in progress, 1 pending"; got != wantD {
		t.Errorf("display = %q, want %q", got, wantD)
	}

	// A second call replaces, it does not merge; an empty list clears.
	p.run(`{"todos":[{"content":"Ship it","status":"pending","activeForm":"Shipping it"}]}`)
	if diff := cmp.Diff([]todo.Item{{"Ship it", "pending", "Shipping it"}}, p.todos()); diff != "" {
		t.Errorf("after replace (-want +got):\n%s", diff)
	}
	res = p.run(`{"todos":[]}`)
	if res[0].IsError {
		t.Fatalf("empty list: %s", text(res[0]))
	}
	if got := string(p.s.Info().Todos); got != "[]" {
		t.Errorf("todos after clearing = %s, want []", got)
	}
}

func TestTodoWriteEvents(t *testing.T) {
	p := newPipeline(t)
	p.run(threeTodos)
	evs, err := p.s.Events(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var changes []*event.Event
	endAt, changeAt := -1, -1
	for i, e := range evs {
		switch {
		case e.Session != nil && len(e.Session.Todos) > 0:
			changes = append(changes, e)
			changeAt = i
		case e.Type == event.TurnEnded:
			endAt = i
		}
	}
	if len(changes) != 1 {
		t.Fatalf("%d events carry todos, want 1", len(changes))
	}
	// The session package's event type is todos_updated (session_updated
	// until that change lands).
	if ty := changes[0].Type; ty != event.TodosUpdated && ty != event.SessionUpdated {
		t.Errorf("todos came with a %s event", ty)
	}
	var got []todo.Item
	if err := json.Unmarshal(changes[0].Session.Todos, &got); err != nil || len(got) != 3 {
		t.Errorf("event todos %s (%v)", changes[0].Session.Todos, err)
	}
	// The pipeline applies modifiers after the call's result, before the turn ends.
	if changeAt > endAt {
		t.Errorf("the todos event (#%d) comes after turn_ended (#%d): a client would see a stale list", changeAt, endAt)
	}
}

func TestTodoWriteParallelCallsApplyInOrder(t *testing.T) {
	p := newPipeline(t)
	res := p.run(
		`{"todos":[{"content":"first","status":"pending","activeForm":"firsting"}]}`,
		`{"todos":[{"content":"second","status":"completed","activeForm":"seconding"}]}`,
	)
	for _, r := range res {
		if r.IsError {
			t.Fatalf("%s: %s", r.CallID, text(r))
		}
	}
	if diff := cmp.Diff([]todo.Item{{"second", "completed", "seconding"}}, p.todos()); diff != "" {
		t.Errorf("the later call must win (-want +got):\n%s", diff)
	}
}

func TestTodoWriteBadInput(t *testing.T) {
	p := newPipeline(t)
	p.run(threeTodos)
	before := p.s.Info().Todos
	cases := []struct {
		name, input, status, mention string
	}{
		{"invalid status", `{"todos":[{"content":"a","status":"done","activeForm":"a-ing"}]}`, event.StatusInvalid, "status"},
		{"missing activeForm", `{"todos":[{"content":"a","status":"pending"}]}`, event.StatusInvalid, "activeForm"},
		{"empty content", `{"todos":[{"content":"","status":"pending","activeForm":"x"}]}`, event.StatusInvalid, "content"},
		{"blank content", `{"todos":[{"content":"   ","status":"pending","activeForm":"x"}]}`, event.StatusInvalid, "content"},
		{"no list", `{}`, event.StatusInvalid, "todos"},
		{"not a list", `{"todos":"a"}`, event.StatusInvalid, "todos"},
		{"unknown field", `{"todos":[{"content":"a","status":"pending","activeForm":"x","priority":"high"}]}`, event.StatusInvalid, "priority"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := p.run(c.input)[0]
			if res.Status != c.status || !res.IsError {
				t.Errorf("status %s is_error %v, want %s is_error", res.Status, res.IsError, c.status)
			}
			if !strings.Contains(text(res), c.mention) {
				t.Errorf("error does not mention %q:\n%s", c.mention, text(res))
			}
			if got := p.s.Info().Todos; string(got) != string(before) {
				t.Errorf("a refused call changed the list to %s", got)
			}
		})
	}
}

func TestTodoWriteAttributes(t *testing.T) {
	tl := todo.Tools()[0]
	if tl.Spec().Name != "TodoWrite" || !strings.Contains(tl.Spec().Description, "activeForm") {
		t.Errorf("spec = %q, description lacks activeForm", tl.Spec().Name)
	}
	a := tl.Attributes(json.RawMessage(threeTodos))
	if !a.ReadOnly || !a.ConcurrencySafe || a.Destructive || a.Interactive {
		t.Errorf("attributes = %+v, want read-only and concurrency-safe", a)
	}
	acc, err := tl.CheckPermission(context.Background(), &tool.Call{Input: json.RawMessage(threeTodos)})
	if err != nil || len(acc.Paths) != 0 || acc.Kind == tool.AccessExec || acc.Kind == tool.AccessNetwork {
		t.Errorf("access = %+v, %v: want none", acc, err)
	}
}

func TestSummary(t *testing.T) {
	for _, c := range []struct {
		items []todo.Item
		want  string
	}{
		{nil, "no todos"},
		{[]todo.Item{{"a", "pending", "a-ing"}}, "1 todo: 0 completed, 0 in progress, 1 pending"},
		{[]todo.Item{{"a", "completed", "x"}, {"b", "completed", "x"}, {"c", "in_progress", "x"}}, "3 todos: 2 completed, 1 in progress, 0 pending"},
	} {
		if got := todo.Summary(c.items); got != c.want {
			t.Errorf("Summary(%v) = %q, want %q", c.items, got, c.want)
		}
	}
}

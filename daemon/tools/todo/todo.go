// Package todo implements TodoWrite, the tool with which the model keeps the
// session's task list.
//
// The tool holds no state: the list belongs to the session. Each call
// replaces the whole list through the Result's Modifier
// (tool.Mutator.SetTodos), which the pipeline applies after the call — after
// the whole run for a parallel run, in call order — and the session persists
// it and tells every attached client with a todos_updated event. The input
// schema does the checking (statuses are an enum), so an invalid list is a
// schema error from the pipeline and never reaches the session.
package todo

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Statuses of a todo, in the order a task goes through them.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
)

// ResultText is what the model is told after a successful TodoWrite, as
// Claude Code tells it.
const ResultText = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable"

//go:embed todowrite.md
var description string

var schema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The updated todo list",
      "items": {
        "type": "object",
        "properties": {
          "content": {"type": "string", "minLength": 1, "description": "What needs to be done, in the imperative (\"Run tests\")"},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
          "activeForm": {"type": "string", "minLength": 1, "description": "The present continuous form shown while the task runs (\"Running tests\")"}
        },
        "required": ["content", "status", "activeForm"],
        "additionalProperties": false
      }
    }
  },
  "required": ["todos"],
  "additionalProperties": false
}`)

// Item is one entry of a todo list, in the JSON form the model sends and
// the session stores.
type Item struct {
	Content    string `json:"content"`
	Status     string `json:"status"`
	ActiveForm string `json:"activeForm"`
}

// Tools returns the todo tools: TodoWrite.
func Tools() []tool.Tool { return []tool.Tool{&TodoWrite{}} }

// TodoWrite replaces the session's todo list. It is stateless and safe for
// concurrent use.
type TodoWrite struct{}

type input struct {
	Todos []Item `json:"todos"`
}

// Spec implements tool.Tool.
func (*TodoWrite) Spec() tool.Spec {
	return tool.Spec{Name: "TodoWrite", Description: description, InputSchema: schema}
}

// Attributes implements tool.Tool: read-only and concurrency-safe (it
// changes only session state, through its Modifier).
func (*TodoWrite) Attributes(json.RawMessage) tool.Attributes {
	return tool.Attributes{ReadOnly: true, ConcurrencySafe: true, Origin: tool.OriginBuiltin}
}

// Validate implements tool.Tool. The schema has checked everything but
// whitespace-only texts.
func (*TodoWrite) Validate(_ context.Context, call *tool.Call) error {
	in, err := decode(call.Input)
	if err != nil {
		return err
	}
	for i, t := range in.Todos {
		if strings.TrimSpace(t.Content) == "" {
			return fmt.Errorf("todos[%d].content is blank: describe the task in the imperative (\"Run tests\")", i)
		}
		if strings.TrimSpace(t.ActiveForm) == "" {
			return fmt.Errorf("todos[%d].activeForm is blank: give the task's present continuous form (\"Running tests\")", i)
		}
	}
	return nil
}

// CheckPermission implements tool.Tool: the call touches no file, command
// or network.
func (*TodoWrite) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return tool.Access{Kind: tool.AccessOther, InsideWorkingDirs: true}, nil
}

// Run implements tool.Tool: the result tells the model the list was
// replaced; the Modifier replaces it in the session.
func (*TodoWrite) Run(_ context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	in, err := decode(call.Input)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	list, err := json.Marshal(in.Todos)
	if err != nil {
		return nil, fmt.Errorf("encoding the todo list: %w", err)
	}
	res := tool.TextResult(ResultText)
	res.Display = Summary(in.Todos)
	res.Modifier = func(m tool.Mutator) { m.SetTodos(list) }
	return res, nil
}

// decode reads the input; a missing list is an empty one.
func decode(raw json.RawMessage) (input, error) {
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("the input is not valid JSON for TodoWrite (%v); send {\"todos\": [{\"content\", \"status\", \"activeForm\"}, ...]}", err)
	}
	if in.Todos == nil {
		in.Todos = []Item{}
	}
	return in, nil
}

// Summary describes a todo list in one line for clients: "3 todos: 1
// completed, 1 in progress, 1 pending" ("no todos" when empty).
func Summary(items []Item) string {
	if len(items) == 0 {
		return "no todos"
	}
	n := map[string]int{}
	for _, t := range items {
		n[t.Status]++
	}
	noun := "todos"
	if len(items) == 1 {
		noun = "todo"
	}
	return fmt.Sprintf("%d %s: %d completed, %d in progress, %d pending",
		len(items), noun, n[StatusCompleted], n[StatusInProgress], n[StatusPending])
}

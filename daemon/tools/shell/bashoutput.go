package shell

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed bashoutput.md
var bashOutputDescription string

var bashOutputSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "bash_id": {"type": "string", "minLength": 1, "description": "The ID of the background shell to read output from"},
    "task_id": {"type": "string", "minLength": 1, "description": "Another name for bash_id"},
    "filter": {"type": "string", "description": "Optional regular expression (RE2 syntax): only output lines matching it are returned; the other lines are consumed and will not be returned again"},
    "block": {"type": "boolean", "description": "Wait for the shell to finish (at most timeout ms) before reading. Default false (true when called as TaskOutput)"},
    "timeout": {"type": "number", "minimum": 0, "description": "With block, the longest wait in milliseconds (default 30000, max 600000)"}
  },
  "oneOf": [{"required": ["bash_id"]}, {"required": ["task_id"]}],
  "additionalProperties": false
}`)

// BashOutput is the BashOutput tool (alias TaskOutput): the new output of a
// background shell of the session and its state. It is read-only and
// concurrency-safe (reads of one shell are serialised).
type BashOutput struct{ s *Shells }

type bashOutputInput struct {
	BashID  string   `json:"bash_id"`
	TaskID  string   `json:"task_id"`
	Filter  *string  `json:"filter"`
	Block   *bool    `json:"block"`
	Timeout *float64 `json:"timeout"`
}

func (in *bashOutputInput) id() string {
	if in.BashID != "" {
		return in.BashID
	}
	return in.TaskID
}

func decodeBashOutput(input json.RawMessage) (bashOutputInput, *regexp.Regexp, error) {
	var in bashOutputInput
	if err := json.Unmarshal(input, &in); err != nil {
		return in, nil, fmt.Errorf("the input is not valid JSON for BashOutput (%v); send {\"bash_id\": \"bash_1\"}", err)
	}
	if (in.BashID == "") == (in.TaskID == "") {
		return in, nil, errors.New("give exactly one of bash_id and task_id: the id Bash returned for a background command (e.g. \"bash_1\")")
	}
	var re *regexp.Regexp
	if in.Filter != nil && *in.Filter != "" {
		var err error
		if re, err = regexp.Compile(*in.Filter); err != nil {
			return in, nil, fmt.Errorf("the filter is not a valid regular expression (RE2 syntax): %v", err)
		}
	}
	return in, re, nil
}

// Spec implements tool.Tool.
func (t *BashOutput) Spec() tool.Spec {
	return tool.Spec{Name: "BashOutput", Aliases: []string{"TaskOutput"}, Description: bashOutputDescription, InputSchema: bashOutputSchema}
}

// Attributes implements tool.Tool.
func (t *BashOutput) Attributes(json.RawMessage) tool.Attributes {
	return tool.Attributes{ReadOnly: true, ConcurrencySafe: true, Origin: tool.OriginBuiltin, MaxResultChars: 1 << 30}
}

// Validate implements tool.Tool: one id, of a shell of this session; a valid filter.
func (t *BashOutput) Validate(ctx context.Context, call *tool.Call) error {
	in, _, err := decodeBashOutput(call.Input)
	if err != nil {
		return err
	}
	return t.s.checkID(call.Env.SessionID(), in.id())
}

// checkID is the error for an unknown shell id, naming the session's
// shells. A task of Options.Tasks (a sub-agent) passes.
func (s *Shells) checkID(sessionID, id string) error {
	if s.isTask(sessionID, id) {
		return nil
	}
	if _, err := s.lookup(sessionID, id); err != nil {
		return fmt.Errorf("no background shell %q in this session. %s", id, describeShells(s.ids(sessionID)))
	}
	return nil
}

// CheckPermission implements tool.Tool: it reads the session's own shell output.
func (t *BashOutput) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	return tool.Access{Kind: tool.AccessOther}, nil
}

// Run implements tool.Tool.
func (t *BashOutput) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	in, re, err := decodeBashOutput(call.Input)
	if err != nil {
		return nil, err
	}
	block := call.Name == "TaskOutput"
	if in.Block != nil {
		block = *in.Block
	}
	if t.s.isTask(call.Env.SessionID(), in.id()) {
		wait, _ := clampDuration(in.Timeout, 30*time.Second, t.s.opts.MaxTimeout, "timeout")
		text, err := t.s.opts.Tasks.Output(ctx, call.Env.SessionID(), in.id(), block, wait)
		if err != nil {
			return tool.ErrorResult(err.Error()), nil
		}
		return &tool.Result{Content: []tool.Content{tool.Text(text)}, Display: in.id()}, nil
	}
	sh, err := t.s.lookup(call.Env.SessionID(), in.id())
	if err != nil {
		return tool.ErrorResult(t.s.checkID(call.Env.SessionID(), in.id()).Error()), nil
	}
	if block {
		wait, _ := clampDuration(in.Timeout, 30*time.Second, t.s.opts.MaxTimeout, "timeout")
		timer := time.NewTimer(wait)
		select {
		case <-sh.ended:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	text, info, err := sh.readNew(re, newLimits(t.s.opts.MaxOutputChars))
	if err != nil {
		return nil, err
	}
	var sb strings.Builder
	sb.WriteString(statusText(info, sh.reason()))
	text = strings.TrimRight(text, "\n")
	switch {
	case text != "":
		sb.WriteString("<output>\n" + text + "\n</output>")
	case re != nil:
		sb.WriteString("<output>(no new output matching the filter)</output>")
	default:
		sb.WriteString("<output>(no new output)</output>")
	}
	return &tool.Result{Content: []tool.Content{tool.Text(sb.String())}, Display: fmt.Sprintf("%s: %s", info.ID, info.Status)}, nil
}

// isTask reports whether id is one of the session's other tasks.
func (s *Shells) isTask(sessionID, id string) bool {
	return s.opts.Tasks != nil && s.opts.Tasks.Has(sessionID, id)
}

package shell

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed killshell.md
var killShellDescription string

var killShellSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "shell_id": {"type": "string", "minLength": 1, "description": "The ID of the background shell to kill"},
    "task_id": {"type": "string", "minLength": 1, "description": "Another name for shell_id"}
  },
  "oneOf": [{"required": ["shell_id"]}, {"required": ["task_id"]}],
  "additionalProperties": false
}`)

// KillShell is the KillShell tool (aliases TaskStop, KillBash): it kills a
// background shell of the session with its whole process group.
type KillShell struct{ s *Shells }

type killShellInput struct {
	ShellID string `json:"shell_id"`
	TaskID  string `json:"task_id"`
}

func decodeKillShell(input json.RawMessage) (string, error) {
	var in killShellInput
	if err := json.Unmarshal(input, &in); err != nil {
		return "", fmt.Errorf("the input is not valid JSON for KillShell (%v); send {\"shell_id\": \"bash_1\"}", err)
	}
	if (in.ShellID == "") == (in.TaskID == "") {
		return "", errors.New("give exactly one of shell_id and task_id: the id Bash returned for a background command (e.g. \"bash_1\")")
	}
	if in.ShellID != "" {
		return in.ShellID, nil
	}
	return in.TaskID, nil
}

// Spec implements tool.Tool.
func (t *KillShell) Spec() tool.Spec {
	return tool.Spec{Name: "KillShell", Aliases: []string{"TaskStop", "KillBash"}, Description: killShellDescription, InputSchema: killShellSchema}
}

// Attributes implements tool.Tool: concurrency-safe, not read-only.
func (t *KillShell) Attributes(json.RawMessage) tool.Attributes {
	return tool.Attributes{ConcurrencySafe: true, Origin: tool.OriginBuiltin}
}

// Validate implements tool.Tool: one id, of a shell of this session.
func (t *KillShell) Validate(ctx context.Context, call *tool.Call) error {
	id, err := decodeKillShell(call.Input)
	if err != nil {
		return err
	}
	return t.s.checkID(call.Env.SessionID(), id)
}

// CheckPermission implements tool.Tool: it stops a process the session started.
func (t *KillShell) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	id, err := decodeKillShell(call.Input)
	if err != nil {
		return tool.Access{}, err
	}
	acc := tool.Access{Kind: tool.AccessOther}
	if sh, err := t.s.lookup(call.Env.SessionID(), id); err == nil {
		acc.Command = sh.command
	}
	return acc, nil
}

// Run implements tool.Tool.
func (t *KillShell) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	id, err := decodeKillShell(call.Input)
	if err != nil {
		return nil, err
	}
	sid := call.Env.SessionID()
	if t.s.isTask(sid, id) {
		msg, err := t.s.opts.Tasks.Stop(sid, id)
		if err != nil {
			return tool.ErrorResult(err.Error()), nil
		}
		return &tool.Result{Content: []tool.Content{tool.Text(msg)}, Display: id}, nil
	}
	sh, err := t.s.lookup(sid, id)
	if err != nil {
		return tool.ErrorResult(t.s.checkID(sid, id).Error()), nil
	}
	wasRunning := sh.info().Status == statusRunning
	info, err := t.s.Kill(sid, id)
	if err != nil {
		return nil, err
	}
	var msg string
	if !wasRunning || info.Status != statusKilled {
		msg = fmt.Sprintf("Shell %s had already ended (%s, exit code %d): nothing to kill.\n", id, info.Status, info.ExitCode)
	} else {
		msg = fmt.Sprintf("Killed shell %s (%s) with every process it started.\n", id, info.Command)
	}
	return &tool.Result{Content: []tool.Content{tool.Text(msg + statusText(info, sh.reason()))}, Display: fmt.Sprintf("%s: %s", id, info.Status)}, nil
}

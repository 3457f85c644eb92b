package fs

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed multiedit.md
var multiEditDescription string

var multiEditSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
    "edits": {
      "type": "array",
      "minItems": 1,
      "description": "Edits applied in order, each to the result of the one before; all succeed or none is applied",
      "items": {
        "type": "object",
        "properties": {
          "old_string": {"type": "string", "description": "The text to replace"},
          "new_string": {"type": "string", "description": "The text to replace it with"},
          "replace_all": {"type": "boolean", "default": false, "description": "Replace all occurrences of old_string (default false)"}
        },
        "required": ["old_string", "new_string"],
        "additionalProperties": false
      }
    }
  },
  "required": ["file_path", "edits"],
  "additionalProperties": false
}`)

// MultiEdit is the MultiEdit tool: several Edit replacements in one file,
// applied in order on the content in memory and written all at once, or not
// at all.
type MultiEdit struct{ opts *Options }

type multiEditInput struct {
	FilePath string `json:"file_path"`
	Edits    []struct {
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	} `json:"edits"`
}

// Spec implements tool.Tool.
func (t *MultiEdit) Spec() tool.Spec {
	return tool.Spec{Name: "MultiEdit", Description: multiEditDescription, InputSchema: multiEditSchema}
}

// Attributes implements tool.Tool.
func (t *MultiEdit) Attributes(json.RawMessage) tool.Attributes { return editAttributes(false) }

// Validate implements tool.Tool: the read-state rules, and every edit applies.
func (t *MultiEdit) Validate(ctx context.Context, call *tool.Call) error {
	_, _, _, err := t.plan(ctx, call)
	return err
}

// CheckPermission implements tool.Tool.
func (t *MultiEdit) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	var in multiEditInput
	if err := decodeCall(call, &in); err != nil {
		return tool.Access{}, err
	}
	return accessFor(call, tool.AccessEdit, in.FilePath)
}

// Run implements tool.Tool.
func (t *MultiEdit) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	c, data, n, err := t.plan(ctx, call)
	if err != nil {
		return runError(err)
	}
	if !c.exists {
		return t.opts.commit(ctx, c, data, fmt.Sprintf("File created successfully at: %s (%d edits applied).", c.path, n), false)
	}
	return t.opts.commit(ctx, c, data, fmt.Sprintf("Applied %d edits to %s.", n, c.path), true)
}

func (t *MultiEdit) plan(ctx context.Context, call *tool.Call) (*change, []byte, int, error) {
	var in multiEditInput
	if err := decodeCall(call, &in); err != nil {
		return nil, nil, 0, err
	}
	if _, err := absPath(call.Env, in.FilePath); err != nil {
		return nil, nil, 0, err
	}
	if len(in.Edits) == 0 {
		return nil, nil, 0, fmt.Errorf("edits is empty: give at least one {old_string, new_string}")
	}
	for i, e := range in.Edits {
		if e.OldString == e.NewString {
			return nil, nil, 0, fmt.Errorf("edit %d of %d: %s", i+1, len(in.Edits), msgNoChange)
		}
	}
	c, err := t.opts.load(ctx, call.Env, in.FilePath, loadOpts{
		mayCreate: in.Edits[0].OldString == "",
		missing:   "To create a new file use Write, or make the first edit's old_string empty.",
	})
	if err != nil {
		return nil, nil, 0, err
	}
	text := c.text()
	for i, e := range in.Edits {
		if text, err = applyEdit(c, text, e.OldString, e.NewString, e.ReplaceAll); err != nil {
			after := ""
			if i > 0 {
				after = fmt.Sprintf(" (applied to the text as edits 1-%d left it)", i)
			}
			return nil, nil, 0, fmt.Errorf("edit %d of %d%s: %w. No edit was applied", i+1, len(in.Edits), after, err)
		}
	}
	return c, c.encode(text), len(in.Edits), nil
}

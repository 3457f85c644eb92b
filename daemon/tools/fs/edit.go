package fs

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed edit.md
var editDescription string

var editSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
    "old_string": {"type": "string", "description": "The text to replace"},
    "new_string": {"type": "string", "description": "The text to replace it with (must be different from old_string)"},
    "replace_all": {"type": "boolean", "default": false, "description": "Replace all occurrences of old_string (default false)"}
  },
  "required": ["file_path", "old_string", "new_string"],
  "additionalProperties": false
}`)

// Edit is the Edit tool: exact string replacement in a file read before.
type Edit struct{ opts *Options }

type editInput struct {
	FilePath   string `json:"file_path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// Spec implements tool.Tool.
func (t *Edit) Spec() tool.Spec {
	return tool.Spec{Name: "Edit", Description: editDescription, InputSchema: editSchema}
}

// Attributes implements tool.Tool.
func (t *Edit) Attributes(json.RawMessage) tool.Attributes {
	return editAttributes(false)
}

func editAttributes(destructive bool) tool.Attributes {
	return tool.Attributes{Destructive: destructive, Origin: tool.OriginBuiltin, MaxResultChars: editMaxResultChars}
}

// Validate implements tool.Tool: the read-state rules, and old_string
// occurs in the file exactly once (or at all, with replace_all).
func (t *Edit) Validate(ctx context.Context, call *tool.Call) error {
	_, _, err := t.plan(ctx, call)
	return err
}

// CheckPermission implements tool.Tool.
func (t *Edit) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	var in editInput
	if err := decodeCall(call, &in); err != nil {
		return tool.Access{}, err
	}
	return accessFor(call, tool.AccessEdit, in.FilePath)
}

// Run implements tool.Tool. It repeats the checks of Validate: the file may
// have changed while the call waited for permission.
func (t *Edit) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	c, data, err := t.plan(ctx, call)
	if err != nil {
		return runError(err)
	}
	if !c.exists {
		return t.opts.commit(ctx, c, data, "File created successfully at: "+c.path, false)
	}
	return t.opts.commit(ctx, c, data, fmt.Sprintf("The file %s has been updated.", c.path), true)
}

// plan loads the file and computes its new content.
func (t *Edit) plan(ctx context.Context, call *tool.Call) (*change, []byte, error) {
	var in editInput
	if err := decodeCall(call, &in); err != nil {
		return nil, nil, err
	}
	if _, err := absPath(call.Env, in.FilePath); err != nil {
		return nil, nil, err
	}
	if in.OldString == in.NewString {
		return nil, nil, errors.New(msgNoChange)
	}
	c, err := t.opts.load(ctx, call.Env, in.FilePath, loadOpts{
		mayCreate: in.OldString == "",
		missing:   "To create a new file use Write (or Edit with an empty old_string).",
	})
	if err != nil {
		return nil, nil, err
	}
	out, err := applyEdit(c, c.text(), in.OldString, in.NewString, in.ReplaceAll)
	if err != nil {
		return nil, nil, err
	}
	return c, c.encode(out), nil
}

// runError turns a planning error into an error result, and a cancellation
// into a returned error.
func runError(err error) (*tool.Result, error) {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	return tool.ErrorResult(err.Error()), nil
}

const msgNoChange = "No changes to make: old_string and new_string are exactly the same."

// applyEdit replaces old with new in text (both in "\n" form for a CRLF
// file). An empty old fills a new or empty file.
func applyEdit(c *change, text, old, new string, all bool) (string, error) {
	if old == new {
		return "", errors.New(msgNoChange)
	}
	if c.crlf {
		old, new = toLF(old), toLF(new)
	}
	if old == "" {
		if text != "" {
			return "", fmt.Errorf("old_string is empty, but %s already has content. An empty old_string only creates a new file or fills an empty one; "+
				"to change this file give the exact text to replace as old_string (or use Write to replace all of it)", c.path)
		}
		return new, nil
	}
	n := strings.Count(text, old)
	switch {
	case n == 0:
		return "", fmt.Errorf("String to replace not found in file.\nString: %s\n"+
			"Read %s again to see its current text, and copy old_string exactly, including whitespace and indentation (without the line-number prefix of Read's output)",
			quoteShort(old), c.path)
	case n > 1 && !all:
		return "", fmt.Errorf("Found %d matches of the string to replace, but replace_all is false. To replace all matches, set replace_all to true. "+
			"To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: %s", n, quoteShort(old))
	case all:
		return strings.ReplaceAll(text, old, new), nil
	default:
		return strings.Replace(text, old, new, 1), nil
	}
}

// quoteShort shows a string in an error message, cut if long.
func quoteShort(s string) string {
	const max = 500
	if len(s) > max {
		return cutLine(s, max) + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

package fs

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tools/fs/internal/udiff"
)

//go:embed replacelines.md
var replaceLinesDescription string

var replaceLinesSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The absolute path to the file to modify"},
    "start_line": {"type": "integer", "minimum": 1, "description": "The first line to replace (1-based, as numbered by Read)"},
    "end_line": {"type": "integer", "minimum": 1, "description": "The last line to replace (inclusive)"},
    "new_content": {"type": "string", "description": "The text that replaces lines start_line through end_line; empty deletes them"}
  },
  "required": ["file_path", "start_line", "end_line", "new_content"],
  "additionalProperties": false
}`)

// ReplaceLines is the ReplaceLines tool: replaces a range of lines, numbered
// as Read shows them, in a file read before.
type ReplaceLines struct{ opts *Options }

type replaceLinesInput struct {
	FilePath   string `json:"file_path"`
	StartLine  int    `json:"start_line"`
	EndLine    int    `json:"end_line"`
	NewContent string `json:"new_content"`
}

// Spec implements tool.Tool.
func (t *ReplaceLines) Spec() tool.Spec {
	return tool.Spec{Name: "ReplaceLines", Description: replaceLinesDescription, InputSchema: replaceLinesSchema}
}

// Attributes implements tool.Tool.
func (t *ReplaceLines) Attributes(json.RawMessage) tool.Attributes { return editAttributes(false) }

// Validate implements tool.Tool: the read-state rules, and the range lies
// inside the file.
func (t *ReplaceLines) Validate(ctx context.Context, call *tool.Call) error {
	_, _, err := t.plan(ctx, call)
	return err
}

// CheckPermission implements tool.Tool.
func (t *ReplaceLines) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	var in replaceLinesInput
	if err := decodeCall(call, &in); err != nil {
		return tool.Access{}, err
	}
	return accessFor(call, tool.AccessEdit, in.FilePath)
}

// Run implements tool.Tool.
func (t *ReplaceLines) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	var in replaceLinesInput
	c, data, err := t.plan(ctx, call)
	if err != nil {
		return runError(err)
	}
	_ = decodeCall(call, &in)
	return t.opts.commit(ctx, c, data, fmt.Sprintf("Replaced lines %d-%d of %s.", in.StartLine, in.EndLine, c.path), true)
}

func (t *ReplaceLines) plan(ctx context.Context, call *tool.Call) (*change, []byte, error) {
	var in replaceLinesInput
	if err := decodeCall(call, &in); err != nil {
		return nil, nil, err
	}
	if _, err := absPath(call.Env, in.FilePath); err != nil {
		return nil, nil, err
	}
	if in.StartLine < 1 || in.EndLine < in.StartLine {
		return nil, nil, fmt.Errorf("invalid line range %d-%d: start_line must be 1 or more and end_line (inclusive) at least start_line. "+
			"To replace the single line N give start_line=N and end_line=N", in.StartLine, in.EndLine)
	}
	c, err := t.opts.load(ctx, call.Env, in.FilePath, loadOpts{missing: "To create a new file use Write."})
	if err != nil {
		return nil, nil, err
	}
	lines := udiff.Split(c.text())
	if len(lines) == 0 {
		return nil, nil, fmt.Errorf("%s is empty (0 lines), so there are no lines to replace. Use Write to give it content", c.path)
	}
	if in.EndLine > len(lines) {
		return nil, nil, fmt.Errorf("line range %d-%d is outside the file: %s has %d lines. Read the file to check the line numbers, then give a range within 1-%d",
			in.StartLine, in.EndLine, c.path, len(lines), len(lines))
	}
	before := strings.Join(lines[:in.StartLine-1], "")
	after := strings.Join(lines[in.EndLine:], "")
	lastEOL := strings.HasSuffix(lines[in.EndLine-1], "\n")
	nc := toLF(in.NewContent)
	switch {
	case nc == "" && !lastEOL && before != "":
		// Deleting the last lines of a file without a final newline: the
		// line before them now ends the file, also without one.
		before = strings.TrimSuffix(before, "\n")
	case nc != "" && lastEOL && !strings.HasSuffix(nc, "\n"):
		nc += "\n"
	case nc != "" && !lastEOL:
		nc = strings.TrimSuffix(nc, "\n")
	}
	out := before + nc + after
	if out == c.text() {
		return nil, nil, fmt.Errorf("no changes to make: new_content is the same as lines %d-%d of %s", in.StartLine, in.EndLine, c.path)
	}
	return c, c.encode(out), nil
}

package fs

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed write.md
var writeDescription string

var writeSchema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The absolute path to the file to write (must be absolute, not relative)"},
    "content": {"type": "string", "description": "The content to write to the file"}
  },
  "required": ["file_path", "content"],
  "additionalProperties": false
}`)

// Write is the Write tool: creates a file, or replaces one read in full.
type Write struct{ opts *Options }

type writeInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

// Spec implements tool.Tool.
func (t *Write) Spec() tool.Spec {
	return tool.Spec{Name: "Write", Description: writeDescription, InputSchema: writeSchema}
}

// Attributes implements tool.Tool. Overwriting an existing file is
// destructive; creating one is not.
func (t *Write) Attributes(input json.RawMessage) tool.Attributes {
	var in writeInput
	destructive := false
	if json.Unmarshal(input, &in) == nil && filepath.IsAbs(in.FilePath) {
		_, err := os.Lstat(in.FilePath)
		destructive = err == nil
	}
	return editAttributes(destructive)
}

// Validate implements tool.Tool: the read-state rules (a full read) for an
// existing file.
func (t *Write) Validate(ctx context.Context, call *tool.Call) error {
	_, _, err := t.plan(ctx, call)
	return err
}

// CheckPermission implements tool.Tool.
func (t *Write) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	var in writeInput
	if err := decodeCall(call, &in); err != nil {
		return tool.Access{}, err
	}
	return accessFor(call, tool.AccessEdit, in.FilePath)
}

// Run implements tool.Tool.
func (t *Write) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	c, data, err := t.plan(ctx, call)
	if err != nil {
		return runError(err)
	}
	if !c.exists {
		return t.opts.commit(ctx, c, data, "File created successfully at: "+c.path, false)
	}
	if bytes.Equal(c.old, data) {
		return &tool.Result{
			Content: []tool.Content{tool.Text(fmt.Sprintf("The file %s already has exactly this content; nothing was written.", c.path))},
			Display: "No changes",
		}, nil
	}
	return t.opts.commit(ctx, c, data, fmt.Sprintf("The file %s has been updated successfully.", c.path), false)
}

// plan loads an existing file and computes the bytes to write. Content in
// "\n" form written over a CRLF file gets "\r\n" line breaks.
func (t *Write) plan(ctx context.Context, call *tool.Call) (*change, []byte, error) {
	var in writeInput
	if err := decodeCall(call, &in); err != nil {
		return nil, nil, err
	}
	c, err := t.opts.load(ctx, call.Env, in.FilePath, loadOpts{mayCreate: true, needFull: true})
	if err != nil {
		return nil, nil, err
	}
	if c.crlf && !strings.Contains(in.Content, "\r\n") {
		return c, []byte(toCRLF(in.Content)), nil
	}
	return c, []byte(in.Content), nil
}

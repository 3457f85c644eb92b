package fs

import (
	"bytes"
	"context"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tools/fs/internal/udiff"
)

// Render implements tool.Renderer: the unified diff the call would make,
// computed as Run computes it, without writing.
func (t *Edit) Render(ctx context.Context, call *tool.Call) (string, error) {
	c, data, err := t.plan(ctx, call)
	if err != nil {
		return "", err
	}
	return t.opts.previewDiff(c, data), nil
}

// Render implements tool.Renderer: the unified diff of all the edits,
// without writing.
func (t *MultiEdit) Render(ctx context.Context, call *tool.Call) (string, error) {
	c, data, _, err := t.plan(ctx, call)
	if err != nil {
		return "", err
	}
	return t.opts.previewDiff(c, data), nil
}

// Render implements tool.Renderer: the unified diff of the replaced
// lines, without writing.
func (t *ReplaceLines) Render(ctx context.Context, call *tool.Call) (string, error) {
	c, data, err := t.plan(ctx, call)
	if err != nil {
		return "", err
	}
	return t.opts.previewDiff(c, data), nil
}

// Render implements tool.Renderer: the unified diff from the file as it is
// (or /dev/null for a new file) to the content, without writing.
func (t *Write) Render(ctx context.Context, call *tool.Call) (string, error) {
	c, data, err := t.plan(ctx, call)
	if err != nil {
		return "", err
	}
	if c.exists && bytes.Equal(c.old, data) {
		return "No changes: " + c.path + " already has this content", nil
	}
	return t.opts.previewDiff(c, data), nil
}

// previewDiff is the diff commit would show as the result's Display for
// writing data over c, capped as it is.
func (o *Options) previewDiff(c *change, data []byte) string {
	oldName := c.path
	if !c.exists {
		oldName = "/dev/null"
	}
	hunks := udiff.Hunks(udiff.Diff(udiff.Split(string(c.old)), udiff.Split(string(data))), o.DiffContext)
	return capDisplay(udiff.Render(oldName, c.path, hunks), o.MaxDisplayBytes)
}

package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// maxPreviewBytes caps a permission request's preview; a longer one is cut
// at a line boundary with a note.
const maxPreviewBytes = 64 << 10

// preview is what a permission request shows people of call: its tool's
// Render (tool.Renderer) when the tool has one and it succeeds, else the
// input as indented JSON (with the reason Render gave, if any). It never
// fails: a preview that cannot be made must not keep a person from being
// asked.
func (d *Dispatcher) preview(ctx context.Context, cr *callRun, call *tool.Call) string {
	var out, why string
	if r, ok := cr.tool.(tool.Renderer); ok {
		err := d.guard("tool Render", cr, func() error {
			var e error
			out, e = r.Render(ctx, call)
			return e
		})
		if err != nil {
			out, why = "", err.Error()
		}
	}
	if out == "" {
		out = indentedInput(call.Input)
		if why != "" {
			out = fmt.Sprintf("(no preview: %s)\n%s", why, out)
		}
	}
	return capPreview(strings.ToValidUTF8(out, "\uFFFD"))
}

// indentedInput is input as indented JSON, or as it is when it is not
// JSON.
func indentedInput(input json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Indent(&b, input, "", "  "); err != nil {
		return string(input) + "\n"
	}
	b.WriteByte('\n')
	return b.String()
}

// capPreview cuts s over maxPreviewBytes at a line boundary, with a note.
func capPreview(s string) string {
	if len(s) <= maxPreviewBytes {
		return s
	}
	cut := strings.LastIndexByte(s[:maxPreviewBytes], '\n') + 1
	if cut == 0 {
		cut = maxPreviewBytes
	}
	return s[:cut] + fmt.Sprintf("… (preview cut: %d more bytes)\n", len(s)-cut)
}

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Render implements tool.Renderer: the server, the tool's name on it and
// the arguments it would be sent, as indented JSON.
func (t *mcpTool) Render(_ context.Context, call *tool.Call) (string, error) {
	var in bytes.Buffer
	if err := json.Indent(&in, arguments(call.Input), "", "  "); err != nil {
		return "", fmt.Errorf("the input is not JSON: %v", err)
	}
	return fmt.Sprintf("server: %s\ntool:   %s\ninput:\n%s\n", t.server, t.name, in.String()), nil
}

package shell

import (
	"context"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Render implements tool.Renderer: the command as the model wrote it
// (every line; the first after "$ ", the others indented to match), its
// description, the directory it runs in, and whether it runs in the
// background or asks to leave the sandbox.
func (t *Bash) Render(_ context.Context, call *tool.Call) (string, error) {
	in, err := decodeBash(call.Input)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if d := strings.TrimSpace(in.Description); d != "" {
		fmt.Fprintf(&b, "# %s\n", d)
	}
	for i, line := range strings.Split(strings.TrimRight(in.Command, "\n"), "\n") {
		if i == 0 {
			b.WriteString("$ ")
		} else {
			b.WriteString("  ")
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "in %s", call.Env.Cwd())
	var notes []string
	if in.RunInBackground {
		notes = append(notes, "in the background")
	}
	if in.Timeout != nil {
		notes = append(notes, fmt.Sprintf("timeout %g ms", *in.Timeout))
	}
	if in.DisableSandbox {
		notes = append(notes, "asks to run outside the sandbox")
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, ", "))
	}
	b.WriteByte('\n')
	return b.String(), nil
}

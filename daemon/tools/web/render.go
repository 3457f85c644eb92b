package web

import (
	"context"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Render implements tool.Renderer: the URL to be fetched (after the
// upgrade to https), its domain (what a WebFetch(domain:…) rule names)
// and the question asked of the page.
func (f *Fetch) Render(_ context.Context, call *tool.Call) (string, error) {
	in, u, err := f.plan(call)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "url:    %s\ndomain: %s\n", u.String(), domainOf(u))
	if in.Offset > 0 {
		fmt.Fprintf(&b, "offset: %d\n", in.Offset)
	}
	if p := strings.TrimSpace(in.Prompt); p != "" {
		fmt.Fprintf(&b, "prompt: %s\n", strings.ReplaceAll(p, "\n", "\n        "))
	}
	return b.String(), nil
}

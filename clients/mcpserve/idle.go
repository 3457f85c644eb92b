package mcpserve

import "github.com/tackle-agent/tackle/internal/exetrim"

// trimmer returns memory to the system once no request has come for a
// whole check period (exetrim.WhenIdle): one serve process runs per MCP
// client window, for as long as the window is open, mostly waiting.
func (b *bridge) trimmer() {
	defer b.wg.Done()
	exetrim.WhenIdle(b.ctx, exetrim.IdleCheck, b.requests.Load, func(err error) {
		b.logf("idle: could not unmap the executable's pages: %v", err)
	})
}

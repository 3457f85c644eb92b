package mcpserve

import (
	"runtime/debug"
	"time"

	"github.com/tackle-agent/tackle/internal/exetrim"
)

// idleCheck is how often serve looks whether it has gone idle.
const idleCheck = 5 * time.Second

// trimmer returns memory to the system once no request has come for a
// whole check period after some (and once after start-up): the heap's free
// pages, and the pages of the binary that only earlier work touched
// (exetrim). One serve process runs per MCP client window, for as long as
// the window is open, mostly waiting.
func (b *bridge) trimmer() {
	defer b.wg.Done()
	t := time.NewTicker(idleCheck)
	defer t.Stop()
	trimmed, last := int64(-1), int64(-1)
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		n := b.requests.Load()
		if n == last && n != trimmed {
			debug.FreeOSMemory()
			if _, err := exetrim.Drop(); err != nil {
				b.logf("idle: could not unmap the executable's pages: %v", err)
			}
			trimmed = n
		}
		last = n
	}
}

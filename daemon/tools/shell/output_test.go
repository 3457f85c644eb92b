package shell

import (
	"strings"
	"testing"
)

// A first read larger than the in-memory budget (a loaded machine hands the
// whole pipe buffer over at once) must still give the result its head.
func TestCollectorHeadFromAnOversizedFirstChunk(t *testing.T) {
	lim := newLimits(1000) // memMax 4000, head and tail 400 each
	var sb strings.Builder
	for i := 0; sb.Len() < 3*lim.memMax; i++ {
		sb.WriteString("line ")
		sb.WriteString(strings.Repeat("x", i%7))
		sb.WriteString("\n")
	}
	all := sb.String()
	c := newCollector(lim, nil, nil)
	c.write([]byte(all)) // one chunk, three times memMax
	out := c.finish()
	head := all[:200]
	if !strings.Contains(out.Text, "\n\n"+head) {
		t.Errorf("the head is missing: %.300q", out.Text)
	}
	if !strings.HasSuffix(out.Text, all[len(all)-200:]) {
		t.Errorf("the tail is missing: %q", out.Text[max(0, len(out.Text)-300):])
	}
	if !strings.Contains(out.Text, "bytes omitted") {
		t.Errorf("no omission note: %.300q", out.Text)
	}
}

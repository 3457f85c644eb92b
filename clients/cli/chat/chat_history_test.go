package chat

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/clients/cli/internal/cmdutil"
)

// The history file: the lines of one directory, a broken line skipped,
// cut down past its size limit without losing the newest.
func TestChatHistoryFile(t *testing.T) {
	dir := t.TempDir()
	a := &cmdutil.App{Environ: []string{"XDG_STATE_HOME=" + dir}}
	h, other := newChatHistory(a, "/src/a"), newChatHistory(a, "/src/b")
	h.add("first")
	other.add("elsewhere")
	h.add("second")
	f, err := os.OpenFile(h.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("{not json\n")
	f.Close()
	h.add("third")
	if got := h.load(); !slices.Equal(got, []string{"first", "second", "third"}) {
		t.Errorf("load: %q", got)
	}
	big := strings.Repeat("x", 4096)
	for range chatHistoryMax/4096 + 10 {
		other.add(big)
	}
	h.add("newest")
	if fi, err := os.Stat(h.path); err != nil || fi.Size() > chatHistoryMax+8192 {
		t.Fatalf("the history file after many lines: %v, %v", fi, err)
	}
	if got := h.load(); len(got) == 0 || got[len(got)-1] != "newest" {
		t.Errorf("load after the cut: %q", got)
	}
	if got := newChatHistory((&cmdutil.App{Environ: []string{"HOME="}}), "/src/a").load(); got != nil {
		t.Errorf("no state directory: %q", got)
	}
}

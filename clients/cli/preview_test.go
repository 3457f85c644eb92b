package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/clients/cli/internal/render"
	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// TestPermissionPreview: a call waiting for approval shows what it would
// do, as the daemon renders it: an edit's diff (nothing written), a
// command as written and its directory, a URL and its domain. The
// notices are golden.
func TestPermissionPreview(t *testing.T) {
	d := daemontest.Start(t)
	dir, file := project(t)
	sid := strings.TrimSpace(tackle(t, d, "", "sessions", "new", "--cwd", dir).mustCode(t, 0).stdout)
	tackle(t, d, "", "call", "Read", `{"file_path":"`+file+`"}`, "--session", sid).mustCode(t, 0)
	newFile := filepath.Join(dir, "sub", "new.txt")
	cases := []struct{ tool, input string }{
		{"Edit", `{"file_path":"` + file + `","old_string":"world","new_string":"there\nworld"}`},
		{"MultiEdit", `{"file_path":"` + file + `","edits":[{"old_string":"hello","new_string":"Hello"},{"old_string":"world","new_string":"World"}]}`},
		{"ReplaceLines", `{"file_path":"` + file + `","start_line":2,"end_line":2,"new_content":"planet\n"}`},
		{"Write", `{"file_path":"` + newFile + `","content":"one\ntwo\n"}`},
		{"Bash", `{"command":"mkdir -p build\ncd build && touch out.txt","description":"Make the build directory"}`},
		{"WebFetch", `{"url":"http://example.com/docs?q=1","prompt":"What does it say?"}`},
	}
	var b strings.Builder
	for _, c := range cases {
		r := tackle(t, d, "", "call", c.tool, c.input, "--session", sid, "--permission-timeout", "1").mustCode(t, 1)
		notice, _, _ := strings.Cut(r.stderr, "tackle: denied")
		fmt.Fprintf(&b, "$ tackle call %s\n%s\n", c.tool, notice)
		if strings.Contains(notice, `\n`) || strings.Contains(notice, `{"`) {
			t.Errorf("%s: the preview has escaped JSON:\n%s", c.tool, notice)
		}
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != "hello\nworld\n" {
		t.Errorf("a preview changed %s: %q, %v", file, got, err)
	}
	if _, err := os.Stat(newFile); err == nil {
		t.Errorf("a preview wrote %s", newFile)
	}
	got := regexp.MustCompile(`until \d\d:\d\d:\d\d \(request [^:]+:`).ReplaceAllString(b.String(), "until HH:MM:SS (request ID:")
	got = strings.ReplaceAll(got, dir, "$DIR")
	golden(t, "permission_preview", got)
}

// TestPermissionPreviewTerminal: on a terminal the prompt shows the diff
// in colour, and the answer applies the change it showed.
func TestPermissionPreviewTerminal(t *testing.T) {
	d := daemontest.Start(t)
	dir, file := project(t)
	sid := strings.TrimSpace(tackle(t, d, "", "sessions", "new", "--cwd", dir).mustCode(t, 0).stdout)
	tackle(t, d, "", "call", "Read", `{"file_path":"`+file+`"}`, "--session", sid).mustCode(t, 0)
	tc := startTermChat(t, env(d), "call", "Edit", `{"file_path":"`+file+`","old_string":"world","new_string":"there"}`, "--session", sid)
	tc.out.waitFor(t, "Answer [y/a/n/f, default n]:")
	for _, want := range []string{render.AnsiRed + "-world" + render.AnsiReset, render.AnsiGreen + "+there" + render.AnsiReset, render.AnsiCyan + "@@ -1,2 +1,2 @@" + render.AnsiReset} {
		if !strings.Contains(tc.out.String(), want) {
			t.Errorf("the prompt lacks %q:\n%q", want, tc.out.String())
		}
	}
	tc.keys("y\r")
	if err := tc.wait(); err != nil {
		t.Errorf("tackle call: %v\n%s", err, tc.out.String())
	}
	if got, _ := os.ReadFile(file); string(got) != "hello\nthere\n" {
		t.Errorf("after allowing the Edit: %q", got)
	}
}

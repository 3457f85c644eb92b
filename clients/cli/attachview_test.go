package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
)

// TestAttachForPeople: attach shows one line per call — tool, main
// argument, status, duration, a short result (+A −D for an edit, the rule
// of a denial, the first line of output) — and -v every event. The lines
// are golden.
func TestAttachForPeople(t *testing.T) {
	d := daemontest.Start(t)
	dir, file := project(t)
	user := filepath.Join(d.Options().ConfigHome, "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(user), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, []byte(`{"permissions":{"deny":["Bash(rm *)"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	id := newSession(t, d, dir, "bypassPermissions")
	out, errb := newLineBuffer(), newLineBuffer()
	stop := attachBackground(t, d, out, errb, "--session", id)
	verbose, verr := newLineBuffer(), newLineBuffer()
	stopVerbose := attachBackground(t, d, verbose, verr, "--session", id, "-v")
	out.waitFor(t, "session "+id)
	verbose.waitFor(t, "session "+id)

	tackle(t, d, "", "call", "Read", `{"file_path":"`+file+`"}`, "--session", id).mustCode(t, 0)
	tackle(t, d, "", "call", "Edit", `{"file_path":"`+file+`","old_string":"world","new_string":"there\nworld"}`, "--session", id).mustCode(t, 0)
	tackle(t, d, "", "call", "Bash", `{"command":"echo first; echo second"}`, "--session", id).mustCode(t, 0)
	tackle(t, d, "", "call", "Bash", `{"command":"echo first; echo second; exit 3"}`, "--session", id).mustCode(t, 1)
	tackle(t, d, "", "call", "Bash", `{"command":"rm hello.txt"}`, "--session", id).mustCode(t, 1)
	out.waitFor(t, "rm hello.txt")
	verbose.waitFor(t, "turn_ended")
	if code := stop(); code != 0 {
		t.Errorf("attach exit code %d: %s", code, errb.String())
	}
	if code := stopVerbose(); code != 0 {
		t.Errorf("attach -v exit code %d: %s", code, verr.String())
	}
	if !strings.Contains(verbose.String(), "call_state Read(") || !strings.Contains(verbose.String(), "turn_ended") {
		t.Errorf("attach -v does not show every event:\n%s", verbose.String())
	}
	_, events, _ := strings.Cut(out.String(), "\n")
	for strings.HasPrefix(events, "  ") { // the snapshot's lines
		_, events, _ = strings.Cut(events, "\n")
	}
	got := regexp.MustCompile(`\d+\.\ds`).ReplaceAllString(events, "N.Ns")
	got = strings.ReplaceAll(got, dir, "$DIR")
	golden(t, "attach_people", got)
}

// TestAttachTerminalUpdatesInPlace: on a terminal a call's line follows
// its state and ends as its result line, rewritten in place.
func TestAttachTerminalUpdatesInPlace(t *testing.T) {
	d := daemontest.Start(t)
	dir, file := project(t)
	id := newSession(t, d, dir, "bypassPermissions")
	tc := startTermChat(t, env(d), "attach", "--session", id, "--observer")
	tc.out.waitFor(t, "session "+id)
	tackle(t, d, "", "call", "Read", `{"file_path":"`+file+`"}`, "--session", id).mustCode(t, 0)
	tc.out.waitFor(t, "✓ Read "+file+" · completed")
	got := tc.out.String()
	if !strings.Contains(got, "● Read "+file+" · queued") || !strings.Contains(got, "\x1b[1A\r\x1b[K✓ Read "+file+" · completed") {
		t.Errorf("the Read's line is not rewritten in place:\n%q", got)
	}
	if n := strings.Count(got, "\r\n") - strings.Count(got, "\x1b[1A"); n != 3 { // the snapshot's two, the call's one
		t.Errorf("%d lines for one call:\n%q", n, got)
	}
	tc.keys("\x03")
	if err := tc.wait(); err != nil {
		t.Errorf("attach: %v", err)
	}
}

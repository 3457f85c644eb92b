package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An autostarted daemon keeps its crash trace in its log, and the next
// one says in `tackle status` that the one before did not stop cleanly —
// with the trace's first line, or "killed" when there is none; after a
// clean stop it says nothing.
func TestPreviousDaemonExit(t *testing.T) {
	e := newEnv(t)
	status := func() statusJSON {
		t.Helper()
		var st statusJSON
		if r := e.json(&st, "", "status", "--json"); r.code != 0 {
			t.Fatalf("tackle status: %+v", r)
		}
		return st
	}
	waitGone := func(pid int) {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); syscall.Kill(pid, 0) == nil; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("daemon %d still runs", pid)
			}
		}
	}
	first := status()
	if first.PreviousExit != "" {
		t.Fatalf("a first daemon with a previous exit: %q", first.PreviousExit)
	}
	// SIGQUIT: the Go runtime writes a goroutine dump to stderr and exits.
	if err := syscall.Kill(first.PID, syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	waitGone(first.PID)
	second := status()
	if second.PID == first.PID || !strings.Contains(second.PreviousExit, "did not stop cleanly") || !strings.Contains(second.PreviousExit, "SIGQUIT") {
		t.Fatalf("after SIGQUIT: %+v", second)
	}
	log, err := os.ReadFile(filepath.Join(e.root, "state", "tackle", "tackled.log"))
	if err != nil || !strings.Contains(string(log), "goroutine ") {
		t.Fatalf("the crash trace is not in the log (%v)", err)
	}
	if r := e.tackle("", "status"); !strings.Contains(r.stdout, "did not stop cleanly") {
		t.Errorf("tackle status text: %q", r.stdout)
	}

	// SIGKILL leaves no trace: "killed".
	if err := syscall.Kill(second.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(second.PID)
	third := status()
	if !strings.Contains(third.PreviousExit, "killed") {
		t.Fatalf("after SIGKILL: %+v", third)
	}
	// A clean stop: the next daemon has nothing to say.
	if r := e.tackle("", "daemon", "stop"); r.code != 0 {
		t.Fatalf("daemon stop: %+v", r)
	}
	waitGone(third.PID)
	if fourth := status(); fourth.PreviousExit != "" {
		t.Fatalf("after a clean stop: %q", fourth.PreviousExit)
	}
}

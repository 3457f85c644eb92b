package integration

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// vmHWM is a process's peak resident memory, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// A command printing 1 GB through the real daemon: the result holds head,
// tail and the file with the whole output, and the daemon's peak memory
// grows by at most 64 MB.
func TestBashGigabyteThroughDaemon(t *testing.T) {
	e := newEnv(t)
	var st statusJSON
	e.json(&st, "", "status")
	// Warm the daemon up with a small call first, so the baseline includes
	// what any Bash call costs.
	var res resultJSON
	e.json(&res, "", "call", "Bash", `{"command":"echo warm"}`, "--permission-mode", "bypassPermissions")
	before := vmHWM(t, st.PID)

	const size = 1 << 30
	cmd := fmt.Sprintf(`head -c %d /dev/zero | tr '\0' 'a'; echo; echo THE-END`, size)
	r := e.json(&res, "", "call", "Bash", mustJSON(map[string]any{"command": cmd}), "--permission-mode", "bypassPermissions")
	if r.code != 0 || res.Status != "completed" {
		t.Fatalf("1 GB Bash: code %d, status %s, %.300s", r.code, res.Status, res.text())
	}
	out := res.text()
	if len(out) > 100_000 || !strings.Contains(out, "THE-END") || !strings.Contains(out, "\naaaa") {
		t.Fatalf("result is %d chars; want head and tail only: %.200s … %.200s", len(out), out, out[max(0, len(out)-200):])
	}
	var path string
	for _, f := range strings.Fields(out) {
		if strings.HasPrefix(f, "/") && strings.Contains(f, "outputs") {
			path = strings.Trim(f, ".,:()")
		}
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("the result names no readable output file (%q): %v", path, err)
	}
	if fi.Size() < size {
		t.Errorf("output file %s holds %d bytes, want ≥ %d", path, fi.Size(), size)
	}
	grown := vmHWM(t, st.PID) - before
	t.Logf("daemon peak RSS grew by %.1f MB", float64(grown)/(1<<20))
	if grown > 64<<20 {
		t.Errorf("daemon peak RSS grew by %d MB, want ≤ 64", grown>>20)
	}
}

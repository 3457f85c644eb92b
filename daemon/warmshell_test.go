package daemon_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon"
	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// shellAge runs a command that prints how long ago its shell started
// (from /proc, at clock-tick resolution).
func shellAge(t *testing.T, s *stream, mode string) time.Duration {
	t.Helper()
	tr := s.call("Bash", bash(`echo $(cut -d' ' -f22 /proc/$$/stat) $(cut -d' ' -f1 /proc/uptime) $(getconf CLK_TCK)`), mode)
	f := strings.Fields(resultText(tr.result))
	if tr.result.GetStatus() != "completed" || len(f) != 3 {
		t.Fatalf("Bash: %s %s", tr.result.GetStatus(), resultText(tr.result))
	}
	start, _ := strconv.ParseFloat(f[0], 64)
	up, _ := strconv.ParseFloat(f[1], 64)
	tck, _ := strconv.ParseFloat(f[2], 64)
	return time.Duration((up - start/tck) * float64(time.Second))
}

// A session's next command runs in a bash started before it came (a warm
// shell), outside the sandbox and in it alike; the first command of a
// session starts its own.
func TestBashRunsInWarmShells(t *testing.T) {
	check := func(t *testing.T, s *stream, mode string) {
		if age := shellAge(t, s, mode); age > 150*time.Millisecond {
			t.Errorf("the first command's shell started %s before it", age)
		}
		for i := range 3 {
			time.Sleep(400 * time.Millisecond)
			if age := shellAge(t, s, mode); age < 300*time.Millisecond {
				t.Errorf("command %d: its shell started %s before it, not while the session waited", i+2, age)
			}
		}
	}
	t.Run("plain", func(t *testing.T) {
		d := daemontest.Start(t)
		s := attach(t, d, newSession(t, d, t.TempDir(), ""))
		check(t, s, "bypassPermissions")
	})
	t.Run("off", func(t *testing.T) {
		d := daemontest.Start(t, daemontest.WithOptions(func(o *daemon.Options) { o.NoWarmShells = true }))
		s := attach(t, d, newSession(t, d, t.TempDir(), ""))
		for i := range 3 {
			time.Sleep(400 * time.Millisecond)
			if age := shellAge(t, s, "bypassPermissions"); age > 150*time.Millisecond {
				t.Errorf("command %d: with warm shells off its shell started %s before it", i+1, age)
			}
		}
	})
	t.Run("sandboxed", func(t *testing.T) {
		d, s, dir := sandboxedSession(t, `{"enabled": true}`)
		check(t, s, "")
		// A new policy (a deny rule for a file that exists): the warm
		// shells of the old sandbox are not used, and the old sandbox ends.
		old := execServers(t)
		writeFile(t, filepath.Join(dir, "other.txt"), "hidden\n")
		writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"),
			`{"sandbox": {"enabled": true}, "permissions": {"deny": ["Read(./other.txt)"]}}`)
		if age := shellAge(t, s, ""); age > 150*time.Millisecond {
			t.Errorf("the first command of a new policy ran in a shell started %s before it", age)
		}
		waitOnlyNewSandbox(t, old[0])
	})
}

// The small files a sandboxed shell shares with the daemon (in the
// session's sandbox scratch directory, on disk) are reused, not one per
// command, and go when the session is deleted.
func TestSandboxScratchFilesReused(t *testing.T) {
	needSandbox(t)
	d := daemontest.Start(t)
	writeFile(t, filepath.Join(d.Options().ConfigHome, "tackle", "settings.json"), `{"sandbox": {"enabled": true}}`)
	id := newSession(t, d, t.TempDir(), "")
	s := attach(t, d, id)
	files := func() []string {
		m, _ := filepath.Glob(filepath.Join(d.Options().StateDir, "sandbox", id, "tmp", "tackle-shell-*"))
		return m
	}
	for i := range 20 {
		if tr := s.call("Bash", bash("echo $((1+1))"), ""); resultText(tr.result) != "2" {
			t.Fatalf("command %d: %s", i, resultText(tr.result))
		}
	}
	// Two warm shells' scripts, and the files kept for reuse.
	if n := len(files()); n == 0 || n > 8+2 {
		t.Fatalf("%d scratch files after 20 commands: %v", n, files())
	}
	if _, err := d.Client().DeleteSession(context.Background(), &tacklev1.DeleteSessionRequest{Id: id}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(files()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("scratch files left after the session was deleted: %v", files())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

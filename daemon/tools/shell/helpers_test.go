package shell

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newEnv is a session rooted in a fresh directory, with a client
// environment of its own (HOME is the root's parent).
func newEnv(t testing.TB) *tooltest.Env {
	t.Helper()
	e := tooltest.New(t)
	e.ID = "s_test"
	e.Vars = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + filepath.Dir(e.Root), "LANG=C.UTF-8"}
	return e
}

// outcome is what the pipeline would make of one call.
type outcome = tooltest.Outcome

// harness is a Shells with its tools by name and alias.
type harness struct {
	s     *Shells
	tools map[string]tool.Tool

	changed chan event.ShellInfo // every OnChange, in order
}

func newHarness(t testing.TB, opts *Options) *harness {
	t.Helper()
	h := &harness{tools: map[string]tool.Tool{}, changed: make(chan event.ShellInfo, 100)}
	o := Options{KillGrace: 300 * time.Millisecond}
	if opts != nil {
		o = *opts
	}
	o.OnChange = func(sid string, info event.ShellInfo) { h.changed <- info }
	h.s = New(&o)
	t.Cleanup(h.s.Close)
	for _, tl := range h.s.Tools() {
		sp := tl.Spec()
		for _, n := range append([]string{sp.Name}, sp.Aliases...) {
			h.tools[n] = tl
		}
	}
	return h
}

// call runs a tool the way the pipeline does: schema, Validate,
// CheckPermission, Run (collecting progress), then the Modifier.
func (h *harness) call(t testing.TB, env *tooltest.Env, name string, input any) outcome {
	return h.callCtx(context.Background(), t, env, name, input)
}

func (h *harness) callCtx(ctx context.Context, t testing.TB, env *tooltest.Env, name string, input any) outcome {
	t.Helper()
	return tooltest.Call(ctx, t, h.tools, env, name, input, &tooltest.CallOptions{ID: "toolu_1", KeepPermissionErr: true})
}

// bash runs a foreground command and fails the test if it does not run.
func (h *harness) bash(t testing.TB, env *tooltest.Env, input map[string]any) outcome {
	t.Helper()
	o := h.call(t, env, "Bash", input)
	if o.SchemaErr != nil || o.ValidateErr != nil || o.RunErr != nil {
		t.Fatalf("Bash %v: %s", input, o.Text())
	}
	return o
}

// firstLineInt parses the first line of s as an integer (a pid printed by the command).
func firstLineInt(t testing.TB, s string) int {
	t.Helper()
	line, _, _ := strings.Cut(s, "\n")
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("first line of %q is not a number: %v", s, err)
	}
	return n
}

// groupGone reports whether no process is left in process group pgid.
func groupGone(pgid int) bool {
	return unix.Kill(-pgid, 0) == unix.ESRCH
}

// waitChange waits for the next OnChange call and returns it.
func (h *harness) waitChange(t testing.TB) event.ShellInfo {
	t.Helper()
	select {
	case info := <-h.changed:
		return info
	case <-time.After(30 * time.Second):
		t.Fatal("no OnChange within 30 s")
	}
	return event.ShellInfo{}
}

// resetPeakRSS resets the process's peak RSS (VmHWM) and returns the current RSS.
func resetPeakRSS(t testing.TB) int64 {
	t.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	return procStatus(t, "VmRSS:")
}

// peakRSS returns the process's peak RSS since resetPeakRSS.
func peakRSS(t testing.TB) int64 { return procStatus(t, "VmHWM:") }

func procStatus(t testing.TB, field string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

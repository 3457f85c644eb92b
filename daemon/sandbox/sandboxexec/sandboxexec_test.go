package sandboxexec

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// serveEnv makes the test binary the server (as tackle-sandbox-exec).
const serveEnv = "TACKLE_TEST_SANDBOXEXEC_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) != "" {
		os.Exit(Serve(os.Args[len(os.Args)-2:]))
	}
	goleak.VerifyTestMain(m)
}

// startServer starts the test binary as the server inside a real
// bubblewrap sandbox (as the daemon does: its own user, mount and PID
// namespaces, CAP_SYS_ADMIN and CAP_SETPCAP granted) and returns its client.
func startServer(t testing.TB) (*Client, string) {
	t.Helper()
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap is not installed")
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(pair[0]), "ours"), os.NewFile(uintptr(pair[1]), "theirs")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	cmd := exec.Command(bwrap, "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-user",
		"--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--bind", work, work,
		"--chdir", "/", "--", self, "-test.run=^$", FDFlag, "3")
	cmd.Env = append(os.Environ(), serveEnv+"=1")
	cmd.ExtraFiles = []*os.File{theirs}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	theirs.Close()
	nc, err := net.FileConn(ours)
	ours.Close()
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(nc.(*net.UnixConn), 10*time.Second)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the server did not exit cleanly: %v", err)
		}
	})
	return c, work
}

// run runs script in the sandbox and returns its output and wait status.
func run(t *testing.T, c *Client, dir, script string) (string, syscall.WaitStatus) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	k, err := c.Run([]string{"/bin/bash", "-c", script}, []string{"PATH=/usr/bin:/bin"}, dir, out)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-k.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not end")
	}
	ws, err := k.Status()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b), ws
}

func TestRunsCommandsWithoutCapabilities(t *testing.T) {
	c, work := startServer(t)
	out, ws := run(t, c, work, `echo pid=$$; pwd; grep -E '^Cap(Eff|Prm|Bnd|Amb|Inh)' /proc/self/status; exit 3`)
	if ws.ExitStatus() != 3 {
		t.Fatalf("exit status %d, want 3; output:\n%s", ws.ExitStatus(), out)
	}
	if !strings.Contains(out, "pid=1\n") || !strings.Contains(out, "\n"+work+"\n") {
		t.Fatalf("the shell is not its PID namespace's init in /tmp:\n%s", out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n")[2:] {
		if f := strings.Fields(line); len(f) != 2 || strings.Trim(f[1], "0") != "" {
			t.Errorf("a command holds capabilities: %q", line)
		}
	}
	// Without capabilities it cannot undo a mount of the sandbox.
	if out, ws := run(t, c, work, `umount `+work+` 2>&1 || echo refused`); !strings.Contains(out, "refused") || ws.ExitStatus() != 0 {
		t.Fatalf("umount inside the sandbox: %q", out)
	}
}

func TestLeftoversDieWithTheShell(t *testing.T) {
	c, work := startServer(t)
	// A daemon that leaves the process group and the session, then the
	// shell exits: the namespace ends, the daemon with it.
	out, _ := run(t, c, work, `setsid bash -c 'sleep 300' </dev/null >/dev/null 2>&1 & sleep 0.2; pgrep -x sleep >/dev/null && echo running`)
	if !strings.Contains(out, "running") {
		t.Fatalf("the daemon did not start: %q", out)
	}
	if out, _ := run(t, c, work, `pgrep -x sleep || echo none`); !strings.Contains(out, "none") {
		t.Fatalf("a process of an ended command is still running in the sandbox: %q", out)
	}
}

func TestSignalAndConcurrentCommands(t *testing.T) {
	c, _ := startServer(t)
	dir := t.TempDir()
	var calls []*Call
	for i := range 3 {
		out, err := os.Create(filepath.Join(dir, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		k, err := c.Run([]string{"/bin/bash", "-c", "trap 'exit 143' TERM; echo up; sleep 300"}, nil, "/", out)
		out.Close()
		if err != nil {
			t.Fatal(err)
		}
		calls = append(calls, k)
	}
	if c.Busy() != 3 {
		t.Fatalf("busy %d, want 3", c.Busy())
	}
	time.Sleep(100 * time.Millisecond) // the traps are set
	if err := calls[0].Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := calls[1].Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"exit status 143", "signal: killed"} {
		select {
		case <-calls[i].Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("call %d did not end on its signal", i)
		}
		ws, _ := calls[i].Status()
		got := "exit status " + strconv.Itoa(ws.ExitStatus())
		if ws.Signaled() {
			got = "signal: killed"
		}
		if got != want {
			t.Errorf("call %d: %s, want %s", i, got, want)
		}
	}
	select {
	case <-calls[2].Done():
		t.Fatal("a command not signalled ended")
	default:
	}
	// Closing the client ends the server, and the command still running
	// with it.
	c.Close()
	select {
	case <-calls[2].Done():
		if _, err := calls[2].Status(); err == nil {
			t.Fatal("a command cut off by the server's end reports no error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call was not ended with its server")
	}
	if _, err := c.Run([]string{"/bin/true"}, nil, "/", os.Stdout); err == nil {
		t.Fatal("a run after the server ended did not fail")
	}
}

func TestBadRequests(t *testing.T) {
	c, work := startServer(t)
	startErr := func(argv ...string) error {
		t.Helper()
		k, err := c.Run(argv, nil, "/", os.Stdout)
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-k.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: no answer", argv)
		}
		_, err = k.Status()
		var se *StartError
		if !errors.As(err, &se) {
			t.Fatalf("%v: %v, want a StartError", argv, err)
		}
		return err
	}
	if err := startErr("bash"); !strings.Contains(err.Error(), "absolute") {
		t.Fatalf("a relative command path: %v", err)
	}
	if err := startErr("/nonexistent/bin"); !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("a missing command: %v", err)
	}
	if c.Busy() != 0 {
		t.Fatalf("busy %d after failed starts", c.Busy())
	}
	if out, ws := run(t, c, work, "echo still serving"); ws.ExitStatus() != 0 || out != "still serving\n" {
		t.Fatalf("after the bad requests: %q %v", out, ws)
	}
}

// BenchmarkRunTrue is a `bash -c true` started by the server in its
// sandbox, from the request to the exit status; compare with
// BenchmarkDirectTrue (the same started here).
func BenchmarkRunTrue(b *testing.B) {
	c, work := startServer(b)
	out, err := os.Create(filepath.Join(work, "out"))
	if err != nil {
		b.Fatal(err)
	}
	defer out.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k, err := c.Run([]string{"/bin/bash", "-c", "true"}, []string{"PATH=/usr/bin:/bin"}, work, out)
		if err != nil {
			b.Fatal(err)
		}
		<-k.Done()
	}
}

// BenchmarkDirectTrue is BenchmarkRunTrue's baseline.
func BenchmarkDirectTrue(b *testing.B) {
	for i := 0; i < b.N; i++ {
		cmd := exec.Command("/bin/bash", "-c", "true")
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// A command gets the extra descriptors of its run from 3 on (a warm
// shell waits on one), and nothing else; more than maxExtra is refused.
func TestRunsWithExtraDescriptors(t *testing.T) {
	c, work := startServer(t)
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.Run([]string{"/bin/bash", "-c", `read -r line <&3; echo "got $line"; exec 3<&-; ls /proc/self/fd | sort -n | tr '\n' ' '`},
		[]string{"PATH=/usr/bin:/bin"}, work, out, r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("hello\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	select {
	case <-k.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the command did not end")
	}
	if ws, err := k.Status(); err != nil || ws.ExitStatus() != 0 {
		t.Fatalf("status %v, %v", ws, err)
	}
	b, _ := os.ReadFile(out.Name())
	// ls sees 0–2 and its own directory's descriptor (3, once the
	// shell closed its 3), nothing more.
	if got := string(b); got != "got hello\n0 1 2 3 " {
		t.Fatalf("output %q: want the line read from descriptor 3, then descriptors 0–3 only", got)
	}
	many := []*os.File{out, out, out, out, out}
	if _, err := c.Run([]string{"/bin/true"}, nil, "/", out, many...); err == nil {
		t.Fatal("a run with more than maxExtra descriptors was not refused")
	}
}

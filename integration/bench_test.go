package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/tackle-agent/tackle/daemon/socket"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// echoEnv makes the test binary serve a bare gRPC health service (the echo
// baseline) on the socket it names, until SIGTERM.
const echoEnv = "TACKLE_BENCH_ECHO_SOCKET"

func serveEcho(path string) int {
	ln, err := socket.Listen(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// tackled's flow-control windows (daemon/server), so that the floor
	// is measured with the same transport settings.
	srv := grpc.NewServer(grpc.InitialWindowSize(1<<20), grpc.InitialConnWindowSize(1<<20))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sig; srv.Stop() }()
	_ = srv.Serve(ln)
	return 0
}

func dialUnix(b *testing.B, path string) *grpc.ClientConn {
	b.Helper()
	// The flow-control windows of tackle's clients (clients/client), for
	// the echo's client as for tackled's.
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithInitialWindowSize(1<<20), grpc.WithInitialConnWindowSize(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	return conn
}

// startProcess starts cmd and waits until its socket accepts gRPC calls.
func startProcess(b *testing.B, cmd *exec.Cmd, path string) {
	b.Helper()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	hc := healthpb.NewHealthClient(dialUnix(b, path))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.WaitForReady(true)); err != nil {
		b.Fatalf("waiting for %s: %v", cmd.Path, err)
	}
}

func reportP50(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkEchoProcess is the baseline: a bare gRPC unary call (health
// Check) to a server in another process over a unix socket.
func BenchmarkEchoProcess(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "echo.sock")
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), echoEnv+"="+path)
	startProcess(b, cmd, path)
	hc := healthpb.NewHealthClient(dialUnix(b, path))
	ctx := context.Background()
	durs := make([]time.Duration, 0, b.N)
	cpu0 := procCPU(cmd.Process.Pid)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	reportP50(b, durs)
	b.ReportMetric(float64((procCPU(cmd.Process.Pid)-cpu0).Microseconds())/float64(b.N), "server-cpu-µs/op")
}

// BenchmarkReadProcess is a Read of a small file through the real tackled
// in another process: RunBatch on an open Attach stream → socket → pipeline
// (validation, permission, handler, event log) → the call_result event.
func BenchmarkReadProcess(b *testing.B) {
	benchCallProcess(b, func(root string) (string, string, string) {
		file := filepath.Join(root, "small.txt")
		if err := os.WriteFile(file, []byte(strings.Repeat("a small file for the benchmark\n", 20)), 0o644); err != nil {
			b.Fatal(err)
		}
		return "Read", fmt.Sprintf(`{"file_path":%q}`, file), ""
	})
}

// BenchmarkBashTrueProcess is a Bash call of `true` through the real
// tackled in another process (bypassPermissions, so nobody is asked): the
// whole pipeline plus starting /bin/bash in its own process group. Compare
// with BenchmarkBashTrueDirect.
func BenchmarkBashTrueProcess(b *testing.B) {
	benchCallProcess(b, func(string) (string, string, string) {
		return "Bash", `{"command":"true"}`, "bypassPermissions"
	})
}

// BenchmarkBashTrueSandboxed: the same call with the Bash sandbox on
// (bubblewrap: mount, network and pid namespaces), allowed because it is
// sandboxed.
func BenchmarkBashTrueSandboxed(b *testing.B) {
	benchCallProcess(b, func(root string) (string, string, string) {
		cfg := filepath.Join(root, "config", "tackle", "settings.json")
		if err := os.MkdirAll(filepath.Dir(cfg), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(cfg, []byte(`{"sandbox": {"enabled": true}}`), 0o644); err != nil {
			b.Fatal(err)
		}
		return "Bash", `{"command":"true"}`, ""
	})
}

// BenchmarkBashTrueDirect is the baseline of BenchmarkBashTrueProcess:
// `/bin/bash -c true` run directly from this process.
func BenchmarkBashTrueDirect(b *testing.B) {
	durs := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := exec.Command("/bin/bash", "-c", "true").Run(); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	reportP50(b, durs)
}

// daemonProfileEnv names a file for the CPU profile of the tackled that
// benchCallProcess starts (the last benchmark run's profile stays there):
//
//	TACKLE_BENCH_DAEMON_CPUPROFILE=/tmp/d.prof go test -run '^$' -bench MCPEchoStdioTackle ./integration/
const daemonProfileEnv = "TACKLE_BENCH_DAEMON_CPUPROFILE"

// altDaemonEnv names another tackled binary for benchCallProcess to run,
// to compare two builds in alternating runs on a noisy machine:
//
//	TACKLE_BENCH_TACKLED=/tmp/old/tackled go test -run '^$' -bench ReadProcess ./integration/
const altDaemonEnv = "TACKLE_BENCH_TACKLED"

// daemonMemProfileEnv is the same for a heap profile (its alloc_space
// sample is what the calls allocated).
const daemonMemProfileEnv = "TACKLE_BENCH_DAEMON_MEMPROFILE"

// benchDaemon starts the benchmarks' tackled (altDaemonEnv's, if set) in
// root on the socket path, with the profiles the environment asks for, and
// waits until it serves.
func benchDaemon(b *testing.B, root, path string) *exec.Cmd {
	b.Helper()
	args := []string{"--socket", path, "--state-dir", filepath.Join(root, "state"), "--log-level", "error"}
	if prof := os.Getenv(daemonProfileEnv); prof != "" {
		args = append(args, "--cpuprofile", prof)
	}
	if prof := os.Getenv(daemonMemProfileEnv); prof != "" {
		args = append(args, "--memprofile", prof)
	}
	tackled := filepath.Join(binDir, "tackled")
	if alt := os.Getenv(altDaemonEnv); alt != "" {
		tackled = alt
	}
	cmd := exec.Command(tackled, args...)
	cmd.Env = []string{"HOME=" + root, "XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "PATH=" + os.Getenv("PATH")}
	startProcess(b, cmd, path)
	return cmd
}

// benchCallProcess starts a real tackled in another process and measures
// one call a turn on an open Attach stream, from RunBatch to the call's
// result event. setup gets a fresh directory (the session's cwd) and returns
// the tool, its input and the batch's permission mode.
func benchCallProcess(b *testing.B, setup func(root string) (name, input, mode string)) {
	benchCallProcessReady(b, setup, nil)
}

// benchCallProcessReady is benchCallProcess with a wait before the timed
// calls: ready gets the session and the next live event of its stream (an
// MCP server connecting announces tools_changed) and returns once the tool
// can be called.
func benchCallProcessReady(b *testing.B, setup func(root string) (name, input, mode string),
	ready func(ctx context.Context, svc tacklev1.TackleServiceClient, id string, next func() *tacklev1.Event)) {
	root, err := os.MkdirTemp("", "tkb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	path := filepath.Join(root, "tackled.sock")
	name, input, mode := setup(root)
	cmd := benchDaemon(b, root, path)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	svc := tacklev1.NewTackleServiceClient(dialUnix(b, path))
	sess, err := svc.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: root})
	if err != nil {
		b.Fatal(err)
	}
	id := sess.GetSession().GetId()
	st, err := svc.Attach(ctx)
	if err != nil {
		b.Fatal(err)
	}
	send := func(m *tacklev1.ClientMessage) {
		if err := st.Send(m); err != nil {
			b.Fatal(err)
		}
	}
	// The client takes event batches, as tackle's own clients do
	// (clients/client.Stream): recv returns the BatchAccepted a batch
	// carries, then its events one by one.
	var batched []*tacklev1.Event
	recv := func() *tacklev1.ServerMessage {
		for len(batched) == 0 {
			m, err := st.Recv()
			if err != nil {
				b.Fatal(err)
			}
			if e := m.GetError(); e != nil {
				b.Fatalf("stream error: %v", e)
			}
			if m.GetEvents() == nil {
				return m
			}
			batched = m.GetEvents().GetEvents()
			if acc := m.GetEvents().GetAccepted(); acc != nil {
				return &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_BatchAccepted{BatchAccepted: acc}}
			}
		}
		e := batched[0]
		batched = batched[1:]
		return &tacklev1.ServerMessage{Msg: &tacklev1.ServerMessage_Event{Event: e}}
	}
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "bench", Role: tacklev1.Role_ROLE_CONTROLLER, EventBatches: true, AcceptedInBatches: true}}})
	recv() // welcome
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: id, LiveOnly: true}}})
	recv() // snapshot
	if ready != nil {
		ready(ctx, svc, id, func() *tacklev1.Event { return recv().GetEvent() })
	}
	durs := make([]time.Duration, 0, b.N)
	cpu0 := procCPU(cmd.Process.Pid)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		callID := "c" + strconv.Itoa(i)
		start := time.Now()
		send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
			SessionId: id, Ref: callID, PermissionMode: mode,
			Calls: []*tacklev1.ToolCall{{Id: callID, Name: name, InputJson: input}},
		}}})
		for {
			e := recv().GetEvent()
			if e.GetType() == "call_result" && e.GetCallId() == callID {
				durs = append(durs, time.Since(start))
				if e.GetResult().GetStatus() != "completed" {
					b.Fatalf("%s: %v", name, e.GetResult())
				}
				break
			}
		}
		for recv().GetEvent().GetType() != "turn_ended" { // the turn ends before the next starts
		}
	}
	b.StopTimer()
	reportP50(b, durs)
	b.ReportMetric(float64((procCPU(cmd.Process.Pid)-cpu0).Microseconds())/float64(b.N), "daemon-cpu-µs/op")
}

// BenchmarkStatusCLI runs `tackle status` (a whole process) against a warm
// daemon; ReadProcess-style per-run durations give the p50.
func BenchmarkStatusCLI(b *testing.B) {
	e := newBenchEnv(b)
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		cmd := exec.Command(filepath.Join(binDir, "tackle"), "status", "--no-autostart")
		cmd.Env = e
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("tackle status: %v\n%s", err, out)
		}
		durs = append(durs, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)/2].Microseconds())/1000, "p50-ms")
}

// BenchmarkIdleRSS reports the resident memory of a daemon: fresh, right
// after b.N Read calls in one batch through the CLI, and once it is idle again.
func BenchmarkIdleRSS(b *testing.B) {
	env := newBenchEnv(b)
	pid := daemonPID(b, env)
	b.ReportMetric(float64(rssBytes(b, pid))/(1<<20), "fresh-MB")
	root := b.TempDir()
	file := filepath.Join(root, "f.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	var batch strings.Builder
	batch.WriteString("[")
	for i := 0; i < b.N; i++ {
		if i > 0 {
			batch.WriteString(",")
		}
		fmt.Fprintf(&batch, `{"id":"c%d","name":"Read","input":{"file_path":%q}}`, i, file)
	}
	batch.WriteString("]")
	cmd := exec.Command(filepath.Join(binDir, "tackle"), "batch", "--cwd", root, "--json")
	cmd.Env, cmd.Stdin = env, strings.NewReader(batch.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("tackle batch: %v\n%.500s", err, out)
	}
	busy := rssBytes(b, pid)
	b.ReportMetric(float64(busy)/(1<<20), "after-MB")
	// The daemon returns memory once it has been idle for a check period
	// (5 s): watch for that, up to 20 s.
	idle := busy
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && idle > busy*9/10; {
		time.Sleep(250 * time.Millisecond)
		idle = rssBytes(b, pid)
	}
	b.ReportMetric(float64(idle)/(1<<20), "idle-MB")
}

// newBenchEnv starts a daemon through the CLI in a private HOME and returns
// the environment that reaches it; the daemon is stopped at the end.
func newBenchEnv(b *testing.B) []string {
	b.Helper()
	root, err := os.MkdirTemp("", "tkb")
	if err != nil {
		b.Fatal(err)
	}
	env := []string{"HOME=" + root, "XDG_RUNTIME_DIR=" + root, "XDG_STATE_HOME=" + filepath.Join(root, "state"),
		"XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "PATH=" + os.Getenv("PATH")}
	b.Cleanup(func() {
		cmd := exec.Command(filepath.Join(binDir, "tackle"), "daemon", "stop")
		cmd.Env = env
		_ = cmd.Run()
		os.RemoveAll(root)
	})
	daemonPID(b, env) // starts it
	return env
}

func daemonPID(b *testing.B, env []string) int {
	b.Helper()
	cmd := exec.Command(filepath.Join(binDir, "tackle"), "status", "--json")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("tackle status: %v", err)
	}
	var st statusJSON
	if err := json.Unmarshal(out, &st); err != nil {
		b.Fatal(err)
	}
	return st.PID
}

func rssBytes(b *testing.B, pid int) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

func procCPU(pid int) time.Duration {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	u, _ := strconv.Atoi(f[11])
	k, _ := strconv.Atoi(f[12])
	return time.Duration(u+k) * 10 * time.Millisecond
}

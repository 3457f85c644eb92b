package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// BenchmarkMcpServeEcho measures server-everything's echo called by a
// go-sdk client in this process through `tackle mcp serve` (the real
// binary, on stdio: client → serve → tackled's pipeline → the shared MCP
// connection → server-everything and back), and, in the same run and
// interleaved call by call so that the machine's noise hits all alike:
//
//   - direct: the same call from a go-sdk client to a server-everything it
//     started (stdio);
//   - tackled: the same call as a RunBatch on an Attach stream of the same
//     daemon (what `tackle mcp serve` does for each call), from this
//     process;
//   - grpc: a bare gRPC unary call to a server in another process
//     (BenchmarkEchoProcess's).
//
// added-p50-µs is serve's p50 minus direct's, the latency tackle adds to
// an MCP client's call; added/grpc is that over the bare round trip (the
// issue's goal: ≤ 2). The CPU time per call of the serve process and of
// the daemon is reported too (/proc, 10 ms ticks: coarse for small b.N).
// serveProfileEnv names a file for the CPU profile of the tackle mcp serve
// that BenchmarkMcpServeEcho starts (daemonProfileEnv does not reach its
// daemon, which the CLI auto-starts).
const serveProfileEnv = "TACKLE_BENCH_SERVE_CPUPROFILE"

// serveMemProfileEnv is the same for a heap profile.
const serveMemProfileEnv = "TACKLE_BENCH_SERVE_MEMPROFILE"

func BenchmarkMcpServeEcho(b *testing.B) {
	bin := testpeers.Bin(b, "mcp-server-everything")
	root, err := os.MkdirTemp("", "tkb")
	if err != nil {
		b.Fatal(err)
	}
	cfg := filepath.Join(root, "config", "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(mustJSON(map[string]any{
		"permissions": map[string]any{"allow": []string{"mcp__ev__echo"}},
		"mcpServers":  map[string]any{"ev": map[string]any{"command": bin, "args": []string{"stdio"}}},
	})), 0o600); err != nil {
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
	dpid := daemonPID(b, env) // starts it
	ctx := context.Background()

	// tackle mcp serve, once server-everything's echo is served.
	changed := make(chan struct{}, 1)
	serveArgs := []string{"mcp", "serve", "--no-autostart", "--cwd", root}
	if prof := os.Getenv(serveProfileEnv); prof != "" {
		serveArgs = append(serveArgs, "--cpuprofile", prof)
	}
	if prof := os.Getenv(serveMemProfileEnv); prof != "" {
		serveArgs = append(serveArgs, "--memprofile", prof)
	}
	serveCmd := exec.Command(filepath.Join(binDir, "tackle"), serveArgs...)
	serveCmd.Env, serveCmd.Stderr = env, os.Stderr
	served := connectBench(b, &mcpsdk.CommandTransport{Command: serveCmd}, &mcpsdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcpsdk.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	for deadline := time.After(60 * time.Second); ; {
		tools, err := served.ListTools(ctx, nil)
		if err != nil {
			b.Fatal(err)
		}
		if slices.ContainsFunc(tools.Tools, func(t *mcpsdk.Tool) bool { return t.Name == "ev__echo" }) {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			b.Fatal("tackle mcp serve does not serve ev__echo after 60 s")
		}
	}

	direct := connectBench(b, &mcpsdk.CommandTransport{Command: exec.Command(bin, "stdio")}, nil)

	// The same daemon's Attach stream.
	svc := tacklev1.NewTackleServiceClient(dialUnix(b, filepath.Join(root, "tackle", "tackled.sock")))
	sess, err := svc.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: root})
	if err != nil {
		b.Fatal(err)
	}
	sid := sess.GetSession().GetId()
	st, err := svc.Attach(ctx)
	if err != nil {
		b.Fatal(err)
	}
	send := func(m *tacklev1.ClientMessage) {
		if err := st.Send(m); err != nil {
			b.Fatal(err)
		}
	}
	recv := func() *tacklev1.ServerMessage {
		m, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		if e := m.GetError(); e != nil {
			b.Fatalf("stream error: %v", e)
		}
		return m
	}
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "bench", Role: tacklev1.Role_ROLE_CONTROLLER}}})
	recv() // welcome
	send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: sid, LiveOnly: true}}})
	recv() // snapshot
	waitMCPConnected(b, "ev")(ctx, svc, sid, func() *tacklev1.Event { return recv().GetEvent() })

	// The bare gRPC echo in another process.
	self, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	echoSock := filepath.Join(b.TempDir(), "echo.sock")
	echoCmd := exec.Command(self)
	echoCmd.Env = append(os.Environ(), echoEnv+"="+echoSock)
	startProcess(b, echoCmd, echoSock)
	hc := healthpb.NewHealthClient(dialUnix(b, echoSock))

	params := &mcpsdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello from the benchmark"}}
	servedParams := &mcpsdk.CallToolParams{Name: "ev__echo", Arguments: params.Arguments}
	call := func(cs *mcpsdk.ClientSession, p *mcpsdk.CallToolParams) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, p)
		d := time.Since(start)
		if err != nil || res.IsError || len(res.Content) == 0 {
			b.Fatalf("%s: %+v, %v", p.Name, res, err)
		}
		return d
	}
	viaTackled := func(i int) time.Duration {
		id := "c" + strconv.Itoa(i)
		start := time.Now()
		send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
			SessionId: sid, Ref: id, Calls: []*tacklev1.ToolCall{{Id: id, Name: "mcp__ev__echo", InputJson: echoInput}},
		}}})
		var d time.Duration
		for {
			e := recv().GetEvent()
			if e.GetType() == "call_result" && e.GetCallId() == id {
				d = time.Since(start)
				if e.GetResult().GetStatus() != "completed" {
					b.Fatalf("mcp__ev__echo: %v", e.GetResult())
				}
				break
			}
		}
		for recv().GetEvent().GetType() != "turn_ended" {
		}
		return d
	}
	bare := func() time.Duration {
		start := time.Now()
		if _, err := hc.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}

	var serveD, directD, tackledD, grpcD []time.Duration
	serveCPU, daemonCPU := procCPU(serveCmd.Process.Pid), procCPU(dpid)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		serveD = append(serveD, call(served, servedParams))
		directD = append(directD, call(direct, params))
		tackledD = append(tackledD, viaTackled(i))
		grpcD = append(grpcD, bare())
	}
	b.StopTimer()
	serveCPU, daemonCPU = procCPU(serveCmd.Process.Pid)-serveCPU, procCPU(dpid)-daemonCPU
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds())
	}
	s, d, tk, g := p50(serveD), p50(directD), p50(tackledD), p50(grpcD)
	b.ReportMetric(s, "serve-p50-µs")
	b.ReportMetric(d, "direct-p50-µs")
	b.ReportMetric(tk, "tackled-p50-µs")
	b.ReportMetric(g, "grpc-p50-µs")
	b.ReportMetric(s-d, "added-p50-µs")
	b.ReportMetric((s-d)/g, "added/grpc")
	b.ReportMetric(float64(serveD[len(serveD)*99/100].Microseconds()), "serve-p99-µs")
	// CPU time per call: the serve process's, and the daemon's (it ran two
	// calls an iteration: serve's and the Attach stream's).
	b.ReportMetric(float64(serveCPU.Microseconds())/float64(b.N), "serve-cpu-µs/op")
	b.ReportMetric(float64(daemonCPU.Microseconds())/float64(2*b.N), "daemon-cpu-µs/call")
	// What the serve process holds after the calls (one of them per MCP
	// client window).
	b.ReportMetric(float64(rssBytes(b, serveCmd.Process.Pid))/(1<<20), "serve-rss-MB")
}

// connectBench connects a go-sdk client through t, closed at the end.
func connectBench(b *testing.B, t mcpsdk.Transport, opts *mcpsdk.ClientOptions) *mcpsdk.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, opts).Connect(ctx, t, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

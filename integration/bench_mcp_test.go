package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/testpeers"
)

// The MCP benchmarks call server-everything's echo tool: through tackled
// (client → daemon → pipeline → MCP connection → server and back, measured
// like BenchmarkReadProcess) and, as the baseline, from a go-sdk client in
// the benchmark process. Each pair runs the same server binary in the same
// transport; the goal is a p50 ratio tackle/direct ≤ 1.2.

// BenchmarkMCPEchoStdioTackle calls echo of a stdio server-everything
// configured in the user's settings, through the real tackled.
func BenchmarkMCPEchoStdioTackle(b *testing.B) {
	bin := testpeers.Bin(b, "mcp-server-everything")
	benchMCPTackle(b, map[string]any{"command": bin, "args": []string{"stdio"}})
}

// BenchmarkMCPEchoStdioDirect is the baseline of
// BenchmarkMCPEchoStdioTackle: a go-sdk client in this process calling a
// stdio server-everything it started.
func BenchmarkMCPEchoStdioDirect(b *testing.B) {
	bin := testpeers.Bin(b, "mcp-server-everything")
	benchMCPDirect(b, &mcpsdk.CommandTransport{Command: exec.Command(bin, "stdio")})
}

// BenchmarkMCPEchoHTTPTackle calls echo of server-everything in
// streamable HTTP mode through the real tackled.
func BenchmarkMCPEchoHTTPTackle(b *testing.B) {
	url := startEverythingHTTP(b)
	benchMCPTackle(b, map[string]any{"type": "http", "url": url})
}

// BenchmarkMCPEchoHTTPDirect is the baseline of BenchmarkMCPEchoHTTPTackle:
// a go-sdk streamable HTTP client in this process.
func BenchmarkMCPEchoHTTPDirect(b *testing.B) {
	url := startEverythingHTTP(b)
	benchMCPDirect(b, &mcpsdk.StreamableClientTransport{Endpoint: url})
}

// echoInput is what every echo call sends.
const echoInput = `{"message":"hello from the benchmark"}`

// benchMCPTackle configures entry as the user-scope MCP server
// "everything" of a fresh tackled, waits until it is connected and
// measures mcp__everything__echo calls (bypassPermissions: nobody is asked).
func benchMCPTackle(b *testing.B, entry map[string]any) {
	setup := func(root string) (string, string, string) {
		cfg := filepath.Join(root, "config", "tackle", "settings.json")
		if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
			b.Fatal(err)
		}
		settings := mustJSON(map[string]any{"mcpServers": map[string]any{"everything": entry}})
		if err := os.WriteFile(cfg, []byte(settings), 0o600); err != nil {
			b.Fatal(err)
		}
		return "mcp__everything__echo", echoInput, "bypassPermissions"
	}
	benchCallProcessReady(b, setup, waitMCPConnected(b, "everything"))
}

// waitMCPConnected returns a benchCallProcessReady wait for the session's
// server name to be connected with its tools listed: it checks the
// server's state, then again at every tools_changed event.
func waitMCPConnected(b *testing.B, name string) func(context.Context, tacklev1.TackleServiceClient, string, func() *tacklev1.Event) {
	return func(ctx context.Context, svc tacklev1.TackleServiceClient, id string, next func() *tacklev1.Event) {
		for {
			res, err := svc.ListMcpServers(ctx, &tacklev1.ListMcpServersRequest{SessionId: id})
			if err != nil {
				b.Fatalf("listing MCP servers: %v", err)
			}
			for _, s := range res.GetServers() {
				if s.GetName() != name {
					continue
				}
				switch s.GetState() {
				case "connected":
					if s.GetTools() > 0 {
						return
					}
				case "failed", "needs-approval", "needs-trust", "needs-auth", "disabled":
					b.Fatalf("MCP server %s: %s %s", name, s.GetState(), s.GetError())
				}
			}
			for next().GetType() != "tools_changed" {
			}
		}
	}
}

// benchMCPDirect connects a go-sdk client through t and measures echo calls.
func benchMCPDirect(b *testing.B, t mcpsdk.Transport) {
	ctx := context.Background()
	client := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cs, err := client.Connect(cctx, t, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	params := &mcpsdk.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hello from the benchmark"}}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		if res.IsError || len(res.Content) == 0 {
			b.Fatalf("echo: %+v", res)
		}
	}
	b.StopTimer()
	reportP50(b, durs)
}

// startEverythingHTTP runs server-everything in streamable HTTP mode on a
// free port until the benchmark ends and returns its endpoint.
func startEverythingHTTP(b *testing.B) string {
	b.Helper()
	port := freePort(b)
	startHTTPEverything(b, "streamableHttp", port)
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// BenchmarkListTools500MCP lists the tools of a session whose MCP server has
// 500 tools (the generated server), as a client does before each model
// request: the ListTools RPC over the daemon's socket, from this process.
// The goal is ≤ 5 ms.
func BenchmarkListTools500MCP(b *testing.B) {
	env := newBenchEnv(b)
	gen := testpeers.BuildGenMCP(b)
	var root string
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			root = v
		}
	}
	cfg := filepath.Join(root, "config", "tackle", "settings.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(mustJSON(map[string]any{"mcpServers": map[string]any{
		"gen": map[string]any{"command": gen, "args": []string{"-tools", "500"}},
	}})), 0o600); err != nil {
		b.Fatal(err)
	}
	conn := dialUnix(b, filepath.Join(root, "tackle", "tackled.sock"))
	svc := tacklev1.NewTackleServiceClient(conn)
	ctx := context.Background()
	created, err := svc.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: root})
	if err != nil {
		b.Fatal(err)
	}
	id := created.GetSession().GetId()
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := svc.ListMcpServers(ctx, &tacklev1.ListMcpServersRequest{SessionId: id})
		if err != nil {
			b.Fatal(err)
		}
		if s := res.GetServers(); len(s) == 1 && s[0].GetState() == "connected" && s[0].GetTools() == 501 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the generated server did not connect: %v", res.GetServers())
		}
		time.Sleep(50 * time.Millisecond) // polling another process's state
	}
	req := &tacklev1.ListToolsRequest{SessionId: id}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := svc.ListTools(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(start))
		if len(res.GetTools()) < 501 || len(res.GetDeferredListing()) == 0 {
			b.Fatalf("ListTools: %d tools, listing %v", len(res.GetTools()), res.GetDeferredListing())
		}
	}
	b.StopTimer()
	reportP50(b, durs)
}

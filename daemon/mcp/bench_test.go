package mcp

import (
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
)

// startAll starts n distinct stdio servers (server(i) configures the i-th)
// in one Manager and returns how long until all of them were connected.
func startAll(b *testing.B, n int, server func(i int) config.MCPServer) time.Duration {
	b.Helper()
	changes := make(chan struct{}, 1)
	m := New(&Options{OnChange: func(string) {
		select {
		case changes <- struct{}{}:
		default:
		}
	}})
	defer m.Close()
	var servers []config.MCPServer
	for i := range n {
		servers = append(servers, server(i))
	}
	start := time.Now()
	m.Use("bench", servers, nil)
	conns := m.Conns("bench")
	timeout := time.NewTimer(deadline)
	defer timeout.Stop()
	for {
		connected := 0
		for _, c := range conns {
			switch st := c.Status(); st.State {
			case Connected:
				connected++
			case Failed, NeedsAuth:
				b.Fatalf("%s: %s", st.Name, st.Error)
			}
		}
		if connected == n {
			return time.Since(start)
		}
		select {
		case <-changes:
		case <-timeout.C:
			b.Fatal("servers did not connect")
		}
	}
}

// BenchmarkStartTen starts ten server-everything (stdio) processes
// concurrently and reports the ratio to one server alone (goal: ≤ 1.5 on an
// idle machine; each node process needs about 0.5 s of CPU to start, so on
// two cores the machine, not tackle, sets the ratio).
func BenchmarkStartTen(b *testing.B) {
	benchStartTen(b, func(i int) config.MCPServer { return everything(b, fmt.Sprintf("e%d", i)) })
}

// BenchmarkStartTenLight is BenchmarkStartTen with a light Go MCP server
// (this test binary as the "good" test server), so the ratio shows tackle's
// own concurrency rather than the CPU the servers need to start.
func BenchmarkStartTenLight(b *testing.B) {
	benchStartTen(b, func(i int) config.MCPServer { return selfServer(b, fmt.Sprintf("g%d", i), "good", nil) })
}

// benchStartTen reports the mean time to connect one server, ten servers
// started together, and their ratio; then the CPU one server needs to
// start, and ten's time over the floor the machine allows (one server
// alone, or ten servers' CPU spread over every core, whichever is longer):
// ten/floor near 1 means tackle starts them as concurrently as the machine
// can.
func benchStartTen(b *testing.B, server func(i int) config.MCPServer) {
	var one, ten time.Duration
	cpu0 := childrenCPU(b)
	for range b.N {
		one += startAll(b, 1, server)
		ten += startAll(b, 10, server)
	}
	// What the servers needed (their processes are reaped by Close): ten
	// starts on the machine's cores cannot take less than this.
	perServer := (childrenCPU(b) - cpu0) / time.Duration(11*b.N)
	b.ReportMetric(float64(perServer.Microseconds())/1000, "server-cpu-ms")
	floor := max(one/time.Duration(b.N), 10*perServer/time.Duration(runtime.NumCPU()))
	b.ReportMetric(float64(ten)/float64(b.N)/float64(floor), "ten/floor")
	b.ReportMetric(float64(one.Microseconds())/1000/float64(b.N), "ms-one")
	b.ReportMetric(float64(ten.Microseconds())/1000/float64(b.N), "ms-ten")
	b.ReportMetric(float64(ten)/float64(one), "ten/one")
}

// childrenCPU is the user+system CPU time of this process's reaped children.
func childrenCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

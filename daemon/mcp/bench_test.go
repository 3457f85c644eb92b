package mcp

import (
	"fmt"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
)

// startAll starts n distinct server-everything (stdio) processes in one
// Manager and returns how long until all of them were connected.
func startAll(b *testing.B, n int) time.Duration {
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
		servers = append(servers, everything(b, fmt.Sprintf("e%d", i)))
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

// BenchmarkStartTen starts ten stdio servers concurrently and reports the
// ratio to one server alone (goal: ≤ 1.5 on an idle machine; two cores make
// ten node processes compete for CPU).
func BenchmarkStartTen(b *testing.B) {
	var one, ten time.Duration
	for range b.N {
		one += startAll(b, 1)
		ten += startAll(b, 10)
	}
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "ms-one")
	b.ReportMetric(float64(ten.Milliseconds())/float64(b.N), "ms-ten")
	b.ReportMetric(float64(ten)/float64(one), "ten/one")
}

package server_test

import (
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// reportPercentiles reports the p50 and p99 of the per-op durations.
func reportPercentiles(b *testing.B, d []time.Duration) {
	if len(d) == 0 {
		return
	}
	slices.Sort(d)
	b.ReportMetric(float64(d[len(d)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(d[len(d)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkReadViaDaemon measures one Read of a small file through the
// daemon: RunBatch on an open Attach stream → socket → pipeline → the
// call_result event back on the stream.
func BenchmarkReadViaDaemon(b *testing.B) {
	d := daemontest.Start(b, daemontest.WithLogger(nil))
	id, dir := newSession(b, d)
	path := filepath.Join(dir, "hello.txt")
	c := attach(b, d.Client(), "bench", tacklev1.Role_ROLE_CONTROLLER)
	c.subscribe(id, 0)

	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		ref := strconv.Itoa(i)
		c.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{
			SessionId: id, Ref: ref, Calls: []*tacklev1.ToolCall{readCall("c"+ref, path)},
		}}})
		var turn string
		for got := false; !got; {
			m := c.recv()
			if ba := m.GetBatchAccepted(); ba != nil {
				turn = ba.GetTurnId()
			}
			if e := m.GetEvent(); e.GetType() == "call_result" && e.GetCallId() == "c"+ref {
				durs = append(durs, time.Since(start))
				if e.GetResult().GetStatus() != "completed" {
					b.Fatalf("Read: %v", e.GetResult())
				}
				got = true
			}
			if se := m.GetError(); se != nil {
				b.Fatalf("stream error: %v", se)
			}
		}
		// Let the turn end before the next one starts.
		c.eventsUntil(turnEnded(turn))
	}
	b.StopTimer()
	reportPercentiles(b, durs)
}

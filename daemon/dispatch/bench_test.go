package dispatch

import (
	"context"
	"fmt"
	"testing"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/session"
)

func sleepCalls(name string, n int) []event.CallInfo {
	calls := make([]event.CallInfo, n)
	for i := range calls {
		calls[i] = call(fmt.Sprintf("c%d", i), name, `{"ms":100}`)
	}
	return calls
}

func benchTurn(b *testing.B, e *env, calls []event.CallInfo) {
	b.Helper()
	i := 0
	for b.Loop() {
		i++
		res := e.d.RunTurn(context.Background(), e.s, Turn{ID: fmt.Sprintf("b%d", i), Calls: calls})
		for _, r := range res {
			if r.Status != event.StatusCompleted {
				b.Fatalf("%s: %s %q", r.CallID, r.Status, text(r))
			}
		}
	}
}

// BenchmarkParallelBatch: 10 concurrency-safe calls of 100 ms in one turn
// (goal: ≤ 130 ms per op).
func BenchmarkParallelBatch(b *testing.B) {
	e := newEnv(b, "default", nil, nil, sleeper("Sleep", true))
	benchTurn(b, e, sleepCalls("Sleep", 10))
}

// BenchmarkSerialBatch: 10 unsafe calls of 100 ms in one turn (≥ 1 s per op).
func BenchmarkSerialBatch(b *testing.B) {
	e := newEnv(b, "default", nil, nil, sleeper("Sleep", false))
	benchTurn(b, e, sleepCalls("Sleep", 10))
}

// noLog is a real session whose Append does not persist: it isolates the
// pipeline's own cost from the SQLite write of each event.
type noLog struct{ *session.Session }

func (noLog) Append(e *event.Event) (*event.Event, error) { return e, nil }

// BenchmarkDispatchOverhead measures the pipeline's cost per call with a
// trivial tool: one call per turn and ten (one parallel run) per turn, with
// every event written to the SQLite log and without the log.
func BenchmarkDispatchOverhead(b *testing.B) {
	for _, n := range []int{1, 10} {
		for _, persist := range []bool{true, false} {
			b.Run(fmt.Sprintf("calls=%d/log=%v", n, persist), func(b *testing.B) {
				e := newEnv(b, "default", nil, nil, echo())
				var s Session = e.s
				if !persist {
					s = noLog{e.s}
				}
				calls := make([]event.CallInfo, n)
				for i := range calls {
					calls[i] = call(fmt.Sprintf("c%d", i), "Echo", `{"a":1}`)
				}
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					i++
					res := e.d.RunTurn(context.Background(), s, Turn{ID: fmt.Sprintf("b%d", i), Calls: calls})
					if res[0].Status != event.StatusCompleted {
						b.Fatal(res[0].Status)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/call")
			})
		}
	}
}

package integration

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/model"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// agentBench is a tackled process whose sessions talk to a fake model
// server, and one subscribed controller stream.
type agentBench struct {
	fm    *fakemodel.Server
	svc   tacklev1.TackleServiceClient
	agent tacklev1.AgentServiceClient
	id    string
	root  string
	pid   int
	next  func() *tacklev1.Event
}

// watch attaches one more client to the session and returns its events.
func (ab *agentBench) watch(b *testing.B) func() *tacklev1.Event {
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	st, err := ab.svc.Attach(ctx)
	if err != nil {
		b.Fatal(err)
	}
	recv := func() *tacklev1.ServerMessage {
		m, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "watcher", Role: tacklev1.Role_ROLE_OBSERVER}}})
	recv()
	st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: ab.id, LiveOnly: true}}})
	recv()
	return func() *tacklev1.Event {
		for {
			m := recv()
			if se := m.GetError(); se != nil && se.GetResubscribeFromSeq() != 0 {
				b.Fatalf("a watcher was cut off (fell behind): %v", se)
			}
			if e := m.GetEvent(); e != nil {
				return e
			}
		}
	}
}

func newAgentBench(b *testing.B, script fakemodel.Script) *agentBench {
	root, err := os.MkdirTemp("", "tkb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	fm := fakemodel.Start(b, &fakemodel.Options{APIKey: "sk-bench", Script: script})
	path := filepath.Join(root, "tackled.sock")
	cmd := benchDaemon(b, root, path)
	conn := dialUnix(b, path)
	svc := tacklev1.NewTackleServiceClient(conn)
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	sess, err := svc.CreateSession(ctx, &tacklev1.CreateSessionRequest{Cwd: root, Env: []string{"ANTHROPIC_BASE_URL=" + fm.URL(), "ANTHROPIC_API_KEY=sk-bench", "HOME=" + root}})
	if err != nil {
		b.Fatal(err)
	}
	st, err := svc.Attach(ctx)
	if err != nil {
		b.Fatal(err)
	}
	recv := func() *tacklev1.ServerMessage {
		m, err := st.Recv()
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Hello{Hello: &tacklev1.Hello{ProtocolVersion: 1, ClientName: "bench"}}})
	recv()
	st.Send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_Subscribe{Subscribe: &tacklev1.Subscribe{SessionId: sess.GetSession().GetId(), LiveOnly: true}}})
	recv()
	return &agentBench{fm: fm, svc: svc, agent: tacklev1.NewAgentServiceClient(conn), id: sess.GetSession().GetId(), root: root, pid: cmd.Process.Pid,
		next: func() *tacklev1.Event { return recv().GetEvent() }}
}

// BenchmarkFirstDeltaTackle: from Prompt to the first assistant_delta a
// client sees, through tackled (a process) and the fake model server. The
// prompts are turns of one conversation, so each request carries the
// history before it; right after each, the very request tackled sent is
// sent again from this process over HTTP to its first text delta
// (same-request-p50-µs), the fair reference for what tackled adds
// (added-p50-µs, the median of the pairs' differences).
func BenchmarkFirstDeltaTackle(b *testing.B) {
	ab := newAgentBench(b, fakemodel.Repeat(fakemodel.Say("Hello there, this is the answer.")))
	durs := make([]time.Duration, 0, b.N)
	same := make([]time.Duration, 0, b.N)
	added := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := len(ab.fm.Requests())
		start := time.Now()
		resp, err := ab.agent.Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: ab.id, Text: "hi"})
		if err != nil {
			b.Fatal(err)
		}
		var d time.Duration
		for {
			e := ab.next()
			if d == 0 && e.GetType() == "assistant_delta" {
				d = time.Since(start)
			}
			if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == resp.GetPromptId() {
				break
			}
		}
		if d == 0 {
			b.Fatal("the prompt ended without an assistant_delta")
		}
		reqs := ab.fm.Requests()
		if len(reqs) <= n {
			b.Fatal("tackled sent no request")
		}
		r := firstDeltaOver(b, ab.fm, reqs[n])
		durs, same, added = append(durs, d), append(same, r), append(added, d-r)
	}
	b.StopTimer()
	reportP50(b, durs)
	slices.Sort(same)
	slices.Sort(added)
	b.ReportMetric(float64(same[len(same)/2].Microseconds()), "same-request-p50-µs")
	b.ReportMetric(float64(added[len(added)/2].Microseconds()), "added-p50-µs")
}

// firstDeltaOver sends sent again to the fake model over HTTP and returns
// the time to its first text delta.
func firstDeltaOver(b *testing.B, fm *fakemodel.Server, sent *fakemodel.Request) time.Duration {
	b.Helper()
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, fm.URL()+sent.Path, bytes.NewReader(sent.Body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header = sent.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b.Fatalf("status %d", res.StatusCode)
	}
	var d time.Duration
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") && strings.Contains(line, `"text_delta"`) {
			d = time.Since(start)
			break
		}
	}
	if d == 0 {
		b.Fatal("no text delta in the replayed request's answer")
	}
	io.Copy(io.Discard, res.Body) //nolint:errcheck // draining for the connection's reuse
	return d
}

// BenchmarkFirstDeltaDirect: the same first event with tackle's model
// client in this process, straight to the fake server.
func BenchmarkFirstDeltaDirect(b *testing.B) {
	fm := fakemodel.Start(b, &fakemodel.Options{APIKey: "sk-bench", Script: fakemodel.Repeat(fakemodel.Say("Hello there, this is the answer."))})
	p := model.NewAnthropic(&model.AnthropicOptions{BaseURL: fm.URL(), APIKey: "sk-bench"})
	durs := make([]time.Duration, 0, b.N)
	req := model.Request{Model: "claude-sonnet-4-5", MaxTokens: 1024, Messages: []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: "hi"}}}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		st, err := p.Stream(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		first := true
		for ev, err := range st.Events() {
			if err != nil {
				b.Fatal(err)
			}
			if first && ev.Type == model.EventText {
				durs = append(durs, time.Since(start))
				first = false
			}
		}
		st.Close()
	}
	b.StopTimer()
	reportP50(b, durs)
}

// BenchmarkToolUseToHandler: from the end of the model's response with a
// tool_use (the fake server finished writing it) to the tool's handler
// starting (the call_state running event, stamped by tackled).
func BenchmarkToolUseToHandler(b *testing.B) {
	ab := newAgentBench(b, nil)
	file := filepath.Join(ab.root, "f.txt")
	if err := os.WriteFile(file, []byte("x\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ab.fm.SetScript(fakemodel.Turns(fakemodel.Call("Read", map[string]any{"file_path": file}), fakemodel.Say("ok")))
		idx := len(ab.fm.Requests()) // the tool_use response's request
		doneAt := make(chan time.Time, 1)
		go func() {
			if _, err := ab.fm.WaitDone(context.Background(), idx); err == nil {
				doneAt <- time.Now()
			}
		}()
		resp, err := ab.agent.Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: ab.id, Text: "read"})
		if err != nil {
			b.Fatal(err)
		}
		for {
			e := ab.next()
			if e.GetType() == "call_state" && e.GetState() == "running" {
				durs = append(durs, e.GetTime().AsTime().Sub(<-doneAt))
			}
			if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == resp.GetPromptId() {
				break
			}
		}
	}
	b.StopTimer()
	reportP50(b, durs)
}

// BenchmarkThreeClientsDeltaFlood: a model streaming 5,000 deltas a second
// (for one second) to a session three clients watch: each must get every
// must-deliver event (prompt_started, assistant_message, prompt_ended);
// deltas may be dropped for a slow reader and are counted. Reports the
// daemon's CPU per prompt.
func BenchmarkThreeClientsDeltaFlood(b *testing.B) {
	text := strings.Repeat("abcd", 5000) // 5,000 deltas of 4 characters
	ab := newAgentBench(b, fakemodel.Repeat(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text(text)}, Chunk: 4, Delay: 200 * time.Microsecond}))
	watchers := []func() *tacklev1.Event{ab.next, ab.watch(b), ab.watch(b)}
	cpu0 := procCPU(ab.pid)
	var deltas, lost int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := ab.agent.Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: ab.id, Text: "flood"})
		if err != nil {
			b.Fatal(err)
		}
		for _, next := range watchers {
			seen := map[string]bool{}
			for {
				e := next()
				seen[e.GetType()] = true
				if e.GetType() == "assistant_delta" {
					deltas++
				}
				if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == resp.GetPromptId() {
					break
				}
			}
			for _, want := range []string{"prompt_started", "assistant_message", "prompt_ended"} {
				if !seen[want] {
					b.Errorf("a client missed %s", want)
					lost++
				}
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(deltas)/float64(b.N*len(watchers)), "deltas-seen/client")
	b.ReportMetric(float64(lost), "must-deliver-lost")
	b.ReportMetric(float64((procCPU(ab.pid)-cpu0).Milliseconds())/float64(b.N), "daemon-cpu-ms/prompt")
}

// BenchmarkSubagentStart: from the end of the parent's model response
// with an Agent tool_use (the fake server finished writing it) to the
// child's first model request arriving at the fake server: the Agent
// call's pipeline stages, the child session, its system prompt and tools.
func BenchmarkSubagentStart(b *testing.B) {
	var mu sync.Mutex
	n := 0
	parent := func(r *fakemodel.Request) fakemodel.Turn {
		if len(r.ToolResults()) > 0 {
			return fakemodel.Say("ok")
		}
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		return fakemodel.Reply(fakemodel.ToolUse("Agent", map[string]any{"description": "Bench", "prompt": fmt.Sprintf("[child %d] answer", i)}))
	}
	ab := newAgentBench(b, fakemodel.Conversations(
		fakemodel.Route{Prompt: "[child ", Script: fakemodel.Repeat(fakemodel.Say("child done"))},
		fakemodel.Route{Prompt: "[parent]", Script: parent},
	))
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		idx := len(ab.fm.Requests()) // the parent's Agent response
		doneAt := make(chan time.Time, 1)
		go func() {
			if _, err := ab.fm.WaitDone(context.Background(), idx); err == nil {
				doneAt <- time.Now()
			}
		}()
		resp, err := ab.agent.Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: ab.id, Text: "[parent] delegate"})
		if err != nil {
			b.Fatal(err)
		}
		for {
			e := ab.next()
			if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == resp.GetPromptId() {
				break
			}
		}
		end := <-doneAt
		var childAt time.Time
		for _, r := range ab.fm.Requests()[idx:] {
			if strings.HasPrefix(r.FirstUserText(), "[child ") {
				childAt = r.Time
				break
			}
		}
		if childAt.IsZero() {
			b.Fatal("no child request")
		}
		durs = append(durs, childAt.Sub(end))
	}
	b.StopTimer()
	reportP50(b, durs)
}

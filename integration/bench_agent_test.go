package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	agent tacklev1.AgentServiceClient
	id    string
	root  string
	next  func() *tacklev1.Event
}

func newAgentBench(b *testing.B, script fakemodel.Script) *agentBench {
	root, err := os.MkdirTemp("", "tkb")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(root) })
	fm := fakemodel.Start(b, &fakemodel.Options{APIKey: "sk-bench", Script: script})
	path := filepath.Join(root, "tackled.sock")
	cmd := exec.Command(filepath.Join(binDir, "tackled"), "--socket", path, "--state-dir", filepath.Join(root, "state"), "--log-level", "error")
	cmd.Env = []string{"HOME=" + root, "XDG_CONFIG_HOME=" + filepath.Join(root, "config"), "PATH=" + os.Getenv("PATH")}
	startProcess(b, cmd, path)
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
	return &agentBench{fm: fm, agent: tacklev1.NewAgentServiceClient(conn), id: sess.GetSession().GetId(), root: root,
		next: func() *tacklev1.Event { return recv().GetEvent() }}
}

// BenchmarkFirstDeltaTackle: from Prompt to the first assistant_delta a
// client sees, through tackled (a process) and the fake model server.
func BenchmarkFirstDeltaTackle(b *testing.B) {
	ab := newAgentBench(b, fakemodel.Repeat(fakemodel.Say("Hello there, this is the answer.")))
	durs := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		resp, err := ab.agent.Prompt(context.Background(), &tacklev1.PromptRequest{SessionId: ab.id, Text: "hi"})
		if err != nil {
			b.Fatal(err)
		}
		first := true
		for {
			e := ab.next()
			if first && e.GetType() == "assistant_delta" {
				durs = append(durs, time.Since(start))
				first = false
			}
			if e.GetType() == "prompt_ended" && e.GetPrompt().GetId() == resp.GetPromptId() {
				break
			}
		}
	}
	b.StopTimer()
	reportP50(b, durs)
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

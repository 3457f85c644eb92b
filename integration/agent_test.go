package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/internal/fakemodel"
)

// agentEnv is an env whose tackle talks to the fake model server.
func agentEnv(t *testing.T, script fakemodel.Script) (*env, *fakemodel.Server) {
	t.Helper()
	e := newEnv(t)
	fm := fakemodel.Start(t, &fakemodel.Options{APIKey: "sk-test", Script: script})
	e.vars = append(e.vars, "ANTHROPIC_BASE_URL="+fm.URL(), "ANTHROPIC_API_KEY=sk-test")
	return e, fm
}

// tackle run: a multi-step tool conversation through the real daemon, the
// text on stdout, a line per tool call on stderr, exit 0 on end_turn.
func TestRunMultiStepConversation(t *testing.T) {
	e, fm := agentEnv(t, nil)
	readPath := e.write("main.go", "package main\n\nfunc main() { println(\"hello\") }\n")
	fm.SetScript(fakemodel.Turns(
		fakemodel.Reply(fakemodel.Text("Let me look. "), fakemodel.ToolUse("Glob", map[string]any{"pattern": "*.go"})),
		fakemodel.Call("Read", map[string]any{"file_path": readPath}),
		fakemodel.Say("main.go prints hello."),
	))
	r := e.tackle("", "run", "what does main.go do?")
	if r.code != 0 {
		t.Fatalf("tackle run: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "Let me look.") || !strings.Contains(r.stdout, "main.go prints hello.") {
		t.Errorf("stdout: %q", r.stdout)
	}
	if !strings.Contains(r.stderr, "● Glob *.go") || !strings.Contains(r.stderr, "● Read "+readPath) {
		t.Errorf("stderr: %q", r.stderr)
	}
	reqs := fm.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if b, _ := json.Marshal(reqs[2].Anthropic); !strings.Contains(string(b), `println(\"hello\")`) {
		t.Errorf("the Read result did not reach the model: %s", b)
	}
}

// tackle run --json: one event a line, the outcome last; a prompt from a
// pipe; exit 1 when the model's stream breaks.
func TestRunJSONAndErrors(t *testing.T) {
	e, fm := agentEnv(t, fakemodel.Turns(fakemodel.Say("Hi there.")))
	r := e.tackle("say hi\n", "run", "-", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	var last struct {
		StopReason string         `json:"stop_reason"`
		Text       string         `json:"text"`
		Usage      map[string]int `json:"usage"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.StopReason != "end_turn" || last.Text != "Hi there." {
		t.Errorf("last line %q (%v)", lines[len(lines)-1], err)
	}
	types := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	for sc.Scan() {
		var ev struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil {
			types[ev.Type] = true
		}
	}
	for _, want := range []string{"prompt_started", "assistant_message", "prompt_ended"} {
		if !types[want] {
			t.Errorf("no %s line in %s", want, r.stdout)
		}
	}
	if got := fm.Requests()[0].Anthropic.Messages[0]; !strings.Contains(mustJSON(got), "say hi") {
		t.Errorf("the piped prompt: %s", mustJSON(got))
	}

	// An in-stream error after partial text: exit 1, the partial text kept.
	fm.SetScript(fakemodel.Turns(fakemodel.Turn{Blocks: []fakemodel.Block{fakemodel.Text("Partial answ")}, StreamError: &fakemodel.APIError{Type: "overloaded_error", Message: "Overloaded"}}))
	r = e.tackle("", "run", "again")
	if r.code != 1 || !strings.Contains(r.stdout, "Partial answ") || !strings.Contains(r.stderr, "Overloaded") {
		t.Errorf("in-stream error: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if n := len(fm.Requests()); n != 2 {
		t.Errorf("%d requests: an error after the first event is not retried", n)
	}
}

// A missing key is one clear error naming what to set.
func TestRunWithoutAKey(t *testing.T) {
	e := newEnv(t)
	e.vars = append(e.vars, "ANTHROPIC_BASE_URL=", "ANTHROPIC_API_KEY=")
	r := e.tackle("", "run", "hello")
	if r.code != 1 || !strings.Contains(r.stderr, "ANTHROPIC_API_KEY") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// SIGKILL of the daemon while a prompt's tool runs: after the restart the
// prompt ended as interrupted, its open call got a result, and the next
// prompt continues with a valid transcript (the fake server enforces it).
func TestRunSurvivesDaemonKill(t *testing.T) {
	e, fm := agentEnv(t, nil)
	fm.SetScript(fakemodel.Turns(
		fakemodel.Call("Bash", map[string]any{"command": "sleep 41.5"}),
		fakemodel.Say("Picked up again."),
	))
	cmd := exec.Command(filepath.Join(binDir, "tackle"), "run", "start the long job", "--permission-mode", "bypassPermissions")
	cmd.Dir, cmd.Env = e.project, e.vars
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Wait until the model's tool call was sent and the call runs.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := fm.WaitDone(ctx, 0); err != nil {
		t.Fatal(err)
	}
	var sessions []struct {
		ID string `json:"id"`
	}
	e.json(&sessions, "", "sessions", "list")
	attachUntil(t, e, sessions[0].ID, func(ev map[string]any) bool {
		return ev["type"] == "call_state" && ev["state"] == "running"
	})
	var st statusJSON
	e.json(&st, "", "status")
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, st.PID)
	exec.Command("pkill", "-f", "sleep 41.5").Run()

	r := e.tackle("", "run", "are you still there?")
	if r.code != 0 || !strings.Contains(r.stdout, "Picked up again.") {
		t.Fatalf("the prompt after the restart: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	reqs := fm.Requests()
	last, _ := json.Marshal(reqs[len(reqs)-1].Anthropic.Messages)
	for _, want := range []string{"start the long job", "Request interrupted", "are you still there?"} {
		if !strings.Contains(string(last), want) {
			t.Errorf("the request after the restart lacks %q: %s", want, last)
		}
	}
	events := attachUntil(t, e, sessions[0].ID, func(ev map[string]any) bool {
		p, _ := ev["prompt"].(map[string]any)
		return ev["type"] == "prompt_ended" && p["stop_reason"] == "end_turn"
	})
	interrupted := false
	for _, ev := range events {
		if p, _ := ev["prompt"].(map[string]any); ev["type"] == "prompt_ended" && p["stop_reason"] == "interrupted" {
			interrupted = true
		}
	}
	if !interrupted {
		t.Error("the killed prompt did not end as interrupted in the log")
	}
}

package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestBatchingParallelAndSerial(t *testing.T) {
	p := newProbe()
	e := newEnv(t, "default", nil, nil, p)
	turn := Turn{ID: "batch", Calls: []event.CallInfo{
		call("s1", "Probe", `{"id":"s1","safe":true}`),
		call("s2", "Probe", `{"id":"s2","safe":true}`),
		call("s3", "Probe", `{"id":"s3","safe":true}`),
		call("u4", "Probe", `{"id":"u4"}`),
		call("u5", "Probe", `{"id":"u5"}`),
		call("s6", "Probe", `{"id":"s6","safe":true}`),
	}}
	done := make(chan []*event.Result, 1)
	go func() { done <- e.run(turn) }()

	// s1..s3 are all inside Run at once before any is released: they overlap.
	got := []string{recv(t, p.entered), recv(t, p.entered), recv(t, p.entered)}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"s1", "s2", "s3"}, got); diff != "" {
		t.Fatalf("first parallel run (-want +got):\n%s", diff)
	}
	if n := p.active.Load(); n != 3 {
		t.Fatalf("%d calls active in the parallel run, want 3", n)
	}
	// Release s1 and wait for its result: its modifier must not be applied
	// before s2 and s3 return.
	p.free("s1")
	e.waitEvent(func(ev *event.Event) bool { return ev.Type == event.CallResult && ev.CallID == "s1" })
	p.mu.Lock()
	applied := len(p.applied)
	p.mu.Unlock()
	if applied != 0 {
		t.Fatal("a modifier was applied before the parallel run ended")
	}
	p.free("s3")
	p.free("s2")
	// u4 and u5 run alone, in order.
	for _, id := range []string{"u4", "u5"} {
		if got := recv(t, p.entered); got != id {
			t.Fatalf("entered %s, want %s", got, id)
		}
		if n := p.active.Load(); n != 1 {
			t.Fatalf("%d calls active during serial call %s", n, id)
		}
		select {
		case other := <-p.entered:
			t.Fatalf("%s entered while serial call %s ran", other, id)
		default:
		}
		p.free(id)
	}
	if got := recv(t, p.entered); got != "s6" {
		t.Fatalf("entered %s, want s6", got)
	}
	p.free("s6")
	res := recv(t, done)
	for i, r := range res {
		if r.Status != event.StatusCompleted || text(r) != "done "+turn.Calls[i].ID {
			t.Errorf("result %d: %s %q", i, r.Status, text(r))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if diff := cmp.Diff([]string{"s1", "s2", "s3", "u4", "u5", "s6"}, p.applied); diff != "" {
		t.Errorf("modifiers applied (-want +got):\n%s", diff)
	}
	// The first three modifiers ran after all three handlers returned.
	for i := 0; i < 3; i++ {
		if n := len(strings.Split(p.applyLog[i], ",")); n != 3 {
			t.Errorf("modifier %d applied when only %q had returned", i, p.applyLog[i])
		}
	}
	if _, ok := e.s.FileState("/probe/s6"); !ok {
		t.Error("the modifier did not reach the session")
	}
}

func TestMaxConcurrency(t *testing.T) {
	p := newProbe()
	e := newEnv(t, "default", nil, &Options{MaxConcurrency: 2}, p)
	var calls []event.CallInfo
	for _, id := range []string{"a", "b", "c", "d"} {
		calls = append(calls, call(id, "Probe", `{"id":"`+id+`","safe":true}`))
	}
	done := make(chan []*event.Result, 1)
	go func() { done <- e.run(Turn{Calls: calls}) }()
	for i := 0; i < 4; i++ {
		id := recv(t, p.entered)
		if n := p.active.Load(); n > 2 {
			t.Errorf("%d calls active, limit 2", n)
		}
		p.free(id)
	}
	recv(t, done)
	if m := p.maxSeen.Load(); m > 2 {
		t.Errorf("max %d active calls, limit 2", m)
	}
}

func TestValidation(t *testing.T) {
	schemaTool := &funcTool{name: "Sch",
		schema: `{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"integer"},
		  "opts":{"type":"object","properties":{"n":{"type":"number","minimum":1}}}},
		  "required":["file_path"],"additionalProperties":false}`,
		attrs: tool.Attributes{ReadOnly: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			panic("the handler must never see invalid input")
		},
		valid: func(c *tool.Call) error {
			if strings.Contains(string(c.Input), "relative") {
				return errors.New("file_path must be absolute")
			}
			return nil
		}}
	e := newEnv(t, "default", nil, nil, schemaTool)
	tests := []struct {
		name, tool, input, want string
	}{
		{"unknown tool", "Nope", `{}`, "<tool_use_error>Error: No such tool available: Nope</tool_use_error>"},
		{"malformed json", "Sch", `{"file_path":`, "<tool_use_error>InputValidationError: the input of Sch is not valid JSON: unexpected EOF. Send a JSON object.</tool_use_error>"},
		{"trailing data", "Sch", `{"file_path":"/a"} x`, "<tool_use_error>InputValidationError: the input of Sch is not valid JSON: invalid character after top-level value. Send a JSON object.</tool_use_error>"},
		{"array", "Sch", `[1]`, "<tool_use_error>InputValidationError: the input of Sch must be a JSON object, got an array.</tool_use_error>"},
		{"every schema error", "Sch", `{"limit":"x","extra":1,"opts":{"n":0}}`,
			"<tool_use_error>InputValidationError: Sch failed due to the following issues:\n" +
				"- /file_path: missing required property\n" +
				"- /extra: unexpected property (not in the schema)\n" +
				"- /limit: got string, want integer\n" +
				"- /opts/n: minimum: got 0, want 1</tool_use_error>"},
		{"tool validation", "Sch", `{"file_path":"relative"}`, "<tool_use_error>file_path must be absolute</tool_use_error>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			res := e.run(Turn{Calls: []event.CallInfo{call("c1", tc.tool, tc.input)}})
			r := res[0]
			if r.Status != event.StatusInvalid || !r.IsError {
				t.Errorf("status %s is_error %v, want invalid", r.Status, r.IsError)
			}
			got := text(r)
			if tc.name == "every schema error" { // error order within one object follows the validator
				strip := func(s string) string { return strings.TrimSuffix(s, "</tool_use_error>") }
				gl, wl := strings.Split(strip(got), "\n"), strings.Split(strip(tc.want), "\n")
				slices.Sort(gl)
				slices.Sort(wl)
				got, tc.want = strings.Join(gl, "\n"), strings.Join(wl, "\n")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("text (-want +got):\n%s", diff)
			}
		})
	}
	if n := e.d.schemas.n; n != 1 {
		t.Errorf("%d compiled schemas cached, want 1 (compiled once)", n)
	}
}

func TestDuplicateAndEmptyCallIDs(t *testing.T) {
	e := newEnv(t, "default", nil, nil, echo())
	res := e.run(Turn{ID: "dup", Calls: []event.CallInfo{call("x", "Echo", `{}`), call("x", "Echo", `{}`), call("", "Echo", `{}`)}})
	if res[0].Status != event.StatusCompleted || res[1].Status != event.StatusInvalid {
		t.Errorf("statuses %s %s", res[0].Status, res[1].Status)
	}
	if res[2].CallID == "" || res[2].Status != event.StatusCompleted {
		t.Errorf("empty id: got id %q status %s", res[2].CallID, res[2].Status)
	}
}

func TestPanicBecomesFailedResult(t *testing.T) {
	boom := &funcTool{name: "Boom", schema: `{"type":"object"}`, attrs: tool.Attributes{ReadOnly: true, ConcurrencySafe: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) { panic("kaboom") }}
	e := newEnv(t, "default", nil, nil, boom, echo())
	res := e.run(Turn{Calls: []event.CallInfo{call("p1", "Boom", `{}`), call("p2", "Echo", `{"ok":1}`), call("p3", "Boom", `{}`)}})
	if res[0].Status != event.StatusFailed || !strings.Contains(text(res[0]), "kaboom") {
		t.Errorf("panic result: %s %q", res[0].Status, text(res[0]))
	}
	if res[1].Status != event.StatusCompleted || text(res[1]) != `{"ok":1}` {
		t.Errorf("call after the panic: %s %q", res[1].Status, text(res[1]))
	}
	// a later turn still works
	res = e.run(Turn{Calls: []event.CallInfo{call("q1", "Echo", `{}`)}})
	if res[0].Status != event.StatusCompleted {
		t.Errorf("later turn: %s", res[0].Status)
	}
	if l := e.log.String(); !strings.Contains(l, "tool handler panicked") || !strings.Contains(l, "runtime/debug.Stack") {
		t.Errorf("panic not logged with its stack:\n%s", l)
	}
}

func TestHandlerErrorsAndEmptyOutput(t *testing.T) {
	fail := &funcTool{name: "Fail", schema: `{}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return nil, errors.New("disk on fire")
		}}
	isErr := &funcTool{name: "IsErr", schema: `{}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return tool.ErrorResult("Exit code 2"), nil
		}}
	empty := &funcTool{name: "Empty", schema: `{}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) { return nil, nil }}
	e := newEnv(t, "default", nil, nil, fail, isErr, empty)
	res := e.run(Turn{Calls: []event.CallInfo{call("a", "Fail", ``), call("b", "IsErr", `{}`), call("c", "Empty", `{}`)}})
	want := []struct{ status, text string }{
		{event.StatusFailed, "Error: disk on fire"},
		{event.StatusFailed, "Exit code 2"},
		{event.StatusCompleted, "(Empty completed with no output)"},
	}
	for i, w := range want {
		if res[i].Status != w.status || text(res[i]) != w.text {
			t.Errorf("call %d: %s %q, want %s %q", i, res[i].Status, text(res[i]), w.status, w.text)
		}
	}
}

func TestCancel(t *testing.T) {
	t.Run("one call", func(t *testing.T) {
		p := newProbe()
		e := newEnv(t, "default", nil, nil, p, echo())
		turn := Turn{ID: "c1", Calls: []event.CallInfo{call("a", "Probe", `{"id":"a"}`), call("b", "Echo", `{}`)}}
		done := make(chan []*event.Result, 1)
		go func() { done <- e.run(turn) }()
		recv(t, p.entered)
		running := e.d.Running(e.s.ID())
		want := []RunningCall{{"c1", "a", "Probe", event.StateRunning}, {"c1", "b", "Echo", event.StateQueued}}
		if diff := cmp.Diff(want, running); diff != "" {
			t.Errorf("Running (-want +got):\n%s", diff)
		}
		if e.d.Cancel(e.s.ID(), "c1", "nope") {
			t.Error("Cancel of an unknown call reported true")
		}
		if !e.d.Cancel(e.s.ID(), "c1", "a") {
			t.Fatal("Cancel reported false")
		}
		res := recv(t, done)
		if res[0].Status != event.StatusCancelled || text(res[0]) != interruptText {
			t.Errorf("cancelled call: %s %q", res[0].Status, text(res[0]))
		}
		if res[1].Status != event.StatusCompleted {
			t.Errorf("next call: %s", res[1].Status)
		}
		if len(e.d.Running(e.s.ID())) != 0 || e.d.Cancel(e.s.ID(), "c1", "") {
			t.Error("the turn is still known after it ended")
		}
	})
	t.Run("whole turn", func(t *testing.T) {
		p := newProbe()
		e := newEnv(t, "default", nil, nil, p)
		turn := Turn{ID: "c2", Calls: []event.CallInfo{
			call("a", "Probe", `{"id":"a","safe":true}`), call("b", "Probe", `{"id":"b","safe":true}`), call("c", "Probe", `{"id":"c"}`)}}
		done := make(chan []*event.Result, 1)
		go func() { done <- e.run(turn) }()
		recv(t, p.entered)
		recv(t, p.entered)
		e.d.Cancel(e.s.ID(), "c2", "")
		for i, r := range recv(t, done) {
			if r.Status != event.StatusCancelled {
				t.Errorf("call %d: %s", i, r.Status)
			}
		}
		select {
		case id := <-p.entered:
			t.Errorf("%s ran after the turn was cancelled", id)
		default:
		}
	})
	t.Run("caller context", func(t *testing.T) {
		p := newProbe()
		e := newEnv(t, "default", nil, nil, p)
		ctx, cancel := context.WithCancel(context.Background())
		turn := Turn{ID: "c3", Calls: []event.CallInfo{call("a", "Probe", `{"id":"a"}`), call("b", "Probe", `{"id":"b"}`)}}
		done := make(chan []*event.Result, 1)
		go func() { done <- e.d.RunTurn(ctx, e.s, turn) }()
		recv(t, p.entered)
		cancel()
		res := recv(t, done)
		e.checkLog(turn, res)
		if res[0].Status != event.StatusCancelled || res[1].Status != event.StatusCancelled {
			t.Errorf("statuses %s %s", res[0].Status, res[1].Status)
		}
	})
}

func TestShutdown(t *testing.T) {
	p := newProbe()
	e := newEnv(t, "default", nil, nil, p, echo())
	turn := Turn{ID: "sd", Calls: []event.CallInfo{call("a", "Probe", `{"id":"a"}`), call("b", "Echo", `{}`)}}
	done := make(chan []*event.Result, 1)
	go func() { done <- e.run(turn) }()
	recv(t, p.entered)
	e.d.Shutdown(context.Background())
	// When Shutdown returns, the results are in the log.
	evs, err := e.s.Events(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, ev := range evs {
		if ev.Type == event.CallResult {
			results[ev.CallID] = ev.Result.Status + ": " + text(ev.Result)
		}
	}
	// Nobody interrupted them: the text says the daemon stopped.
	want := "cancelled: " + shutdownText
	if diff := cmp.Diff(map[string]string{"a": want, "b": want}, results); diff != "" {
		t.Errorf("results in the log when Shutdown returned (-want +got):\n%s", diff)
	}
	recv(t, done)
	res := e.run(Turn{ID: "after", Calls: []event.CallInfo{call("c", "Echo", `{}`)}})
	if res[0].Status != event.StatusCancelled {
		t.Errorf("a turn after Shutdown: %s", res[0].Status)
	}
}

func TestHandlerIgnoringCancellationIsAbandoned(t *testing.T) {
	stuck := make(chan struct{})
	entered := make(chan struct{}, 1)
	deaf := &funcTool{name: "Deaf", schema: `{}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			entered <- struct{}{}
			<-stuck
			return tool.TextResult("late"), nil
		}}
	e := newEnv(t, "default", nil, &Options{CancelGrace: 1}, deaf)
	done := make(chan []*event.Result, 1)
	go func() { done <- e.run(Turn{ID: "deaf", Calls: []event.CallInfo{call("a", "Deaf", `{}`)}}) }()
	recv(t, entered)
	e.d.Cancel(e.s.ID(), "deaf", "")
	res := recv(t, done)
	close(stuck) // let the abandoned goroutine finish for goleak
	if res[0].Status != event.StatusCancelled {
		t.Errorf("status %s", res[0].Status)
	}
	if !strings.Contains(e.log.String(), "abandoning") {
		t.Error("abandoning not logged")
	}
}

func TestProgressCoalesced(t *testing.T) {
	const n = 2000
	prog := &funcTool{name: "Prog", schema: `{}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(_ context.Context, _ *tool.Call, p tool.Progress) (*tool.Result, error) {
			for i := 0; i < n; i++ {
				p("line\n")
			}
			return tool.TextResult("ok"), nil
		}}
	e := newEnv(t, "default", nil, nil, prog)
	e.run(Turn{ID: "prog", Calls: []event.CallInfo{call("a", "Prog", `{}`)}})
	evs, err := e.s.Events(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	events, resultAt, lastProgress := 0, -1, -1
	for i, ev := range evs {
		switch ev.Type {
		case event.CallProgress:
			events++
			all.WriteString(ev.Text)
			lastProgress = i
		case event.CallResult:
			resultAt = i
		}
	}
	if all.String() != strings.Repeat("line\n", n) {
		t.Errorf("progress text lost: got %d bytes", all.Len())
	}
	if events == 0 || events >= n {
		t.Errorf("%d progress events for %d progress calls: not coalesced", events, n)
	}
	if lastProgress > resultAt {
		t.Error("progress after the call's result")
	}
}

func TestLargeOutputPersisted(t *testing.T) {
	big := strings.Repeat("0123456789abcdefghi\n", 3000) // 60,000 chars
	bigTool := &funcTool{name: "Big", schema: `{}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return tool.TextResult(big), nil
		}}
	smallLimit := &funcTool{name: "Small", schema: `{}`, attrs: tool.Attributes{ReadOnly: true, MaxResultChars: 100},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return tool.TextResult(strings.Repeat("é", 101)), nil
		}}
	e := newEnv(t, "default", nil, nil, bigTool, smallLimit)
	res := e.run(Turn{Calls: []event.CallInfo{call("call/../big", "Big", `{}`), call("s", "Small", `{}`)}})
	r := res[0]
	path := filepath.Join(e.s.OutputDir(), "call____big.txt")
	wantPrefix := "<persisted-output>\nOutput too large (59 KB). Full output saved to: " + path + "\n\nPreview (first 2KB):\n"
	got := text(r)
	if r.Status != event.StatusCompleted || !strings.HasPrefix(got, wantPrefix) || !strings.HasSuffix(got, "\n...\n</persisted-output>") {
		t.Fatalf("result %s:\n%.300s", r.Status, got)
	}
	prev := strings.TrimSuffix(strings.TrimPrefix(got, wantPrefix), "\n...\n</persisted-output>")
	if len(prev) > 2000 || len(prev) < 1000 || !strings.HasPrefix(big, prev) {
		t.Errorf("preview of %d bytes is not the start of the output", len(prev))
	}
	full, err := os.ReadFile(path)
	if err != nil || string(full) != big {
		t.Errorf("persisted file: %d bytes, err %v", len(full), err)
	}
	if !strings.HasPrefix(text(res[1]), "<persisted-output>") {
		t.Errorf("101 chars over a 100-char limit not persisted: %q", text(res[1]))
	}
}

// ---- permission ----

func TestPermissionModes(t *testing.T) {
	tests := []struct {
		mode, where, status string
	}{
		{"plan", "inside", event.StatusDenied},
		{"bypassPermissions", "outside", event.StatusCompleted},
		{"acceptEdits", "inside", event.StatusCompleted},
		{"dontAsk", "inside", event.StatusDenied},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			var e *env
			e = newEnv(t, tc.mode, nil, nil, writer(func() string { return e.wd }))
			target := filepath.Join(e.wd, "f.txt")
			if tc.where == "outside" {
				target = filepath.Join(t.TempDir(), "f.txt")
			}
			in, _ := json.Marshal(map[string]string{"file_path": target, "content": "hi"})
			res := e.run(Turn{Calls: []event.CallInfo{call("w", "Writer", string(in))}})
			if res[0].Status != tc.status {
				t.Fatalf("status %s, want %s: %q", res[0].Status, tc.status, text(res[0]))
			}
			_, err := os.Stat(target)
			if (err == nil) != (tc.status == event.StatusCompleted) {
				t.Errorf("file exists: %v, status %s", err == nil, tc.status)
			}
			if tc.mode == "plan" && !strings.Contains(text(res[0]), "plan mode") {
				t.Errorf("deny text: %q", text(res[0]))
			}
		})
	}
}

// answerNext waits for the next permission request and answers it.
func (e *env) answerNext(a permission.Answer) event.PermissionRequest {
	e.t.Helper()
	ev := e.waitEvent(func(ev *event.Event) bool { return ev.Type == event.PermissionRequested })
	pend := e.d.Broker().Pending(e.s.ID())
	if len(pend) != 1 || pend[0].RequestID != ev.Permission.RequestID {
		e.t.Errorf("Pending = %+v", pend)
	}
	if rc := e.d.Running(e.s.ID()); len(rc) != 1 || rc[0].State != event.StateAwaitingPermission {
		e.t.Errorf("Running = %+v", rc)
	}
	if !e.d.Broker().Answer(e.s.ID(), ev.Permission.RequestID, a) {
		e.t.Fatal("answer refused")
	}
	if e.d.Broker().Answer(e.s.ID(), ev.Permission.RequestID, a) {
		e.t.Error("a second answer was accepted")
	}
	return *ev.Permission
}

func TestPermissionAsk(t *testing.T) {
	tests := []struct {
		name       string
		answer     permission.Answer
		status     string
		wantText   string
		wantFile   string
		resolution string
	}{
		{"allow", permission.Answer{Decision: "allow_once", ClientID: "cli-1"}, event.StatusCompleted, "wrote ", "hi", "allow_once"},
		{"deny with feedback", permission.Answer{Decision: "deny", Feedback: "use the other file", ClientID: "cli-1"}, event.StatusDenied,
			rejectionText + " To tell you how to proceed, the user said:\nuse the other file", "", "deny"},
		{"deny", permission.Answer{Decision: "deny"}, event.StatusDenied, rejectionText + " STOP", "", "deny"},
		{"updated input", permission.Answer{Decision: "allow_always", UpdatedInput: json.RawMessage(`{"file_path":"FILE","content":"changed"}`)},
			event.StatusCompleted, "wrote ", "changed", "allow_always"},
		{"invalid updated input", permission.Answer{Decision: "allow_once", UpdatedInput: json.RawMessage(`{"file_path":1}`)},
			event.StatusInvalid, "<tool_use_error>InputValidationError", "", "allow_once"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e *env
			e = newEnv(t, "default", nil, nil, writer(func() string { return e.wd }))
			target := filepath.Join(e.wd, "f.txt")
			tc.answer.UpdatedInput = json.RawMessage(strings.ReplaceAll(string(tc.answer.UpdatedInput), "FILE", target))
			in, _ := json.Marshal(map[string]string{"file_path": target, "content": "hi"})
			done := make(chan []*event.Result, 1)
			go func() { done <- e.run(Turn{ID: "ask", Calls: []event.CallInfo{call("w", "Writer", string(in))}}) }()
			req := e.answerNext(tc.answer)
			if req.CallID != "w" || req.Tool != "Writer" || req.Deadline.IsZero() || !strings.Contains(req.Reason, "f.txt") {
				t.Errorf("request %+v", req)
			}
			res := recv(t, done)
			if res[0].Status != tc.status || !strings.HasPrefix(text(res[0]), tc.wantText) {
				t.Errorf("result %s %q", res[0].Status, text(res[0]))
			}
			b, _ := os.ReadFile(target)
			if string(b) != tc.wantFile {
				t.Errorf("file holds %q, want %q", b, tc.wantFile)
			}
			ev := e.waitEvent(func(ev *event.Event) bool { return ev.Type == event.PermissionResolved })
			if ev.Resolution.Decision != tc.resolution || ev.Resolution.ClientID != tc.answer.ClientID || ev.Resolution.RequestID != req.RequestID {
				t.Errorf("resolution %+v", ev.Resolution)
			}
			if len(e.d.Broker().Pending(e.s.ID())) != 0 {
				t.Error("request still pending")
			}
		})
	}
}

func TestPermissionTimeout(t *testing.T) {
	var e *env
	e = newEnv(t, "default", nil, nil, writer(func() string { return e.wd }))
	target := filepath.Join(e.wd, "f.txt")
	in, _ := json.Marshal(map[string]string{"file_path": target, "content": "hi"})
	res := e.run(Turn{Calls: []event.CallInfo{call("w", "Writer", string(in))}, PermissionTimeout: 200 * time.Millisecond})
	want := "Permission to use Writer has been denied: nobody answered the permission request within 0.2 s."
	if res[0].Status != event.StatusDenied || text(res[0]) != want {
		t.Errorf("result %s %q", res[0].Status, text(res[0]))
	}
	ev := e.waitEvent(func(ev *event.Event) bool { return ev.Type == event.PermissionResolved })
	if ev.Resolution.Decision != "timeout" {
		t.Errorf("resolution %+v", ev.Resolution)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the file was written after a timeout")
	}
}

func TestPermissionCancelledWhileWaiting(t *testing.T) {
	var e *env
	e = newEnv(t, "default", nil, nil, writer(func() string { return e.wd }))
	in, _ := json.Marshal(map[string]string{"file_path": filepath.Join(e.wd, "f"), "content": "hi"})
	done := make(chan []*event.Result, 1)
	go func() { done <- e.run(Turn{ID: "pc", Calls: []event.CallInfo{call("w", "Writer", string(in))}}) }()
	ev := e.waitEvent(func(ev *event.Event) bool { return ev.Type == event.PermissionRequested })
	e.d.Cancel(e.s.ID(), "pc", "w")
	res := recv(t, done)
	if res[0].Status != event.StatusCancelled {
		t.Errorf("status %s", res[0].Status)
	}
	r := e.waitEvent(func(ev *event.Event) bool { return ev.Type == event.PermissionResolved })
	if r.Resolution.Decision != "cancelled" {
		t.Errorf("resolution %+v", r.Resolution)
	}
	if e.d.Broker().Answer(e.s.ID(), ev.Permission.RequestID, permission.Answer{Decision: "allow_once"}) {
		t.Error("an answer after cancellation was accepted")
	}
}

func TestReadOnlyOutsideAsks(t *testing.T) {
	rd := &funcTool{name: "Rd", schema: `{}`, attrs: tool.Attributes{ReadOnly: true, ConcurrencySafe: true},
		access: func(*tool.Call) tool.Access {
			return tool.Access{Kind: tool.AccessRead, Paths: []string{"/etc/passwd"}}
		},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return tool.TextResult("x"), nil
		}}
	e := newEnv(t, "plan", nil, nil, rd)
	res := e.run(Turn{Calls: []event.CallInfo{call("a", "Rd", `{}`)}, PermissionTimeout: 1})
	if res[0].Status != event.StatusDenied || !strings.Contains(text(res[0]), "nobody answered") {
		t.Errorf("result %s %q", res[0].Status, text(res[0]))
	}
}

// ---- hooks ----

type fakeHooks struct {
	pre  func(c *tool.Call) PreResult
	post func(r *event.Result) PostResult
}

func (h *fakeHooks) Has(tool.Env, string) bool { return true }
func (h *fakeHooks) PreToolUse(_ context.Context, ev ToolEvent) PreResult {
	return h.pre(ev.Call)
}
func (h *fakeHooks) PostToolUse(_ context.Context, _ ToolEvent, r *event.Result) PostResult {
	return h.post(r)
}
func (h *fakeHooks) PostToolUseFailure(context.Context, ToolEvent, *event.Result) PostResult {
	return PostResult{}
}
func (h *fakeHooks) PostToolBatch(context.Context, tool.Env, string, []BatchCall) PostResult {
	return PostResult{}
}
func (h *fakeHooks) PermissionRequest(context.Context, ToolEvent, string) PermissionResult {
	return PermissionResult{}
}
func (h *fakeHooks) PermissionDenied(context.Context, ToolEvent, string)                    {}
func (h *fakeHooks) Notification(context.Context, tool.Env, string, string, string, string) {}

func TestHooks(t *testing.T) {
	h := &fakeHooks{
		pre: func(c *tool.Call) PreResult {
			var v map[string]any
			_ = json.Unmarshal(c.Input, &v)
			switch v["do"] {
			case "block":
				return PreResult{Block: true, Reason: "not on fridays"}
			case "deny":
				return PreResult{Decision: permission.Deny, Reason: "no"}
			case "rewrite":
				return PreResult{UpdatedInput: json.RawMessage(`{"do":"rewritten"}`)}
			case "badrewrite":
				return PreResult{UpdatedInput: json.RawMessage(`[]`)}
			case "ask":
				return PreResult{Decision: permission.Ask, Reason: "hook wants a person"}
			case "panic":
				panic("hook bug")
			}
			return PreResult{}
		},
		post: func(r *event.Result) PostResult {
			if strings.Contains(text(r), "rewritten") {
				return PostResult{AdditionalContext: "note from hook", Flag: true, Reason: "looks odd"}
			}
			return PostResult{}
		},
	}
	e := newEnv(t, "default", h, nil, echo())
	res := e.run(Turn{Calls: []event.CallInfo{
		call("a", "Echo", `{"do":"block"}`),
		call("b", "Echo", `{"do":"deny"}`),
		call("c", "Echo", `{"do":"rewrite"}`),
		call("d", "Echo", `{"do":"badrewrite"}`),
		call("e", "Echo", `{"do":"panic"}`),
		call("f", "Echo", `{"do":"ask"}`),
	}, PermissionTimeout: 1e6})
	want := []struct{ status, text string }{
		{event.StatusBlocked, "A PreToolUse hook blocked this call of Echo: not on fridays"},
		{event.StatusDenied, "Permission to use Echo has been denied by a PreToolUse hook: no"},
		{event.StatusCompleted, `{"do":"rewritten"}note from hookPostToolUse hook feedback: looks odd`},
		{event.StatusInvalid, "<tool_use_error>InputValidationError: the input of Echo must be a JSON object, got an array.</tool_use_error>"},
		{event.StatusBlocked, "The PreToolUse hook for Echo failed (PreToolUse hook panicked: hook bug), so the call was blocked."},
		{event.StatusDenied, "Permission to use Echo has been denied: nobody answered the permission request within 0.001 s."},
	}
	for i, w := range want {
		if res[i].Status != w.status || text(res[i]) != w.text {
			t.Errorf("call %d: %s %q, want %s %q", i, res[i].Status, text(res[i]), w.status, w.text)
		}
	}
	if !res[2].IsError {
		t.Error("a flagged result is not is_error")
	}
	// The events name every hook stage.
	evs, _ := e.s.Events(context.Background(), 1)
	var states []string
	for _, ev := range evs {
		if ev.Type == event.CallState && ev.CallID == "c" {
			states = append(states, ev.State)
		}
	}
	if diff := cmp.Diff([]string{"queued", "validating", "hook_pre", "running", "hook_post"}, states); diff != "" {
		t.Errorf("states of call c (-want +got):\n%s", diff)
	}
}

type fixedPolicy permission.Decision

func (f fixedPolicy) Decide(context.Context, permission.Request) permission.Decision {
	return permission.Decision(f)
}

func TestDecideFailsClosed(t *testing.T) {
	e := newEnv(t, "default", nil, nil, echo())
	d := newDispatcher(t, e.d.Registry(), fixedPolicy{Verdict: "bogus", Reason: "r"}, nil, nil)
	res := d.RunTurn(context.Background(), e.s, Turn{Calls: []event.CallInfo{call("a", "Echo", `{}`)}})
	if res[0].Status != event.StatusDenied || !strings.Contains(text(res[0]), `the permission policy answered "bogus"`) {
		t.Errorf("result %s %q", res[0].Status, text(res[0]))
	}
}

package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/session"
	"github.com/tackle-agent/tackle/daemon/store"
	"github.com/tackle-agent/tackle/daemon/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// failAfter bounds every wait in these tests, so a broken pipeline fails
// instead of hanging; nothing waits for it to pass.
const failAfter = 20 * time.Second

// env is one real session on a real SQLite store in a temp dir.
type env struct {
	t   testing.TB
	s   *session.Session
	wd  string
	d   *Dispatcher
	sub *event.Subscription
	log *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// newEnv creates a session in mode and a dispatcher over tools.
func newEnv(t testing.TB, mode string, hooks Hooks, opts *Options, tools ...tool.Tool) *env {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := session.NewManager(st, &session.Options{StateDir: dir})
	t.Cleanup(func() { m.Close() })
	wd := filepath.Join(dir, "wd")
	if err := os.Mkdir(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	s, _, err := m.Create(context.Background(), session.CreateOptions{Cwd: wd, PermissionMode: mode})
	if err != nil {
		t.Fatal(err)
	}
	reg := tool.NewRegistry()
	if err := reg.Register(tools...); err != nil {
		t.Fatal(err)
	}
	lb := &syncBuffer{}
	o := Options{}
	if opts != nil {
		o = *opts
	}
	o.Logger = hclog.New(&hclog.LoggerOptions{Output: lb, Level: hclog.Debug})
	_, sub, err := s.Subscribe(0, true, 100000)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Close)
	return &env{t: t, s: s, wd: s.Cwd(), d: newDispatcher(t, reg, nil, hooks, &o), sub: sub, log: lb}
}

// newDispatcher is New, shut down when the test ends (which ends the
// goroutines it keeps for handlers).
func newDispatcher(t testing.TB, reg *tool.Registry, policy permission.Policy, hooks Hooks, o *Options) *Dispatcher {
	d := New(reg, policy, nil, hooks, o)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	return d
}

// run runs a turn and checks the log invariants for it.
func (e *env) run(turn Turn) []*event.Result {
	e.t.Helper()
	if turn.ID == "" {
		turn.ID = fmt.Sprintf("t%d", time.Now().UnixNano())
	}
	res := e.d.RunTurn(context.Background(), e.s, turn)
	e.checkLog(turn, res)
	return res
}

// checkLog asserts that the turn is in the session log as turn_started,
// exactly one call_result per call (the one returned), then turn_ended, and
// that the results come back in call order.
func (e *env) checkLog(turn Turn, res []*event.Result) {
	e.t.Helper()
	if len(res) != len(turn.Calls) {
		e.t.Fatalf("got %d results for %d calls", len(res), len(turn.Calls))
	}
	for i, c := range turn.Calls {
		if c.ID != "" && res[i].CallID != c.ID {
			e.t.Errorf("result %d is for call %q, want %q", i, res[i].CallID, c.ID)
		}
	}
	evs, err := e.s.Events(context.Background(), 1)
	if err != nil {
		e.t.Fatal(err)
	}
	started, ended := -1, -1
	count := map[string]int{}
	var lastSeq uint64
	for i, ev := range evs {
		if ev.Seq <= lastSeq {
			e.t.Errorf("event seq %d after %d", ev.Seq, lastSeq)
		}
		lastSeq = ev.Seq
		if ev.TurnID != turn.ID {
			continue
		}
		switch ev.Type {
		case event.TurnStarted:
			started = i
		case event.TurnEnded:
			ended = i
		case event.CallResult:
			count[ev.CallID]++
			if ended >= 0 {
				e.t.Errorf("call_result for %s after turn_ended", ev.CallID)
			}
		}
		if started < 0 {
			e.t.Errorf("%s event before turn_started", ev.Type)
		}
	}
	if started < 0 || ended < 0 {
		e.t.Fatalf("turn %s: turn_started at %d, turn_ended at %d", turn.ID, started, ended)
	}
	want := map[string]int{}
	for _, r := range res {
		want[r.CallID]++
	}
	for _, r := range res {
		if count[r.CallID] != want[r.CallID] {
			e.t.Errorf("call %s has %d call_result events, want exactly 1", r.CallID, count[r.CallID])
		}
	}
}

// waitEvent reads the subscription until pred matches.
func (e *env) waitEvent(pred func(*event.Event) bool) *event.Event {
	e.t.Helper()
	timeout := time.NewTimer(failAfter)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-e.sub.C():
			if !ok {
				e.t.Fatalf("subscription closed: %v", e.sub.Err())
			}
			if pred(ev) {
				return ev
			}
		case <-timeout.C:
			e.t.Fatal("timed out waiting for an event")
		}
	}
}

func recv[T any](t testing.TB, ch <-chan T) T {
	t.Helper()
	timeout := time.NewTimer(failAfter)
	defer timeout.Stop()
	select {
	case v := <-ch:
		return v
	case <-timeout.C:
		t.Fatal("timed out waiting on a channel")
	}
	var zero T
	return zero
}

func call(id, name, input string) event.CallInfo {
	return event.CallInfo{ID: id, Name: name, Input: json.RawMessage(input)}
}

func text(r *event.Result) string {
	var sb strings.Builder
	for _, c := range r.Content {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// ---- fake tools ----

// probe is a tool whose calls announce themselves on entered and wait for
// release (or their context), so tests can prove what overlaps.
// Input: {"id": string, "safe": bool}.
type probe struct {
	entered chan string
	gates   map[string]chan struct{} // guarded by mu; closed to release a call id
	active  atomic.Int32
	maxSeen atomic.Int32

	mu       sync.Mutex
	returned []string // ids whose Run returned, in order
	applied  []string // ids whose modifier ran, in order
	applyLog []string // at each apply: the returned ids seen
}

func newProbe() *probe {
	return &probe{entered: make(chan string, 100), gates: map[string]chan struct{}{}}
}

func (p *probe) gate(id string) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.gates[id]
	if g == nil {
		g = make(chan struct{})
		p.gates[id] = g
	}
	return g
}

// free releases the call with this id (now or when it arrives).
func (p *probe) free(id string) { close(p.gate(id)) }

func (p *probe) Spec() tool.Spec {
	return tool.Spec{Name: "Probe", Description: "test probe", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"id":{"type":"string"},"safe":{"type":"boolean"}},"required":["id"]}`)}
}

type probeIn struct {
	ID   string `json:"id"`
	Safe bool   `json:"safe"`
}

func (p *probe) Attributes(in json.RawMessage) tool.Attributes {
	var v probeIn
	_ = json.Unmarshal(in, &v)
	return tool.Attributes{ReadOnly: true, ConcurrencySafe: v.Safe}
}
func (p *probe) Validate(context.Context, *tool.Call) error { return nil }
func (p *probe) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return tool.Access{Kind: tool.AccessRead}, nil
}

func (p *probe) Run(ctx context.Context, c *tool.Call, _ tool.Progress) (*tool.Result, error) {
	var v probeIn
	if err := json.Unmarshal(c.Input, &v); err != nil {
		return nil, err
	}
	n := p.active.Add(1)
	for {
		m := p.maxSeen.Load()
		if n <= m || p.maxSeen.CompareAndSwap(m, n) {
			break
		}
	}
	defer p.active.Add(-1)
	p.entered <- v.ID
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.gate(v.ID):
	}
	p.mu.Lock()
	p.returned = append(p.returned, v.ID)
	p.mu.Unlock()
	return &tool.Result{Content: []tool.Content{tool.Text("done " + v.ID)}, Modifier: func(m tool.Mutator) {
		m.RecordFile(tool.FileState{Path: "/probe/" + v.ID})
		p.mu.Lock()
		p.applied = append(p.applied, v.ID)
		p.applyLog = append(p.applyLog, strings.Join(p.returned, ","))
		p.mu.Unlock()
	}}, nil
}

// funcTool is a tool made of functions, with attributes fixed per tool.
type funcTool struct {
	name   string
	schema string
	attrs  tool.Attributes
	access func(*tool.Call) tool.Access
	run    func(ctx context.Context, c *tool.Call, p tool.Progress) (*tool.Result, error)
	valid  func(*tool.Call) error
}

func (f *funcTool) Spec() tool.Spec {
	return tool.Spec{Name: f.name, Description: "test tool " + f.name, InputSchema: json.RawMessage(f.schema)}
}
func (f *funcTool) Attributes(json.RawMessage) tool.Attributes { return f.attrs }
func (f *funcTool) Validate(_ context.Context, c *tool.Call) error {
	if f.valid != nil {
		return f.valid(c)
	}
	return nil
}
func (f *funcTool) CheckPermission(_ context.Context, c *tool.Call) (tool.Access, error) {
	if f.access != nil {
		return f.access(c), nil
	}
	return tool.Access{Kind: tool.AccessRead}, nil
}
func (f *funcTool) Run(ctx context.Context, c *tool.Call, p tool.Progress) (*tool.Result, error) {
	return f.run(ctx, c, p)
}

// sleeper sleeps {"ms": N} milliseconds, honouring ctx.
func sleeper(name string, safe bool) *funcTool {
	return &funcTool{name: name, schema: `{"type":"object","properties":{"ms":{"type":"integer","minimum":0}}}`,
		attrs: tool.Attributes{ReadOnly: true, ConcurrencySafe: safe},
		run: func(ctx context.Context, c *tool.Call, _ tool.Progress) (*tool.Result, error) {
			var v struct{ MS int }
			if err := json.Unmarshal(c.Input, &v); err != nil {
				return nil, err
			}
			t := time.NewTimer(time.Duration(v.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				return tool.TextResult("slept"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}
}

// echo returns its input as text; it is read-only and safe.
func echo() *funcTool {
	return &funcTool{name: "Echo", schema: `{"type":"object"}`, attrs: tool.Attributes{ReadOnly: true, ConcurrencySafe: true},
		run: func(_ context.Context, c *tool.Call, _ tool.Progress) (*tool.Result, error) {
			return tool.TextResult(string(c.Input)), nil
		}}
}

// writer is a non-read-only tool that edits a file inside (or outside) the working dirs.
// Input: {"file_path": string, "content": string}; it really writes the file.
func writer(e func() string) *funcTool {
	return &funcTool{name: "Writer",
		schema: `{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"],"additionalProperties":false}`,
		attrs:  tool.Attributes{},
		access: func(c *tool.Call) tool.Access {
			var v struct {
				FilePath string `json:"file_path"`
			}
			_ = json.Unmarshal(c.Input, &v)
			inside := strings.HasPrefix(v.FilePath, e()+string(filepath.Separator))
			return tool.Access{Kind: tool.AccessEdit, Paths: []string{v.FilePath}, InsideWorkingDirs: inside}
		},
		valid: func(c *tool.Call) error {
			var v struct {
				FilePath string `json:"file_path"`
			}
			_ = json.Unmarshal(c.Input, &v)
			if !filepath.IsAbs(v.FilePath) {
				return errors.New("file_path must be an absolute path, not " + v.FilePath)
			}
			return nil
		},
		run: func(_ context.Context, c *tool.Call, _ tool.Progress) (*tool.Result, error) {
			var v struct {
				FilePath string `json:"file_path"`
				Content  string `json:"content"`
			}
			if err := json.Unmarshal(c.Input, &v); err != nil {
				return nil, err
			}
			if err := os.WriteFile(v.FilePath, []byte(v.Content), 0o644); err != nil {
				return nil, err
			}
			return tool.TextResult("wrote " + v.FilePath), nil
		}}
}

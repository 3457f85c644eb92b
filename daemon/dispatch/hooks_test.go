package dispatch

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/hook"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/tool"
)

// hookEnv is a session whose project settings configure real hooks
// (the scripts of daemon/hook/testdata), read by a real settings loader.
type hookEnv struct {
	*env
	hooks *hook.Hooks
	rec   string // record.sh's output file

	mu     sync.Mutex
	saved  []permission.Rule
	audits []AuditRecord
}

func script(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "hook", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// newHookEnv builds a session with hooks (the "hooks" value of the
// project's .tackle/settings.json), rules saved by allow_always answers
// at session scope, and an audit log.
func newHookEnv(t *testing.T, mode string, hooks map[string]any, tools ...tool.Tool) *hookEnv {
	t.Helper()
	home := t.TempDir()
	trust := config.NewTrust(filepath.Join(home, ".config"))
	loader := config.NewLoader(&config.Options{Home: home, ConfigHome: filepath.Join(home, ".config"), ManagedPath: filepath.Join(home, "managed.json"), Trust: trust})
	he := &hookEnv{rec: filepath.Join(t.TempDir(), "rec.jsonl")}
	he.hooks = hook.New(&hook.Options{Settings: loader.Load, Trusted: func(string) bool { return true }})
	opts := &Options{
		Rules: func(Session) *permission.Rules {
			he.mu.Lock()
			defer he.mu.Unlock()
			return permission.NewRules(he.saved...)
		},
		SaveAlways: func(_ Session, scope, rule string) (string, error) {
			r, err := permission.ParseRule(rule)
			if err != nil {
				return "", err
			}
			r.Behavior, r.Source = permission.BehaviorAllow, permission.Source{Scope: scope}
			he.mu.Lock()
			he.saved = append(he.saved, r)
			he.mu.Unlock()
			return "", nil
		},
		Audit: func(_ string, rec AuditRecord) {
			he.mu.Lock()
			he.audits = append(he.audits, rec)
			he.mu.Unlock()
		},
	}
	he.env = newEnv(t, mode, he.hooks, opts, tools...)
	b, err := json.Marshal(map[string]any{"hooks": hooks})
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.ReplaceAll(string(b), "REC", he.rec))
	if err := os.MkdirAll(filepath.Join(he.wd, ".tackle"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(he.wd, ".tackle", "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := trust.Trust(he.wd, false); err != nil { // the project's hooks apply once trusted
		t.Fatal(err)
	}
	he.hooks.Invalidate()
	return he
}

func (he *hookEnv) auditLog() []AuditRecord {
	he.mu.Lock()
	defer he.mu.Unlock()
	return append([]AuditRecord(nil), he.audits...)
}

// records returns the inputs record.sh saw.
func (he *hookEnv) records() []map[string]any {
	he.t.Helper()
	f, err := os.Open(he.rec)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		he.t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			he.t.Fatal(err)
		}
		out = append(out, m["input"].(map[string]any))
	}
	return out
}

func hooksOf(matcher string, handlers ...map[string]any) []any {
	return []any{map[string]any{"matcher": matcher, "hooks": handlers}}
}

func command(c string, args ...string) map[string]any {
	h := map[string]any{"type": "command", "command": c}
	if len(args) > 0 {
		h["args"] = args
	}
	return h
}

// act is a tool that is not read-only (so the default mode asks) and
// returns its input.
func act() *funcTool {
	return &funcTool{name: "Act", schema: `{"type":"object"}`, attrs: tool.Attributes{},
		access: func(*tool.Call) tool.Access { return tool.Access{Kind: tool.AccessOther} },
		run: func(_ context.Context, c *tool.Call, _ tool.Progress) (*tool.Result, error) {
			return tool.TextResult(string(c.Input)), nil
		}}
}

func (e *env) permissionRequests() int {
	evs, err := e.s.Events(context.Background(), 1)
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, ev := range evs {
		if ev.Type == event.PermissionRequested {
			n++
		}
	}
	return n
}

func TestPreToolUseThroughEngine(t *testing.T) {
	guard := "python3 " + script(t, "guard.py")
	he := newHookEnv(t, "default", map[string]any{"PreToolUse": hooksOf("Act|Echo", command(guard))}, act(), echo())
	res := he.run(Turn{Calls: []event.CallInfo{
		call("a", "Act", `{"do":"allow"}`),   // would ask: the hook's allow skips the prompt
		call("b", "Echo", `{"do":"deny"}`),   // read-only, would be allowed: the hook denies
		call("c", "Act", `{"do":"rewrite"}`), // allowed, with the hook's input
		call("d", "Act", `{"do":"context"}`), // no decision: asks, nobody answers
		call("e", "Echo", `{"do":"exit2"}`),  // blocked
	}, PermissionTimeout: 1})
	want := []struct{ status, text string }{
		{event.StatusCompleted, `{"do":"allow"}`},
		{event.StatusDenied, "Permission to use Echo has been denied by a PreToolUse hook: guard says deny"},
		{event.StatusCompleted, `{"do": "rewritten", "by": "guard"}`},
		{event.StatusDenied, "Permission to use Act has been denied: nobody answered the permission request within 0.000000001 s."},
		{event.StatusBlocked, "A PreToolUse hook blocked this call of Echo: blocked by guard"},
	}
	for i, w := range want {
		if res[i].Status != w.status || text(res[i]) != w.text {
			t.Errorf("call %d: %s %q, want %s %q", i, res[i].Status, text(res[i]), w.status, w.text)
		}
	}
	// Every hook run is an event.
	evs, _ := he.s.Events(context.Background(), 1)
	var runs []string
	for _, ev := range evs {
		if ev.Type == event.HookRan {
			runs = append(runs, ev.CallID+":"+ev.Hook.Outcome)
			if ev.TurnID == "" || ev.Hook.Event != "PreToolUse" || ev.Hook.Hook != guard {
				t.Errorf("hook event %+v %+v", ev, ev.Hook)
			}
		}
	}
	if got := strings.Join(runs, " "); got != "a:allowed b:denied c:allowed d:ok e:blocked" {
		t.Errorf("hook runs %s", got)
	}
	// Deciders in the audit log.
	var by []string
	for _, a := range he.auditLog() {
		by = append(by, a.CallID+":"+a.Outcome+"/"+a.DecidedBy)
		if len(a.InputSHA256) != 64 || a.Tool == "" || a.Time.IsZero() {
			t.Errorf("audit record %+v", a)
		}
	}
	if got := strings.Join(by, " "); got != "a:allow/hook b:deny/hook c:allow/hook d:timeout/timeout" {
		t.Errorf("audit %s", got)
	}
}

func TestHookAllowDoesNotBeatDenyRule(t *testing.T) {
	he := newHookEnv(t, "default", map[string]any{"PreToolUse": hooksOf("", command("python3 "+script(t, "guard.py")))}, act())
	he.saved = []permission.Rule{{Tool: "Act", Behavior: permission.BehaviorDeny, Text: "Act", Source: permission.Source{Scope: "session"}}}
	res := he.run(Turn{Calls: []event.CallInfo{call("a", "Act", `{"do":"allow"}`)}})
	if res[0].Status != event.StatusDenied || !strings.Contains(text(res[0]), "deny rule Act") {
		t.Errorf("result %s %q", res[0].Status, text(res[0]))
	}
	if a := he.auditLog(); len(a) != 1 || a[0].DecidedBy != "rule" || a[0].Rule != "Act" {
		t.Errorf("audit %+v", a)
	}
}

func TestPermissionRequestHookAnswers(t *testing.T) {
	he := newHookEnv(t, "default", map[string]any{
		"PermissionRequest": hooksOf("Act", command("python3 "+script(t, "permreq.py"))),
		"PermissionDenied":  hooksOf("Act", command(script(t, "record.sh"), "REC")),
		"Notification":      hooksOf("permission_prompt", command(script(t, "record.sh"), "REC")),
	}, act())
	res := he.run(Turn{Calls: []event.CallInfo{
		call("a", "Act", `{"perm":"allow"}`),
		call("b", "Act", `{"perm":"deny"}`),
	}})
	if res[0].Status != event.StatusCompleted || text(res[0]) != `{"perm": "allow", "suggested": "Act"}` {
		t.Errorf("allowed: %s %q", res[0].Status, text(res[0]))
	}
	if res[1].Status != event.StatusDenied || text(res[1]) != "Permission to use Act has been denied by a PermissionRequest hook: permreq says no" {
		t.Errorf("denied: %s %q", res[1].Status, text(res[1]))
	}
	if n := he.permissionRequests(); n != 0 {
		t.Errorf("%d permission requests for calls the hook answered", n)
	}
	// A hook that does not answer: people are asked, the Notification hook
	// hears of it; the timeout denies and PermissionDenied hears of that.
	res = he.run(Turn{Calls: []event.CallInfo{call("c", "Act", `{"perm":"none"}`)}, PermissionTimeout: 1})
	if res[0].Status != event.StatusDenied {
		t.Errorf("unanswered: %s %q", res[0].Status, text(res[0]))
	}
	var got []string
	for _, r := range he.records() {
		got = append(got, r["hook_event_name"].(string))
		switch r["hook_event_name"] {
		case "Notification":
			if r["notification_type"] != "permission_prompt" || !strings.Contains(r["message"].(string), "Act") {
				t.Errorf("notification %v", r)
			}
		case "PermissionDenied":
			if r["tool_name"] != "Act" || r["reason"] == "" {
				t.Errorf("denied %v", r)
			}
		}
	}
	sort.Strings(got) // the Notification hook runs beside the prompt
	if strings.Join(got, " ") != "Notification PermissionDenied PermissionDenied" {
		t.Errorf("records %v", got)
	}
}

func TestPostToolUseHooksChangeResults(t *testing.T) {
	he := newHookEnv(t, "default", map[string]any{
		"PostToolUse":        hooksOf("Echo", command("sh "+script(t, "post.sh"))),
		"PostToolUseFailure": hooksOf("Fail", command(script(t, "record.sh"), "REC")),
	}, echo(), &funcTool{name: "Fail", schema: `{}`, attrs: tool.Attributes{ReadOnly: true},
		run: func(context.Context, *tool.Call, tool.Progress) (*tool.Result, error) {
			return tool.ErrorResult("it broke"), nil
		}})
	res := he.run(Turn{Calls: []event.CallInfo{
		call("a", "Echo", `{"x":"ctxme"}`),
		call("b", "Echo", `{"x":"replaceme"}`),
		call("c", "Echo", `{"x":"flagme"}`),
		call("d", "Fail", `{}`),
	}})
	want := []struct {
		status  string
		isError bool
		blocks  []string
	}{
		{event.StatusCompleted, false, []string{`{"x":"ctxme"}`, "context from post.sh"}},
		{event.StatusCompleted, false, []string{"replaced by post.sh"}},
		{event.StatusCompleted, true, []string{`{"x":"flagme"}`, "PostToolUse hook feedback: flagged by post.sh"}},
		{event.StatusFailed, true, []string{"it broke"}},
	}
	for i, w := range want {
		var blocks []string
		for _, c := range res[i].Content {
			blocks = append(blocks, c.Text)
		}
		if res[i].Status != w.status || res[i].IsError != w.isError || strings.Join(blocks, "|") != strings.Join(w.blocks, "|") {
			t.Errorf("call %d: %s is_error=%v %q", i, res[i].Status, res[i].IsError, blocks)
		}
	}
	recs := he.records()
	if len(recs) != 1 || recs[0]["hook_event_name"] != "PostToolUseFailure" || recs[0]["error"] != "it broke" || recs[0]["is_interrupt"] != false {
		t.Errorf("failure hook input %v", recs)
	}
}

func TestPostToolBatchOncePerTurn(t *testing.T) {
	p := newProbe()
	he := newHookEnv(t, "default", map[string]any{
		"PostToolBatch": hooksOf("", command(script(t, "record.sh"), "REC"),
			command(`cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PostToolBatch","additionalContext":"batch note"}}'`)),
	}, p)
	for _, id := range []string{"a", "b", "c"} {
		p.free(id)
	}
	res := he.run(Turn{ID: "batch", Calls: []event.CallInfo{
		call("a", "Probe", `{"id":"a","safe":true}`),
		call("b", "Probe", `{"id":"b","safe":true}`),
		call("c", "Probe", `{"id":"c"}`),
	}})
	for _, r := range res {
		if r.Status != event.StatusCompleted {
			t.Fatalf("%s: %s %q", r.CallID, r.Status, text(r))
		}
	}
	recs := he.records()
	if len(recs) != 1 {
		t.Fatalf("PostToolBatch ran %d times for one turn", len(recs))
	}
	calls := recs[0]["tool_calls"].([]any)
	if len(calls) != 3 || calls[2].(map[string]any)["tool_use_id"] != "c" || calls[0].(map[string]any)["tool_response"].(map[string]any)["text"] != "done a" {
		t.Errorf("tool_calls %v", calls)
	}
	ev := he.waitEvent(func(ev *event.Event) bool { return ev.Type == event.Notice && ev.TurnID == "batch" })
	if ev.Text != "batch note" {
		t.Errorf("notice %q", ev.Text)
	}
}

func TestAllowAlwaysSessionScope(t *testing.T) {
	he := newHookEnv(t, "default", nil, act())
	done := make(chan []*event.Result, 1)
	go func() { done <- he.run(Turn{ID: "one", Calls: []event.CallInfo{call("a", "Act", `{"n":1}`)}}) }()
	req := he.answerNext(permission.Answer{Decision: permission.AllowAlways, Scope: "session", ClientID: "cli-1"})
	if req.AlwaysRule != "Act" || strings.Join(req.Options, ",") != "allow_once,allow_always,deny" {
		t.Errorf("request options %v, always rule %q", req.Options, req.AlwaysRule)
	}
	if res := recv(t, done); res[0].Status != event.StatusCompleted {
		t.Fatalf("first call %s %q", res[0].Status, text(res[0]))
	}
	// The next identical call is allowed by the saved rule, without asking.
	res := he.run(Turn{ID: "two", Calls: []event.CallInfo{call("b", "Act", `{"n":1}`)}, PermissionTimeout: 1})
	if res[0].Status != event.StatusCompleted {
		t.Errorf("second call %s %q", res[0].Status, text(res[0]))
	}
	if n := he.permissionRequests(); n != 1 {
		t.Errorf("%d permission requests, want 1", n)
	}
	a := he.auditLog()
	if len(a) != 2 {
		t.Fatalf("audit %+v", a)
	}
	if a[0].Outcome != "allow_always" || a[0].DecidedBy != "user" || a[0].Scope != "session" || a[0].ClientID != "cli-1" || a[0].Rule != "Act" {
		t.Errorf("first audit %+v", a[0])
	}
	if a[1].Outcome != "allow" || a[1].DecidedBy != "rule" || a[1].Rule != "Act" || a[1].InputSHA256 != a[0].InputSHA256 {
		t.Errorf("second audit %+v", a[1])
	}
}

func TestNoHooksConfiguredAddsNoStates(t *testing.T) {
	he := newHookEnv(t, "default", map[string]any{"SessionStart": hooksOf("", command("true"))}, echo())
	he.run(Turn{ID: "t", Calls: []event.CallInfo{call("a", "Echo", `{}`)}})
	evs, _ := he.s.Events(context.Background(), 1)
	for _, ev := range evs {
		if ev.Type == event.CallState && (ev.State == event.StateHookPre || ev.State == event.StateHookPost) || ev.Type == event.HookRan {
			t.Errorf("event %s %s with no tool hooks configured", ev.Type, ev.State)
		}
	}
}

package hook

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is a project with real settings files read by a real loader.
type fixture struct {
	t       testing.TB
	home    string
	root    string
	env     *tooltest.Env
	loader  *config.Loader
	trusted bool
	trust   *config.Trust // holds f.root while trusted (setTrusted)
	h       *Hooks

	mu     sync.Mutex
	events []*event.Event
}

func testdata(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// setTrusted trusts the project or stops trusting it, for the settings
// loader (which drops an untrusted project's hooks) and the hook runner.
func (f *fixture) setTrusted(trusted bool) {
	f.t.Helper()
	f.trusted = trusted
	var err error
	if trusted {
		_, _, err = f.trust.Trust(f.root, false)
	} else {
		_, _, _, err = f.trust.Untrust(f.root)
	}
	if err != nil {
		f.t.Fatal(err)
	}
	if f.h != nil {
		f.h.Invalidate() // as the daemon does when trust changes
	}
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{t: t, trusted: true}
	f.env = tooltest.New(t)
	f.root = f.env.Root
	f.home = filepath.Join(filepath.Dir(f.root), "home")
	if err := os.MkdirAll(f.home, 0o700); err != nil {
		t.Fatal(err)
	}
	f.env.Vars = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + f.home, "SECRET_TOKEN=s3cret", "CLAUDE_PROJECT_DIR=/wrong"}
	f.trust = config.NewTrust(filepath.Join(f.home, ".config"))
	f.setTrusted(true)
	f.loader = config.NewLoader(&config.Options{Home: f.home, ConfigHome: filepath.Join(f.home, ".config"), ManagedPath: filepath.Join(f.home, "managed.json"), Trust: f.trust})
	f.h = New(&Options{
		Settings: f.loader.Load,
		Trusted:  func(string) bool { return f.trusted },
		Emit: func(id string, e *event.Event) {
			f.mu.Lock()
			f.events = append(f.events, e)
			f.mu.Unlock()
		},
	})
	return f
}

// write writes a settings file of scope ("user", "project", "local", "managed") with hooks.
func (f *fixture) write(scope string, hooks any) {
	f.t.Helper()
	var path string
	switch scope {
	case "user":
		path = filepath.Join(f.home, ".config", "tackle", "settings.json")
	case "claude-user":
		path = filepath.Join(f.home, ".claude", "settings.json")
	case "project":
		path = filepath.Join(f.root, ".tackle", "settings.json")
	case "claude-project":
		path = filepath.Join(f.root, ".claude", "settings.json")
	case "local":
		path = filepath.Join(f.root, ".tackle", "settings.local.json")
	case "managed":
		path = filepath.Join(f.home, "managed.json")
	}
	b, err := json.Marshal(map[string]any{"hooks": hooks})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		f.t.Fatal(err)
	}
	f.h.Invalidate()
}

func (f *fixture) hookEvents() []event.HookRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []event.HookRun
	for _, e := range f.events {
		if e.Type == event.HookRan {
			out = append(out, *e.Hook)
		}
	}
	return out
}

func (f *fixture) notices() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.events {
		if e.Type == event.Notice {
			out = append(out, e.Text)
		}
	}
	return out
}

func (f *fixture) reset() {
	f.mu.Lock()
	f.events = nil
	f.mu.Unlock()
}

// matcherGroup builds one matcher group.
func matcherGroup(matcher string, handlers ...map[string]any) map[string]any {
	return map[string]any{"matcher": matcher, "hooks": handlers}
}

func cmdHook(command string, args ...string) map[string]any {
	h := map[string]any{"type": "command", "command": command}
	if len(args) > 0 {
		h["args"] = args
	}
	return h
}

func (f *fixture) call(name, input string) ToolEvent {
	return ToolEvent{Env: f.env, TurnID: "turn1", Call: &tool.Call{ID: "call1", Name: name, Input: json.RawMessage(input), Env: f.env}, Tool: name, Mode: "default"}
}

// readLines reads the JSON lines record.sh wrote.
func readLines(t testing.TB, path string) []map[string]any {
	t.Helper()
	fh, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []map[string]any
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("record line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestMatcher(t *testing.T) {
	tests := []struct {
		matcher string
		yes, no []string
	}{
		{"", []string{"Bash", "Read"}, nil},
		{"*", []string{"Bash", "mcp__x__y"}, nil},
		{"Bash", []string{"Bash"}, []string{"BashOutput", "bash", "xBash"}},
		{"Edit|Write", []string{"Edit", "Write"}, []string{"MultiEdit", "Read"}},
		{"Edit, Write", []string{"Edit", "Write"}, []string{"Edit, Write"}},
		{"Edit.*", []string{"Edit", "NotebookEdit", "MultiEdit"}, []string{"Write"}}, // unanchored
		{"^Edit$", []string{"Edit"}, []string{"NotebookEdit"}},
		{"mcp__srv__.*", []string{"mcp__srv__tool"}, []string{"mcp__other__tool"}},
		{"mcp__srv", []string{"mcp__srv"}, []string{"mcp__srv__tool"}}, // a plain name is exact
	}
	for _, tc := range tests {
		m, err := compileMatcher(tc.matcher)
		if err != nil {
			t.Fatalf("%q: %v", tc.matcher, err)
		}
		for _, s := range tc.yes {
			if !m.match(s) {
				t.Errorf("matcher %q does not match %q", tc.matcher, s)
			}
		}
		for _, s := range tc.no {
			if m.match(s) {
				t.Errorf("matcher %q matches %q", tc.matcher, s)
			}
		}
	}
	if _, err := compileMatcher("Edit(("); err == nil {
		t.Error("an invalid regular expression compiled")
	}
}

func TestParseProblems(t *testing.T) {
	f := newFixture(t)
	f.write("project", map[string]any{
		"PreToolUse": []any{
			matcherGroup("Bash(", cmdHook("true")),
			matcherGroup("Bash", map[string]any{"type": "command"}, map[string]any{"type": "weird"}, map[string]any{"type": "http", "url": "ftp://x"},
				map[string]any{"type": "command", "command": "true", "if": "Bash("}, map[string]any{"type": "agent", "prompt": "x"}),
		},
		"SessionStart":  []any{matcherGroup("", map[string]any{"type": "command", "command": "true", "if": "Bash(ls)"})},
		"TeammateIdle":  []any{matcherGroup("", cmdHook("true"))},
		"SubagentStart": []any{matcherGroup("", cmdHook("true"))}, // run: no problem
		"SubagentStop":  []any{matcherGroup("", cmdHook("true"))},
	})
	cfg := f.h.Config(f.root)
	var msgs []string
	for _, p := range cfg.Problems {
		msgs = append(msgs, p.Error())
	}
	want := []string{
		`matcher "Bash(": not a valid regular expression`,
		`hook 1: a command hook needs a "command"`,
		`hook 2: unknown type "weird"`,
		`hook 3: an http hook needs an http:// or https:// "url", got "ftp://x"`,
		`hook 4: if "Bash(": column 5`,
		`hook 5: type "agent" is not run yet`,
		`hooks.SessionStart: entry 1: hook 1: "if" applies to tool events only`,
		`hooks.TeammateIdle: tackle does not run this hook event`,
	}
	if len(msgs) != len(want) {
		t.Fatalf("problems:\n%s", strings.Join(msgs, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(msgs[i], w) {
			t.Errorf("problem %d = %q, want it to contain %q", i, msgs[i], w)
		}
	}
	for idx, gs := range cfg.groups {
		want := 0
		if idx == idxSubagentStart || idx == idxSubagentStop {
			want = 1 // events tackle runs: no problem, one group each
		}
		if len(gs) != want {
			t.Errorf("%s: %d groups, want %d (broken entries are dropped)", Events[idx], len(gs), want)
		}
	}
	if !strings.HasPrefix(msgs[0], filepath.Join(f.root, ".tackle", "settings.json")+": hooks.PreToolUse: entry 1:") {
		t.Errorf("problem does not name its file: %q", msgs[0])
	}
}

func TestPreToolUseGuard(t *testing.T) {
	tests := []struct {
		do      string
		want    PreResult
		outcome string
		reason  string
	}{
		{"allow", PreResult{Decision: permission.Allow, Reason: "guard says allow"}, event.HookAllowed, "guard says allow"},
		{"deny", PreResult{Decision: permission.Deny, Reason: "guard says deny"}, event.HookDenied, "guard says deny"},
		{"ask", PreResult{Decision: permission.Ask, Reason: "guard says ask"}, event.HookAsked, "guard says ask"},
		{"defer", PreResult{}, event.HookOK, "defer: guard says defer"},
		{"bogus", PreResult{}, event.HookError, `permissionDecision "maybe" is not one of allow, deny, ask, defer; ignored`},
		{"rewrite", PreResult{Decision: permission.Allow, UpdatedInput: json.RawMessage(`{"do": "rewritten", "by": "guard"}`)}, event.HookAllowed, ""},
		{"context", PreResult{AdditionalContext: "remember the tests"}, event.HookOK, ""},
		{"system", PreResult{}, event.HookOK, ""},
		{"stop", PreResult{Block: true, Reason: "stopped by guard"}, event.HookBlocked, "stopped by guard"},
		{"legacy", PreResult{Decision: permission.Deny, Reason: "old style"}, event.HookDenied, "old style"},
		{"badjson", PreResult{}, event.HookError, "the hook printed invalid JSON"},
		{"plain", PreResult{}, event.HookOK, ""},
		{"exit2", PreResult{Block: true, Reason: "blocked by guard"}, event.HookBlocked, "blocked by guard"},
		{"exit1", PreResult{}, event.HookError, "Failed with non-blocking status code 1: guard broke"},
		{"exit1json", PreResult{Decision: permission.Deny, Reason: "json wins"}, event.HookDenied, "json wins"},
	}
	f := newFixture(t)
	f.write("project", map[string]any{"PreToolUse": []any{matcherGroup("Echo", cmdHook("python3 "+testdata(t, "guard.py")))}})
	for _, tc := range tests {
		t.Run(tc.do, func(t *testing.T) {
			f.reset()
			got := f.h.PreToolUse(context.Background(), f.call("Echo", `{"do":"`+tc.do+`"}`))
			if tc.want.Decision != "" {
				tc.want.Hook = "python3 " + testdata(t, "guard.py")
			}
			if string(got.UpdatedInput) != string(tc.want.UpdatedInput) {
				t.Errorf("updated input %s, want %s", got.UpdatedInput, tc.want.UpdatedInput)
			}
			got.UpdatedInput, tc.want.UpdatedInput = nil, nil
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			evs := f.hookEvents()
			if len(evs) != 1 {
				t.Fatalf("%d hook events, want 1: %+v", len(evs), evs)
			}
			ev := evs[0]
			if ev.Event != "PreToolUse" || ev.Tool != "Echo" || ev.Outcome != tc.outcome || !strings.HasPrefix(ev.Reason, tc.reason) || !strings.HasSuffix(ev.Hook, "guard.py") {
				t.Errorf("event %+v, want outcome %s reason %q", ev, tc.outcome, tc.reason)
			}
			if tc.do == "system" {
				if n := f.notices(); len(n) != 1 || !strings.HasSuffix(n[0], ": careful now") {
					t.Errorf("notices %q", n)
				}
			}
		})
	}
}

func TestExitCodesSh(t *testing.T) {
	tests := []struct {
		args    []string
		want    PreResult
		outcome string
	}{
		{[]string{"0"}, PreResult{}, event.HookOK},
		{[]string{"2", "no way"}, PreResult{Block: true, Reason: "no way"}, event.HookBlocked},
		{[]string{"2"}, PreResult{Block: true, Reason: "the hook exited with status 2 and gave no reason"}, event.HookBlocked},
		{[]string{"7", "odd"}, PreResult{}, event.HookError},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			f := newFixture(t)
			// The exec form: no shell between tackle and the script.
			f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "exit.sh"), tc.args...))}})
			got := f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if evs := f.hookEvents(); len(evs) != 1 || evs[0].Outcome != tc.outcome {
				t.Errorf("events %+v", evs)
			}
		})
	}
}

// groupAlive reports whether a process of group pgid is alive (zombies
// waiting for a reaper do not count).
func groupAlive(t *testing.T, pgid int) []string {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var alive []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(fields) > 2 && fields[2] == strconv.Itoa(pgid) && fields[0] != "Z" {
			alive = append(alive, e.Name()+" "+fields[0])
		}
	}
	return alive
}

func TestTimeoutKillsProcessGroup(t *testing.T) {
	f := newFixture(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", map[string]any{
		"type": "command", "command": testdata(t, "hang.sh"), "args": []string{pidFile}, "timeout": 0.3})}})
	got := f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if diff := cmp.Diff(PreResult{}, got); diff != "" {
		t.Errorf("a timeout decided something (-want +got):\n%s", diff)
	}
	evs := f.hookEvents()
	if len(evs) != 1 || evs[0].Outcome != event.HookTimeout || !strings.Contains(evs[0].Reason, "timed out after 300ms") {
		t.Errorf("events %+v", evs)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("the hook never started: %v", err)
	}
	pgid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// Every process of the group got SIGKILL: wait for each one's exit
	// (a pidfd turns readable when its process ends).
	for _, p := range groupAlive(t, pgid) {
		pid, _ := strconv.Atoi(strings.Fields(p)[0])
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // gone already
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(failAfter.Milliseconds()))
		unix.Close(fd)
		if n != 1 || err != nil {
			t.Errorf("process %s of the hook's group did not end after the timeout: %v", p, err)
		}
	}
	if alive := groupAlive(t, pgid); len(alive) > 0 {
		t.Errorf("processes of the hook's group still alive: %v", alive)
	}
}

// failAfter bounds every wait in these tests; nothing waits for it to pass.
const failAfter = 20 * time.Second

func TestCancelKillsHook(t *testing.T) {
	f := newFixture(t)
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook("python3 "+testdata(t, "guard.py")))}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan PreResult, 1)
	go func() { done <- f.h.PreToolUse(ctx, f.call("Echo", `{"do":"hang"}`)) }()
	cancel()
	got := <-done
	if got.Block || got.Decision != "" {
		t.Errorf("a cancelled hook decided: %+v", got)
	}
}

func TestPrecedenceAcrossHooks(t *testing.T) {
	guard := "python3 " + testdata(t, "guard.py")
	tests := []struct {
		name  string
		hooks []map[string]any
		want  permission.Verdict
		block bool
	}{
		// Each handler's input is fixed by its args: exec the guard with a
		// different stdin is not possible, so use sh wrappers that rewrite "do".
		{"deny beats allow", []map[string]any{decideHook("allow"), decideHook("deny")}, permission.Deny, false},
		{"defer beats ask", []map[string]any{decideHook("ask"), decideHook("defer")}, "", false},
		{"ask beats allow", []map[string]any{decideHook("allow"), decideHook("ask")}, permission.Ask, false},
		{"allow alone", []map[string]any{decideHook("allow")}, permission.Allow, false},
		{"exit 2 beats all", []map[string]any{decideHook("allow"), cmdHook(guard)}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", tc.hooks...)}})
			got := f.h.PreToolUse(context.Background(), f.call("Echo", `{"do":"exit2"}`))
			if got.Decision != tc.want || got.Block != tc.block {
				t.Errorf("got %+v, want decision %q block %v", got, tc.want, tc.block)
			}
			if n := len(f.hookEvents()); n != len(tc.hooks) {
				t.Errorf("%d hook events for %d hooks", n, len(tc.hooks))
			}
		})
	}
}

// decideHook is a sh hook that answers permissionDecision d.
func decideHook(d string) map[string]any {
	return cmdHook(fmt.Sprintf(`cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"%s","permissionDecisionReason":"sh says %s"}}'`, d, d))
}

func TestInputAndEnvironment(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	f.write("project", map[string]any{
		"PreToolUse":  []any{matcherGroup("Bash", cmdHook(testdata(t, "record.sh"), rec))},
		"PostToolUse": []any{matcherGroup("Bash", cmdHook(testdata(t, "record.sh"), rec))},
	})
	ev := f.call("Bash", `{"command":"ls -l"}`)
	ev.Mode = ""
	ev.ModeFunc = func() string { return "acceptEdits" }
	f.h.PreToolUse(context.Background(), ev)
	f.h.PostToolUse(context.Background(), ev, &event.Result{CallID: "call1", Name: "Bash", Status: event.StatusCompleted,
		Content: []tool.Content{tool.Text("a\nb")}, DurationMS: 12})
	lines := readLines(t, rec)
	if len(lines) != 2 {
		t.Fatalf("%d records", len(lines))
	}
	pre := lines[0]["input"].(map[string]any)
	want := map[string]any{
		"session_id": "test", "transcript_path": "", "cwd": f.root, "permission_mode": "acceptEdits",
		"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": map[string]any{"command": "ls -l"}, "tool_use_id": "call1",
	}
	if diff := cmp.Diff(want, pre); diff != "" {
		t.Errorf("PreToolUse input (-want +got):\n%s", diff)
	}
	if lines[0]["tackle_dir"] != f.root || lines[0]["claude_dir"] != f.root || lines[0]["pwd"] != f.root {
		t.Errorf("environment %v", lines[0])
	}
	post := lines[1]["input"].(map[string]any)
	resp := post["tool_response"].(map[string]any)
	if post["hook_event_name"] != "PostToolUse" || resp["text"] != "a\nb" || resp["status"] != "completed" || post["duration_ms"] != 12.0 {
		t.Errorf("PostToolUse input %v", post)
	}
}

func TestTrust(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	f.write("project", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), rec, "project"))}})
	f.write("local", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), rec, "local"))}})
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), rec, "user"))}})
	f.setTrusted(false)
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 1 {
		t.Errorf("untrusted: %d hooks ran, want only the user's", n)
	}
	f.setTrusted(true)
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 1+3 {
		t.Errorf("trusted: %d hooks ran in all, want 1+3", n)
	}
	// Nil Trusted trusts nothing.
	h := New(&Options{Settings: f.loader.Load})
	h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 1+3+1 {
		t.Errorf("nil Trusted: %d hooks ran in all, want 1+3+1", n)
	}
}

func TestDedupe(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	same := cmdHook(testdata(t, "record.sh"), rec)
	f.write("claude-user", map[string]any{"PreToolUse": []any{matcherGroup("Bash", same)}})
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("Bash|Read", same)}})
	f.write("claude-project", map[string]any{"PreToolUse": []any{matcherGroup("*", same, same)}})
	f.write("project", map[string]any{"PreToolUse": []any{matcherGroup("Bash", cmdHook(testdata(t, "record.sh"), rec, "other"))}})
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 2 {
		t.Errorf("%d runs, want 2 (one per distinct handler)", n)
	}
}

func TestIfCondition(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	h := cmdHook(testdata(t, "record.sh"), rec)
	h["if"] = "Bash(git *)"
	r := cmdHook(testdata(t, "record.sh"), rec, "read")
	r["if"] = "Read(secrets/**)"
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", h, r)}})
	tests := []struct {
		tool, input string
		access      tool.Access
		runs        int
	}{
		{"Bash", `{"command":"git status"}`, tool.Access{Commands: []string{"git status"}}, 1},
		{"Bash", `{"command":"cd x && git push"}`, tool.Access{Commands: []string{"cd x", "git push"}}, 1},
		{"Bash", `{"command":"gitk"}`, tool.Access{Commands: []string{"gitk"}}, 0},
		{"Bash", `{"command":"ls"}`, tool.Access{Commands: []string{"ls"}}, 0},
		{"Bash", `{"command":"git  log"}`, tool.Access{}, 1}, // no Access: the input's command
		{"Read", `{}`, tool.Access{Reads: []string{filepath.Join(f.root, "secrets", "k")}}, 1},
		{"Read", `{}`, tool.Access{Reads: []string{filepath.Join(f.root, "src", "k")}}, 0},
		{"Grep", `{}`, tool.Access{Reads: []string{filepath.Join(f.root, "secrets")}}, 1},
		{"Echo", `{}`, tool.Access{}, 0},
	}
	total := 0
	for _, tc := range tests {
		ev := f.call(tc.tool, tc.input)
		ev.Access = tc.access
		f.h.PreToolUse(context.Background(), ev)
		total += tc.runs
		if n := len(readLines(t, rec)); n != total {
			t.Errorf("%s %s %+v: %d runs in all, want %d", tc.tool, tc.input, tc.access, n, total)
			total = n
		}
	}
}

func TestHTTPHook(t *testing.T) {
	type seen struct {
		auth, ctype, other string
		body               map[string]any
	}
	got := make(chan seen, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		got <- seen{r.Header.Get("Authorization"), r.Header.Get("Content-Type"), r.Header.Get("X-Other"), m}
		switch r.URL.Path {
		case "/deny":
			fmt.Fprint(w, `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"http says no"}}`)
		case "/empty":
		case "/fail":
			http.Error(w, "broken", http.StatusInternalServerError)
		case "/bad":
			fmt.Fprint(w, `{"continue":`)
		}
	}))
	defer srv.Close()
	tests := []struct {
		path    string
		want    PreResult
		outcome string
		reason  string
	}{
		{"/deny", PreResult{Decision: permission.Deny, Reason: "http says no", Hook: srv.URL + "/deny"}, event.HookDenied, "http says no"},
		{"/empty", PreResult{}, event.HookOK, ""},
		{"/fail", PreResult{}, event.HookError, "the hook answered HTTP 500: broken"},
		{"/bad", PreResult{}, event.HookError, "the hook printed invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			f := newFixture(t)
			f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("Bash", map[string]any{
				"type": "http", "url": srv.URL + tc.path, "allowedEnvVars": []string{"SECRET_TOKEN"},
				"headers": map[string]string{"Authorization": "Bearer $SECRET_TOKEN", "X-Other": "[${HOME}]"},
			})}})
			res := f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"rm -rf /"}`))
			if diff := cmp.Diff(tc.want, res); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			s := <-got
			if s.auth != "Bearer s3cret" || s.other != "[]" || s.ctype != "application/json" || s.body["tool_name"] != "Bash" || s.body["hook_event_name"] != "PreToolUse" {
				t.Errorf("request %+v", s)
			}
			if evs := f.hookEvents(); len(evs) != 1 || evs[0].Outcome != tc.outcome || !strings.HasPrefix(evs[0].Reason, tc.reason) {
				t.Errorf("events %+v", evs)
			}
		})
	}
}

func TestPostToolUse(t *testing.T) {
	tests := []struct {
		text string
		want PostResult
	}{
		{"flagme", PostResult{Flag: true, Reason: "flagged by post.sh"}},
		{"replaceme", PostResult{ReplaceOutput: true, UpdatedOutput: "replaced by post.sh"}},
		{"ctxme", PostResult{AdditionalContext: "context from post.sh"}},
		{"exit2me", PostResult{Flag: true, Reason: "post.sh saw a problem"}},
		{"nothing", PostResult{}},
	}
	f := newFixture(t)
	f.write("project", map[string]any{
		"PostToolUse":        []any{matcherGroup("Echo", cmdHook("sh "+testdata(t, "post.sh")))},
		"PostToolUseFailure": []any{matcherGroup("Echo", cmdHook("sh "+testdata(t, "post.sh")))},
	})
	for _, tc := range tests {
		res := &event.Result{CallID: "call1", Name: "Echo", Status: event.StatusCompleted, Content: []tool.Content{tool.Text(tc.text)}}
		got := f.h.PostToolUse(context.Background(), f.call("Echo", `{}`), res)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.text, diff)
		}
	}
	// PostToolUseFailure gets the error and cannot replace the output.
	res := &event.Result{CallID: "call1", Name: "Echo", Status: event.StatusFailed, IsError: true, Content: []tool.Content{tool.Text("replaceme ctxme")}}
	got := f.h.PostToolUseFailure(context.Background(), f.call("Echo", `{}`), res)
	if diff := cmp.Diff(PostResult{}, got); diff != "" {
		t.Errorf("failure (-want +got):\n%s", diff)
	}
}

func TestPermissionRequestHook(t *testing.T) {
	f := newFixture(t)
	f.write("project", map[string]any{"PermissionRequest": []any{matcherGroup("Echo", cmdHook("python3 "+testdata(t, "permreq.py")))}})
	got := f.h.PermissionRequest(context.Background(), f.call("Echo", `{"perm":"allow"}`), "Echo")
	if got.Decision != permission.Allow || string(got.UpdatedInput) != `{"perm": "allow", "suggested": "Echo"}` {
		t.Errorf("allow: %+v %s", got, got.UpdatedInput)
	}
	got = f.h.PermissionRequest(context.Background(), f.call("Echo", `{"perm":"deny"}`), "")
	if got.Decision != permission.Deny || got.Message != "permreq says no" {
		t.Errorf("deny: %+v", got)
	}
	for _, in := range []string{`{"perm":"exit2"}`, `{}`} {
		if got = f.h.PermissionRequest(context.Background(), f.call("Echo", in), ""); got.Decision != "" {
			t.Errorf("%s answered: %+v", in, got)
		}
	}
}

func TestLargeOutputPersisted(t *testing.T) {
	f := newFixture(t)
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook("python3 "+testdata(t, "guard.py")))}})
	got := f.h.PreToolUse(context.Background(), f.call("Echo", `{"do":"big"}`))
	if !strings.HasPrefix(got.AdditionalContext, "<persisted-output>\nHook output too large (20 KB). Full output saved to: "+f.env.Out) {
		t.Fatalf("context %.200q", got.AdditionalContext)
	}
	path := strings.TrimPrefix(strings.SplitN(got.AdditionalContext, "\n", 3)[1], "Hook output too large (20 KB). Full output saved to: ")
	b, err := os.ReadFile(path)
	if err != nil || string(b) != strings.Repeat("x", 20000) {
		t.Errorf("persisted file %q: %v (%d bytes)", path, err, len(b))
	}
	if len(got.AdditionalContext) > 3000 {
		t.Errorf("the preview is %d bytes", len(got.AdditionalContext))
	}
}

func TestSessionHooks(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	record := cmdHook(testdata(t, "record.sh"), rec)
	f.write("user", map[string]any{
		"SessionStart": []any{
			matcherGroup("startup", cmdHook(`cat >/dev/null; echo "plain context"`)),
			matcherGroup("startup", cmdHook(`cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"json context"}}'`)),
			matcherGroup("resume", record),
		},
		"SessionEnd":         []any{matcherGroup("", record)},
		"CwdChanged":         []any{matcherGroup("", record)},
		"ConfigChange":       []any{matcherGroup("project_settings", record)},
		"Notification":       []any{matcherGroup("permission_prompt", record)},
		"PermissionDenied":   []any{matcherGroup("Bash", record)},
		"PostToolBatch":      []any{matcherGroup("", record, cmdHook(`cat >/dev/null; echo '{"decision":"block","reason":"batch looks wrong"}'`))},
		"PostToolUseFailure": []any{matcherGroup("Nope", record)},
	})
	ctx := context.Background()
	if got := f.h.SessionStart(ctx, f.env, SourceStartup); got != "plain context\njson context" {
		t.Errorf("SessionStart context %q", got)
	}
	if got := f.h.SessionStart(ctx, f.env, SourceResume); got != "" {
		t.Errorf("SessionStart resume context %q", got)
	}
	f.h.SessionEnd(ctx, f.env, "deleted")
	f.h.CwdChanged(ctx, f.env, f.root, filepath.Join(f.root, "sub"))
	f.h.ConfigChange(ctx, f.env, filepath.Join(f.root, ".tackle", "settings.json"))
	f.h.ConfigChange(ctx, f.env, filepath.Join(f.home, ".config", "tackle", "settings.json")) // user_settings: no match
	f.h.Notification(ctx, f.env, "t", "c", NotifyPermissionPrompt, "Bash wants to run ls")
	f.h.PermissionDenied(ctx, f.call("Bash", `{"command":"rm"}`), "denied by rule")
	post := f.h.PostToolBatch(ctx, f.env, "t", []BatchCall{{Call: &tool.Call{ID: "a", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`)}, Tool: "Bash",
		Result: &event.Result{Status: "completed", Content: []tool.Content{tool.Text("out")}}}})
	if !post.Flag || post.Reason != "batch looks wrong" {
		t.Errorf("PostToolBatch %+v", post)
	}
	var got []string
	for _, l := range readLines(t, rec) {
		in := l["input"].(map[string]any)
		delete(in, "session_id")
		delete(in, "transcript_path")
		delete(in, "cwd")
		b, _ := json.Marshal(in)
		got = append(got, string(b))
	}
	cfgPath := filepath.Join(f.root, ".tackle", "settings.json")
	want := []string{
		`{"hook_event_name":"SessionStart","permission_mode":"default","source":"resume"}`,
		`{"hook_event_name":"SessionEnd","permission_mode":"default","reason":"deleted"}`,
		fmt.Sprintf(`{"hook_event_name":"CwdChanged","new_cwd":%q,"old_cwd":%q,"permission_mode":"default"}`, filepath.Join(f.root, "sub"), f.root),
		fmt.Sprintf(`{"file_path":%q,"hook_event_name":"ConfigChange","permission_mode":"default","source":"project_settings"}`, cfgPath),
		`{"hook_event_name":"Notification","message":"Bash wants to run ls","notification_type":"permission_prompt","permission_mode":"default"}`,
		`{"hook_event_name":"PermissionDenied","permission_mode":"default","reason":"denied by rule","tool_input":{"command":"rm"},"tool_name":"Bash","tool_use_id":"call1"}`,
		`{"hook_event_name":"PostToolBatch","permission_mode":"default","tool_calls":[{"tool_input":{"command":"ls"},"tool_name":"Bash","tool_response":{"content":[{"text":"out","type":"text"}],"interrupted":false,"isImage":false,"is_error":false,"status":"completed","stderr":"","stdout":"out","text":"out"},"tool_use_id":"a"}]}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("inputs (-want +got):\n%s", diff)
	}
}

func TestDisableAllHooks(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	f.write("managed", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), rec, "managed"))}})
	path := filepath.Join(f.root, ".tackle", "settings.json")
	b, _ := json.Marshal(map[string]any{"disableAllHooks": true, "hooks": map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), rec))}}})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 1 {
		t.Errorf("%d hooks ran with disableAllHooks, want only the managed one", n)
	}
}

// BenchmarkNoHooks: the hook stage of a call with no hooks configured for
// tool events (goal: ≤ 1 µs, no allocation). "stage" is what the pipeline
// does per call (it asks Has before each tool hook event); "PreToolUse"
// calls the event itself.
func BenchmarkNoHooks(b *testing.B) {
	f := newFixture(b)
	f.write("user", map[string]any{"SessionStart": []any{matcherGroup("", cmdHook("true"))}}) // hooks, but none for tool events
	ev := f.call("Bash", `{"command":"ls"}`)
	ev.Env = rootedEnv{f.env} // as the real session: Root() without copying WorkingDirs
	ctx := context.Background()
	b.Run("stage", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if f.h.Has(ev.Env, PreToolUse) || f.h.Has(ev.Env, PostToolUse) || f.h.Has(ev.Env, PostToolBatch) {
				b.Fatal("hooks found")
			}
		}
	})
	b.Run("PreToolUse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r := f.h.PreToolUse(ctx, ev); r.Block {
				b.Fatal(r)
			}
		}
	})
}

// rootedEnv gives tooltest.Env the Root method of the real session.
type rootedEnv struct{ *tooltest.Env }

func (e rootedEnv) Root() string { return e.Env.Root }

// BenchmarkNoopCommandHook: one no-op command hook on PreToolUse (goal: ≤ 5 ms).
func BenchmarkNoopCommandHook(b *testing.B) {
	f := newFixture(b)
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook("true"))}})
	ev := f.call("Bash", `{"command":"ls"}`)
	ctx := context.Background()
	for b.Loop() {
		if r := f.h.PreToolUse(ctx, ev); r.Block {
			b.Fatal(r)
		}
	}
}

// Hooks a session added (a skill's `hooks`) run after the settings' hooks,
// for that session only; untrusted ones wait for trust; bad ones are refused.
func TestAddSessionHooks(t *testing.T) {
	f := newFixture(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	f.write("user", map[string]any{"PreToolUse": []any{matcherGroup("", cmdHook(testdata(t, "record.sh"), rec, "settings"))}})
	raw, err := json.Marshal(map[string]any{"PreToolUse": []any{matcherGroup("Bash", cmdHook(testdata(t, "record.sh"), rec, "skill"))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.h.AddSession(f.env.SessionID(), "skill review", raw, true); err != nil {
		t.Fatal(err)
	}
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	lines := readLines(t, rec)
	if len(lines) != 2 {
		t.Fatalf("%d hooks ran, want the settings' and the skill's: %v", len(lines), lines)
	}
	// Another session does not have them.
	other := tooltest.New(t)
	other.ID = "another-session"
	f.h.PreToolUse(context.Background(), ToolEvent{Env: other, TurnID: "t", Call: &tool.Call{ID: "c", Name: "Bash", Input: json.RawMessage(`{"command":"ls"}`), Env: other}, Tool: "Bash", Mode: "default"})
	if n := len(readLines(t, rec)); n != 3 {
		t.Errorf("another session ran %d hooks, want only the settings' one", n-2)
	}
	// An untrusted skill's hooks wait for trust.
	f.setTrusted(false)
	if err := f.h.AddSession(f.env.SessionID(), "skill project", raw, false); err != nil {
		t.Fatal(err)
	}
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 5 {
		t.Errorf("untrusted: %d more hooks ran, want 2 (settings + trusted skill)", n-3)
	}
	if err := f.h.AddSession(f.env.SessionID(), "skill bad", json.RawMessage(`{"PreToolUse":"nope"}`), true); err == nil {
		t.Error("a malformed hooks object was accepted")
	}
	f.h.DropSession(f.env.SessionID())
	f.h.PreToolUse(context.Background(), f.call("Bash", `{"command":"ls"}`))
	if n := len(readLines(t, rec)); n != 6 {
		t.Errorf("after DropSession: %d more hooks ran, want 1", n-5)
	}
}

// PostToolUse's tool_response has Claude Code's shape for each built-in
// tool, so hooks written for Claude Code (run-after-edit.py reads
// tool_response.filePath) work.
func TestToolResponseShapes(t *testing.T) {
	for _, c := range []struct {
		tool, input, text string
		want              map[string]any
	}{
		{"Write", `{"file_path":"/p/a.go","content":"package a\n"}`, "File created successfully at: /p/a.go", map[string]any{"type": "create", "filePath": "/p/a.go", "content": "package a\n", "success": true}},
		{"Edit", `{"file_path":"/p/a.go","old_string":"a","new_string":"b"}`, "The file /p/a.go has been updated.", map[string]any{"filePath": "/p/a.go", "oldString": "a", "newString": "b", "replaceAll": false, "success": true}},
		{"Bash", `{"command":"ls"}`, "a\nb\n", map[string]any{"stdout": "a\nb\n", "stderr": "", "interrupted": false, "isImage": false}},
		{"Glob", `{"pattern":"*.go"}`, "/p/a.go\n/p/b.go\n", map[string]any{"filenames": []any{"/p/a.go", "/p/b.go"}, "numFiles": float64(2)}},
	} {
		r := &event.Result{Status: "completed", Content: []tool.Content{tool.Text(c.text)}}
		b, _ := json.Marshal(responseOf(c.tool, json.RawMessage(c.input), r))
		var got map[string]any
		json.Unmarshal(b, &got)
		for k, v := range c.want {
			if gv, _ := json.Marshal(got[k]); string(gv) != mustMarshal(v) {
				t.Errorf("%s: tool_response.%s = %s, want %s", c.tool, k, gv, mustMarshal(v))
			}
		}
	}
}

func mustMarshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Config called from turns at once, past its recheck interval, so that
// some re-stamp the cached entry while others read it (the race detector
// is the check), all seeing the one configuration.
func TestConfigConcurrent(t *testing.T) {
	f := newFixture(t)
	f.write("project", map[string]any{"PreToolUse": []any{matcherGroup("Bash", cmdHook("true"))}})
	h := New(&Options{Settings: f.loader.Load, Recheck: time.Microsecond})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				if !h.Has(f.env, PreToolUse) {
					t.Error("the project's PreToolUse hook is not seen")
					return
				}
			}
		}()
	}
	wg.Wait()
}

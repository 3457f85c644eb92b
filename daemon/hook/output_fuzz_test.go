package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/permission"
)

// FuzzHookOutput sends the input as a hook's output, through the real
// runner, and checks the decision the hooks give against the protocol
// (reference.md section 3). mode picks the handler: an http hook whose
// response body is the input (as exit 0), or a command hook that prints it
// and exits 1 or 2. For PreToolUse, PostToolUse and PermissionRequest:
// exit 2 or continue:false blocks, with a reason, and nothing else
// applies; otherwise JSON output on stdout decides (permissionDecision
// over the deprecated decision, an unknown one ignored), and output that is
// not JSON decides nothing; a deny never carries an updated input; every
// run is exactly one hook_ran event with the outcome of the decision, and
// a systemMessage one notice.
func FuzzHookOutput(f *testing.F) {
	for _, s := range []string{
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"http says no"}}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"guard says allow"}}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"guard says ask"}}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"defer","permissionDecisionReason":"guard says defer"}}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"maybe"}}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"do":"rewritten","by":"guard"}}}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"remember the tests"}}`,
		`{"systemMessage":"careful now"}`, `{"continue":false,"stopReason":"stopped by guard"}`, `{"continue":false}`,
		`{"decision":"block","reason":"old style"}`, `{"decision":"approve"}`, `{"continue":true,"suppressOutput":true}`,
		`{"hookSpecificOutput":{"hookEventName":"PostToolUse","updatedToolOutput":"replaced by post.sh","additionalContext":"context from post.sh"}}`,
		`{"hookSpecificOutput":{"updatedToolOutput":{"a":[1,2]}}}`, `{"hookSpecificOutput":{"updatedToolOutput":null}}`,
		`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"allow","updatedInput":{"perm":"allow"}}}}`,
		`{"hookSpecificOutput":{"hookEventName":"PermissionRequest","decision":{"behavior":"deny","message":"permreq says no","interrupt":true}}}`,
		`{"hookSpecificOutput":{"decision":{"behavior":"maybe"}}}`, `{"hookSpecificOutput":null}`, `{"continue":`, "{this is not json",
		"just some text", "", "  \n", `{}`, `[]`, `null`, `{"hookSpecificOutput":{"permissionDecision":"deny","updatedInput":{"x":1}}}`,
	} {
		for _, mode := range []uint8{0, 6, 7} {
			f.Add([]byte(s), mode)
		}
	}
	body := &atomic.Pointer[[]byte]{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if b := body.Load(); b != nil {
			w.Write(*b)
		}
	}))
	f.Cleanup(srv.Close)
	fx := newFixture(f)
	dir := f.TempDir()
	outFile, codeFile := filepath.Join(dir, "out"), filepath.Join(dir, "code")
	command := "cat " + outFile + "; exit $(cat " + codeFile + ")"
	handlers := func(path string) map[string]any {
		return map[string]any{"type": "http", "url": srv.URL + path}
	}
	fx.write("user", map[string]any{
		"PreToolUse":        []any{matcherGroup("HTTP", handlers("/pre")), matcherGroup("Cmd", cmdHook(command))},
		"PostToolUse":       []any{matcherGroup("HTTP", handlers("/post")), matcherGroup("Cmd", cmdHook(command))},
		"PermissionRequest": []any{matcherGroup("HTTP", handlers("/perm")), matcherGroup("Cmd", cmdHook(command))},
	})
	f.Fuzz(func(t *testing.T, out []byte, mode uint8) {
		// Mostly http (fast); a command that exits 1 (a non-blocking
		// error) or 2 (blocks) for a quarter of the inputs.
		tl, exit := "HTTP", 0
		if m := mode % 8; m >= 6 {
			tl, exit = "Cmd", int(m)-5
			if err := os.WriteFile(outFile, out, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(codeFile, []byte(strconv.Itoa(exit)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		body.Store(&out)
		said := whatItSaid(out)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()

		fx.reset()
		var pre PreResult
		timed(t, "PreToolUse", func() { pre = fx.h.PreToolUse(ctx, fx.call(tl, `{"x":1}`)) })
		ev := oneRun(t, fx, "PreToolUse", said, exit)
		name := ev.Hook
		switch {
		case exit == 2 || said.stops():
			if !pre.Block || pre.Reason == "" || pre.Decision != "" || pre.UpdatedInput != nil || ev.Outcome != event.HookBlocked {
				t.Fatalf("exit %d, %q: want a block with a reason and nothing else, got %+v (event %+v)", exit, out, pre, ev)
			}
		default:
			if pre.Block {
				t.Fatalf("exit %d, %q: blocked: %+v", exit, out, pre)
			}
			want := said.preDecision()
			if pre.Decision != want {
				t.Fatalf("exit %d, %q: decision %q, want %q", exit, out, pre.Decision, want)
			}
			wantOutcome := map[permission.Verdict]string{permission.Allow: event.HookAllowed, permission.Deny: event.HookDenied, permission.Ask: event.HookAsked}[want]
			if want != "" && (ev.Outcome != wantOutcome || pre.Hook != name) {
				t.Fatalf("exit %d, %q: event %+v, result %+v: want outcome %s by %s", exit, out, ev, pre, wantOutcome, name)
			}
			if want == "" && ev.Outcome != event.HookOK && ev.Outcome != event.HookError {
				t.Fatalf("exit %d, %q: no decision but outcome %s", exit, out, ev.Outcome)
			}
		}
		if pre.Decision == permission.Deny && pre.UpdatedInput != nil {
			t.Fatalf("a deny with an updated input: %+v", pre)
		}
		if pre.UpdatedInput != nil && !json.Valid(pre.UpdatedInput) {
			t.Fatalf("updated input %q is not JSON", pre.UpdatedInput)
		}

		fx.reset()
		res := &event.Result{CallID: "call1", Name: tl, Status: event.StatusCompleted}
		var post PostResult
		timed(t, "PostToolUse", func() { post = fx.h.PostToolUse(ctx, fx.call(tl, `{}`), res) })
		ev = oneRun(t, fx, "PostToolUse", said, exit)
		wantFlag := exit == 2 || said.stops() || said.out != nil && said.out.Decision == "block"
		if post.Flag != wantFlag || post.Flag && (post.Reason == "" || ev.Outcome != event.HookBlocked) {
			t.Fatalf("exit %d, %q: PostToolUse %+v (event %+v), want flag %v with a reason", exit, out, post, ev, wantFlag)
		}
		if want := exit != 2 && said.replaces(); post.ReplaceOutput != want {
			t.Fatalf("exit %d, %q: ReplaceOutput %v, want %v", exit, out, post.ReplaceOutput, want)
		}

		fx.reset()
		var perm PermissionResult
		timed(t, "PermissionRequest", func() { perm = fx.h.PermissionRequest(ctx, fx.call(tl, `{}`), "Echo") })
		ev = oneRun(t, fx, "PermissionRequest", said, exit)
		want := permission.Verdict("")
		if exit != 2 && said.out != nil && said.out.HookSpecificOutput != nil && said.out.HookSpecificOutput.Decision != nil {
			want = map[string]permission.Verdict{"allow": permission.Allow, "deny": permission.Deny}[said.out.HookSpecificOutput.Decision.Behavior]
		}
		if perm.Decision != want || (want != "" && perm.Hook != ev.Hook) {
			t.Fatalf("exit %d, %q: PermissionRequest %+v, want %q by %s", exit, out, perm, want, ev.Hook)
		}
		if perm.Decision != permission.Allow && perm.UpdatedInput != nil {
			t.Fatalf("an updated input without an allow: %+v", perm)
		}
	})
}

// said is what a hook's output says, read as the protocol reads stdout:
// JSON when it starts with {, else plain text.
type said struct {
	out     *output
	invalid bool // starts with { and is not JSON
}

func whatItSaid(b []byte) said {
	t := bytes.TrimSpace(b)
	if len(t) == 0 || t[0] != '{' {
		return said{}
	}
	var o output
	if json.Unmarshal(t, &o) != nil {
		return said{invalid: true}
	}
	return said{out: &o}
}

func (s said) stops() bool { return s.out != nil && s.out.Continue != nil && !*s.out.Continue }

// preDecision is PreToolUse's decision: permissionDecision, else the
// deprecated decision; defer and unknown values decide nothing.
func (s said) preDecision() permission.Verdict {
	if s.out == nil {
		return ""
	}
	d := map[string]string{"approve": "allow", "block": "deny"}[s.out.Decision]
	if h := s.out.HookSpecificOutput; h != nil && h.PermissionDecision != "" {
		d = h.PermissionDecision
	}
	return map[string]permission.Verdict{"allow": permission.Allow, "ask": permission.Ask, "deny": permission.Deny}[d]
}

func (s said) replaces() bool {
	if s.out == nil || s.out.HookSpecificOutput == nil {
		return false
	}
	u := s.out.HookSpecificOutput.UpdatedToolOutput
	return len(u) > 0 && string(u) != "null"
}

// oneRun returns the one hook_ran event of the last call, checking that
// there is one, and a notice exactly for a systemMessage (which exit 2
// ignores with the rest of stdout).
func oneRun(t *testing.T, fx *fixture, eventName string, s said, exit int) event.HookRun {
	t.Helper()
	evs := fx.hookEvents()
	if len(evs) != 1 {
		t.Fatalf("%s: %d hook_ran events, want 1: %+v", eventName, len(evs), evs)
	}
	ev := evs[0]
	if ev.Event != eventName || ev.Hook == "" {
		t.Fatalf("event %+v for %s", ev, eventName)
	}
	switch ev.Outcome {
	case event.HookOK, event.HookBlocked, event.HookDenied, event.HookAsked, event.HookAllowed, event.HookError:
	default:
		t.Fatalf("%s: outcome %q", eventName, ev.Outcome)
	}
	if s.invalid && exit != 2 && ev.Outcome != event.HookError {
		t.Fatalf("%s: invalid JSON, outcome %q", eventName, ev.Outcome)
	}
	notices := fx.notices()
	wantNotice := exit != 2 && s.out != nil && s.out.SystemMessage != ""
	if n := len(notices); n > 1 || (n == 1) != wantNotice {
		t.Fatalf("%s: notices %q, want one: %v", eventName, notices, wantNotice)
	}
	return ev
}

// timed fails t when f takes more than a few seconds: one hook run is an
// HTTP round trip or a short shell.
func timed(t *testing.T, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("%s took %v", what, d)
	}
}

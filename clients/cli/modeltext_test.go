package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// TestModelTextStaysWithModel: tackle call's output for people drops or
// rewrites what the daemon writes for the model (tool_use_error tags, the
// rejection's "STOP what you are doing…", the todo-list reminder); --json
// keeps it as the model got it. The outputs are golden.
func TestModelTextStaysWithModel(t *testing.T) {
	d := daemontest.Start(t)
	dir, _ := project(t)
	sid := newSession(t, d, dir, "default")
	var b strings.Builder
	show := func(args []string, r result) {
		fmt.Fprintf(&b, "$ tackle %s\n[exit %d]\n%s%s\n", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct {
		code int
		args []string
		json string // what --json keeps
	}{
		{0, []string{"call", "TodoWrite", todoInput}, "Ensure that you continue to use the todo list"},
		{1, []string{"call", "Read", `{"file_path":3}`}, "<tool_use_error>"},
	} {
		args := append(c.args, "--session", sid)
		r := tackle(t, d, "", args...).mustCode(t, c.code)
		show(c.args, r)
		if j := tackle(t, d, "", append(args, "--json")...).mustCode(t, c.code); !strings.Contains(j.stdout, c.json) {
			t.Errorf("tackle %v --json lost %q:\n%s", c.args, c.json, j.stdout)
		}
	}

	// Denied by a person, with and without feedback.
	for _, feedback := range []string{"", "write it under docs/ instead"} {
		for _, asJSON := range []bool{false, true} {
			args := []string{"call", "Write", `{"file_path":"` + filepath.Join(dir, "x.txt") + `","content":"x"}`, "--session", sid}
			if asJSON {
				args = append(args, "--json")
			}
			out, errb := newLineBuffer(), newLineBuffer()
			done := make(chan int, 1)
			go func() { done <- Main(context.Background(), args, strings.NewReader(""), out, errb, env(d)) }()
			errb.waitFor(t, "waits for approval")
			if _, err := d.Client().AnswerPermission(context.Background(), &tacklev1.AnswerPermissionRequest{
				Answer: &tacklev1.PermissionAnswer{SessionId: sid, RequestId: requestID(t, errb.String()), Decision: tacklev1.Decision_DECISION_DENY, Feedback: feedback},
			}); err != nil {
				t.Fatal(err)
			}
			code := <-done
			if asJSON {
				if !strings.Contains(out.String(), "The user doesn't want to proceed") {
					t.Errorf("--json lost the rejection text:\n%s", out.String())
				}
				continue
			}
			_, notice, _ := strings.Cut(errb.String(), "else it is denied\n")
			_, notice, _ = strings.Cut(notice, "No newline at end of file\n") // after the preview
			show(args[:2], result{code: code, stdout: out.String(), stderr: notice})
		}
	}
	got := strings.ReplaceAll(b.String(), dir, "$DIR")
	golden(t, "model_text", got)
	if strings.Contains(got, "STOP what you are doing") || strings.Contains(got, "tool_use_error") || strings.Contains(got, "Ensure that you continue") {
		t.Errorf("model-facing text reached people:\n%s", got)
	}
}

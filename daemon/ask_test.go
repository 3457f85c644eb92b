package daemon_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/daemontest"
	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// AskUserQuestion is put to the session's clients as a permission request
// holding the questions; the client's answers (the updated input) reach
// the model; no answer tells the model so.
func TestAskUserQuestion(t *testing.T) {
	d := daemontest.Start(t, daemontest.WithPermissionTimeout(500*time.Millisecond))
	s := attach(t, d, newSession(t, d, t.TempDir(), ""))
	q := `{"questions":[{"question":"Which database?","header":"DB","multiSelect":false,"options":[{"label":"SQLite","description":"a file"},{"label":"Postgres","description":"a server"}]}]}`
	s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_RunBatch{RunBatch: &tacklev1.RunBatch{SessionId: s.session, Ref: "r", PermissionMode: "bypassPermissions",
		Calls: []*tacklev1.ToolCall{{Id: "q1", Name: "AskUserQuestion", InputJson: q}}}}})
	var result *tacklev1.ToolResult
	for result == nil {
		e := s.recv().GetEvent()
		switch e.GetType() {
		case "permission_requested":
			if !strings.Contains(e.GetPermission().GetInputJson(), "Which database?") {
				t.Errorf("the request does not hold the question: %s", e.GetPermission().GetInputJson())
			}
			var in map[string]any
			json.Unmarshal([]byte(q), &in)
			in["answers"] = map[string]string{"Which database?": "SQLite"}
			upd, _ := json.Marshal(in)
			s.send(&tacklev1.ClientMessage{Msg: &tacklev1.ClientMessage_PermissionAnswer{PermissionAnswer: &tacklev1.PermissionAnswer{
				SessionId: s.session, RequestId: e.GetPermission().GetRequestId(), Decision: tacklev1.Decision_DECISION_ALLOW_ONCE, UpdatedInputJson: string(upd)}}})
		case "call_result":
			result = e.GetResult()
		}
	}
	if got := resultText(result); got != `User has answered your questions: "Which database?"="SQLite". You can now continue with the user's answers in mind.` {
		t.Errorf("the answer: %q", got)
	}
	// Nobody answers: the model is told.
	tr := s.call("AskUserQuestion", q, "")
	if tr.result.GetStatus() == "completed" || !strings.Contains(resultText(tr.result), "AskUserQuestion") && !strings.Contains(resultText(tr.result), "doesn't want") {
		t.Errorf("an unanswered question: %s %s", tr.result.GetStatus(), resultText(tr.result))
	}
}

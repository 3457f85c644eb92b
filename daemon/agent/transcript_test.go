package agent

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/model"
)

func textMsg(role, text string) model.Message {
	return model.Message{Role: role, Content: []model.Block{{Type: model.BlockText, Text: text}}}
}

func TestTranscriptRebuildsAndRepairs(t *testing.T) {
	use := model.Message{Role: model.RoleAssistant, Content: []model.Block{
		{Type: model.BlockText, Text: "reading"},
		{Type: model.BlockToolUse, ID: "toolu_1", Name: "Read", Input: []byte(`{"file_path":"/x"}`), InputComplete: true},
		{Type: model.BlockToolUse, ID: "toolu_2", Name: "Read", Input: []byte(`{"file_path":"/y"}`), InputComplete: true},
	}}
	results := model.Message{Role: model.RoleUser, Content: []model.Block{errorResult("toolu_1", "x"), errorResult("toolu_2", "y")}}
	ev := func(typ event.Type, m model.Message, p *event.Prompt) *event.Event {
		return &event.Event{Type: typ, Message: MessageJSON(m), Prompt: p}
	}
	log := []*event.Event{
		ev(event.PromptStarted, textMsg(model.RoleUser, "hi"), &event.Prompt{ID: "p1"}),
		{Type: event.AssistantDelta, Delta: &event.Delta{Text: "he"}},
		ev(event.AssistantMessage, textMsg(model.RoleAssistant, "hello"), nil),
		{Type: event.PromptEnded, Prompt: &event.Prompt{ID: "p1", StopReason: model.StopEndTurn}},
		ev(event.PromptStarted, textMsg(model.RoleUser, "read x"), &event.Prompt{ID: "p2"}),
		ev(event.AssistantMessage, use, nil),
		ev(event.ToolResults, results, nil),
		ev(event.AssistantMessage, use, nil), // the daemon was killed here: no results, no end
		{Type: event.ToolResults, Message: []byte(`not json`)},
	}
	msgs, open, repair, problems := Transcript(log)
	want := []model.Message{textMsg(model.RoleUser, "hi"), textMsg(model.RoleAssistant, "hello"), textMsg(model.RoleUser, "read x"), use, results, use}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
	if open == nil || open.ID != "p2" {
		t.Errorf("open prompt: %+v", open)
	}
	wantRepair := &model.Message{Role: model.RoleUser, Content: []model.Block{errorResult("toolu_1", interruptedResult), errorResult("toolu_2", interruptedResult)}}
	if diff := cmp.Diff(wantRepair, repair); diff != "" {
		t.Errorf("repair (-want +got):\n%s", diff)
	}
	if len(problems) != 1 {
		t.Errorf("problems: %q", problems)
	}

	// An ended prompt needs no repair.
	msgs, open, repair, _ = Transcript(log[:4])
	if len(msgs) != 2 || open != nil || repair != nil {
		t.Errorf("ended: %d messages, open %v, repair %v", len(msgs), open, repair)
	}
}

package agent

import (
	"encoding/json"
	"fmt"

	"github.com/tackle-agent/tackle/daemon/event"
	"github.com/tackle-agent/tackle/daemon/model"
)

// StopInterrupted ends a prompt that was running when the daemon stopped.
const StopInterrupted = "interrupted"

// Transcript rebuilds a session's conversation from its log: the user
// message of every prompt_started, then its assistant_message and
// tool_results events, in order. A message that does not decode is
// skipped (and reported in problems); the result is valid to send.
//
// open is the prompt that started and never ended (the daemon was killed
// mid-prompt), or nil; repair is the user message that answers its last
// assistant message's tool calls when they had no results yet (nil when
// none are missing): the caller appends it (a tool_results event) and ends
// the prompt as StopInterrupted before the next one.
func Transcript(events []*event.Event) (msgs []model.Message, open *event.Prompt, repair *model.Message, problems []string) {
	for _, e := range events {
		switch e.Type {
		case event.PromptStarted, event.AssistantMessage, event.ToolResults:
			if e.Type == event.PromptStarted && len(e.Message) == 0 {
				continue // refused before the model saw it (a hook, a setting)
			}
			var m model.Message
			if err := json.Unmarshal(e.Message, &m); err != nil || m.Role == "" {
				problems = append(problems, fmt.Sprintf("event %d (%s) holds no message: %v", e.Seq, e.Type, err))
				continue
			}
			if e.Type == event.PromptStarted {
				open = e.Prompt
			}
			msgs = Append(msgs, m)
		case event.Compacted:
			var m model.Message
			if err := json.Unmarshal(e.Message, &m); err != nil || m.Role == "" {
				problems = append(problems, fmt.Sprintf("event %d (compacted) holds no message: %v", e.Seq, err))
				continue
			}
			msgs = []model.Message{m}
		case event.PromptEnded:
			open = nil
		}
	}
	if open == nil || len(msgs) == 0 {
		return msgs, open, nil, problems
	}
	last := msgs[len(msgs)-1]
	if last.Role == model.RoleAssistant {
		repair = unanswered(last, interruptedResult)
	}
	return msgs, open, repair, problems
}

// MessageJSON is m as a log event carries it.
func MessageJSON(m model.Message) json.RawMessage {
	b, err := json.Marshal(m)
	if err != nil { // a Message always encodes
		panic(fmt.Sprintf("encoding a model message: %v", err))
	}
	return b
}

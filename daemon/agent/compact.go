package agent

import (
	"context"
	"errors"
	"strings"

	"github.com/tackle-agent/tackle/daemon/model"
)

// compactInstruction asks the model for the summary a compacted
// conversation starts from.
const compactInstruction = `Your conversation is about to be compacted: write a summary that lets you continue the work with nothing else. Include, in this order:
1. The user's requests and intent, in their own words where it matters.
2. What was done: the files read, changed or created (with paths), the commands run and what came of them.
3. Errors met and how they were fixed, and anything the user corrected.
4. What is left to do, and the very next step.
Answer with the summary only, as plain text; call no tool.`

// compactedPreface starts the conversation after a compaction.
const compactedPreface = "This conversation was compacted: what follows is the summary of everything before it. Continue from it.\n\n"

// Compact asks the model to summarize msgs and returns the user message a
// compacted conversation starts with (the summary). instructions, if set,
// are the person's own (`/compact focus on the tests`). The conversation
// sent stays valid: the instruction joins the last user message, or is a
// new one after an assistant message.
func Compact(ctx context.Context, p model.Provider, req model.Request, msgs []model.Message, instructions string) (model.Message, model.Usage, error) {
	text := compactInstruction
	if strings.TrimSpace(instructions) != "" {
		text += "\n\nThe user asks you to focus on: " + instructions
	}
	req.Messages = Append(append([]model.Message(nil), msgs...), model.Message{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: text}}})
	req.Tools = nil // a summary calls no tool (and tool_use blocks would need results)
	st, err := p.Stream(ctx, req)
	if err != nil {
		return model.Message{}, model.Usage{}, err
	}
	defer st.Close()
	for _, err := range st.Events() {
		if err != nil {
			return model.Message{}, usageOf(st.Response()), err
		}
	}
	resp := st.Response()
	summary := strings.TrimSpace(text2(resp))
	if summary == "" {
		return model.Message{}, usageOf(resp), errors.New("compacting: the model returned no summary")
	}
	return model.Message{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: compactedPreface + summary}}}, usageOf(resp), nil
}

func text2(resp *model.Response) string {
	if resp == nil {
		return ""
	}
	return text(resp.Message)
}

func usageOf(resp *model.Response) model.Usage {
	if resp == nil {
		return model.Usage{}
	}
	return resp.Usage
}

// contextTokens is how much of the context window a response's request
// used: its input, cached or not, and its output (the next request's input).
func contextTokens(u model.Usage) int {
	return u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens + u.OutputTokens
}

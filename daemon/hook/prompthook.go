package hook

import (
	"context"
	"encoding/json"
	"strings"
)

// askFunc is Options.Ask bound to the selection's session.
type askFunc func(ctx context.Context, model, system, prompt string) (string, error)

// promptHookSystem tells the model how to answer a prompt hook.
const promptHookSystem = `You decide a hook of a coding agent. You get the hook's question and its input (JSON). Answer with one JSON object and nothing else: {"ok": true} to let the agent go on, or {"ok": false, "reason": "what is wrong, in one sentence for the agent"}.`

// runPrompt runs a hook of type prompt: the model answers {"ok": bool,
// "reason"}; ok false is a block with the reason (as exit 2 with stderr).
func runPrompt(ctx context.Context, h *Handler, input []byte, ask askFunc) runResult {
	if ask == nil {
		return runResult{h: h, exitCode: -1, err: "no model is configured for prompt hooks"}
	}
	prompt := h.Prompt
	if strings.Contains(prompt, "$ARGUMENTS") {
		prompt = strings.ReplaceAll(prompt, "$ARGUMENTS", string(input))
	} else {
		prompt += "\n\nHook input:\n" + string(input)
	}
	answer, err := ask(ctx, h.Model, promptHookSystem, prompt)
	if err != nil {
		return runResult{h: h, exitCode: -1, err: "asking the model: " + err.Error()}
	}
	var v struct {
		OK     *bool  `json:"ok"`
		Reason string `json:"reason"`
	}
	if i, j := strings.IndexByte(answer, '{'), strings.LastIndexByte(answer, '}'); i >= 0 && j > i {
		_ = json.Unmarshal([]byte(answer[i:j+1]), &v)
	}
	switch {
	case v.OK == nil:
		return runResult{h: h, exitCode: -1, err: "the model's answer is not {\"ok\": …}: " + strings.TrimSpace(answer)}
	case *v.OK:
		return runResult{h: h, exitCode: 0}
	}
	reason := strings.TrimSpace(v.Reason)
	if reason == "" {
		reason = "the prompt hook said no and gave no reason"
	}
	return runResult{h: h, exitCode: 2, block: true, stderr: reason}
}

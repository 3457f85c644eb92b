// Package ask is Claude Code's AskUserQuestion tool: the model asks the
// person one to four multiple-choice questions. A question is interactive:
// the permission stage always puts it to the session's clients, as a
// permission request whose input holds the questions; the client that
// answers sends the person's choices back as the call's updated input
// ("answers": question → the chosen label(s) or the person's own text).
// No answer (the request times out, or is denied) tells the model the
// person did not answer.
package ask

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Tools returns the tool.
func Tools() []tool.Tool { return []tool.Tool{&AskUserQuestion{}} }

// AskUserQuestion is the tool.
type AskUserQuestion struct{}

var schema = json.RawMessage(`{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "questions": {
      "type": "array", "minItems": 1, "maxItems": 4,
      "description": "Questions to ask the user (1-4 questions)",
      "items": {
        "type": "object",
        "properties": {
          "question": {"type": "string", "description": "The complete question to ask the user, ending with a question mark"},
          "header": {"type": "string", "description": "Very short label displayed as a chip/tag (max 12 chars)"},
          "options": {
            "type": "array", "minItems": 2, "maxItems": 4,
            "description": "The available choices for this question (2-4 options); the user may always answer with text of their own",
            "items": {
              "type": "object",
              "properties": {
                "label": {"type": "string", "description": "The display text for this option (1-5 words)"},
                "description": {"type": "string", "description": "What this option means or what happens if chosen"}
              },
              "required": ["label", "description"],
              "additionalProperties": false
            }
          },
          "multiSelect": {"type": "boolean", "description": "Set to true to allow the user to select multiple options"}
        },
        "required": ["question", "header", "options", "multiSelect"],
        "additionalProperties": false
      }
    },
    "answers": {"type": "object", "description": "The user's answers, filled in by the client that asks them (question → answer)", "additionalProperties": {"type": "string"}}
  },
  "required": ["questions"],
  "additionalProperties": false
}`)

const description = `Ask the user multiple-choice questions, when you need their decision to go on: a choice between approaches, a preference, a requirement you cannot infer. Each question has a short header, 2-4 options with a description each, and multiSelect when several may apply; the user may also answer with their own text. Ask only what you cannot find out yourself; group related questions in one call (at most 4).`

// Spec implements tool.Tool.
func (*AskUserQuestion) Spec() tool.Spec {
	return tool.Spec{Name: "AskUserQuestion", Description: description, InputSchema: schema}
}

// Attributes implements tool.Tool: it needs a person.
func (*AskUserQuestion) Attributes(json.RawMessage) tool.Attributes {
	return tool.Attributes{ReadOnly: true, Interactive: true, Origin: tool.OriginBuiltin}
}

type input struct {
	Questions []struct {
		Question    string `json:"question"`
		Header      string `json:"header"`
		MultiSelect bool   `json:"multiSelect"`
		Options     []struct {
			Label string `json:"label"`
		} `json:"options"`
	} `json:"questions"`
	Answers map[string]string `json:"answers"`
}

func decode(raw json.RawMessage) (input, error) {
	var in input
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, fmt.Errorf("the input is not valid JSON for AskUserQuestion (%v)", err)
	}
	return in, nil
}

// Validate implements tool.Tool: distinct questions with distinct labels.
func (*AskUserQuestion) Validate(_ context.Context, call *tool.Call) error {
	in, err := decode(call.Input)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, q := range in.Questions {
		if seen[q.Question] {
			return fmt.Errorf("the question %q is asked twice: ask each once", q.Question)
		}
		seen[q.Question] = true
		labels := map[string]bool{}
		for _, o := range q.Options {
			if labels[o.Label] {
				return fmt.Errorf("the question %q has the option %q twice: give each option its own label", q.Question, o.Label)
			}
			labels[o.Label] = true
		}
	}
	return nil
}

// CheckPermission implements tool.Tool: nothing is touched; the question
// itself is what the person is asked (Attributes.Interactive).
func (*AskUserQuestion) CheckPermission(context.Context, *tool.Call) (tool.Access, error) {
	return tool.Access{Kind: tool.AccessOther, InsideWorkingDirs: true, Reason: "the agent asks you a question"}, nil
}

// Run implements tool.Tool: the answers the client filled in, for the model.
func (*AskUserQuestion) Run(_ context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	in, err := decode(call.Input)
	if err != nil {
		return nil, err
	}
	if len(in.Answers) == 0 {
		return nil, errors.New("the user was asked but gave no answers: go on with what you know, or ask again more simply")
	}
	var parts []string
	keys := make([]string, 0, len(in.Questions))
	for _, q := range in.Questions {
		keys = append(keys, q.Question)
	}
	for q := range in.Answers {
		found := false
		for _, k := range keys {
			found = found || k == q
		}
		if !found {
			keys = append(keys, q)
		}
	}
	for _, q := range keys {
		if a, ok := in.Answers[q]; ok {
			parts = append(parts, fmt.Sprintf("%q=%q", q, a))
		}
	}
	text := "User has answered your questions: " + strings.Join(parts, ", ") + ". You can now continue with the user's answers in mind."
	return &tool.Result{Content: []tool.Content{tool.Text(text)}, Display: strings.Join(parts, ", ")}, nil
}

package mcp

import (
	"strings"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCheckPromptArgs(t *testing.T) {
	p := &mcpsdk.Prompt{Name: "complex_prompt", Arguments: []*mcpsdk.PromptArgument{
		{Name: "temperature", Required: true},
		{Name: "style"},
	}}
	tests := []struct {
		args    map[string]string
		wantErr []string
	}{
		{map[string]string{"temperature": "0.5"}, nil},
		{map[string]string{"temperature": "0.5", "style": "terse"}, nil},
		{map[string]string{"temperature": ""}, nil}, // present, even if empty
		{nil, []string{"missing required argument temperature", "usage: complex_prompt temperature=… [style=…]"}},
		{map[string]string{"temperature": "1", "mood": "x", "colour": "y"}, []string{"unknown arguments colour, mood", "everything"}},
	}
	for _, tc := range tests {
		err := CheckPromptArgs("everything", p, tc.args)
		if tc.wantErr == nil {
			if err != nil {
				t.Errorf("CheckPromptArgs(%v) = %v, want nil", tc.args, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("CheckPromptArgs(%v) = nil, want an error", tc.args)
			continue
		}
		for _, s := range tc.wantErr {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("CheckPromptArgs(%v) = %q, want it to contain %q", tc.args, err, s)
			}
		}
	}
}

func TestPromptUsage(t *testing.T) {
	if got := PromptUsage(&mcpsdk.Prompt{Name: "simple_prompt"}); got != "simple_prompt (no arguments)" {
		t.Errorf("PromptUsage = %q", got)
	}
}

func TestPromptsEverything(t *testing.T) {
	h := newHarness(t, nil)
	env := h.session("s1", everything(t, "everything"))
	ps, err := h.m.Prompts(env.id, "everything")
	if err != nil {
		t.Fatal(err)
	}
	if got := promptNames(ps); !strings.Contains(got, "simple-prompt") || !strings.Contains(got, "args-prompt") {
		t.Errorf("prompts = %s", got)
	}
	ctx := testCtx(t)
	res, err := h.m.GetPrompt(ctx, env.id, "everything", "args-prompt", map[string]string{"city": "Lyon", "state": "Rhône"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Messages) == 0 {
		t.Fatal("args-prompt rendered no messages")
	}
	tc, ok := res.Messages[0].Content.(*mcpsdk.TextContent)
	if !ok || !strings.Contains(tc.Text, "Lyon") {
		t.Errorf("args-prompt message = %#v, want it to mention Lyon", res.Messages[0].Content)
	}
	if _, err := h.m.GetPrompt(ctx, env.id, "everything", "simple-prompt", nil); err != nil {
		t.Errorf("simple-prompt: %v", err)
	}

	for _, tc := range []struct {
		server, name string
		args         map[string]string
		want         string
	}{
		{"everything", "args-prompt", nil, "missing required argument city; usage: args-prompt city=… [state=…]"},
		{"everything", "args-prompt", map[string]string{"city": "x", "zip": "1"}, "unknown argument zip"},
		{"everything", "nope", nil, `no prompt named "nope" (its prompts: simple-prompt, args-prompt`},
		{"nope", "simple-prompt", nil, `no MCP server named "nope"`},
	} {
		_, err := h.m.GetPrompt(ctx, env.id, tc.server, tc.name, tc.args)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("GetPrompt(%s, %s, %v) = %v, want %q", tc.server, tc.name, tc.args, err, tc.want)
		}
	}
	if _, err := h.m.Prompts(env.id, "nope"); err == nil {
		t.Error("Prompts of an unknown server: no error")
	}
}

package model

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/tackle-agent/tackle/internal/fakemodel"
)

func envOf(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		settings ModelSettings
		env      func(string) string
		want     ResolvedModel
	}{
		{
			name: "nothing set: anthropic, sonnet",
			want: ResolvedModel{Provider: "anthropic", BaseURL: DefaultAnthropicBaseURL, Model: "claude-sonnet-5", Requested: "sonnet", Source: "default",
				SmallModel: "claude-haiku-4-5", ContextTokens: 1_000_000, MaxTokens: 32_000},
		},
		{
			name:     "settings model alias, key from env",
			settings: ModelSettings{Model: "haiku"},
			env:      envOf("ANTHROPIC_API_KEY", "sk-ant"),
			want: ResolvedModel{Provider: "anthropic", BaseURL: DefaultAnthropicBaseURL, Model: "claude-haiku-4-5", Requested: "haiku", Source: "settings",
				SmallModel: "claude-haiku-4-5", ContextTokens: 200_000, MaxTokens: 32_000, KeyVar: "ANTHROPIC_API_KEY"},
		},
		{
			name:     "ANTHROPIC_MODEL beats settings; the override beats both",
			settings: ModelSettings{Model: "haiku", Override: "opus"},
			env:      envOf("ANTHROPIC_MODEL", "sonnet"),
			want: ResolvedModel{Provider: "anthropic", BaseURL: DefaultAnthropicBaseURL, Model: "claude-opus-5", Requested: "opus", Source: "override",
				SmallModel: "claude-haiku-4-5", ContextTokens: 1_000_000, MaxTokens: 32_000},
		},
		{
			name:     "ANTHROPIC_MODEL, a full id",
			settings: ModelSettings{Model: "haiku"},
			env:      envOf("ANTHROPIC_MODEL", "claude-opus-4-1-20250805", "ANTHROPIC_AUTH_TOKEN", "tok"),
			want: ResolvedModel{Provider: "anthropic", BaseURL: DefaultAnthropicBaseURL, Model: "claude-opus-4-1-20250805", Requested: "claude-opus-4-1-20250805", Source: "ANTHROPIC_MODEL",
				SmallModel: "claude-haiku-4-5", ContextTokens: 200_000, MaxTokens: 32_000, KeyVar: "ANTHROPIC_AUTH_TOKEN"},
		},
		{
			name:     "alias overrides: modelAliases over ANTHROPIC_DEFAULT_*_MODEL over the table; small model from env",
			settings: ModelSettings{Model: "sonnet", ModelAliases: map[string]string{"Sonnet": "claude-sonnet-4-5", "fast": "haiku"}},
			env:      envOf("ANTHROPIC_DEFAULT_SONNET_MODEL", "claude-sonnet-4-0", "ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-3-5-haiku-latest", "ANTHROPIC_SMALL_FAST_MODEL", "fast"),
			want: ResolvedModel{Provider: "anthropic", BaseURL: DefaultAnthropicBaseURL, Model: "claude-sonnet-4-5", Requested: "sonnet", Source: "settings",
				SmallModel: "claude-3-5-haiku-latest", ContextTokens: 200_000, MaxTokens: 32_000},
		},
		{
			name:     "[1m] suffix",
			settings: ModelSettings{Model: "claude-sonnet-4-5[1m]"},
			want: ResolvedModel{Provider: "anthropic", BaseURL: DefaultAnthropicBaseURL, Model: "claude-sonnet-4-5", Requested: "claude-sonnet-4-5[1m]", Source: "settings",
				SmallModel: "claude-haiku-4-5", ContextTokens: 1_000_000, MaxTokens: 32_000},
		},
		{
			name: "settings env, base URL, output tokens",
			settings: ModelSettings{Env: map[string]string{"ANTHROPIC_BASE_URL": "http://127.0.0.1:4000", "ANTHROPIC_AUTH_TOKEN": "litellm"},
				Provider: &ProviderSettings{BaseURL: "http://ignored:1"}},
			env: envOf("ANTHROPIC_BASE_URL", "http://process-env:1", "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "64000"),
			want: ResolvedModel{Provider: "anthropic", BaseURL: "http://127.0.0.1:4000", Model: "claude-sonnet-5", Requested: "sonnet", Source: "default",
				SmallModel: "claude-haiku-4-5", ContextTokens: 1_000_000, MaxTokens: 64_000, KeyVar: "ANTHROPIC_AUTH_TOKEN"},
		},
		{
			name: "provider object: openai with its own key variable and limits",
			settings: ModelSettings{Model: "qwen3-coder:30b", Provider: &ProviderSettings{Type: "openai", BaseURL: "http://localhost:11434/v1",
				APIKeyEnv: "OLLAMA_KEY", ContextTokens: 65_536, MaxTokens: 16_384}},
			env: envOf("OLLAMA_KEY", "x", "ANTHROPIC_MODEL", "opus", "ANTHROPIC_API_KEY", "sk-ant"),
			want: ResolvedModel{Provider: "openai", BaseURL: "http://localhost:11434/v1", Model: "qwen3-coder:30b", Requested: "qwen3-coder:30b", Source: "settings",
				SmallModel: "qwen3-coder:30b", ContextTokens: 65_536, MaxTokens: 16_384, KeyVar: "OLLAMA_KEY"},
		},
		{
			name:     "openai guessed from OPENAI_BASE_URL alone; aliases of its own",
			settings: ModelSettings{Model: "big", ModelAliases: map[string]string{"big": "llama-3.3-70b", "haiku": "llama-3.2-3b"}},
			env:      envOf("OPENAI_BASE_URL", "http://127.0.0.1:8080/v1"),
			want: ResolvedModel{Provider: "openai", BaseURL: "http://127.0.0.1:8080/v1", Model: "llama-3.3-70b", Requested: "big", Source: "settings",
				SmallModel: "llama-3.2-3b", ContextTokens: 128_000, MaxTokens: 8_192},
		},
		{
			name:     "OPENAI_API_KEY alone: openai at OpenAI",
			settings: ModelSettings{Override: "gpt-5"},
			env:      envOf("OPENAI_API_KEY", "sk-oa"),
			want: ResolvedModel{Provider: "openai", BaseURL: DefaultOpenAIBaseURL, Model: "gpt-5", Requested: "gpt-5", Source: "override",
				SmallModel: "gpt-5", ContextTokens: 128_000, MaxTokens: 8_192, KeyVar: "OPENAI_API_KEY"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, got, err := Resolve(tc.settings, tc.env)
			if err != nil {
				t.Fatal(err)
			}
			if p == nil {
				t.Fatal("no provider")
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(ResolvedModel{}, "Aliases")); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		settings ModelSettings
		env      func(string) string
		want     string
	}{
		{ModelSettings{Provider: &ProviderSettings{Type: "bedrock"}}, nil, `provider.type "bedrock"`},
		{ModelSettings{Provider: &ProviderSettings{Type: "openai"}}, nil, `set "model" in settings`},
		{ModelSettings{}, envOf("ANTHROPIC_BASE_URL", "localhost:8080"), `ANTHROPIC_BASE_URL "localhost:8080" is not an http(s) URL`},
		{ModelSettings{Provider: &ProviderSettings{BaseURL: "ftp://x"}}, nil, `provider.baseURL in settings "ftp://x"`},
	}
	for _, tc := range tests {
		_, _, err := Resolve(tc.settings, tc.env)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.settings, err, tc.want)
		}
	}
}

func TestModelFor(t *testing.T) {
	_, r, err := Resolve(ModelSettings{ModelAliases: map[string]string{"opus": "claude-opus-4-1"}}, envOf("ANTHROPIC_DEFAULT_HAIKU_MODEL", "claude-haiku-4-5-20251001"))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"opus": "claude-opus-4-1", "haiku": "claude-haiku-4-5-20251001", "sonnet": "claude-sonnet-5", "fable": "claude-fable-5", "claude-x": "claude-x"} {
		if got := r.ModelFor(in); got != want {
			t.Errorf("ModelFor(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestResolvedProviderSends: what Resolve builds speaks to the server with
// the key, headers and hints it was given.
func TestResolvedProviderSends(t *testing.T) {
	srv := fakemodel.Start(t, &fakemodel.Options{APIKey: "from-token", Script: fakemodel.Repeat(fakemodel.Say("ok"))})
	p, r, err := Resolve(ModelSettings{Model: "sonnet[1m]", Provider: &ProviderSettings{Headers: map[string]string{"anthropic-beta": "other-beta"}}},
		envOf("ANTHROPIC_BASE_URL", srv.URL(), "ANTHROPIC_AUTH_TOKEN", "from-token", "ANTHROPIC_CUSTOM_HEADERS", "X-Team: core\nX-Empty:"))
	if err != nil {
		t.Fatal(err)
	}
	ap := p.(*anthropicProvider)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ap.t.client = &http.Client{Transport: tr}
	req := hello()
	req.Model = r.Model
	st, err := p.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = drain(st)
	h := srv.Requests()[0].Header
	if h.Get("Authorization") != "Bearer from-token" || h.Get("X-Team") != "core" || h.Get("X-Api-Key") != "" {
		t.Errorf("headers %v", h)
	}
	// claude-sonnet-5 has a native 1M window: no beta header added.
	if h.Get("anthropic-beta") != "other-beta" || r.ContextTokens != 1_000_000 {
		t.Errorf("anthropic-beta %q, context %d", h.Get("anthropic-beta"), r.ContextTokens)
	}

	_, r, _ = Resolve(ModelSettings{Model: "claude-sonnet-4-5[1m]", Provider: &ProviderSettings{Headers: map[string]string{"anthropic-beta": "other-beta"}}}, nil)
	p, _, _ = Resolve(ModelSettings{Model: "claude-sonnet-4-5[1m]", Provider: &ProviderSettings{Headers: map[string]string{"anthropic-beta": "other-beta"}}}, nil)
	if got := p.(*anthropicProvider).t.header.Get("anthropic-beta"); got != "other-beta,context-1m-2025-08-07" || r.ContextTokens != 1_000_000 {
		t.Errorf("anthropic-beta %q, context %d", got, r.ContextTokens)
	}

	// The hints name the variables Resolve read.
	p, _, _ = Resolve(ModelSettings{Provider: &ProviderSettings{Type: "openai", APIKeyEnv: "GROQ_KEY"}, Model: "m"}, envOf("OPENAI_BASE_URL", srv.URL()+"/v1"))
	if op := p.(*openAIProvider); op.t.keyVar != "GROQ_KEY" || op.t.baseURLVar != "OPENAI_BASE_URL" {
		t.Errorf("hints name %q, %q", op.t.keyVar, op.t.baseURLVar)
	}
	p, _, _ = Resolve(ModelSettings{Provider: &ProviderSettings{BaseURL: srv.URL()}}, nil)
	if ap := p.(*anthropicProvider); ap.t.baseURLVar != "provider.baseURL in settings" {
		t.Errorf("base URL hint %q", ap.t.baseURLVar)
	}
	// No key for api.anthropic.com: the first Stream says what to set.
	p, r, _ = Resolve(ModelSettings{}, nil)
	_, err = p.Stream(context.Background(), Request{Model: r.Model})
	var e *Error
	if !errors.As(err, &e) || e.Type != ErrMissingKey || r.KeyVar != "" {
		t.Errorf("err = %v, KeyVar %q", err, r.KeyVar)
	}
}

package model

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Provider types (the settings' provider.type).
const (
	ProviderAnthropic = "anthropic"
	ProviderOpenAI    = "openai"
)

// DefaultAliases maps Claude Code's model aliases to the current first-party
// ids, as Anthropic's models overview lists them (platform.claude.com,
// about-claude/models/overview, as stored in mid 2026): Claude Sonnet 5,
// Opus 5, Haiku 4.5, Fable 5. Settings (modelAliases) and the env
// variables ANTHROPIC_DEFAULT_{SONNET,OPUS,HAIKU,FABLE}_MODEL override
// them; "default" and "best" are Claude Code's too. Values may name another
// alias.
var DefaultAliases = map[string]string{
	"sonnet":  "claude-sonnet-5",
	"opus":    "claude-opus-5",
	"haiku":   "claude-haiku-4-5",
	"fable":   "claude-fable-5",
	"default": "sonnet",
	"best":    "opus",
}

// ModelSettings is what the settings files say about the model: the
// caller decodes the merged settings into it (each field is a top-level
// key), and sets Override.
type ModelSettings struct {
	// Model is the settings' "model" (Claude Code's): an alias or a full id.
	Model string `json:"model,omitempty"`
	// ModelAliases (tackle's) maps aliases to model ids (or to other
	// aliases), over the built-in table and the ANTHROPIC_DEFAULT_*_MODEL
	// variables; it may add aliases of its own.
	ModelAliases map[string]string `json:"modelAliases,omitempty"`
	// Provider (tackle's) picks and configures the provider.
	Provider *ProviderSettings `json:"provider,omitempty"`
	// Env is the settings' "env" (Claude Code's): its variables are read
	// before the process environment, as Claude Code applies them to
	// itself (ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN often live there).
	Env map[string]string `json:"env,omitempty"`
	// Override is the model of the moment — `tackle run --model M`, the
	// session's model — and beats every other source.
	Override string `json:"-"`
}

// ProviderSettings is tackle's "provider" object.
type ProviderSettings struct {
	// Type is "anthropic" or "openai" (default: see Resolve).
	Type string `json:"type,omitempty"`
	// BaseURL is the server's root: ANTHROPIC_BASE_URL / OPENAI_BASE_URL
	// beat it.
	BaseURL string `json:"baseURL,omitempty"`
	// APIKeyEnv names the variable that holds the key (instead of
	// ANTHROPIC_API_KEY / OPENAI_API_KEY).
	APIKeyEnv string `json:"apiKeyEnv,omitempty"`
	// Headers are sent with every request.
	Headers map[string]string `json:"headers,omitempty"`
	// ContextTokens is the model's context window; MaxTokens each
	// request's max_tokens (defaults from the model, see Resolve).
	ContextTokens int `json:"contextTokens,omitempty"`
	MaxTokens     int `json:"maxTokens,omitempty"`
}

// ResolvedModel is what Resolve chose, and why.
type ResolvedModel struct {
	Provider string // ProviderAnthropic or ProviderOpenAI
	BaseURL  string
	// Model is the id requests carry; Requested what was asked (an alias,
	// perhaps with Claude Code's "[1m]"), Source where it came from:
	// "override", "ANTHROPIC_MODEL", "settings" or "default".
	Model, Requested, Source string
	// SmallModel is for the small tasks (a hook of type prompt, WebFetch's
	// prompt): ANTHROPIC_SMALL_FAST_MODEL, else the haiku alias (for
	// openai: a modelAliases "haiku", else Model).
	SmallModel string
	// ContextTokens is the context window; MaxTokens the max_tokens to ask.
	ContextTokens, MaxTokens int
	// KeyVar names the variable the key came from, "" when none is set.
	KeyVar string
	// Aliases is the alias table in effect (built-in, env, settings).
	Aliases map[string]string
}

// ModelFor resolves an alias (an Agent tool's or a definition's model:
// sonnet, opus, haiku) through r's table; other strings are ids.
func (r ResolvedModel) ModelFor(name string) string {
	id, _ := resolveAlias(r.Aliases, name)
	return id
}

// Resolve picks the provider and the model from the settings and the
// environment (env may be nil), Claude Code compatible first. The
// precedence, highest first (env means settings.Env, then env):
//
//	provider type  provider.type; else anthropic, unless no
//	               ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN or
//	               ANTHROPIC_BASE_URL is set and OPENAI_BASE_URL or
//	               OPENAI_API_KEY is
//	model          Override; env ANTHROPIC_MODEL (anthropic only); the
//	               settings' model; "sonnet" (anthropic; openai: an error)
//	aliases        modelAliases; env ANTHROPIC_DEFAULT_*_MODEL (anthropic);
//	               DefaultAliases (anthropic)
//	base URL       env ANTHROPIC_BASE_URL / OPENAI_BASE_URL;
//	               provider.baseURL; the provider's default
//	key            provider.apiKeyEnv's variable (sent as x-api-key or
//	               Bearer); else anthropic ANTHROPIC_API_KEY (x-api-key) and
//	               ANTHROPIC_AUTH_TOKEN (Bearer), openai OPENAI_API_KEY
//	headers        env ANTHROPIC_CUSTOM_HEADERS ("Name: value" lines,
//	               anthropic) over provider.headers
//	context window provider.contextTokens; 1,000,000 for a "[1m]" model
//	               (Claude Code's suffix: it also sends anthropic-beta
//	               context-1m-2025-08-07 when the model's own window is
//	               smaller); the model's (anthropicLimits); 200,000
//	               (anthropic) or 128,000 (openai)
//	max tokens     provider.maxTokens; env CLAUDE_CODE_MAX_OUTPUT_TOKENS;
//	               the model's output limit capped at 32,000 (anthropic) or
//	               8,192 (openai)
//
// A missing key is not an error here (a local server needs none): the
// provider's first Stream reports it, naming the variable, without sending
// anything, when the base URL is the provider's own API. The provider is
// built with the defaults of NewAnthropic / NewOpenAI otherwise (its HTTP
// client, 2 retries).
func Resolve(settings ModelSettings, env func(string) string) (Provider, ResolvedModel, error) {
	getenv := func(k string) string {
		if v, ok := settings.Env[k]; ok {
			return strings.TrimSpace(v)
		}
		if env != nil {
			return strings.TrimSpace(env(k))
		}
		return ""
	}
	ps := ProviderSettings{}
	if settings.Provider != nil {
		ps = *settings.Provider
	}
	r := ResolvedModel{Provider: strings.ToLower(strings.TrimSpace(ps.Type))}
	if r.Provider == "" {
		r.Provider = ProviderAnthropic
		if getenv("ANTHROPIC_API_KEY") == "" && getenv("ANTHROPIC_AUTH_TOKEN") == "" && getenv("ANTHROPIC_BASE_URL") == "" &&
			(getenv("OPENAI_BASE_URL") != "" || getenv("OPENAI_API_KEY") != "") {
			r.Provider = ProviderOpenAI
		}
	}
	if r.Provider != ProviderAnthropic && r.Provider != ProviderOpenAI {
		return nil, r, fmt.Errorf(`reading the model settings: provider.type %q: want "anthropic" or "openai"`, ps.Type)
	}
	anthropic := r.Provider == ProviderAnthropic

	// The alias table.
	r.Aliases = map[string]string{}
	if anthropic {
		for k, v := range DefaultAliases {
			r.Aliases[k] = v
		}
		for _, a := range []string{"sonnet", "opus", "haiku", "fable"} {
			if v := getenv("ANTHROPIC_DEFAULT_" + strings.ToUpper(a) + "_MODEL"); v != "" {
				r.Aliases[a] = v
			}
		}
	}
	for k, v := range settings.ModelAliases {
		if k = strings.ToLower(strings.TrimSpace(k)); k != "" && strings.TrimSpace(v) != "" {
			r.Aliases[k] = strings.TrimSpace(v)
		}
	}

	// The model.
	switch {
	case strings.TrimSpace(settings.Override) != "":
		r.Requested, r.Source = strings.TrimSpace(settings.Override), "override"
	case anthropic && getenv("ANTHROPIC_MODEL") != "":
		r.Requested, r.Source = getenv("ANTHROPIC_MODEL"), "ANTHROPIC_MODEL"
	case strings.TrimSpace(settings.Model) != "":
		r.Requested, r.Source = strings.TrimSpace(settings.Model), "settings"
	case anthropic:
		r.Requested, r.Source = "sonnet", "default"
	default:
		return nil, r, fmt.Errorf(`choosing the model: the openai provider has no default model: set "model" in settings (or pass --model)`)
	}
	var oneM bool
	r.Model, oneM = resolveAlias(r.Aliases, r.Requested)
	if r.Model == "" {
		return nil, r, fmt.Errorf("choosing the model: %q (%s) names no model", r.Requested, r.Source)
	}
	if v := getenv("ANTHROPIC_SMALL_FAST_MODEL"); anthropic && v != "" {
		r.SmallModel, _ = resolveAlias(r.Aliases, v)
	} else if _, ok := r.Aliases["haiku"]; ok {
		r.SmallModel, _ = resolveAlias(r.Aliases, "haiku")
	} else {
		r.SmallModel = r.Model
	}

	// The base URL.
	urlVar, def := "ANTHROPIC_BASE_URL", DefaultAnthropicBaseURL
	if !anthropic {
		urlVar, def = "OPENAI_BASE_URL", DefaultOpenAIBaseURL
	}
	r.BaseURL = def
	urlSource := "the default base URL"
	if v := getenv(urlVar); v != "" {
		r.BaseURL, urlSource = v, urlVar
	} else if ps.BaseURL != "" {
		r.BaseURL, urlSource = strings.TrimSpace(ps.BaseURL), "provider.baseURL in settings"
	}
	if u, err := url.Parse(r.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, r, fmt.Errorf("reading the model settings: %s %q is not an http(s) URL", urlSource, r.BaseURL)
	}
	urlHint := urlVar
	if urlSource == "provider.baseURL in settings" {
		urlHint = urlSource
	}

	// The key.
	var key, token string
	keyHint := "ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN)"
	switch {
	case ps.APIKeyEnv != "":
		r.KeyVar, keyHint = ps.APIKeyEnv, ps.APIKeyEnv
		key = getenv(ps.APIKeyEnv)
	case anthropic:
		key, token = getenv("ANTHROPIC_API_KEY"), getenv("ANTHROPIC_AUTH_TOKEN")
		switch {
		case key != "" && token != "":
			r.KeyVar = "ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN"
		case key != "":
			r.KeyVar = "ANTHROPIC_API_KEY"
		case token != "":
			r.KeyVar = "ANTHROPIC_AUTH_TOKEN"
		}
	default:
		keyHint = "OPENAI_API_KEY"
		key = getenv("OPENAI_API_KEY")
		if key != "" {
			r.KeyVar = "OPENAI_API_KEY"
		}
	}
	if key == "" && token == "" {
		r.KeyVar = ""
	}

	// The headers.
	headers := map[string]string{}
	for k, v := range ps.Headers {
		headers[k] = v
	}
	if anthropic {
		for _, line := range strings.Split(getenv("ANTHROPIC_CUSTOM_HEADERS"), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) != "" {
				headers[strings.TrimSpace(k)] = strings.TrimSpace(v)
			}
		}
	}

	// The limits.
	lim := modelLimits(r.Provider, r.Model)
	r.ContextTokens = lim.context
	if oneM && r.ContextTokens < 1_000_000 {
		r.ContextTokens = 1_000_000
		if anthropic {
			addBeta(headers, "context-1m-2025-08-07")
		}
	}
	if ps.ContextTokens > 0 {
		r.ContextTokens = ps.ContextTokens
	}
	r.MaxTokens = lim.maxTokens
	if n, err := strconv.Atoi(getenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS")); err == nil && n > 0 {
		r.MaxTokens = n
	}
	if ps.MaxTokens > 0 {
		r.MaxTokens = ps.MaxTokens
	}

	modelVar := `"model" in settings (or ANTHROPIC_MODEL, or --model)`
	if !anthropic {
		modelVar = `"model" in settings (or --model)`
	}
	if len(headers) == 0 {
		headers = nil
	}
	var p Provider
	if anthropic {
		p = NewAnthropic(&AnthropicOptions{BaseURL: r.BaseURL, APIKey: key, AuthToken: token, Headers: headers,
			KeyVar: keyHint, BaseURLVar: urlHint, ModelVar: modelVar})
	} else {
		p = NewOpenAI(&OpenAIOptions{BaseURL: r.BaseURL, APIKey: key, Headers: headers,
			KeyVar: keyHint, BaseURLVar: urlHint, ModelVar: modelVar})
	}
	return p, r, nil
}

// resolveAlias follows name through the alias table (a few steps, so that
// an alias may name another), after Claude Code's "[1m]" suffix, which it
// reports.
func resolveAlias(aliases map[string]string, name string) (id string, oneM bool) {
	id = strings.TrimSpace(name)
	if strings.HasSuffix(strings.ToLower(id), "[1m]") {
		id, oneM = strings.TrimSpace(id[:len(id)-len("[1m]")]), true
	}
	for range 4 {
		next, ok := aliases[strings.ToLower(id)]
		if !ok {
			break
		}
		id = next
	}
	return id, oneM
}

func addBeta(h map[string]string, beta string) {
	for k, v := range h {
		if strings.EqualFold(k, "anthropic-beta") {
			if !strings.Contains(v, beta) {
				h[k] = v + "," + beta
			}
			return
		}
	}
	h["anthropic-beta"] = beta
}

type limits struct{ context, maxTokens int }

// anthropicLimits: context window and output limit by id prefix, longest
// prefix first (Anthropic's model pages; dated ids match their family).
// max_tokens asked is the output limit capped at 32,000, as Claude Code
// asks by default.
var anthropicLimits = []struct {
	prefix string
	limits
}{
	{"claude-fable-", limits{1_000_000, 128_000}},
	{"claude-mythos-", limits{1_000_000, 128_000}},
	{"claude-opus-5", limits{1_000_000, 128_000}},
	{"claude-sonnet-5", limits{1_000_000, 128_000}},
	{"claude-opus-4-1", limits{200_000, 32_000}},
	{"claude-opus-4-0", limits{200_000, 32_000}},
	{"claude-opus-4-2", limits{200_000, 32_000}}, // claude-opus-4-20250514
	{"claude-opus-4", limits{200_000, 64_000}},   // 4.5 and later
	{"claude-sonnet-4", limits{200_000, 64_000}},
	{"claude-haiku-4", limits{200_000, 64_000}},
	{"claude-3-7-sonnet", limits{200_000, 64_000}},
	{"claude-3-5-haiku", limits{200_000, 8_192}},
	{"claude-3-5-sonnet", limits{200_000, 8_192}},
	{"claude-3", limits{200_000, 4_096}},
}

func modelLimits(provider, model string) limits {
	if provider == ProviderOpenAI {
		return limits{128_000, 8_192}
	}
	m := strings.ToLower(model)
	for _, l := range anthropicLimits {
		if strings.HasPrefix(m, l.prefix) {
			return limits{l.context, min(l.maxTokens, 32_000)}
		}
	}
	return limits{200_000, 32_000}
}

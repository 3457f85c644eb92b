package web

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/tool"
)

//go:embed search.md
var searchDescription string

const (
	// settingKey is the settings key that chooses the search backend.
	settingKey = "webSearch"
	// maxSearchResults is the most results listed.
	maxSearchResults = 10
	// maxSearchBody is the most of a backend response read.
	maxSearchBody = 4 << 20
	// defaultBraveURL is the Brave Search API base URL.
	defaultBraveURL = "https://api.search.brave.com"
	// defaultBraveKeyEnv names the environment variable holding the Brave API key.
	defaultBraveKeyEnv = "BRAVE_API_KEY"
)

// settingExample is shown when no backend is configured.
const settingExample = `"webSearch": {"provider": "searxng", "url": "http://localhost:8888"}` +
	` or "webSearch": {"provider": "brave", "apiKeyEnv": "BRAVE_API_KEY"}`

// Search is the WebSearch tool: it queries the search backend chosen by
// the "webSearch" setting and lists the results. It is safe for concurrent use.
type Search struct {
	opts Options
}

var searchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 2, "description": "The search query to use"},
    "allowed_domains": {"type": "array", "items": {"type": "string"}, "description": "Only include search results from these domains"},
    "blocked_domains": {"type": "array", "items": {"type": "string"}, "description": "Never include search results from these domains"}
  },
  "required": ["query"],
  "additionalProperties": false
}`)

// Spec implements tool.Tool.
func (s *Search) Spec() tool.Spec {
	return tool.Spec{Name: "WebSearch", Description: searchDescription, InputSchema: searchSchema}
}

// Attributes implements tool.Tool: read-only and concurrency-safe.
func (s *Search) Attributes(json.RawMessage) tool.Attributes { return attributes() }

type searchInput struct {
	Query          string   `json:"query"`
	AllowedDomains []string `json:"allowed_domains"`
	BlockedDomains []string `json:"blocked_domains"`
}

// searchPlan is a validated WebSearch call.
type searchPlan struct {
	query            string
	allowed, blocked []string // normalised domains
	backend          backend
}

// backend is one configured search provider.
type backend struct {
	provider string // "searxng" or "brave"
	base     *url.URL
	apiKey   string // brave only
}

// name is the provider's display name.
func (b backend) name() string {
	if b.provider == "brave" {
		return "Brave Search"
	}
	return "SearXNG"
}

func (s *Search) plan(call *tool.Call) (*searchPlan, error) {
	var in searchInput
	if err := decodeInput(call.Input, &in); err != nil {
		return nil, err
	}
	q := strings.TrimSpace(in.Query)
	if len([]rune(q)) < 2 {
		return nil, errors.New("query is too short; give at least 2 characters")
	}
	allowed, err := normaliseDomains("allowed_domains", in.AllowedDomains)
	if err != nil {
		return nil, err
	}
	blocked, err := normaliseDomains("blocked_domains", in.BlockedDomains)
	if err != nil {
		return nil, err
	}
	if len(allowed) > 0 && len(blocked) > 0 {
		return nil, errors.New("give allowed_domains or blocked_domains, not both, in one search")
	}
	b, err := s.backend(call.Env)
	if err != nil {
		return nil, err
	}
	return &searchPlan{query: q, allowed: allowed, blocked: blocked, backend: b}, nil
}

// normaliseDomains lowercases domains and strips schemes, paths, ports,
// "*." and dots at either end.
func normaliseDomains(field string, in []string) ([]string, error) {
	var out []string
	for _, d := range in {
		d = strings.ToLower(strings.TrimSpace(d))
		if i := strings.Index(d, "://"); i >= 0 {
			d = d[i+3:]
		}
		d, _, _ = strings.Cut(d, "/")
		if h, _, ok := strings.Cut(d, ":"); ok {
			d = h
		}
		d = strings.Trim(strings.TrimPrefix(d, "*."), ".")
		if d == "" || strings.ContainsAny(d, " \t\"") {
			return nil, fmt.Errorf("%s holds %q, which is not a domain; give names such as \"example.com\"", field, strings.Join(in, ", "))
		}
		out = append(out, d)
	}
	return out, nil
}

// searchSetting is the "webSearch" setting.
type searchSetting struct {
	Provider  string `json:"provider"`
	URL       string `json:"url"`
	APIKeyEnv string `json:"apiKeyEnv"`
}

// backend reads the "webSearch" setting for the session's directory.
func (s *Search) backend(env tool.Env) (backend, error) {
	var raw json.RawMessage
	var problems []config.Problem
	if s.opts.Settings != nil && env != nil {
		var st *config.Settings
		st, problems = s.opts.Settings(env.Cwd())
		if st != nil {
			raw = st.Raw[settingKey]
		}
	}
	if len(raw) == 0 || string(raw) == "null" {
		msg := fmt.Sprintf("no web search backend is configured: set %q in a settings file (.tackle/settings.json or ~/.config/tackle/settings.json), for example %s", settingKey, settingExample)
		for _, p := range problems {
			msg += "\n(settings problem: " + p.Error() + ")"
		}
		return backend{}, errors.New(msg)
	}
	var st searchSetting
	if err := json.Unmarshal(raw, &st); err != nil {
		return backend{}, fmt.Errorf("setting %q is not valid (%v); use for example %s", settingKey, err, settingExample)
	}
	b := backend{provider: strings.ToLower(strings.TrimSpace(st.Provider))}
	switch b.provider {
	case "searxng":
		if st.URL == "" {
			return backend{}, fmt.Errorf("setting %q has provider searxng but no \"url\"; use for example %s", settingKey, settingExample)
		}
	case "brave":
		if st.URL == "" {
			st.URL = defaultBraveURL
		}
		keyEnv := st.APIKeyEnv
		if keyEnv == "" {
			keyEnv = defaultBraveKeyEnv
		}
		b.apiKey = lookupEnv(env, keyEnv)
		if b.apiKey == "" {
			return backend{}, fmt.Errorf("setting %q uses Brave Search, but the environment variable %s (its \"apiKeyEnv\") is not set; set it to your Brave Search API key", settingKey, keyEnv)
		}
	default:
		return backend{}, fmt.Errorf("setting %q has provider %q; tackle knows \"searxng\" and \"brave\", for example %s", settingKey, st.Provider, settingExample)
	}
	u, err := url.Parse(strings.TrimRight(st.URL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return backend{}, fmt.Errorf("setting %q has url %q, which is not an http or https URL", settingKey, st.URL)
	}
	b.base = u
	return b, nil
}

// lookupEnv reads name from the session's environment, then the daemon's.
func lookupEnv(env tool.Env, name string) string {
	if env != nil {
		environ := env.Environ()
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
				return v
			}
		}
	}
	return os.Getenv(name)
}

// Validate implements tool.Tool: the query, the domain lists and the
// backend setting must be usable.
func (s *Search) Validate(ctx context.Context, call *tool.Call) error {
	_, err := s.plan(call)
	return err
}

// CheckPermission implements tool.Tool: network access to the backend's
// host, in Domain (and Command).
func (s *Search) CheckPermission(ctx context.Context, call *tool.Call) (tool.Access, error) {
	p, err := s.plan(call)
	if err != nil {
		return tool.Access{}, err
	}
	d := domainOf(p.backend.base)
	return tool.Access{Kind: tool.AccessNetwork, Command: d, Domain: d}, nil
}

// hit is one search result.
type hit struct {
	Title, URL, Snippet string
}

// Run implements tool.Tool.
func (s *Search) Run(ctx context.Context, call *tool.Call, _ tool.Progress) (*tool.Result, error) {
	p, err := s.plan(call)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	hits, err := s.query(ctx, p)
	if err != nil {
		return tool.ErrorResult(err.Error()), nil
	}
	return formatSearch(p, filterHits(hits, p.allowed, p.blocked)), nil
}

// backendQuery is the query sent to the backend: the query plus site:
// operators for the domain lists (both SearXNG's engines and Brave honour
// them; results are filtered here as well).
func backendQuery(p *searchPlan) string {
	q := p.query
	switch {
	case len(p.allowed) == 1:
		q += " site:" + p.allowed[0]
	case len(p.allowed) > 1:
		q += " (site:" + strings.Join(p.allowed, " OR site:") + ")"
	}
	for _, d := range p.blocked {
		q += " -site:" + d
	}
	return q
}

// query asks the backend and returns its results in order.
func (s *Search) query(ctx context.Context, p *searchPlan) ([]hit, error) {
	ctx, cancel := withTimeout(ctx, s.opts.Timeout)
	defer cancel()
	b := p.backend
	u := *b.base
	v := url.Values{"q": {backendQuery(p)}}
	if b.provider == "brave" {
		u.Path += "/res/v1/web/search"
		v.Set("count", fmt.Sprint(maxSearchResults*2))
	} else {
		u.Path += "/search"
		v.Set("format", "json")
	}
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("searching with %s: %v", b.name(), err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if b.apiKey != "" {
		req.Header.Set("X-Subscription-Token", b.apiKey)
	}
	s.opts.Logger.Debug("searching", "provider", b.provider, "host", u.Host)
	resp, err := s.opts.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("searching with %s (%s): %s", b.name(), b.base, describeNetError(ctx, err, &u, s.opts.Timeout))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return nil, fmt.Errorf("searching with %s (%s): reading the response: %s", b.name(), b.base, describeNetError(ctx, err, &u, s.opts.Timeout))
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, fmt.Errorf("searching with %s (%s): HTTP %s%s", b.name(), b.base, resp.Status, excerpt(body))
	}
	var hits []hit
	if b.provider == "brave" {
		hits, err = parseBrave(body)
	} else {
		hits, err = parseSearXNG(body)
	}
	if err != nil {
		return nil, fmt.Errorf("searching with %s (%s): the response is not the expected JSON: %v", b.name(), b.base, err)
	}
	return hits, nil
}

// excerpt is the start of an error body, for error messages.
func excerpt(body []byte) string {
	s := strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "")), " ")
	if s == "" {
		return ""
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return ": " + s
}

func parseSearXNG(body []byte) ([]hit, error) {
	var r struct {
		Results *[]struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
		} `json:"results"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if r.Results == nil {
		return nil, errors.New("no \"results\" array")
	}
	var hits []hit
	for _, x := range *r.Results {
		hits = append(hits, hit{Title: x.Title, URL: x.URL, Snippet: x.Content})
	}
	return hits, nil
}

func parseBrave(body []byte) ([]hit, error) {
	var r struct {
		Type string `json:"type"`
		Web  *struct {
			Results []struct {
				Title       string `json:"title"`
				URL         string `json:"url"`
				Description string `json:"description"`
			} `json:"results"`
		} `json:"web"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	if r.Web == nil {
		if r.Type == "search" {
			return nil, nil // a search with no web results
		}
		return nil, errors.New("no \"web\" object")
	}
	var hits []hit
	for _, x := range r.Web.Results {
		hits = append(hits, hit{Title: stripTags(x.Title), URL: x.URL, Snippet: stripTags(x.Description)})
	}
	return hits, nil
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// stripTags removes HTML tags (Brave marks matches with <strong>) and entities.
func stripTags(s string) string {
	return html.UnescapeString(tagRE.ReplaceAllString(s, ""))
}

// filterHits keeps results on allowed domains (and their subdomains), drops
// those on blocked ones and those without an http(s) URL.
func filterHits(hits []hit, allowed, blocked []string) []hit {
	var out []hit
	for _, h := range hits {
		u, err := url.Parse(h.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			continue
		}
		host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
		if len(allowed) > 0 && !onDomains(host, allowed) {
			continue
		}
		if onDomains(host, blocked) {
			continue
		}
		out = append(out, h)
	}
	return out
}

// onDomains reports whether host is one of domains or a subdomain of one.
func onDomains(host string, domains []string) bool {
	for _, d := range domains {
		if host == d || strings.HasSuffix(host, "."+d) {
			return true
		}
	}
	return false
}

// formatSearch lists the results: number, title, URL, snippet.
func formatSearch(p *searchPlan, hits []hit) *tool.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "Web search results for query: %q (via %s)\n", p.query, p.backend.name())
	if len(p.allowed) > 0 {
		fmt.Fprintf(&b, "Only from: %s\n", strings.Join(p.allowed, ", "))
	}
	if len(p.blocked) > 0 {
		fmt.Fprintf(&b, "Excluding: %s\n", strings.Join(p.blocked, ", "))
	}
	if len(hits) == 0 {
		b.WriteString("\nNo results found.")
		r := tool.TextResult(b.String())
		r.Display = "No results"
		return r
	}
	n := min(len(hits), maxSearchResults)
	for i, h := range hits[:n] {
		title := strings.TrimSpace(h.Title)
		if title == "" {
			title = h.URL
		}
		fmt.Fprintf(&b, "\n%d. %s\n   %s\n", i+1, oneLine(title), h.URL)
		if sn := oneLine(h.Snippet); sn != "" {
			fmt.Fprintf(&b, "   %s\n", sn)
		}
	}
	b.WriteString("\nREMINDER: cite the sources you use in your answer as Markdown links ([title](URL)).")
	r := tool.TextResult(b.String())
	r.Display = fmt.Sprintf("Found %d results", n)
	if n == 1 {
		r.Display = "Found 1 result"
	}
	return r
}

// oneLine collapses whitespace and caps a snippet at 500 characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 500 {
		s = string(r[:500]) + "…"
	}
	return s
}

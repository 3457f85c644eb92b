package web_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tackle-agent/tackle/daemon/config"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/web"
)

// settings returns a Settings function with the given "webSearch" value
// ("" = the key is absent).
func settings(webSearch string) func(string) (*config.Settings, []config.Problem) {
	return func(string) (*config.Settings, []config.Problem) {
		raw := map[string]json.RawMessage{}
		if webSearch != "" {
			raw["webSearch"] = json.RawMessage(webSearch)
		}
		return &config.Settings{Raw: raw}, nil
	}
}

// results are what the fake backends know, in rank order.
var results = []struct{ title, url, snippet string }{
	{"Go 1.26 release notes", "https://go.dev/doc/go1.26", "Go 1.26 adds <strong>new</strong> features &amp; fixes."},
	{"Tackle docs", "https://docs.example.com/tackle", "Documentation for tackle."},
	{"Example home", "https://example.com/", "The example domain."},
	{"Not example", "https://notexample.com/page", "A look-alike domain."},
	{"Spam", "https://spam.test/buy", "Buy now."},
	{"No URL", "", "A result without a URL."},
}

// backend is a local search server that records the queries it got.
type backend struct {
	*server
	mu      sync.Mutex
	queries []string
	tokens  []string
}

func (b *backend) last() (q, token string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queries[len(b.queries)-1], b.tokens[len(b.tokens)-1]
}

// newSearXNG serves SearXNG's JSON API at /search.
func newSearXNG(t *testing.T) *backend {
	b := &backend{}
	b.server = newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/search" || r.URL.Query().Get("format") != "json" {
			http.Error(w, "want /search?format=json", http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		b.queries = append(b.queries, r.URL.Query().Get("q"))
		b.tokens = append(b.tokens, r.Header.Get("X-Subscription-Token"))
		b.mu.Unlock()
		type res struct {
			Title   string `json:"title"`
			URL     string `json:"url"`
			Content string `json:"content"`
			Engine  string `json:"engine"`
		}
		var out struct {
			Query   string `json:"query"`
			Results []res  `json:"results"`
		}
		out.Query = r.URL.Query().Get("q")
		for _, x := range results {
			out.Results = append(out.Results, res{x.title, x.url, x.snippet, "duckduckgo"})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	return b
}

// newBrave serves the Brave Search API at /res/v1/web/search, for one key.
func newBrave(t *testing.T, key string) *backend {
	b := &backend{}
	b.server = newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/res/v1/web/search" {
			http.NotFound(w, r)
			return
		}
		b.mu.Lock()
		b.queries = append(b.queries, r.URL.Query().Get("q"))
		b.tokens = append(b.tokens, r.Header.Get("X-Subscription-Token"))
		b.mu.Unlock()
		if r.Header.Get("X-Subscription-Token") != key {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","status":401}}`)
			return
		}
		type res struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
		}
		var out struct {
			Type string `json:"type"`
			Web  struct {
				Type    string `json:"type"`
				Results []res  `json:"results"`
			} `json:"web"`
		}
		out.Type, out.Web.Type = "search", "search"
		for _, x := range results {
			out.Web.Results = append(out.Web.Results, res{x.title, x.url, x.snippet})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}))
	return b
}

func search(query string) map[string]any { return map[string]any{"query": query} }

func TestSearchSearXNG(t *testing.T) {
	b := newSearXNG(t)
	tl := tools(t, &web.Options{Settings: settings(`{"provider":"searxng","url":"` + b.URL + `/"}`)})
	o := mustOK(t, call(t, tl, tooltest.New(t), "WebSearch", search("go release notes")))
	mustContain(t, o.Text(),
		`Web search results for query: "go release notes" (via SearXNG)`,
		"1. Go 1.26 release notes\n   https://go.dev/doc/go1.26\n   Go 1.26 adds <strong>new</strong> features &amp; fixes.\n",
		"2. Tackle docs\n   https://docs.example.com/tackle\n   Documentation for tackle.\n",
		"5. Spam\n   https://spam.test/buy\n",
		"cite the sources",
	)
	if strings.Contains(o.Text(), "No URL") {
		t.Errorf("a result without a URL was listed:\n%s", o.Text())
	}
	if q, _ := b.last(); q != "go release notes" {
		t.Errorf("backend got q=%q", q)
	}
	if o.Access.Command != "127.0.0.1" || o.Access.Kind != "network" {
		t.Errorf("access = %+v, want network to the backend host", o.Access)
	}
	if o.Res.Display != "Found 5 results" {
		t.Errorf("display = %q", o.Res.Display)
	}
}

func TestSearchBrave(t *testing.T) {
	const key = "k-123"
	b := newBrave(t, key)
	env := tooltest.New(t)
	env.Vars = []string{"PATH=/bin", "MY_BRAVE_KEY=wrong", "MY_BRAVE_KEY=" + key}
	tl := tools(t, &web.Options{Settings: settings(`{"provider":"brave","apiKeyEnv":"MY_BRAVE_KEY","url":"` + b.URL + `"}`)})
	o := mustOK(t, call(t, tl, env, "WebSearch", search("go release notes")))
	mustContain(t, o.Text(),
		"(via Brave Search)",
		"1. Go 1.26 release notes\n   https://go.dev/doc/go1.26\n   Go 1.26 adds new features & fixes.\n",
		"3. Example home\n   https://example.com/\n",
	)
	if q, tok := b.last(); q != "go release notes" || tok != key {
		t.Errorf("backend got q=%q token=%q", q, tok)
	}

	// The key comes from the daemon's environment when the session has none.
	t.Setenv("TACKLE_TEST_BRAVE_KEY", key)
	tl = tools(t, &web.Options{Settings: settings(`{"provider":"brave","apiKeyEnv":"TACKLE_TEST_BRAVE_KEY","url":"` + b.URL + `"}`)})
	mustOK(t, call(t, tl, tooltest.New(t), "WebSearch", search("go")))

	// A wrong key: the backend's 401 names the provider.
	env.Vars = []string{"MY_BRAVE_KEY=bad"}
	tl = tools(t, &web.Options{Settings: settings(`{"provider":"brave","apiKeyEnv":"MY_BRAVE_KEY","url":"` + b.URL + `"}`)})
	mustFail(t, call(t, tl, env, "WebSearch", search("go")), "Brave Search", "HTTP 401 Unauthorized", "SUBSCRIPTION_TOKEN_INVALID")

	// No key at all.
	tl = tools(t, &web.Options{Settings: settings(`{"provider":"brave","apiKeyEnv":"TACKLE_TEST_UNSET_KEY"}`)})
	mustFail(t, call(t, tl, tooltest.New(t), "WebSearch", search("go")), "TACKLE_TEST_UNSET_KEY", "is not set")

	// The default base URL is Brave's.
	t.Setenv("BRAVE_API_KEY", "x")
	tl = tools(t, &web.Options{Settings: settings(`{"provider":"brave"}`)})
	mustFail(t, call(t, tl, tooltest.New(t), "WebSearch", search("q")), "minLength")
	mustFail(t, call(t, tl, tooltest.New(t), "WebSearch", search(" q ")), "query is too short")
	tl = tools(t, &web.Options{Settings: settings(`{"provider":"brave"}`), HTTPClient: &http.Client{Transport: &recordingTransport{}}})
	c := call(t, tl, tooltest.New(t), "WebSearch", search("golang"))
	mustFail(t, c, "Brave Search", "no network in this test")
	if c.Access.Command != "api.search.brave.com" {
		t.Errorf("access command = %q, want api.search.brave.com", c.Access.Command)
	}
}

func TestSearchDomains(t *testing.T) {
	for _, provider := range []string{"searxng", "brave"} {
		t.Run(provider, func(t *testing.T) {
			var b *backend
			if provider == "brave" {
				b = newBrave(t, "key")
				t.Setenv("BRAVE_API_KEY", "key")
			} else {
				b = newSearXNG(t)
			}
			tl := tools(t, &web.Options{Settings: settings(`{"provider":"` + provider + `","url":"` + b.URL + `"}`)})
			env := tooltest.New(t)

			o := mustOK(t, call(t, tl, env, "WebSearch", map[string]any{"query": "docs", "allowed_domains": []string{"https://Example.com/"}}))
			mustContain(t, o.Text(), "Only from: example.com", "1. Tackle docs", "2. Example home")
			for _, gone := range []string{"go.dev", "notexample.com", "spam.test"} {
				if strings.Contains(o.Text(), gone) {
					t.Errorf("allowed_domains example.com let %s through:\n%s", gone, o.Text())
				}
			}
			if q, _ := b.last(); q != "docs site:example.com" {
				t.Errorf("backend got q=%q, want the site: operator", q)
			}

			o = mustOK(t, call(t, tl, env, "WebSearch", map[string]any{"query": "docs", "allowed_domains": []string{"go.dev", "*.example.com"}}))
			mustContain(t, o.Text(), "1. Go 1.26", "2. Tackle docs", "3. Example home")
			if q, _ := b.last(); q != "docs (site:go.dev OR site:example.com)" {
				t.Errorf("backend got q=%q", q)
			}

			o = mustOK(t, call(t, tl, env, "WebSearch", map[string]any{"query": "docs", "blocked_domains": []string{"example.com", "spam.test"}}))
			mustContain(t, o.Text(), "Excluding: example.com, spam.test", "1. Go 1.26", "2. Not example\n   https://notexample.com/page")
			if strings.Contains(o.Text(), "docs.example.com") || strings.Contains(o.Text(), "spam.test/buy") {
				t.Errorf("blocked domains listed:\n%s", o.Text())
			}
			if q, _ := b.last(); q != "docs -site:example.com -site:spam.test" {
				t.Errorf("backend got q=%q", q)
			}

			o = mustOK(t, call(t, tl, env, "WebSearch", map[string]any{"query": "docs", "allowed_domains": []string{"nothing.test"}}))
			mustContain(t, o.Text(), "No results found.")

			n := b.hits.Load()
			mustFail(t, call(t, tl, env, "WebSearch", map[string]any{"query": "docs", "allowed_domains": []string{"a.com"}, "blocked_domains": []string{"b.com"}}),
				"allowed_domains or blocked_domains, not both")
			mustFail(t, call(t, tl, env, "WebSearch", map[string]any{"query": "docs", "allowed_domains": []string{"not a domain"}}), "not a domain")
			if b.hits.Load() != n {
				t.Error("an invalid search reached the backend")
			}
		})
	}
}

func TestSearchNoBackend(t *testing.T) {
	for name, opts := range map[string]*web.Options{
		"nil options":  nil,
		"no setting":   {Settings: settings("")},
		"null setting": {Settings: settings("null")},
	} {
		t.Run(name, func(t *testing.T) {
			mustFail(t, call(t, tools(t, opts), tooltest.New(t), "WebSearch", search("golang")),
				`no web search backend is configured: set "webSearch"`, `"provider": "searxng", "url": "http://`, `"provider": "brave"`)
		})
	}
	problems := func(string) (*config.Settings, []config.Problem) {
		return &config.Settings{}, []config.Problem{{Path: "/p/.tackle/settings.json", Line: 3, Column: 7, Message: "invalid character"}}
	}
	mustFail(t, call(t, tools(t, &web.Options{Settings: problems}), tooltest.New(t), "WebSearch", search("golang")),
		"webSearch", "settings problem: /p/.tackle/settings.json:3:7: invalid character")
}

func TestSearchBadSetting(t *testing.T) {
	for _, tc := range []struct{ setting, want string }{
		{`"searxng"`, "is not valid"},
		{`{"provider":"google"}`, `provider "google"`},
		{`{"provider":"searxng"}`, `no "url"`},
		{`{"provider":"searxng","url":"localhost:8888"}`, "not an http or https URL"},
		{`{"provider":"searxng","url":"ftp://x"}`, "not an http or https URL"},
	} {
		t.Run(tc.setting, func(t *testing.T) {
			tl := tools(t, &web.Options{Settings: settings(tc.setting)})
			mustFail(t, call(t, tl, tooltest.New(t), "WebSearch", search("golang")), "webSearch", tc.want)
		})
	}
}

func TestSearchBackendErrors(t *testing.T) {
	srv := newServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("q") {
		case "fail":
			http.Error(w, "engine exploded", http.StatusInternalServerError)
		case "html":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, "<html>rate limited</html>")
		case "shape":
			fmt.Fprint(w, `{"answers":[]}`)
		case "slow":
			<-r.Context().Done()
		}
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	tl := tools(t, &web.Options{Settings: settings(`{"provider":"searxng","url":"` + srv.URL + `"}`), Timeout: 200 * time.Millisecond})
	env := tooltest.New(t)
	host := strings.TrimPrefix(srv.URL, "http://")
	mustFail(t, call(t, tl, env, "WebSearch", search("fail")), "searching with SearXNG ("+srv.URL+"): HTTP 500 Internal Server Error: engine exploded")
	mustFail(t, call(t, tl, env, "WebSearch", search("html")), "SearXNG", "not the expected JSON")
	mustFail(t, call(t, tl, env, "WebSearch", search("shape")), "SearXNG", `no "results" array`)
	mustFail(t, call(t, tl, env, "WebSearch", search("slow")), "SearXNG", host+" did not answer within 200ms")

	tl = tools(t, &web.Options{Settings: settings(`{"provider":"searxng","url":"http://` + closed + `"}`)})
	mustFail(t, call(t, tl, env, "WebSearch", search("golang")), "searching with SearXNG", "cannot connect to "+closed, "connection refused")
}

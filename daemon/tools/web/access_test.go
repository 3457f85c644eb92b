package web_test

import (
	"encoding/json"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/web"
)

func checkPermission(t *testing.T, tl tool.Tool, env tool.Env, input map[string]any) (tool.Access, error) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	return tl.CheckPermission(t.Context(), &tool.Call{ID: "c1", Name: tl.Spec().Name, Input: raw, Env: env})
}

func TestFetchDomain(t *testing.T) {
	fetch := tools(t, nil)["WebFetch"]
	env := tooltest.New(t)
	for _, tc := range []struct{ url, want string }{
		{"https://example.com/page", "example.com"},
		{"https://Docs.Example.COM/a?b=c#d", "docs.example.com"},
		{"https://example.com:8443/x", "example.com"},
		{"https://example.com./trailing-dot", "example.com"},
		{"http://127.0.0.1:8080/", "127.0.0.1"},
		{"http://[::1]:9000/x", "::1"},
		{"http://example.com/upgraded", "example.com"},
	} {
		acc, err := checkPermission(t, fetch, env, map[string]any{"url": tc.url, "prompt": "summarise"})
		if err != nil {
			t.Errorf("%s: %v", tc.url, err)
			continue
		}
		if acc.Kind != tool.AccessNetwork || acc.Domain != tc.want || acc.Command != tc.want || acc.InsideWorkingDirs ||
			len(acc.Reads)+len(acc.Writes)+len(acc.Commands) != 0 || acc.AlwaysAsk != "" {
			t.Errorf("%s: access = %+v, want Domain %q", tc.url, acc, tc.want)
		}
	}
	for _, bad := range []string{"ftp://example.com/", "https://user:secret@host.example.org/", "not a url"} {
		if _, err := checkPermission(t, fetch, env, map[string]any{"url": bad, "prompt": "x"}); err == nil {
			t.Errorf("%s passed CheckPermission", bad)
		}
	}
}

func TestSearchDomain(t *testing.T) {
	env := tooltest.New(t)
	env.Vars = []string{"MY_KEY=k"}
	for _, tc := range []struct{ setting, want string }{
		{`{"provider":"searxng","url":"http://Search.Local:8888/"}`, "search.local"},
		{`{"provider":"searxng","url":"https://searx.example.org/base/"}`, "searx.example.org"},
		{`{"provider":"brave","apiKeyEnv":"MY_KEY"}`, "api.search.brave.com"},
		{`{"provider":"brave","apiKeyEnv":"MY_KEY","url":"http://127.0.0.1:1234"}`, "127.0.0.1"},
	} {
		search := tools(t, &web.Options{Settings: settings(tc.setting)})["WebSearch"]
		acc, err := checkPermission(t, search, env, map[string]any{"query": "golang"})
		if err != nil {
			t.Errorf("%s: %v", tc.setting, err)
			continue
		}
		if acc.Kind != tool.AccessNetwork || acc.Domain != tc.want || acc.Command != tc.want || acc.AlwaysAsk != "" {
			t.Errorf("%s: access = %+v, want Domain %q", tc.setting, acc, tc.want)
		}
	}
	// No backend: the call fails before permission (nothing to match).
	search := tools(t, &web.Options{Settings: settings("")})["WebSearch"]
	if _, err := checkPermission(t, search, env, map[string]any{"query": "golang"}); err == nil {
		t.Error("CheckPermission without a backend passed")
	}
}

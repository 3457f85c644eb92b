package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/web"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tools builds the web tools and closes their idle connections when the test ends.
func tools(t *testing.T, opts *web.Options) map[string]tool.Tool {
	t.Helper()
	list := web.Tools(opts)
	t.Cleanup(func() { web.CloseIdleConnections(list) })
	m := map[string]tool.Tool{}
	for _, tl := range list {
		m[tl.Spec().Name] = tl
	}
	return m
}

// outcome is what the pipeline would make of one call.
type outcome = tooltest.Outcome

// call runs a tool the way the pipeline does: schema, Validate,
// CheckPermission (which must not fail), Run, then the Modifier.
func call(t testing.TB, tools map[string]tool.Tool, env tool.Env, name string, input any) outcome {
	t.Helper()
	return tooltest.Call(context.Background(), t, tools, env, name, input, nil)
}

// mustOK fails the test unless the call succeeded.
func mustOK(t testing.TB, o outcome) outcome {
	t.Helper()
	if o.Failed() {
		t.Fatalf("call failed: %s", o.Text())
	}
	return o
}

// mustFail fails the test unless the call failed with a text containing every want.
func mustFail(t testing.TB, o outcome, want ...string) {
	t.Helper()
	if !o.Failed() {
		t.Fatalf("call succeeded, want an error containing %q; got %q", want, o.Text())
	}
	for _, w := range want {
		if !strings.Contains(o.Text(), w) {
			t.Fatalf("error %q does not contain %q", o.Text(), w)
		}
	}
}

// mustContain fails the test unless s contains every want.
func mustContain(t testing.TB, s string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("result does not contain %q:\n%s", w, s)
		}
	}
}

// server is a local HTTP server that counts its requests.
type server struct {
	*httptest.Server
	hits atomic.Int64
}

func newServer(t *testing.T, h http.Handler) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

package fs_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/fs"
)

// outcome is what the pipeline would make of one call.
type outcome = tooltest.Outcome

// call runs a tool the way the pipeline does: schema, Validate,
// CheckPermission (which must not fail), Run, then the Modifier.
func call(t testing.TB, tools map[string]tool.Tool, env *tooltest.Env, name string, input any) outcome {
	t.Helper()
	return tooltest.Call(context.Background(), t, tools, env, name, input, nil)
}

func toolMap(opts *fs.Options) map[string]tool.Tool {
	m := map[string]tool.Tool{}
	for _, tl := range fs.Tools(opts) {
		m[tl.Spec().Name] = tl
	}
	return m
}

func writeFile(t testing.TB, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
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

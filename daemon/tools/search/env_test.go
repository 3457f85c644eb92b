package search

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testEnv is a session rooted at one directory.
type testEnv struct{ cwd string }

func (e testEnv) SessionID() string                       { return "test" }
func (e testEnv) Cwd() string                             { return e.cwd }
func (e testEnv) WorkingDirs() []string                   { return []string{e.cwd} }
func (e testEnv) Environ() []string                       { return os.Environ() }
func (e testEnv) FileState(string) (tool.FileState, bool) { return tool.FileState{}, false }
func (e testEnv) OutputDir() string                       { return os.TempDir() }

// call runs a tool the way the pipeline does (Validate, then Run) and
// returns the text of the result and whether it is an error.
func call(t testing.TB, tl tool.Tool, cwd string, input map[string]any) (string, bool) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	c := &tool.Call{ID: "c1", Name: tl.Spec().Name, Input: raw, Env: testEnv{cwd: cwd}}
	if err := tl.Validate(context.Background(), c); err != nil {
		return err.Error(), true
	}
	res, err := tl.Run(context.Background(), c, func(string) {})
	if err != nil {
		return err.Error(), true
	}
	text := ""
	for _, b := range res.Content {
		text += b.Text
	}
	return text, res.IsError
}

func tools() (grep, glob tool.Tool) {
	ts := Tools(nil)
	return ts[1], ts[0]
}

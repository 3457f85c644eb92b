package search

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// call runs a tool the way the pipeline does (Validate, then Run) and
// returns the text of the result and whether it is an error.
func call(t testing.TB, tl tool.Tool, cwd string, input map[string]any) (string, bool) {
	t.Helper()
	return callGuarded(t, tl, cwd, input, nil)
}

// callGuarded is call with the ReadGuard the pipeline sets when a Read
// deny rule applies.
func callGuarded(t testing.TB, tl tool.Tool, cwd string, input map[string]any, rg tool.ReadGuard) (string, bool) {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	c := &tool.Call{ID: "c1", Name: tl.Spec().Name, Input: raw, Env: tooltest.At(cwd), ReadGuard: rg}
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

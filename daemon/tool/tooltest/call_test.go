package tooltest_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
)

// echo is a tool whose stages fail on request: Validate on "bad", CheckPermission
// on "deny", Run on "fail"; Run reports the call id as progress and moves the cwd.
type echo struct{}

func (echo) Spec() tool.Spec {
	return tool.Spec{Name: "Echo", InputSchema: json.RawMessage(
		`{"type":"object","properties":{"s":{"type":"string","minLength":1}},"required":["s"],"additionalProperties":false}`)}
}

func (echo) Attributes(json.RawMessage) tool.Attributes { return tool.Attributes{} }

func input(c *tool.Call) string {
	var in struct{ S string }
	_ = json.Unmarshal(c.Input, &in)
	return in.S
}

func (echo) Validate(_ context.Context, c *tool.Call) error {
	if input(c) == "bad" {
		return errors.New("bad input")
	}
	return nil
}

func (echo) CheckPermission(_ context.Context, c *tool.Call) (tool.Access, error) {
	if input(c) == "deny" {
		return tool.Access{}, errors.New("no access")
	}
	return tool.Access{Kind: tool.AccessRead, Paths: []string{"/x"}}, nil
}

func (echo) Run(_ context.Context, c *tool.Call, progress tool.Progress) (*tool.Result, error) {
	s := input(c)
	if s == "fail" {
		return nil, errors.New("run failed")
	}
	progress(c.ID)
	res := tool.TextResult(s)
	res.Modifier = func(m tool.Mutator) { m.SetCwd("/moved") }
	return res, nil
}

func TestCall(t *testing.T) {
	tools := map[string]tool.Tool{"Echo": echo{}}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		in     any
		opts   *tooltest.CallOptions
		failed bool
		text   string
		check  func(*testing.T, tooltest.Outcome)
	}{
		{"ok", map[string]any{"s": "hi"}, nil, false, "hi", func(t *testing.T, o tooltest.Outcome) {
			if o.Access.Kind != tool.AccessRead || !slices.Equal(o.Progress, []string{"c1"}) {
				t.Errorf("access %+v, progress %q", o.Access, o.Progress)
			}
		}},
		{"call id", map[string]any{"s": "hi"}, &tooltest.CallOptions{ID: "toolu_1"}, false, "hi", func(t *testing.T, o tooltest.Outcome) {
			if !slices.Equal(o.Progress, []string{"toolu_1"}) {
				t.Errorf("progress %q", o.Progress)
			}
		}},
		{"schema", map[string]any{"s": ""}, nil, true, "minLength", func(t *testing.T, o tooltest.Outcome) {
			if o.SchemaErr == nil {
				t.Error("no schema error")
			}
		}},
		{"validate", map[string]any{"s": "bad"}, nil, true, "bad input", func(t *testing.T, o tooltest.Outcome) {
			if o.ValidateErr == nil {
				t.Error("no validate error")
			}
		}},
		{"permission kept", map[string]any{"s": "deny"}, &tooltest.CallOptions{KeepPermissionErr: true}, true, "no access", nil},
		{"run", map[string]any{"s": "fail"}, nil, true, "run failed", func(t *testing.T, o tooltest.Outcome) {
			if o.Res != nil || o.Access.Kind != tool.AccessRead {
				t.Errorf("res %v, access %+v", o.Res, o.Access)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := tooltest.New(t)
			o := tooltest.Call(ctx, t, tools, env, "Echo", tc.in, tc.opts)
			if o.Failed() != tc.failed || !strings.Contains(o.Text(), tc.text) {
				t.Errorf("failed %v, text %q; want %v, %q", o.Failed(), o.Text(), tc.failed, tc.text)
			}
			wantCwd := env.Root
			if !tc.failed {
				wantCwd = "/moved" // the Modifier ran
			}
			if env.Cwd() != wantCwd {
				t.Errorf("cwd %q, want %q", env.Cwd(), wantCwd)
			}
			if tc.check != nil {
				tc.check(t, o)
			}
		})
	}
}

func TestSchemaCached(t *testing.T) {
	if tooltest.Schema(t, echo{}) != tooltest.Schema(t, echo{}) {
		t.Error("the schema was compiled twice")
	}
}

package fs_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tackle-agent/tackle/daemon/tool"
	"github.com/tackle-agent/tackle/daemon/tool/tooltest"
	"github.com/tackle-agent/tackle/daemon/tools/fs"
)

// outcome is what the pipeline would make of one call.
type outcome struct {
	schemaErr   error
	validateErr error
	access      tool.Access
	res         *tool.Result
	runErr      error
}

// text is the text of the result, or the validation error.
func (o outcome) text() string {
	switch {
	case o.schemaErr != nil:
		return o.schemaErr.Error()
	case o.validateErr != nil:
		return o.validateErr.Error()
	case o.runErr != nil:
		return o.runErr.Error()
	}
	var sb strings.Builder
	for _, c := range o.res.Content {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// failed reports whether the call failed at any stage.
func (o outcome) failed() bool {
	return o.schemaErr != nil || o.validateErr != nil || o.runErr != nil || o.res.IsError
}

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{}
)

func compiled(t testing.TB, tl tool.Tool) *jsonschema.Schema {
	t.Helper()
	schemaMu.Lock()
	defer schemaMu.Unlock()
	name := tl.Spec().Name
	if s, ok := schemaCache[name]; ok {
		return s
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tl.Spec().InputSchema))
	if err != nil {
		t.Fatalf("%s schema: %v", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("mem://"+name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("mem://" + name)
	if err != nil {
		t.Fatalf("compiling %s schema: %v", name, err)
	}
	schemaCache[name] = s
	return s
}

// call runs a tool the way the pipeline does: schema, Validate,
// CheckPermission, Run, then the Modifier.
func call(t testing.TB, tools map[string]tool.Tool, env *tooltest.Env, name string, input any) outcome {
	t.Helper()
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := compiled(t, tl).Validate(inst); err != nil {
		return outcome{schemaErr: err}
	}
	c := &tool.Call{ID: "c1", Name: name, Input: raw, Env: env}
	ctx := context.Background()
	if err := tl.Validate(ctx, c); err != nil {
		return outcome{validateErr: err}
	}
	acc, err := tl.CheckPermission(ctx, c)
	if err != nil {
		t.Fatalf("CheckPermission after a passed Validate: %v", err)
	}
	res, err := tl.Run(ctx, c, func(string) {})
	if err != nil {
		return outcome{access: acc, runErr: err}
	}
	env.Apply(res)
	return outcome{access: acc, res: res}
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
	if o.failed() {
		t.Fatalf("call failed: %s", o.text())
	}
	return o
}

// mustFail fails the test unless the call failed with a text containing every want.
func mustFail(t testing.TB, o outcome, want ...string) {
	t.Helper()
	if !o.failed() {
		t.Fatalf("call succeeded, want an error containing %q; got %q", want, o.text())
	}
	for _, w := range want {
		if !strings.Contains(o.text(), w) {
			t.Fatalf("error %q does not contain %q", o.text(), w)
		}
	}
}

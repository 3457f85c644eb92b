package tooltest

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tackle-agent/tackle/daemon/tool"
)

// Outcome is what the pipeline would make of one call: the first error
// that stopped it, or the result of Run.
type Outcome struct {
	// SchemaErr is the input's JSON Schema validation error.
	SchemaErr error
	// ValidateErr is the error of the tool's Validate.
	ValidateErr error
	// Access is what CheckPermission reported.
	Access tool.Access
	// Res is the result of Run; nil when an earlier stage failed.
	Res *tool.Result
	// RunErr is the error of Run, or of CheckPermission when
	// CallOptions.KeepPermissionErr is set.
	RunErr error
	// Progress is every progress line Run reported, in order.
	Progress []string
}

// Text returns the text of the result, or of the error that stopped the call.
func (o Outcome) Text() string {
	switch {
	case o.SchemaErr != nil:
		return o.SchemaErr.Error()
	case o.ValidateErr != nil:
		return o.ValidateErr.Error()
	case o.RunErr != nil:
		return o.RunErr.Error()
	}
	var sb strings.Builder
	for _, c := range o.Res.Content {
		sb.WriteString(c.Text)
	}
	return sb.String()
}

// Failed reports whether the call failed at any stage, or its result is an error.
func (o Outcome) Failed() bool {
	return o.SchemaErr != nil || o.ValidateErr != nil || o.RunErr != nil || o.Res.IsError
}

// CallOptions are what differs between the tool families' tests. The zero
// value (or nil) is the default.
type CallOptions struct {
	// ID is the call id; "" means "c1".
	ID string
	// KeepPermissionErr records an error of CheckPermission in
	// Outcome.RunErr; without it such an error fails the test, since
	// CheckPermission must not fail after a passed Validate.
	KeepPermissionErr bool
}

var (
	schemaMu    sync.Mutex
	schemaCache = map[string]*jsonschema.Schema{} // by tool name and schema text
)

// Schema returns tl's input schema compiled, failing the test when it does
// not compile. Schemas are compiled once per test binary.
func Schema(t testing.TB, tl tool.Tool) *jsonschema.Schema {
	t.Helper()
	schemaMu.Lock()
	defer schemaMu.Unlock()
	sp := tl.Spec()
	name := sp.Name
	key := name + "\x00" + string(sp.InputSchema)
	if s, ok := schemaCache[key]; ok {
		return s
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(sp.InputSchema))
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
	schemaCache[key] = s
	return s
}

// Call runs the tool tools[name] the way the pipeline does: the input
// (marshalled to JSON) against the tool's schema, Validate, CheckPermission,
// Run (collecting progress), then the result's Modifier on env when env is
// a tool.Mutator and Run succeeded. It stops at the first stage that fails
// and records its error in the Outcome. It fails the test when there is no
// such tool or input does not marshal; opts may be nil.
func Call(ctx context.Context, t testing.TB, tools map[string]tool.Tool, env tool.Env, name string, input any, opts *CallOptions) Outcome {
	t.Helper()
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	if o.ID == "" {
		o.ID = "c1"
	}
	tl, ok := tools[name]
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	var out Outcome
	if err := Schema(t, tl).Validate(inst); err != nil {
		out.SchemaErr = err
		return out
	}
	c := &tool.Call{ID: o.ID, Name: name, Input: raw, Env: env}
	if err := tl.Validate(ctx, c); err != nil {
		out.ValidateErr = err
		return out
	}
	if out.Access, err = tl.CheckPermission(ctx, c); err != nil {
		if !o.KeepPermissionErr {
			t.Fatalf("CheckPermission after a passed Validate: %v", err)
		}
		out.RunErr = err
		return out
	}
	var pmu sync.Mutex
	res, err := tl.Run(ctx, c, func(s string) {
		pmu.Lock()
		out.Progress = append(out.Progress, s)
		pmu.Unlock()
	})
	pmu.Lock()
	defer pmu.Unlock()
	out.Res, out.RunErr = res, err
	if m, ok := env.(tool.Mutator); ok && err == nil && res != nil && res.Modifier != nil {
		res.Modifier(m)
	}
	return out
}

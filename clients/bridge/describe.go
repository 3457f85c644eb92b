package bridge

import (
	"encoding/json"
	"io"

	"google.golang.org/protobuf/reflect/protoreflect"

	tacklev1 "github.com/tackle-agent/tackle/gen/tackle/v1"
)

// Describe writes every method and notification of the bridge with the
// JSON Schemas (draft 2020-12) of its params and result, generated from
// the proto descriptors.
func Describe(w io.Writer) error {
	ms, err := unary()
	if err != nil {
		return err
	}
	g := &schemas{defs: map[string]any{}}
	type entry struct {
		Name   string `json:"name"`
		Kind   string `json:"kind"`
		Params any    `json:"params"`
		Result any    `json:"result,omitempty"`
	}
	var methods []entry
	for _, n := range methodNames(ms) {
		m := ms[n]
		methods = append(methods, entry{Name: n, Kind: "unary", Params: g.ref(m.in), Result: g.ref(m.out)})
	}
	cm := (&tacklev1.ClientMessage{}).ProtoReflect().Descriptor()
	for i := 0; i < cm.Fields().Len(); i++ {
		fd := cm.Fields().Get(i)
		if fd.Message() == nil || fd.Name() == "hello" {
			continue
		}
		methods = append(methods, entry{Name: "attach/" + fd.JSONName(), Kind: "attach", Params: g.ref(fd.Message()), Result: map[string]any{"type": "object"}})
	}
	var notes []entry
	sm := (&tacklev1.ServerMessage{}).ProtoReflect().Descriptor()
	for i := 0; i < sm.Fields().Len(); i++ {
		fd := sm.Fields().Get(i)
		// An EventBatch reaches the bridge's clients as its events, one
		// `event` notification each (client.Stream unpacks it).
		if fd.Message() != nil && fd.Name() != "events" {
			notes = append(notes, entry{Name: fd.JSONName(), Kind: "notification", Params: g.ref(fd.Message())})
		}
	}
	notes = append(notes,
		entry{Name: "disconnected", Kind: "notification", Params: map[string]any{"type": "object", "properties": map[string]any{"reason": map[string]any{"type": "string"}}}},
		entry{Name: "reconnected", Kind: "notification", Params: map[string]any{"type": "object", "properties": map[string]any{
			"sessionId": map[string]any{"type": "string"}, "fromSeq": map[string]any{"type": "string", "pattern": "^[0-9]+$"}}}},
	)
	out := map[string]any{
		"$schema":       "https://json-schema.org/draft/2020-12/schema",
		"protocol":      "JSON-RPC 2.0, one message per line; bodies in protojson (camelCase, 64-bit integers as strings, enums as names)",
		"methods":       methods,
		"notifications": notes,
		"$defs":         g.defs,
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// schemas builds the $defs of the message types.
type schemas struct{ defs map[string]any }

func (g *schemas) ref(md protoreflect.MessageDescriptor) any {
	name := string(md.FullName())
	if s := wellKnown(name); s != nil {
		return s
	}
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = nil // placeholder against recursion
		props := map[string]any{}
		for i := 0; i < md.Fields().Len(); i++ {
			fd := md.Fields().Get(i)
			props[fd.JSONName()] = g.field(fd)
		}
		g.defs[name] = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	}
	return map[string]any{"$ref": "#/$defs/" + name}
}

func (g *schemas) field(fd protoreflect.FieldDescriptor) any {
	if fd.IsMap() {
		return map[string]any{"type": "object", "additionalProperties": g.single(fd.MapValue())}
	}
	s := g.single(fd)
	if fd.IsList() {
		return map[string]any{"type": "array", "items": s}
	}
	return s
}

func (g *schemas) single(fd protoreflect.FieldDescriptor) any {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return map[string]any{"type": "boolean"}
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind, protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return map[string]any{"type": "integer"}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return map[string]any{"type": "string", "pattern": "^-?[0-9]+$", "description": "a 64-bit integer, as a string"}
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		return map[string]any{"type": "number"}
	case protoreflect.StringKind:
		return map[string]any{"type": "string"}
	case protoreflect.BytesKind:
		return map[string]any{"type": "string", "contentEncoding": "base64"}
	case protoreflect.EnumKind:
		var names []string
		vs := fd.Enum().Values()
		for i := 0; i < vs.Len(); i++ {
			names = append(names, string(vs.Get(i).Name()))
		}
		return map[string]any{"type": "string", "enum": names}
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return g.ref(fd.Message())
	}
	return map[string]any{}
}

// wellKnown is the schema of a google.protobuf type protojson writes as
// a scalar.
func wellKnown(name string) any {
	switch name {
	case "google.protobuf.Timestamp":
		return map[string]any{"type": "string", "format": "date-time"}
	case "google.protobuf.Duration":
		return map[string]any{"type": "string", "pattern": "^-?[0-9.]+s$"}
	case "google.protobuf.Struct":
		return map[string]any{"type": "object"}
	case "google.protobuf.Empty":
		return map[string]any{"type": "object"}
	}
	return nil
}
